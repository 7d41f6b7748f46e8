"""Motion compiler for 3x3 robots: plans replay to the same cube, are optimal, fail clearly."""

from __future__ import annotations

import heapq

import numpy as np
import pytest

from robocell.common.facelets import solved
from robocell.common.moves import apply_to_facelets
from robocell.common.notation import Move, parse_moves
from robocell.common.profile import Profile, load_profile, parse_profile
from robocell.common.scramble import random_facelets
from robocell.services.solver.cube3.motion_compiler import (
    MotionCompileError,
    compile_plan,
    primitive_effect,
    primitive_moves,
    sequence_blocks,
)

ROBOT_PROFILES = ("six-motor", "tilt-spin")
FACE_TURNS = [Move(face, turns) for face in "URFDLB" for turns in (1, 2, 3)]
WHOLE_CUBE_ROTATIONS = [[]] + [parse_moves(text) for text in (
    "y", "y2", "y'", "x", "x y", "x y2", "x y'", "x2", "x2 y", "x2 y2", "x2 y'", "x'",
    "x' y", "x' y2", "x' y'", "z", "z y", "z y2", "z y'", "z'", "z' y", "z' y2", "z' y'")]


def random_moves(rng: np.random.Generator, n: int) -> list[Move]:
    """Any face turns, repeats and same-axis runs included (harder than a solver's output)."""
    return [FACE_TURNS[i] for i in rng.integers(0, len(FACE_TURNS), n)]


def canonical_moves(rng: np.random.Generator, n: int) -> list[Move]:
    """Face turns as a solver returns them: no face twice in a row, no axis three times in a
    row, opposite faces in the order U R F before D L B."""
    moves: list[Move] = []
    while len(moves) < n:
        move = FACE_TURNS[rng.integers(0, len(FACE_TURNS))]
        if moves:
            last = moves[-1]
            if last.axis == move.axis and "URFDLB".index(last.name) >= "URFDLB".index(move.name):
                continue
            if len(moves) >= 2 and moves[-2].axis == last.axis == move.axis:
                continue
        moves.append(move)
    return moves


def replay(facelets: str, primitives: list[str], profile: Profile) -> str:
    """Apply each primitive's own moves (robot frame, rotations included) in order."""
    for name in primitives:
        facelets = apply_to_facelets(facelets, list(profile.primitive(name).moves))
    return facelets


def orientations_of(facelets: str) -> set[str]:
    """The cube in each of its 24 whole-cube orientations."""
    return {apply_to_facelets(facelets, rotation) for rotation in WHOLE_CUBE_ROTATIONS}


def same_up_to_rotation(a: str, b: str) -> bool:
    return b in orientations_of(a)


@pytest.mark.parametrize("name", ROBOT_PROFILES)
def test_compiled_plan_replays_to_the_same_cube_relative_to_centres(name):
    profile = load_profile(name)
    rng = np.random.default_rng(5)
    for trial in range(40):
        start = random_facelets(3, rng)
        moves = random_moves(rng, int(rng.integers(0, 25)))
        primitives, cost = compile_plan(moves, profile)
        expected = apply_to_facelets(start, moves)
        replayed = replay(start, primitives, profile)
        assert same_up_to_rotation(replayed, expected), (trial, moves)
        assert apply_to_facelets(start, primitive_moves(primitives, profile)) == replayed
        assert cost == pytest.approx(sum(profile.primitive(p).cost for p in primitives))


def test_tilt_spin_turns_only_the_bottom_layer_and_reorients_for_the_rest():
    profile = load_profile("tilt-spin")
    primitives, _ = compile_plan(parse_moves("R"), profile)
    turns = [p for p in primitives if p.startswith("turn")]
    assert turns == ["turn"]
    assert any(p in ("tilt", "spin", "spin'", "spin2") for p in primitives)
    # D needs no re-orienting at all
    assert compile_plan(parse_moves("D2"), profile) == (["turn2"], 100.0)


