"""The 16 UD symmetries form a group, map face turns to face turns, and commute with moves."""

from __future__ import annotations

import numpy as np

from robocell.services.solver.cube3.defs import (
    N_CORNER_CLASS,
    N_FLIPSLICE_CLASS,
    N_MOVE,
    N_SYM,
    N_TWIST,
    N_UD_EDGES,
    PHASE2_MOVES,
)
from robocell.services.solver.cube3.symmetries import sym_cubies, sym_inverse_and_move_conj
from robocell.services.solver.cube3.tables import SYM_BITS, load_tables


def test_sixteen_distinct_symmetries_each_with_an_inverse() -> None:
    cp, co, ep, eo = sym_cubies()
    keys = {(tuple(cp[s]), tuple(co[s]), tuple(ep[s]), tuple(eo[s])) for s in range(N_SYM)}
    assert len(keys) == N_SYM
    inverse, _ = sym_inverse_and_move_conj()
    assert sorted(inverse) == list(range(N_SYM))
    assert all(inverse[inverse[s]] == s for s in range(N_SYM))
    # half of them are reflections (mirrored corners)
    assert sum(int(co[s][0] >= 3) for s in range(N_SYM)) == N_SYM // 2


def test_conjugation_maps_face_turns_to_face_turns_and_keeps_g1() -> None:
    _, move_conj = sym_inverse_and_move_conj()
    for s in range(N_SYM):
        assert sorted(move_conj[s]) == list(range(N_MOVE))
        assert sorted(move_conj[s][list(PHASE2_MOVES)]) == sorted(PHASE2_MOVES)
        # the U-D axis stays the U-D axis
        assert {move_conj[s][m] // 3 for m in range(3)} <= {0, 3}


def test_conjugation_tables_commute_with_move_tables() -> None:
    tables = load_tables()
    _, move_conj = sym_inverse_and_move_conj()
    rng = np.random.default_rng(1)
    for twist in rng.integers(0, N_TWIST, 50):
        for s in range(N_SYM):
            for m in range(N_MOVE):
                lhs = tables.twist_conj[tables.twist_move[twist, m], s]
                rhs = tables.twist_move[tables.twist_conj[twist, s], move_conj[s, m]]
                assert lhs == rhs
    for ud in rng.integers(0, N_UD_EDGES, 50):
        for s in range(N_SYM):
            for m in PHASE2_MOVES:
                lhs = tables.ud_edges_conj[tables.ud_edges_move[ud, m], s]
                rhs = tables.ud_edges_move[tables.ud_edges_conj[ud, s], move_conj[s, m]]
                assert lhs == rhs


def test_class_counts_are_the_published_ones() -> None:
    tables = load_tables()
    classes = np.asarray(tables.flipslice_classsym) >> SYM_BITS
    assert classes.max() + 1 == N_FLIPSLICE_CLASS == 64430
    assert np.asarray(tables.corner_classidx).max() + 1 == N_CORNER_CLASS == 2768
