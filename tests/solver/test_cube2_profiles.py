"""Any robot declared in a profile file gets optimal 2x2x2 plans, with no code of its own."""

import pytest
from cube2_support import is_solved_any_orientation, least_robot_cost

from robocell.common.cube import apply_to_facelets, random_facelets, solved
from robocell.common.profile import parse_profile
from robocell.services.solver.cube2.robot import ProfileNotSupported, compile_profile
from robocell.services.solver.cube2.solver import solve_2x2

# A tilt-and-spin robot: it only turns the bottom layer, spins the cube about the vertical
# axis and tilts it forward; fractional costs exercise the scaled integer search.
TILT_ROBOT = """
name = "tilt-2x2"
puzzle = "2x2"
unit_ms = 100
[sequencing]
rule = "none"
[[primitives]]
name = "turn"
moves = "D"
cost = 1
[[primitives]]
name = "turn'"
moves = "D'"
cost = 1
[[primitives]]
name = "turn2"
moves = "D2"
cost = 1.6
[[primitives]]
name = "spin"
moves = "y"
cost = 0.8
[[primitives]]
name = "spin'"
moves = "y'"
cost = 0.8
[[primitives]]
name = "tilt"
moves = "x"
cost = 1.5
"""


@pytest.fixture(scope="module")
def tilt_robot(tmp_path_factory):
    root = tmp_path_factory.mktemp("tables")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ROBOCELL_TABLES", str(root))
        yield parse_profile(TILT_ROBOT, root / "tilt-2x2.toml")


def test_fractional_costs_are_scaled_to_integers(tilt_robot):
    model = compile_profile(tilt_robot)
    assert model.cost_scale == 10
    assert model.prim_cost.tolist() == [10, 10, 16, 8, 8, 15]


def test_a_tilt_robot_gets_plans_that_replay_and_are_optimal(tilt_robot):
    for seed in range(150):
        facelets = random_facelets(2, 70_000 + seed)
        plan = solve_2x2(facelets, tilt_robot)
        cube = facelets
        for name in plan.primitives:
            cube = apply_to_facelets(cube, list(tilt_robot.primitive(name).moves))
        assert is_solved_any_orientation(cube)
        assert plan.cost == pytest.approx(sum(tilt_robot.primitive(n).cost
                                              for n in plan.primitives))
        assert plan.cost_ms == pytest.approx(plan.cost * 100)
    # short cases against an exhaustive uniform-cost search
    for text in ("D", "y D'", "x D2", "x y D x'", "x' D y' D'"):
        cube = apply_to_facelets(solved(2), text)
        plan = solve_2x2(cube, tilt_robot)
        assert least_robot_cost(cube, tilt_robot, plan.cost) == pytest.approx(plan.cost)


def test_unsupported_profiles_name_the_key(tmp_path):
    one_group = TILT_ROBOT.replace('rule = "none"', 'rule = "alternate-groups"').replace(
        "cost = 1\n", 'cost = 1\ngroup = "all"\n').replace(
        "cost = 1.6\n", 'cost = 1.6\ngroup = "all"\n').replace(
        "cost = 0.8\n", 'cost = 0.8\ngroup = "all"\n').replace(
        "cost = 1.5\n", 'cost = 1.5\ngroup = "all"\n')
    with pytest.raises(ProfileNotSupported, match="sequencing.rule"):
        compile_profile(parse_profile(one_group, tmp_path / "tilt-2x2.toml"))
    odd_cost = TILT_ROBOT.replace("cost = 1.6", "cost = 1.0001")
    with pytest.raises(ProfileNotSupported, match="primitives.cost"):
        compile_profile(parse_profile(odd_cost, tmp_path / "tilt-2x2.toml"))
