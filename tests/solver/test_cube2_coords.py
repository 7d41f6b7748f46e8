"""Rotation classes of the 2x2x2: coordinates round-trip and ignore whole-cube orientation."""

import numpy as np
import pytest

from robocell.common.cube import apply_to_facelets, from_facelets, random_cubie_state, solved
from robocell.common.profile import load_profile
from robocell.services.solver.cube2.coords import (
    N_STATES,
    SOLVED,
    normal_coordinate,
    normal_state,
    normalisers,
    rotations,
)
from robocell.services.solver.cube2.robot import compile_profile

ROTATION_TEXTS = ("", "x", "y", "z", "x y", "x2", "y' z", "z2 x'")


def coordinate(facelets: str) -> int:
    state = from_facelets(facelets)
    return int(normal_coordinate(state.corner_perm, state.corner_twist, *normalisers()))


def test_solved_cube_is_class_zero_in_all_24_orientations():
    rot_cp, rot_co = rotations()
    assert len({rot_cp[r].tobytes() + rot_co[r].tobytes() for r in range(24)}) == 24
    for r in range(24):
        assert normal_coordinate(rot_cp[r], rot_co[r], *normalisers()) == SOLVED


def test_coordinates_round_trip_through_the_normal_state():
    rng = np.random.default_rng(7)
    cp = np.empty(8, dtype=np.int8)
    co = np.empty(8, dtype=np.int8)
    for coord in [0, 1, 728, 729, N_STATES - 1, *rng.integers(0, N_STATES, 2000).tolist()]:
        normal_state(coord, cp, co)
        assert sorted(cp.tolist()) == list(range(8))
        assert cp[6] == 6 and co[6] == 0 and co.sum() % 3 == 0
        assert normal_coordinate(cp, co, *normalisers()) == coord


def test_every_class_gets_a_distinct_coordinate():
    seen = set()
    cp = np.empty(8, dtype=np.int8)
    co = np.empty(8, dtype=np.int8)
    for coord in range(0, N_STATES, 97):
        normal_state(coord, cp, co)
        seen.add(cp.tobytes() + co.tobytes())
    assert len(seen) == len(range(0, N_STATES, 97))


@pytest.mark.parametrize("seed", range(20))
def test_recolouring_by_a_rotation_keeps_the_class(seed):
    facelets = random_cubie_state(2, seed).to_facelets()
    rot_cp, rot_co = rotations()
    state = from_facelets(facelets)
    base = coordinate(facelets)
    for r in range(24):
        cp = rot_cp[r][state.corner_perm]
        co = (rot_co[r][state.corner_perm] + state.corner_twist) % 3
        assert normal_coordinate(cp.astype(np.int8), co.astype(np.int8),
                                 *normalisers()) == base


def test_turning_the_whole_cube_changes_the_robot_frame_class():
    # the same cube put into the robot in another orientation is another robot-frame state
    facelets = apply_to_facelets(solved(2), "R U F'")
    classes = {coordinate(apply_to_facelets(facelets, text)) for text in ROTATION_TEXTS}
    assert len(classes) > 1


def test_the_reference_robot_has_the_pair_swapping_symmetry():
    model = compile_profile(load_profile("soltvvo-2x2"))
    # identity and the half turn about the BR-FL edge axis; the R/L and B/F states share a table
    assert model.symmetries == 2
    assert model.n_states == 2 and model.n_tables == 1
    assert model.table_of_state.tolist() == [0, 0]
    htm = compile_profile(load_profile("htm"))
    assert htm.symmetries == 24 and htm.n_tables == 1