def test_profile_that_must_end_in_the_start_orientation_does():
    text = load_profile("tilt-spin").path.read_text().replace(
        "solved_any_orientation = true", "solved_any_orientation = false")
    fixed = parse_profile(text, "tilt-spin.toml")
    free = load_profile("tilt-spin")
    rng = np.random.default_rng(9)
    for _ in range(10):
        start = random_facelets(3, rng)
        moves = random_moves(rng, 8)
        primitives, cost = compile_plan(moves, fixed)
        assert replay(start, primitives, fixed) == apply_to_facelets(start, moves)
        assert cost >= compile_plan(moves, free)[1]


def brute_force_cost(moves: list[Move], profile: Profile, bound: float) -> float:
    """Least cost of any primitive sequence reaching the cube ``moves`` give (relative to
    centres), found by uniform-cost search over whole cube states; ``inf`` when nothing
    costs less than ``bound``."""
    targets = orientations_of(apply_to_facelets(solved(3), moves))
    start = solved(3)
    best = {start: 0.0}
    queue = [(0.0, start)]
    while queue:
        cost, state = heapq.heappop(queue)
        if cost > best.get(state, np.inf):
            continue
        if state in targets:
            return cost
        for prim in profile.primitives:
            new_cost = cost + prim.cost
            if new_cost > bound:
                continue
            nxt = apply_to_facelets(state, list(prim.moves))
            if new_cost < best.get(nxt, np.inf):
                best[nxt] = new_cost
                heapq.heappush(queue, (new_cost, nxt))
    return np.inf


@pytest.mark.parametrize("name, n_moves, n_trials", [
    ("six-motor", 1, 18), ("six-motor", 2, 12), ("six-motor", 3, 6),
    ("tilt-spin", 1, 18), ("tilt-spin", 2, 8), ("tilt-spin", 3, 3)])
def test_compiled_cost_equals_brute_force_optimum(name, n_moves, n_trials):
    profile = load_profile(name)
    rng = np.random.default_rng(n_moves)
    for _ in range(n_trials):
        moves = random_moves(rng, n_moves)
        _, cost = compile_plan(moves, profile)
        assert brute_force_cost(moves, profile, bound=cost) == pytest.approx(cost), moves


def test_axial_pairs_merge_even_when_separated_by_moves_of_the_same_axis():
    profile = load_profile("six-motor")
    assert compile_plan(parse_moves("R L'"), profile) == (["R+L'"], 10.0)
    # R L R = R2 L: one axial move costing the half turn
    assert compile_plan(parse_moves("R L R"), profile) == (["R2+L"], 17.0)
    assert compile_plan(parse_moves("U D2 U'"), profile) == (["D2"], 17.0)
    # another axis in between: nothing to merge
    names, cost = compile_plan(parse_moves("R U L"), profile)
    assert names == ["R", "U", "L"] and cost == 30.0


def test_moves_that_cancel_let_their_neighbours_merge():
    kinds, members = sequence_blocks(parse_moves("R U U' L"))
    assert len(kinds) == 1 and members == [[0, 3]]
    assert compile_plan(parse_moves("R U U' L"), load_profile("six-motor")) == (["R+L"], 10.0)


@pytest.mark.parametrize("name, per_move", [("htm", lambda m: 1), ("qtm", lambda m: 1 + (
    m.quarter_turns == 2))])
def test_metric_profile_cost_is_the_move_count(name, per_move):
    profile = load_profile(name)
    rng = np.random.default_rng(3)
    for _ in range(50):
        moves = canonical_moves(rng, int(rng.integers(0, 30)))
        primitives, cost = compile_plan(moves, profile)
        assert cost == sum(per_move(m) for m in moves)
        assert replay(solved(3), primitives, profile) == apply_to_facelets(solved(3), moves)


def test_htm_plan_is_the_sequence_itself():
    moves = parse_moves("R U2 F' D L2 B")
    assert compile_plan(moves, load_profile("htm")) == ([str(m) for m in moves], 6.0)


def test_empty_sequence_is_an_empty_plan():
    for name in ROBOT_PROFILES + ("htm",):
        assert compile_plan([], load_profile(name)) == ([], 0.0)


def test_alternating_groups_are_respected():
    profile = load_profile("soltvvo-2x2")
    sequence = parse_moves("R' B2 L' B' R2 F' R' L' B' F2")
    primitives, cost = compile_plan(sequence, profile)
    groups = [profile.primitive(p).group for p in primitives]
    assert all(a != b for a, b in zip(groups, groups[1:], strict=False))
    assert replay(solved(3), primitives, profile) == apply_to_facelets(solved(3), sequence)
    assert cost == sum(profile.primitive(p).cost for p in primitives)


