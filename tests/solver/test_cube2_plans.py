"""2x2x2 plans for any declared robot: replayed on the cube model they solve, obey
sequencing, and are optimal (checked against exhaustive searches that use no table)."""

import heapq

import numpy as np
import pytest

from robocell.common.cube import (
    apply_to_facelets,
    corner_facelets,
    invert_moves,
    parse_moves,
    random_facelets,
    solved,
)
from robocell.common.facelets import OPPOSITE_FACE, is_solved_any_orientation
from robocell.common.profile import Profile, load_profile, parse_profile
from robocell.services.solver.api import solve
from robocell.services.solver.cube2.robot import ProfileNotSupported, compile_profile
from robocell.services.solver.cube2.solver import solve_2x2

REPLAYS = {"htm": 1000, "qtm": 1000, "soltvvo-2x2": 3000}
EXHAUSTIVE_DEPTH = {"htm": 4, "qtm": 5}
HTM_TURNS = [f"{face}{suffix}" for face in "URFDLB" for suffix in ("", "'", "2")]
QTM_TURNS = [f"{face}{suffix}" for face in "URFDLB" for suffix in ("", "'")]
SHORT_CASES = 30
ORIENTATIONS = ("", "x", "y'", "z2", "x y", "z' x2")
DBL = 6
"""Corner position DBL in kociemba order."""
STICKERS_PER_FACE = 4


def orientation_free_key(facelets: str) -> str:
    """The facelet string recoloured so that the corner at DBL shows D, B, L: equal for two
    cubes exactly when one is the other with the colours of a rotated solved cube."""
    d, b, l = (facelets[i] for i in corner_facelets(2)[DBL])
    colour = {d: "D", OPPOSITE_FACE[d]: "U", b: "B", OPPOSITE_FACE[b]: "F",
              l: "L", OPPOSITE_FACE[l]: "R"}
    return "".join(colour[c] for c in facelets)


def least_robot_cost(facelets: str, profile: Profile, bound: float) -> float | None:
    """Uniform-cost search over (cube, last group) with the profile's primitives applied to
    the facelet string: the least cost to any solved orientation, None if above ``bound``.
    States are popped cheapest first, so the first solved one is optimal."""
    alternate = profile.sequencing == "alternate-groups"
    steps = [(list(p.moves), p.cost, p.group if alternate else None)
             for p in profile.primitives]
    queue: list[tuple[float, int, str, str | None]] = [(0.0, 0, facelets, None)]
    best: dict[tuple[str, str | None], float] = {}
    counter = 1
    while queue:
        cost, _, cube, group = heapq.heappop(queue)
        if is_solved_any_orientation(cube):
            return cost
        if best.get((orientation_free_key(cube), group), float("inf")) < cost:
            continue
        for moves, step_cost, step_group in steps:
            if alternate and step_group == group:
                continue
            after = apply_to_facelets(cube, moves)
            new_cost = cost + step_cost
            key = (orientation_free_key(after), step_group)
            if new_cost <= bound + 1e-9 and new_cost < best.get(key, float("inf")):
                best[key] = new_cost
                heapq.heappush(queue, (new_cost, counter, after, step_group))
                counter += 1
    return None


@pytest.mark.parametrize("profile_name", list(REPLAYS))
def test_random_plans_replayed_primitive_by_primitive_solve_the_cube(profile_name):
    profile = load_profile(profile_name)
    costs = []
    for seed in range(REPLAYS[profile_name]):
        facelets = random_facelets(2, 10_000 + seed)
        plan = solve(facelets, profile_name)
        cube = facelets
        total = 0.0
        last_group = None
        for name in plan.primitives:
            primitive = profile.primitive(name)
            if profile.sequencing == "alternate-groups":
                assert primitive.group != last_group, (facelets, plan.primitives)
                last_group = primitive.group
            cube = apply_to_facelets(cube, list(primitive.moves))
            total += primitive.cost
        assert is_solved_any_orientation(cube), (facelets, plan.primitives)
        assert apply_to_facelets(facelets, plan.moves) == cube
        assert plan.cost == pytest.approx(total)
        assert plan.cost_ms == pytest.approx(total * profile.unit_ms)
        assert plan.optimal
        costs.append(plan.cost)
    if profile_name == "htm":
        assert max(costs) <= 11  # God's number
    if profile_name == "qtm":
        assert max(costs) <= 14


