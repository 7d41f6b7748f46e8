"""2x2x2 plans: replayed on the cube model they solve, obey sequencing, and are optimal."""


import numpy as np
import pytest
from cube2_support import is_solved_any_orientation, least_robot_cost, orientation_free_key

from robocell.common.cube import (
    apply_to_facelets,
    invert_moves,
    parse_moves,
    random_facelets,
    solved,
)
from robocell.common.profile import load_profile
from robocell.services.solver.api import solve

REPLAYS = {"htm": 1000, "qtm": 1000, "soltvvo-2x2": 3000}
EXHAUSTIVE_DEPTH = {"htm": 4, "qtm": 5}
HTM_TURNS = [f"{face}{suffix}" for face in "URFDLB" for suffix in ("", "'", "2")]
SHORT_CASES = 30
ORIENTATIONS = ("", "x", "y'", "z2", "x y", "z' x2")
QTM_TURNS = [f"{face}{suffix}" for face in "URFDLB" for suffix in ("", "'")]


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