NO_R_PROFILE = """
name = "u-only"
puzzle = "3x3"
unit_ms = 100
[[primitives]]
name = "U"
moves = "U"
cost = 1
[[primitives]]
name = "spin"
moves = "y"
cost = 1
"""


def test_profile_that_cannot_turn_a_face_names_the_profile_and_the_move():
    profile = parse_profile(NO_R_PROFILE, "u-only.toml")
    assert compile_plan(parse_moves("U"), profile)[1] == 1.0
    with pytest.raises(MotionCompileError, match=r"profile u-only cannot perform R' \(move 2"):
        compile_plan(parse_moves("U R' U"), profile)


def test_primitive_turning_two_axes_is_refused_with_its_name():
    text = NO_R_PROFILE.replace('moves = "U"', 'moves = "U R"')
    with pytest.raises(MotionCompileError, match="primitive 'U'.*more than one axis"):
        compile_plan(parse_moves("U"), parse_profile(text, "u-only.toml"))


def test_non_face_turn_input_is_refused():
    with pytest.raises(MotionCompileError, match=r"move 2 \(x\) is not a face turn"):
        compile_plan(parse_moves("R x"), load_profile("six-motor"))


@pytest.mark.parametrize("text, axis, first, second", [
    ("D", 0, 0, 1), ("R L'", 1, 1, 3), ("x", -1, 0, 0), ("Rw", 1, 0, 1), ("M", 1, 1, 3),
    ("x D", 2, 0, 1)])
def test_primitive_effect_is_read_off_the_cube_model(text, axis, first, second):
    effect = primitive_effect(tuple(parse_moves(text)))
    assert (effect.axis, effect.first_turns, effect.second_turns) == (axis, first, second)


def test_the_search_budget_is_read_from_the_profile_and_checked():
    from pathlib import Path

    from robocell.common.profile import ProfileError

    assert load_profile("six-motor").search_budget_s == pytest.approx(0.05)
    assert load_profile("tilt-spin").search_budget_s == pytest.approx(0.5)
    assert load_profile("htm").search_budget_s is None
    text = Path(load_profile("six-motor").path).read_text()
    for bad in ("0", "-5", '"fast"', "true"):
        edited = text.replace("search_budget_ms = 50", f"search_budget_ms = {bad}")
        with pytest.raises(ProfileError, match="search_budget_ms"):
            parse_profile(edited, Path("six-motor.toml"))


def test_a_robot_plan_searches_for_the_profiles_budget():
    from robocell.services.solver.api import solve

    plan = solve(random_facelets(3, 77), "six-motor")
    # about the profile's 50 ms (wall time: a loaded machine stretches it, never shortens it)
    assert 40 <= plan.solve_ms < 2000
    quick = solve(random_facelets(3, 77), "six-motor", timeout=0.0)
    assert quick.solve_ms < plan.solve_ms and quick.cost >= plan.cost


def test_the_robot_tables_are_stale_only_when_what_they_are_made_of_changes():
    """A new scan program or wiring keeps the 1.4 GB of search tables; a new cost does not."""
    from pathlib import Path

    from robocell.services.solver.cube3.robot_time import cost_tables

    profile = load_profile("tilt-spin")
    text = Path(profile.path).read_text()

    def groups(p: Profile) -> tuple[dict, dict]:
        return (cost_tables.table_group(p, None).params, cost_tables.moves_group(p, None).params)

    rescanned = parse_profile(text.replace('finish = []', 'finish = ["turn table:90"]')
                              .replace("enable = 38", "enable = 39"), Path("tilt-spin.toml"))
    assert rescanned.content_hash != profile.content_hash
    assert groups(rescanned) == groups(profile)
    for old, new in (("cost = 60", "cost = 61"), ('moves = "x\'"', 'moves = "x"'),
                     ("solved_any_orientation = true", "solved_any_orientation = false")):
        assert old in text
        edited = parse_profile(text.replace(old, new), Path("tilt-spin.toml"))
        assert groups(edited)[0] != groups(profile)[0], old
        assert groups(edited)[1] != groups(profile)[1], old
