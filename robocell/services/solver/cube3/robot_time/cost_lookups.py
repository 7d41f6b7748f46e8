"""The robot-time search's lookups in a profile's cost tables (`cost_tables`, `move_words`):
least costs in profile units, lower bounds all.

A phase-1 state is looked up by its entry in the sym-reduced (flip-slice class, twist) tables,
a phase-2 state by its entry in the (corner class, U/D edges) ones. While a block is open (the
last turn may still be joined by a turn of its opposite face) a bound is the least over
joining that face first. Compiled without reference counting, as the search is
(`block_costs`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.services.solver.cube3.defs import N_FLIP, N_PERM_4, N_TWIST, N_UD_EDGES
from robocell.services.solver.cube3.robot_time import move_words
from robocell.services.solver.cube3.robot_time.axial_metric import FACE_KIND
from robocell.services.solver.cube3.robot_time.search_state import EPS
from robocell.services.solver.cube3.tables import SYM_BITS

SYM_MASK = (1 << SYM_BITS) - 1


@njit(cache=True, _nrt=False)
def phase1_entry(T, twist, flip, slc):
    """(entry of a phase-1 state in the sym-reduced (flip-slice class, twist) tables, the
    symmetry that maps the state to it)."""
    classsym = np.int64(T.flipslice_classsym[np.int64(slc) * N_FLIP + flip])
    sym = classsym & SYM_MASK
    return (classsym >> SYM_BITS) * N_TWIST + T.twist_conj[twist, sym], sym


@njit(cache=True, _nrt=False)
def phase1_index(T, twist, flip, slc):
    """Entry of a phase-1 state in the sym-reduced (flip-slice class, twist) tables."""
    return phase1_entry(T, twist, flip, slc)[0]


@njit(cache=True, _nrt=False)
def phase2_index(T, corners, ud_edges):
    """Entry of a phase-2 state in the sym-reduced (corner class, U/D edges) tables."""
    return (np.int64(T.corner_classidx[corners]) * N_UD_EDGES
            + T.ud_edges_conj[ud_edges, T.corner_sym[corners]])


@njit(cache=True, _nrt=False)
def moves_word(T, W, twist, flip, slc):
    """(`move_words` word, the symmetry that maps the state to its entry, the entry's
    ticks) of a phase-1 state: what `move_bound` reads for each child."""
    entry, sym = phase1_entry(T, twist, flip, slc)
    word = np.int64(W.moves[entry])
    return word, sym, (word >> move_words.HERE_SHIFT) & 0xFF


@njit(cache=True, _nrt=False)
def move_bound(W, word, sym, here, m):
    """A lower bound, in units, of the full phase-1 table's bound for the child of face turn
    ``m`` from the state of (word, sym, here) (`moves_word`; while the turn's block may take
    the opposite face, the least over joining it first), from the word alone: to within a
    stored step unless the turn adds 14 ticks or more, or under 2."""
    mm = W.move_conj[sym, m]
    v = (word >> (move_words.BITS * mm)) & move_words.TOP
    y = W.move_lo[mm] if v == 0 else W.move_step[0] * v
    ticks = here - W.move_ticks[mm] + y
    return ticks * W.phase1_tick[0] * (1.0 - EPS)


@njit(cache=True, _nrt=False)
def phase1_cost(T, W, twist, flip, slc):
    """Least cost to G1 from the profile's full phase-1 table (`cost_tables`), in units (read
    from the move words' top byte, which holds the table's entry)."""
    here = (np.int64(W.moves[phase1_index(T, twist, flip, slc)]) >> move_words.HERE_SHIFT) \
        & 0xFF
    return here * W.phase1_tick[0] * (1.0 - EPS)


@njit(cache=True, _nrt=False)
def phase2_cost(T, W, corners, ud_edges):
    """Least cost to solved within G1, slice order ignored, from the profile's full phase-2
    table (`cost_tables`), in units."""
    return W.phase2[phase2_index(T, corners, ud_edges)] * W.phase2_tick[0] * (1.0 - EPS)


@njit(cache=True, _nrt=False)
def full2(T, W, corners, ud_edges, last, ext, enough):
    """(`phase2_cost`, the bound): while the block of ``last`` may take the opposite face, the
    bound is the least over doing so first (a value at most ``enough``, which prunes nothing,
    may be returned before that least). The first is 0 only when the
    corners and the U/D edges are solved."""
    h0 = phase2_cost(T, W, corners, ud_edges)
    h = h0
    if ext and h > enough:
        face = last // 3 + 3
        for q in range(3):
            if face != 3 and q != 1:
                continue  # only D turns and half turns keep the cube in G1
            col = FACE_KIND[face * 3 + q]
            h1 = phase2_cost(T, W, T.corners_move[corners, col], T.ud_edges_move[ud_edges, col])
            if h1 < h:
                h = h1
    return h0, h


@njit(cache=True, _nrt=False)
def corner_slice2(T, W, corners, slice_perm, last, ext):
    """`weighted2`'s corner half alone, which needs no U/D edges: the exact least cost of
    the corners with the slice order to solved within G1; with a block open, the least over
    joining the opposite face first. Never over `weighted2`."""
    h = W.corner_slice[np.int64(corners) * N_PERM_4 + slice_perm]
    if ext:
        face = last // 3 + 3
        for q in range(3):
            if face != 3 and q != 1:
                continue  # only D turns and half turns keep the cube in G1
            col = FACE_KIND[face * 3 + q]
            h1 = W.corner_slice[np.int64(T.corners_move[corners, col]) * N_PERM_4
                                + T.slice_sorted_move[slice_perm, col]]
            if h1 < h:
                h = h1
    return h


@njit(cache=True, _nrt=False)
def weighted2(T, W, corners, ud_edges, slice_perm, last, ext, enough):
    """Exact least cost of the corners, and of the U/D edges, each with the slice order, to
    solved within G1 (the larger); with a block open, the least over joining the opposite
    face first (a value at most ``enough`` may be returned before that least)."""
    h = max(W.corner_slice[np.int64(corners) * N_PERM_4 + slice_perm],
            W.edge_slice[np.int64(ud_edges) * N_PERM_4 + slice_perm])
    if ext and h > enough:
        face = last // 3 + 3
        for q in range(3):
            if face != 3 and q != 1:
                continue  # only D turns and half turns keep the cube in G1
            col = FACE_KIND[face * 3 + q]
            s1 = np.int64(T.slice_sorted_move[slice_perm, col])
            h1 = max(W.corner_slice[np.int64(T.corners_move[corners, col]) * N_PERM_4 + s1],
                     W.edge_slice[np.int64(T.ud_edges_move[ud_edges, col]) * N_PERM_4 + s1])
            if h1 < h:
                h = h1
    return h
