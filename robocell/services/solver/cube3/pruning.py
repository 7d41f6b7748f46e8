"""Pruning tables: lower bounds on the moves left, read during the search.

- phase 1: distance to G1 of every (flip-slice class, conjugated twist), 140,908,410 entries;
- phase 2: distance to solved (ignoring the slice edges' order) of every
  (corner class, conjugated ud_edges) in G1, 111,605,760 entries;
- ``cornslice_depth``: exact phase-2 distance of (corners, slice_perm), 967,680 entries.

The first two are stored as distance mod 3 in 2 bits (four entries a byte): neighbours differ
by at most one move, so a search that knows the exact distance of a node gets the exact
distance of each neighbour from the residue alone (`next_depth`). They are built by
breadth-first search over the classes: forward (expand every entry at depth d) while the
frontier is small, backward (test every unreached entry for a neighbour at depth d) once
fewer entries are left than are on the frontier.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.common.progress import Progress
from robocell.services.solver.cube3.defs import (
    N_CORNER_CLASS,
    N_CORNERS,
    N_FLIP,
    N_FLIPSLICE_CLASS,
    N_MOVE,
    N_PERM_4,
    N_SLICE,
    N_SYM,
    N_TWIST,
    N_UD_EDGES,
    PHASE2_MOVES,
    UNSET,
)

PHASE2_MOVE_ARRAY = np.array(PHASE2_MOVES, dtype=np.int64)
ALL_MOVES = np.arange(N_MOVE, dtype=np.int64)


@njit(cache=True)
def _bfs_level(depth, d, backward, n_class, n_inner, moves, rep_outer, outer_move_a,
               outer_move_b, outer_split, classidx, symidx, stab, inner_move,
               inner_conj):
    """One breadth-first level over a class x inner table; returns entries set to d + 1.

    The representative of a class is rep_outer[c]; its move image is computed from two parts
    (outer = a * outer_split + b with outer_move_a on a and outer_move_b on b).
    """
    new = 0
    buf = np.empty(n_inner, np.int64)
    hit = np.zeros(n_inner, np.bool_)
    target = UNSET if backward else d
    for c in range(n_class):
        base = c * n_inner
        n = 0
        for i in range(n_inner):
            if depth[base + i] == target:
                buf[n] = i
                n += 1
        if n == 0:
            continue
        outer = rep_outer[c]
        a = outer // outer_split
        b = outer % outer_split
        if backward:
            for k in range(n):
                hit[k] = False
            left = n
        for m in moves:
            outer1 = outer_move_a[a, m] * outer_split + outer_move_b[b, m]
            c1 = classidx[outer1]
            s1 = symidx[outer1]
            base1 = c1 * n_inner
            if backward:
                for k in range(n):
                    if not hit[k]:
                        i1 = inner_conj[inner_move[buf[k], m], s1]
                        if depth[base1 + i1] == d:
                            hit[k] = True
                            left -= 1
                if left == 0:
                    break
            else:
                mask = stab[c1]
                for k in range(n):
                    i1 = inner_conj[inner_move[buf[k], m], s1]
                    if depth[base1 + i1] == UNSET:
                        depth[base1 + i1] = d + 1
                        new += 1
                        if mask != 1:
                            for s in range(1, N_SYM):
                                if (mask >> s) & 1:
                                    i2 = inner_conj[i1, s]
                                    if depth[base1 + i2] == UNSET:
                                        depth[base1 + i2] = d + 1
                                        new += 1
        if backward:
            for k in range(n):
                if hit[k]:
                    depth[base + buf[k]] = d + 1
                    new += 1
    return new


def _sym_bfs(n_class: int, n_inner: int, moves: np.ndarray, rep_outer, outer_move_a,
             outer_move_b, outer_split: int, classidx, symidx, stab, inner_move, inner_conj,
             label: str) -> np.ndarray:
    total = n_class * n_inner
    depth = np.full(total, UNSET, np.uint8)
    depth[0] = 0
    filled = 1
    frontier = 1
    d = 0
    with Progress(label, total) as progress:
        progress.update(filled)
        while filled < total:
            backward = total - filled < frontier
            new = _bfs_level(depth, d, backward, n_class, n_inner, moves, rep_outer,
                             outer_move_a, outer_move_b, outer_split, classidx, symidx, stab,
                             inner_move, inner_conj)
            if new == 0:
                break
            filled += new
            frontier = new
            d += 1
            progress.update(filled)
    return depth


def phase1_depth(move_tables: dict, sym_tables: dict) -> np.ndarray:
    """Exact phase-1 distance (uint8) of every (flip-slice class, twist): index
    class * N_TWIST + twist_conj[twist, sym]."""
    slice_move = (move_tables["slice_sorted_move"][::N_PERM_4] // N_PERM_4).astype(np.uint16)
    return _sym_bfs(N_FLIPSLICE_CLASS, N_TWIST, ALL_MOVES, sym_tables["flipslice_rep"],
                    slice_move, move_tables["flip_move"], N_FLIP,
                    sym_tables["flipslice_classidx"], sym_tables["flipslice_sym"],
                    sym_tables["flipslice_stab"], move_tables["twist_move"],
                    sym_tables["twist_conj"], "phase-1 pruning")


def phase2_depth(move_tables: dict, sym_tables: dict) -> np.ndarray:
    """Exact phase-2 distance (uint8) of every (corner class, ud_edges): index
    class * N_UD_EDGES + ud_edges_conj[ud_edges, sym]."""
    corners_move = move_tables["corners_move"]
    zero_move = np.zeros((1, N_MOVE), np.uint16)
    return _sym_bfs(N_CORNER_CLASS, N_UD_EDGES, PHASE2_MOVE_ARRAY, sym_tables["corner_rep"],
                    zero_move, corners_move, N_CORNERS,
                    sym_tables["corner_classidx"], sym_tables["corner_sym"],
                    sym_tables["corner_stab"], move_tables["ud_edges_move"],
                    sym_tables["ud_edges_conj"], "phase-2 pruning")


def cornslice_depth(move_tables: dict) -> np.ndarray:
    """Exact phase-2 distance of corners * 24 + slice_perm (uint8)."""
    depth = np.full(N_CORNERS * N_PERM_4, UNSET, np.uint8)
    _pair_bfs(move_tables["corners_move"], move_tables["slice_sorted_move"], N_PERM_4,
              PHASE2_MOVE_ARRAY, depth)
    return depth


@njit(cache=True)
def _pack(depth, packed):
    for i in range(depth.size):
        packed[i >> 2] |= (depth[i] % 3) << ((i & 3) << 1)


def pack_mod3(depth: np.ndarray) -> np.ndarray:
    """Distances mod 3, four 2-bit entries a byte."""
    packed = np.zeros((depth.size + 3) // 4, np.uint8)
    _pack(depth, packed)
    return packed


@njit(cache=True)
def mod3(packed, index):
    return (packed[index >> 2] >> ((index & 3) << 1)) & 3


@njit(cache=True)
def next_depth(depth, residue_parent, residue_child):
    """Exact distance of a neighbour from the parent's exact distance and both residues."""
    diff = (residue_child - residue_parent + 3) % 3
    if diff == 0:
        return depth
    if diff == 1:
        return depth + 1
    return depth - 1


