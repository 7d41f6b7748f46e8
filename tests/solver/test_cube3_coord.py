"""Coordinates and move tables of the 3x3x3 two-phase solver agree with the cube model."""

from __future__ import annotations

import numpy as np
import pytest

from robocell.common.cube import CubieState, apply_to_cubies, random_cubie_state
from robocell.services.solver.cube3 import coord
from robocell.services.solver.cube3.defs import (
    N_CORNERS,
    N_FLIP,
    N_MOVE,
    N_SLICE_SORTED,
    N_TWIST,
    PHASE2_MOVES,
)
from robocell.services.solver.cube3.moves import index_of_move, move_of_index
from robocell.services.solver.cube3.tables import load_tables


def coordinates(state: CubieState) -> dict[str, int]:
    co = state.corner_twist.astype(np.int8)
    eo = state.edge_flip.astype(np.int8)
    ep = state.edge_perm.astype(np.int8)
    cp = state.corner_perm.astype(np.int8)
    return {"twist": coord.get_twist(co), "flip": coord.get_flip(eo),
            "slice": coord.get_slice(ep), "slice_sorted": coord.get_slice_sorted(ep),
            "corners": coord.get_corners(cp)}


def test_solved_cube_has_every_coordinate_zero() -> None:
    assert set(coordinates(CubieState.solved(3)).values()) == {0}


@pytest.mark.parametrize("value", [0, 1, 1093, N_TWIST - 1])
def test_twist_round_trip(value: int) -> None:
    co = np.zeros(8, np.int8)
    coord.set_twist(co, value)
    assert co.sum() % 3 == 0 and coord.get_twist(co) == value


@pytest.mark.parametrize("value", [0, 1, 1000, N_FLIP - 1])
def test_flip_round_trip(value: int) -> None:
    eo = np.zeros(12, np.int8)
    coord.set_flip(eo, value)
    assert eo.sum() % 2 == 0 and coord.get_flip(eo) == value


def test_slice_sorted_round_trip_over_every_value() -> None:
    ep = np.zeros(12, np.int8)
    for value in range(N_SLICE_SORTED):
        coord.set_slice_sorted(ep, value)
        assert sorted(ep) == list(range(12))
        assert coord.get_slice_sorted(ep) == value


def test_permutation_rank_round_trip() -> None:
    cp = np.zeros(8, np.int8)
    for value in range(0, N_CORNERS, 97):
        coord.set_corners(cp, value)
        assert coord.get_corners(cp) == value


def test_move_numbering_round_trip() -> None:
    assert [index_of_move(move_of_index(i)) for i in range(N_MOVE)] == list(range(N_MOVE))
    assert [str(move_of_index(i)) for i in PHASE2_MOVES] == [
        "U", "U2", "U'", "R2", "F2", "D", "D2", "D'", "L2", "B2"]


def test_move_tables_match_the_cube_model_on_random_states() -> None:
    tables = load_tables()
    rng = np.random.default_rng(5)
    for _ in range(40):
        state = random_cubie_state(3, rng)
        before = coordinates(state)
        for m in range(N_MOVE):
            after = coordinates(apply_to_cubies(state, [move_of_index(m)]))
            assert tables.twist_move[before["twist"], m] == after["twist"]
            assert tables.flip_move[before["flip"], m] == after["flip"]
            assert tables.slice_sorted_move[before["slice_sorted"], m] == after["slice_sorted"]
            assert tables.slice_move[before["slice"], m] == after["slice"]
            assert tables.corners_move[before["corners"], m] == after["corners"]


def test_phase2_tables_match_the_cube_model_inside_g1() -> None:
    tables = load_tables()
    rng = np.random.default_rng(6)
    state = CubieState.solved(3)
    for _ in range(200):
        m = int(rng.choice(PHASE2_MOVES))
        ud = coord.get_ud_edges(state.edge_perm.astype(np.int8))
        perm = coord.get_slice_perm(state.edge_perm.astype(np.int8))
        state = apply_to_cubies(state, [move_of_index(m)])
        assert tables.ud_edges_move[ud, m] == coord.get_ud_edges(state.edge_perm.astype(np.int8))
        assert tables.slice_sorted_move[perm, m] == coord.get_slice_perm(
            state.edge_perm.astype(np.int8))
