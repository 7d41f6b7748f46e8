"""Move tables: how each of the 18 face turns changes each coordinate.

The cubie-level effect of a face turn comes from the cube model (`robocell.common.moves`), so
the solver and the model agree by construction. Corner orientations 3..5 mark a mirrored
cubie (used only by the reflections in `symmetries`); `multiply_corners` follows that rule.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.common.moves import move_cubie
from robocell.common.notation import Move
from robocell.services.solver.cube3 import coord
from robocell.services.solver.cube3.defs import (
    FACE_ORDER,
    N_CORNER,
    N_CORNERS,
    N_EDGE,
    N_FLIP,
    N_MOVE,
    N_SLICE_SORTED,
    N_TWIST,
    N_UD_EDGES,
    PHASE2_MOVES,
)


def move_of_index(index: int) -> Move:
    """The face turn with solver move number ``index`` (3 * face + quarter turns - 1)."""
    return Move(FACE_ORDER[index // 3], index % 3 + 1)


def index_of_move(move: Move) -> int:
    return 3 * FACE_ORDER.index(move.name) + move.quarter_turns - 1


def basic_cubies() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """cp, co, ep, eo of the 18 face turns, shape (18, 8) / (18, 12), int8."""
    cp = np.zeros((N_MOVE, N_CORNER), np.int8)
    co = np.zeros((N_MOVE, N_CORNER), np.int8)
    ep = np.zeros((N_MOVE, N_EDGE), np.int8)
    eo = np.zeros((N_MOVE, N_EDGE), np.int8)
    for m in range(N_MOVE):
        cubie = move_cubie(move_of_index(m), 3)
        cp[m], co[m] = cubie.corner_perm, cubie.corner_twist
        ep[m], eo[m] = cubie.edge_perm, cubie.edge_flip
    return cp, co, ep, eo


@njit(cache=True)
def multiply_corners(a_cp, a_co, b_cp, b_co, out_cp, out_co) -> None:
    """out = a * b (a, then b) for corners; orientations >= 3 are mirrored."""
    for i in range(N_CORNER):
        out_cp[i] = a_cp[b_cp[i]]
        ori_a = a_co[b_cp[i]]
        ori_b = b_co[i]
        if ori_a < 3 and ori_b < 3:
            ori = (ori_a + ori_b) % 3
        elif ori_a < 3:
            ori = ori_a + ori_b
            if ori >= 6:
                ori -= 3
        elif ori_b < 3:
            ori = ori_a - ori_b
            if ori < 3:
                ori += 3
        else:
            ori = ori_a - ori_b
            if ori < 0:
                ori += 3
        out_co[i] = ori


@njit(cache=True)
def multiply_edges(a_ep, a_eo, b_ep, b_eo, out_ep, out_eo) -> None:
    """out = a * b (a, then b) for edges."""
    for i in range(N_EDGE):
        out_ep[i] = a_ep[b_ep[i]]
        out_eo[i] = (a_eo[b_ep[i]] + b_eo[i]) & 1


@njit(cache=True)
def _build_twist_flip(m_cp, m_co, m_ep, m_eo, twist_move, flip_move) -> None:
    cp = np.arange(N_CORNER).astype(np.int8)
    co = np.zeros(N_CORNER, np.int8)
    out_cp = np.zeros(N_CORNER, np.int8)
    out_co = np.zeros(N_CORNER, np.int8)
    for t in range(N_TWIST):
        coord.set_twist(co, t)
        for m in range(N_MOVE):
            multiply_corners(cp, co, m_cp[m], m_co[m], out_cp, out_co)
            twist_move[t, m] = coord.get_twist(out_co)
    ep = np.arange(N_EDGE).astype(np.int8)
    eo = np.zeros(N_EDGE, np.int8)
    out_ep = np.zeros(N_EDGE, np.int8)
    out_eo = np.zeros(N_EDGE, np.int8)
    for f in range(N_FLIP):
        coord.set_flip(eo, f)
        for m in range(N_MOVE):
            multiply_edges(ep, eo, m_ep[m], m_eo[m], out_ep, out_eo)
            flip_move[f, m] = coord.get_flip(out_eo)


@njit(cache=True)
def _build_permutations(m_cp, m_co, m_ep, m_eo, slice_sorted_move, corners_move,
                        ud_edges_move) -> None:
    ep = np.zeros(N_EDGE, np.int8)
    eo = np.zeros(N_EDGE, np.int8)
    out_ep = np.zeros(N_EDGE, np.int8)
    out_eo = np.zeros(N_EDGE, np.int8)
    for s in range(N_SLICE_SORTED):
        coord.set_slice_sorted(ep, s)
        for m in range(N_MOVE):
            multiply_edges(ep, eo, m_ep[m], m_eo[m], out_ep, out_eo)
            slice_sorted_move[s, m] = coord.get_slice_sorted(out_ep)
    cp = np.zeros(N_CORNER, np.int8)
    co = np.zeros(N_CORNER, np.int8)
    out_cp = np.zeros(N_CORNER, np.int8)
    out_co = np.zeros(N_CORNER, np.int8)
    for c in range(N_CORNERS):
        coord.set_corners(cp, c)
        for m in range(N_MOVE):
            multiply_corners(cp, co, m_cp[m], m_co[m], out_cp, out_co)
            corners_move[c, m] = coord.get_corners(out_cp)
    for u in range(N_UD_EDGES):
        coord.set_ud_edges(ep, u)
        for m in PHASE2_MOVES:
            multiply_edges(ep, eo, m_ep[m], m_eo[m], out_ep, out_eo)
            ud_edges_move[u, m] = coord.get_ud_edges(out_ep)


def build_move_tables() -> dict[str, np.ndarray]:
    """Move tables ``<coordinate>_move[value, move]`` (uint16). ``ud_edges_move`` is filled
    for the phase-2 moves only (other moves leave G1, where the coordinate means nothing)."""
    m_cp, m_co, m_ep, m_eo = basic_cubies()
    twist_move = np.zeros((N_TWIST, N_MOVE), np.uint16)
    flip_move = np.zeros((N_FLIP, N_MOVE), np.uint16)
    _build_twist_flip(m_cp, m_co, m_ep, m_eo, twist_move, flip_move)
    slice_sorted_move = np.zeros((N_SLICE_SORTED, N_MOVE), np.uint16)
    corners_move = np.zeros((N_CORNERS, N_MOVE), np.uint16)
    ud_edges_move = np.zeros((N_UD_EDGES, N_MOVE), np.uint16)
    _build_permutations(m_cp, m_co, m_ep, m_eo, slice_sorted_move, corners_move, ud_edges_move)
    return {"twist_move": twist_move, "flip_move": flip_move,
            "slice_sorted_move": slice_sorted_move, "corners_move": corners_move,
            "ud_edges_move": ud_edges_move}
