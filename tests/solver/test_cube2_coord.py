"""Rotation classes of the 2x2x2: coordinates, move-transition tables, orientation ignored."""

import numpy as np
import pytest

from robocell.common.cube import apply_to_facelets, from_facelets, random_cubie_state, solved
from robocell.common.profile import load_profile
from robocell.services.solver.cube2.coord import (
    N_STATES,
    SOLVED,
    normal_coordinate,
    normalisers,
    rotations,
)
from robocell.services.solver.cube2.moves import (
    N_PERM8,
    N_TWIST7,
    class_of,
    perm8_rank,
    perm8_unrank,
    twist7_rank,
    twist7_unrank,
)
from robocell.services.solver.cube2.robot import compile_profile
from robocell.services.solver.cube2.tables import load_tables

ROTATION_TEXTS = ("", "x", "y", "z", "x y", "x2", "y' z", "z2 x'")


@pytest.fixture(scope="module")
def soltvvo_tables():
    return load_tables(load_profile("soltvvo-2x2"))


def cubie_class(cp: np.ndarray, co: np.ndarray) -> int:
    return int(normal_coordinate(cp.astype(np.int8), co.astype(np.int8), *normalisers()))


def table_class(cp: np.ndarray, co: np.ndarray, classes: dict) -> int:
    return int(class_of(perm8_rank(cp.astype(np.int8)), twist7_rank(co.astype(np.int8)),
                        classes["class_perm"], classes["class_twist_offset"],
                        classes["twist_add"]))


def test_solved_cube_is_class_zero_in_all_24_orientations(soltvvo_tables):
    classes, _ = soltvvo_tables
    rot_cp, rot_co = rotations()
    assert len({rot_cp[r].tobytes() + rot_co[r].tobytes() for r in range(24)}) == 24
    for r in range(24):
        assert cubie_class(rot_cp[r], rot_co[r]) == SOLVED
        assert table_class(rot_cp[r], rot_co[r], classes) == SOLVED


def test_robot_frame_coordinates_round_trip():
    cp = np.empty(8, dtype=np.int8)
    co = np.empty(8, dtype=np.int8)
    for perm8 in range(0, N_PERM8, 7):
        perm8_unrank(perm8, cp)
        assert sorted(cp.tolist()) == list(range(8)) and perm8_rank(cp) == perm8
    for twist7 in range(N_TWIST7):
        twist7_unrank(twist7, co)
        assert co.sum() % 3 == 0 and twist7_rank(co) == twist7


def test_class_tables_agree_with_the_cubie_level_normalisation(soltvvo_tables):
    classes, _ = soltvvo_tables
    for seed in range(3000):
        state = random_cubie_state(2, seed)
        assert (table_class(state.corner_perm, state.corner_twist, classes)
                == cubie_class(state.corner_perm, state.corner_twist))


def test_every_class_has_one_normal_member_with_dbl_home(soltvvo_tables):
    classes, _ = soltvvo_tables
    normal_perm8 = classes["normal_perm8"]
    assert len(set(normal_perm8.tolist())) == len(normal_perm8)
    cp = np.empty(8, dtype=np.int8)
    co = np.empty(8, dtype=np.int8)
    rng = np.random.default_rng(7)
    for coord in [0, 1, 728, 729, N_STATES - 1, *rng.integers(0, N_STATES, 3000).tolist()]:
        perm8 = int(normal_perm8[coord // 729])
        twist7 = (coord % 729) * 3
        perm8_unrank(perm8, cp)
        twist7_unrank(twist7, co)
        assert cp[6] == 6 and co[6] == 0
        assert cubie_class(cp, co) == coord


def test_move_tables_agree_with_cubie_multiplication(soltvvo_tables):
    _, arrays = soltvvo_tables
    model = compile_profile(load_profile("soltvvo-2x2"))
    el_cp, el_co = model.motion_cp, model.motion_co
    assert arrays["perm_moves"].shape == (len(el_cp), N_PERM8)
    for seed in range(200):
        state = random_cubie_state(2, seed)
        for m in range(len(el_cp)):
            cp = state.corner_perm[el_cp[m]]
            co = (state.corner_twist[el_cp[m]] + el_co[m]) % 3
            assert arrays["perm_moves"][m, perm8_rank(state.corner_perm)] == perm8_rank(cp)
            assert (arrays["twist_moves"][m, twist7_rank(state.corner_twist)]
                    == twist7_rank(co.astype(np.int8)))


@pytest.mark.parametrize("seed", range(20))
def test_recolouring_by_a_rotation_keeps_the_class(seed):
    state = random_cubie_state(2, seed)
    rot_cp, rot_co = rotations()
    base = cubie_class(state.corner_perm, state.corner_twist)
    for r in range(24):
        cp = rot_cp[r][state.corner_perm]
        co = (rot_co[r][state.corner_perm] + state.corner_twist) % 3
        assert cubie_class(cp, co) == base


def test_turning_the_whole_cube_changes_the_robot_frame_class():
    # the same cube put into the robot in another orientation is another robot-frame state
    facelets = apply_to_facelets(solved(2), "R U F'")
    classes = set()
    for text in ROTATION_TEXTS:
        state = from_facelets(apply_to_facelets(facelets, text))
        classes.add(cubie_class(state.corner_perm, state.corner_twist))
    assert len(classes) > 1


def test_the_reference_robot_has_the_pair_swapping_symmetry():
    model = compile_profile(load_profile("soltvvo-2x2"))
    # identity and the half turn about the BR-FL edge axis; the R/L and B/F states share a table
    assert model.symmetries == 2
    assert model.n_states == 2 and model.n_tables == 1
    assert model.table_of_state.tolist() == [0, 0]
    htm = compile_profile(load_profile("htm"))
    assert htm.symmetries == 24 and htm.n_tables == 1