@njit(cache=True)
def _histogram_phase1(depth, fs_classidx, fs_sym, twist_conj, counts):
    for fs in range(fs_classidx.size):
        base = np.int64(fs_classidx[fs]) * N_TWIST
        s = fs_sym[fs]
        for t in range(N_TWIST):
            counts[depth[base + twist_conj[t, s]]] += 1


def phase1_coset_distribution(depth: np.ndarray, sym_tables: dict) -> np.ndarray:
    """Number of the 2,217,093,120 phase-1 cosets at each distance, by expanding the
    sym-reduced table over every flip-slice value and twist."""
    counts = np.zeros(256, np.int64)
    _histogram_phase1(depth, sym_tables["flipslice_classidx"], sym_tables["flipslice_sym"],
                      sym_tables["twist_conj"], counts)
    return counts[: int(np.nonzero(counts)[0].max()) + 1]


@njit(cache=True)
def _pair_bfs(move_a, move_b, n_b, moves, depth):
    depth[0] = 0
    d = 0
    while True:
        new = 0
        for i in range(depth.size):
            if depth[i] == d:
                a = i // n_b
                b = i % n_b
                for m in moves:
                    j = np.int64(move_a[a, m]) * n_b + move_b[b, m]
                    if depth[j] == UNSET:
                        depth[j] = d + 1
                        new += 1
        if new == 0:
            return
        d += 1


def phase1_pair_depths(move_tables: dict) -> dict[str, np.ndarray]:
    """Exact phase-1 distances of slice * N_TWIST + twist and slice * N_FLIP + flip: weaker
    bounds than the full table but small enough to stay in cache, so the search tries them
    first and reads the full table only for nodes they do not prune."""
    slice_move = (move_tables["slice_sorted_move"][::N_PERM_4] // N_PERM_4).astype(np.uint16)
    slice_twist = np.full(N_SLICE * N_TWIST, UNSET, np.uint8)
    _pair_bfs(slice_move, move_tables["twist_move"], N_TWIST, ALL_MOVES, slice_twist)
    slice_flip = np.full(N_SLICE * N_FLIP, UNSET, np.uint8)
    _pair_bfs(slice_move, move_tables["flip_move"], N_FLIP, ALL_MOVES, slice_flip)
    return {"slice_twist_depth": slice_twist, "slice_flip_depth": slice_flip}
