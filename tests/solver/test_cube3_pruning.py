"""Truth checks: full-cube breadth-first counts, and the pruning tables' exact distances."""

from __future__ import annotations

import numpy as np

from robocell.services.solver.cube3.defs import N_FLIP, N_MOVE, PHASE2_MOVES
from robocell.services.solver.cube3.moves import basic_cubies
from robocell.services.solver.cube3.search import phase1_distance, phase2_distance
from robocell.services.solver.cube3.tables import load_tables

PUBLISHED_HTM_COUNTS = [1, 18, 243, 3240, 43239, 574908, 7618438]
"""Positions at each distance from solved in the half-turn metric (depth 0..6); depth 6 is
checked by bench/verify_cube3_tables.py (it takes a minute and a few GB)."""


def _keys(cp: np.ndarray, co: np.ndarray, ep: np.ndarray, eo: np.ndarray) -> np.ndarray:
    """One 16-byte key per state (corners in the first word, edges in the second)."""
    corner_key = np.zeros(len(cp), np.int64)
    for i in range(8):
        corner_key = corner_key * 24 + cp[:, i].astype(np.int64) * 3 + co[:, i]
    edge_key = np.zeros(len(ep), np.int64)
    for i in range(12):
        edge_key = edge_key * 24 + ep[:, i].astype(np.int64) * 2 + eo[:, i]
    pair = np.ascontiguousarray(np.stack([corner_key, edge_key], axis=1))
    return pair.view(np.dtype((np.void, 16))).ravel()


def htm_level_counts(max_depth: int) -> list[int]:
    """Breadth-first search of the whole cube group with numpy arrays of cubie states. A
    position at depth d + 1 has all its neighbours at depths d..d + 2, so the candidates
    made from level d are new unless they are on level d - 1 or d."""
    m_cp, m_co, m_ep, m_eo = basic_cubies()
    cp = np.arange(8, dtype=np.int8)[None, :]
    co = np.zeros((1, 8), np.int8)
    ep = np.arange(12, dtype=np.int8)[None, :]
    eo = np.zeros((1, 12), np.int8)
    previous = _keys(cp, co, ep, eo)[:0]
    current = _keys(cp, co, ep, eo)
    counts = [1]
    for _ in range(max_depth):
        parts = [(cp[:, m_cp[m]], (co[:, m_cp[m]] + m_co[m]) % 3,
                  ep[:, m_ep[m]], (eo[:, m_ep[m]] + m_eo[m]) % 2) for m in range(N_MOVE)]
        cp, co, ep, eo = (np.concatenate([p[k] for p in parts]) for k in range(4))
        _, first = np.unique(_keys(cp, co, ep, eo), return_index=True)
        cp, co, ep, eo = cp[first], co[first], ep[first], eo[first]
        old = np.concatenate([previous, current])
        _, index, multiplicity = np.unique(np.concatenate([old, _keys(cp, co, ep, eo)]),
                                           return_index=True, return_counts=True)
        fresh = index[(multiplicity == 1) & (index >= len(old))] - len(old)
        cp, co, ep, eo = cp[fresh], co[fresh], ep[fresh], eo[fresh]
        previous, current = current, _keys(cp, co, ep, eo)
        counts.append(len(fresh))
    return counts


def test_breadth_first_counts_to_depth_5_are_the_published_ones() -> None:
    assert htm_level_counts(5) == PUBLISHED_HTM_COUNTS[:6]


def _coset_bfs(tables, depth_limit: int) -> dict[tuple[int, int, int], int]:
    dist = {(0, 0, 0): 0}
    frontier = [(0, 0, 0)]
    for d in range(1, depth_limit + 1):
        nxt = []
        for twist, flip, slc in frontier:
            for m in range(N_MOVE):
                key = (int(tables.twist_move[twist, m]), int(tables.flip_move[flip, m]),
                       int(tables.slice_move[slc, m]))
                if key not in dist:
                    dist[key] = d
                    nxt.append(key)
        frontier = nxt
    return dist


def test_phase1_table_gives_the_exact_distance_of_every_coset_near_g1() -> None:
    tables = load_tables()
    dist = _coset_bfs(tables, 4)
    assert [sum(1 for v in dist.values() if v == d) for d in range(5)] == [1, 4, 50, 592, 7156]
    for (twist, flip, slc), d in dist.items():
        assert phase1_distance(tables, twist, flip, slc) == d


def test_phase2_table_gives_the_exact_distance_near_solved() -> None:
    tables = load_tables()
    dist = {(0, 0): 0}
    frontier = [(0, 0)]
    for d in range(1, 7):
        nxt = []
        for corners, ud in frontier:
            for m in PHASE2_MOVES:
                key = (int(tables.corners_move[corners, m]), int(tables.ud_edges_move[ud, m]))
                if key not in dist:
                    dist[key] = d
                    nxt.append(key)
        frontier = nxt
    for (corners, ud), d in dist.items():
        assert phase2_distance(tables, corners, ud) == d


def test_small_phase1_bounds_never_exceed_the_full_table() -> None:
    tables = load_tables()
    rng = np.random.default_rng(3)
    for _ in range(300):
        twist, flip, slc = int(rng.integers(2187)), int(rng.integers(N_FLIP)), \
            int(rng.integers(495))
        exact = phase1_distance(tables, twist, flip, slc)
        assert tables.slice_twist_depth[slc * 2187 + twist] <= exact
        assert tables.slice_flip_depth[slc * N_FLIP + flip] <= exact