def _classes_by_distance(turn_texts: list[str], depth: int) -> dict[str, int]:
    """Breadth-first search over facelet strings up to ``depth`` turns, keyed up to
    orientation: the exact distance of every class within that radius."""
    turns = [parse_moves(t) for t in turn_texts]
    start = solved(2)
    distance = {orientation_free_key(start): 0}
    frontier = [start]
    for d in range(1, depth + 1):
        nxt = []
        for cube in frontier:
            for turn in turns:
                after = apply_to_facelets(cube, turn)
                key = orientation_free_key(after)
                if key not in distance:
                    distance[key] = d
                    nxt.append(after)
        frontier = nxt
    return distance


@pytest.mark.parametrize("profile_name, turns", [("htm", HTM_TURNS), ("qtm", QTM_TURNS)])
def test_metric_plans_match_an_exhaustive_search_of_all_short_cases(profile_name, turns):
    depth = EXHAUSTIVE_DEPTH[profile_name]
    distance = _classes_by_distance(turns, depth)
    for key, d in distance.items():
        # the recoloured key is itself a cube: as it sits, its plan must be d turns long
        assert solve(key, profile_name).cost == d, key
    for seed in range(300):
        facelets = random_facelets(2, 50_000 + seed)
        cost = solve(facelets, profile_name).cost
        assert (cost <= depth) == (orientation_free_key(facelets) in distance)


@pytest.mark.slow
def test_reference_robot_plans_match_an_exhaustive_search_on_short_cases():
    profile = load_profile("soltvvo-2x2")
    rng = np.random.default_rng(11)
    for case in range(SHORT_CASES):
        # undo a random alternating sequence of 1-4 twists from a solved cube in a random
        # orientation: that sequence solves it, so the optimum is small and searchable
        cube = apply_to_facelets(solved(2), ORIENTATIONS[case % len(ORIENTATIONS)])
        sequence = []
        group = None
        for _ in range(int(rng.integers(1, 5))):
            choices = [p for p in profile.primitives if p.group != group]
            primitive = choices[int(rng.integers(len(choices)))]
            sequence.append(primitive)
            group = primitive.group
        moves = [m for p in sequence for m in p.moves]
        cube = apply_to_facelets(cube, invert_moves(moves))
        plan = solve(cube, "soltvvo-2x2")
        assert plan.cost <= sum(p.cost for p in sequence)
        # uniform-cost search pops states cheapest first: its first solved state is optimal
        assert least_robot_cost(cube, profile, plan.cost) == plan.cost, cube


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


@pytest.mark.slow
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


TWO_GENERATOR_ROBOT = """
name = "ru-2x2"
puzzle = "2x2"
unit_ms = 50
[[primitives]]
name = "R"
moves = "R"
cost = 1
[[primitives]]
name = "R'"
moves = "R'"
cost = 1
[[primitives]]
name = "U"
moves = "U"
cost = 1
[[primitives]]
name = "U'"
moves = "U'"
cost = 1
"""
TWO_GENERATOR_GROUP_ORDER = 29_160
"""Published size of the <R, U> group of the 2x2x2."""


def test_a_robot_that_cannot_reach_every_state_says_so(tmp_path, monkeypatch):
    from robocell.services.solver.cube2.solver import UnsolvableForRobot, plan_costs

    monkeypatch.setenv("ROBOCELL_TABLES", str(tmp_path))
    robot = parse_profile(TWO_GENERATOR_ROBOT, tmp_path / "ru-2x2.toml")
    costs, _ = plan_costs(robot)
    assert np.count_nonzero(costs >= 0) == TWO_GENERATOR_GROUP_ORDER
    scrambled = apply_to_facelets(solved(2), "x R U' R' U2 R")
    plan = solve_2x2(scrambled, robot)
    assert is_solved_any_orientation(apply_to_facelets(scrambled, plan.moves))
    assert plan.cost <= 6  # R U' R' U2 R undone by quarter turns
    with pytest.raises(UnsolvableForRobot, match="cannot be solved with the robot"):
        solve_2x2(apply_to_facelets(solved(2), "F"), robot)
