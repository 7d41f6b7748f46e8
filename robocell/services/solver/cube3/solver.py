"""The 3x3x3 solver: a cube and a robot profile -> the plan (face turns and primitives).

For the half-turn metric the plan is the shortest solution the two-phase search finds within
the budget. For any other profile (a robot, or the quarter-turn metric) the search runs in
the robot's own time (`robocell.services.solver.cube3.robot_time`): it starts from the first
face-turn solution, priced by the motion compiler, and keeps finding cheaper ones until the
budget is spent; the motion compiler then turns the cheapest into the robot's primitives (at
the cost the search computed: ``stats["search_cost"]``). For such profiles the plan's
``moves`` are what the robot does in its own frame (whole-cube rotations included); the
face-turn solution is in ``stats["face_turns"]``. When a table budget leaves out the
robot-time search's tables (`robocell.services.solver.table_groups.choose_tables`), the plan
is the cheapest, as the motion compiler prices them, of the face-turn candidates
(`solve_state` with a ``cost_function``): the two-phase tables alone.

`solve_state` with a ``cost_function`` is the earlier way, kept for comparison: collect
face-turn solutions up to ``ROBOT_LENGTH_SLACK`` moves longer than the shortest and keep the
one the motion compiler prices cheapest.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cache

from robocell.common.cubie import CubieState, from_facelets
from robocell.common.facelets import is_solved_any_orientation, puzzle_name, solved
from robocell.common.moves import apply_to_cubies, apply_to_facelets
from robocell.common.notation import Move, format_moves
from robocell.common.profile import Profile, load_profile
from robocell.common.scramble import random_cubie_state
from robocell.services.solver.cube3.moves import move_of_index
from robocell.services.solver.cube3.search import TwoPhaseSearch
from robocell.services.solver.solution import Solution

DEFAULT_TIMEOUT_S = 0.1
"""Search budget for the move-count metric when none is given (about 19.2 moves on
average; timeout=0 returns the first solution, about 20.7 moves in a millisecond or two)."""
DEFAULT_ROBOT_TIMEOUT_S = 0.5
"""Search budget for robot profiles: a robot takes seconds to execute a plan, so half a
second spent comparing candidates is well spent."""
ROBOT_LENGTH_SLACK = 2
"""Candidates for a robot profile may be this many moves longer than the shortest found."""

CostFunction = Callable[[list[Move]], tuple[list[str], float]]


def is_move_count_metric(profile: Profile) -> bool:
    """True when the profile's cost is the number of face turns (htm): then the shortest
    solution is the cheapest and no candidates need pricing."""
    return _counts_moves(tuple((p.moves, p.cost) for p in profile.primitives))


@cache
def _counts_moves(primitives: tuple[tuple[tuple[Move, ...], float], ...]) -> bool:
    if any(len(moves) != 1 for moves, _ in primitives):
        return False
    costs = {moves[0]: cost for moves, cost in primitives}
    turns = [move_of_index(i) for i in range(18)]
    return all(m in costs for m in turns) and len({costs[m] for m in turns}) == 1


def robot_cost_function(profile: Profile) -> CostFunction:
    """The motion compiler for a profile: moves -> (primitive names, cost in units)."""
    try:
        # lazy and guarded: an installation may leave out the motion compiler (below)
        from robocell.services.solver.cube3.motion_compiler import compile_plan
    except ModuleNotFoundError as exc:
        raise ValueError(
            f"profile {profile.name} needs the 3x3 motion compiler "
            "(robocell.services.solver.cube3.motion_compiler), which is not installed; use "
            "--profile htm or install the full robocell package") from exc
    compile_plan([Move("U", 1)], profile)  # build the compiler's tables before the clock starts
    return lambda moves: compile_plan(moves, profile)


@cache
def warm_up() -> None:
    """Load the tables and compile (or load from numba's cache) the search, once."""
    TwoPhaseSearch(random_cubie_state(3, 0)).run(timeout=0.0)


def solve_state(state: CubieState, max_length: int | None = None, timeout: float | None = None,
                cost_function: CostFunction | None = None,
                keep_within: int = ROBOT_LENGTH_SLACK,
                part: tuple[int, int] = (0, 1)) -> tuple[list[Move], list[str], float, dict]:
    """Search and choose: (moves, primitives, cost, stats). Without ``cost_function`` the
    shortest solution (primitives = move names, cost = length); with it the cheapest of all
    candidates found within the budget. ``part`` = (k, n): this process's share of a search
    split over n processes (see `TwoPhaseSearch`)."""
    warm_up()  # first: a caller warming up with the solved cube gets the search ready too
    if state.is_solved():
        return [], [], 0.0, {"candidates": 0, "nodes": 0, "optimal": True}
    search = TwoPhaseSearch(state, part=part)
    if cost_function is None:
        budget = DEFAULT_TIMEOUT_S if timeout is None else timeout
        result = search.run(timeout=budget, max_length=max_length)
        moves = result.solutions[-1]
        stats = {"candidates": len(result.solutions), "nodes": result.nodes,
                 "optimal": result.exhausted,
                 "found_ms": [round(1000 * s, 3) for s in result.found_s]}
        return moves, [str(m) for m in moves], float(len(moves)), stats
    budget = DEFAULT_ROBOT_TIMEOUT_S if timeout is None else timeout
    seen: set[tuple[Move, ...]] = set()
    best: tuple[float, list[Move], list[str]] | None = None
    shortest: tuple[int, float] | None = None
    for moves in search.solutions(timeout=budget, max_length=max_length,
                                  keep_within=keep_within):
        key = tuple(moves)
        if key in seen:
            continue
        seen.add(key)
        primitives, cost = cost_function(moves)
        if best is None or cost < best[0]:
            best = (cost, moves, primitives)
        if shortest is None or len(moves) < shortest[0] or (
                len(moves) == shortest[0] and cost < shortest[1]):
            shortest = (len(moves), cost)
    assert best is not None and shortest is not None
    stats = {"candidates": len(seen), "nodes": search.nodes, "optimal": False,
             "shortest_length": shortest[0], "shortest_cost": shortest[1]}
    return best[1], best[2], best[0], stats


_WARM_PROFILES: set[tuple[str, str]] = set()
SEED_SHARE = {"one-state": 0.0, "re-orienting": 0.9}
"""Share of the budget spent collecting face-turn candidates (the motion compiler pricing
each) to start the robot-time search from: a good start prunes most of the search. Measured
on a 2-core machine, one process, six-motor at 50 ms a cube, mean robot units over 60 cubes,
since phase 2 has its own bound: 0 -> 216.2, 0.2 -> 216.1, 0.3 -> 213.1 and 215.2 (other
cubes), 0.5 -> 215.6, 0.8 -> 217.7 and 218.1 (other cubes). tilt-spin at 500 ms, one process: 12
cubes 0 -> 3,654, 0.5 -> 3,326, 1.0 -> 3,293; 30 cubes 0.5 -> 3,334, 0.7 -> 3,324, 0.9 and
1.0 -> 3,318; 60 other cubes 0.5 -> 3,319, 0.9 -> 3,290 (its bounds are weak: the candidates
the motion compiler prices find more there than the robot-time search does). Since the search
reads the profile's full phase-1 and phase-2 tables (`robot_time.cost_tables`), six-motor at
50 ms, 40 cubes: 0.3 -> 209.5, 0.1 -> 209.6, 0 -> 207.6: candidates no longer pay for one-state
robots."""


SEED_CAP_S = {"one-state": 0.04, "re-orienting": None}
"""Longest the candidates may take (None: no cap): past a start this good, the robot-time
search pays better."""


def seed_seconds(profile: Profile, budget: float) -> float:
    """Seconds of `SEED_SHARE` (at most `SEED_CAP_S`) for the profile's kind of robot."""
    # lazy and guarded as in robot_cost_function
    from robocell.services.solver.cube3.robot_time.profile_costs import profile_costs

    kind = "one-state" if profile_costs(profile).cost.shape[1] == 1 else "re-orienting"
    seconds = max(0.0, budget) * SEED_SHARE[kind]
    cap = SEED_CAP_S[kind]
    return seconds if cap is None else min(seconds, cap)


def solve_robot_time(state: CubieState, profile: Profile, timeout: float | None = None,
                     part: tuple[int, int] = (0, 1)
                     ) -> tuple[list[Move], list[str], float, dict]:
    """Search in the robot's time (see the module docstring): (face turns, primitives, cost,
    stats). The budget counts from the call; at least one solution comes back."""
    # lazy and guarded as in robot_cost_function: an installation may leave out the compiler
    from robocell.services.solver.cube3.motion_compiler import compile_plan
    from robocell.services.solver.cube3.robot_time.driver import RobotTimeSearch

    started = time.perf_counter()
    warm_up()
    key = (profile.name, profile.content_hash)
    if key not in _WARM_PROFILES:
        # the profile's tables and the numba search, once, before any clock matters
        for _ in RobotTimeSearch(random_cubie_state(3, 0), profile).solutions(0.0):
            break
        _WARM_PROFILES.add(key)
        started = time.perf_counter()
    if state.is_solved():
        return [], [], 0.0, {"candidates": 0, "nodes": 0, "optimal": True, "search_cost": 0.0}
    budget = DEFAULT_ROBOT_TIMEOUT_S if timeout is None else timeout
    first = TwoPhaseSearch(state, part=part)
    moves = first.run(timeout=0.0).solutions[-1]
    primitives, cost = compile_plan(moves, profile)
    first_cost, first_length = cost, len(moves)
    seed_s = seed_seconds(profile, budget)
    if seed_s > 0:
        # a start as good as the face-turn candidates give: every later bound is tighter
        moves, primitives, cost, _ = solve_state(
            state, None, seed_s, lambda m: compile_plan(m, profile), part=part)
    search = RobotTimeSearch(state, profile, part=part)
    found = 1
    left = budget - (time.perf_counter() - started)
    if budget > 0:  # a zero budget asks for the first solution
        for better, search_cost in search.solutions(max(0.0, left), best=cost):
            moves, cost = better, search_cost
            found += 1
    if found > 1:
        primitives, compiled = compile_plan(moves, profile)
        if abs(compiled - cost) > 1e-6:
            raise RuntimeError(f"internal error: the search priced {moves} at {cost}, the "
                               f"motion compiler at {compiled}")
    stats = {"candidates": found, "nodes": search.nodes + first.nodes,
             "optimal": False, "exhausted": search.exhausted, "search_cost": cost,
             "first_cost": first_cost,
             # the face-turn search's solution the robot-time search started from
             "shortest_length": first_length, "shortest_cost": first_cost,
             "bound": "axial" if search.costs.axial else "face turns"}
    return moves, primitives, cost, stats


def robot_time_allowed(profile: Profile) -> bool:
    """True unless a table budget leaves out the robot-time search's tables (or an
    installation leaves out the robot-time search)."""
    try:
        # lazy and guarded as in robot_cost_function
        from robocell.services.solver.cube3.robot_time.cost_tables import (
            robot_time_allowed as allowed,
        )
    except ModuleNotFoundError:
        return False
    return allowed(profile)


def solve_3x3(facelets: str, profile: Profile | str, max_length: int | None = None,
              timeout: float | None = None, part: tuple[int, int] = (0, 1)) -> Solution:
    """Plan for a validated 3x3x3 facelet string, centres in U R F D L B order (the caller
    validates, as `robocell.services.solver.api.solve` does).

    ``timeout``: search budget in seconds (default: the profile's ``search_budget_ms``, else
    `DEFAULT_TIMEOUT_S`, for robot profiles `DEFAULT_ROBOT_TIMEOUT_S`; 0 = the first
    solution). ``max_length``: for the move-count metric, stop as soon as a solution this
    short is found. The search always returns at least one solution, even past the budget.
    ``part`` = (k, n): search only this process's share of the directions (`TwoPhaseSearch`).
    """
    started = time.perf_counter()
    chosen = load_profile(profile) if isinstance(profile, str) else profile
    state = from_facelets(facelets)
    cost_function = None if is_move_count_metric(chosen) else robot_cost_function(chosen)
    if timeout is None:
        timeout = chosen.search_budget_s
    if cost_function is None:
        moves, primitives, cost, stats = solve_state(state, max_length, timeout, part=part)
    elif not robot_time_allowed(chosen):
        # a table budget leaves out the robot-time search's tables: the motion compiler
        # re-ranks the face-turn search's candidates instead (the two-phase tables alone)
        moves, primitives, cost, stats = solve_state(
            state, max_length, DEFAULT_ROBOT_TIMEOUT_S if timeout is None else timeout,
            cost_function, part=part)
        stats["tables"] = "two-phase, re-ranked"
    else:
        moves, primitives, cost, stats = solve_robot_time(state, chosen, timeout, part=part)
        stats["tables"] = "robot-time"
    if not apply_to_cubies(state, moves).is_solved():
        raise RuntimeError(f"internal error: solution {moves} does not solve {facelets}")
    if cost_function is None:
        cost = sum(chosen.primitive(p).cost for p in primitives)
    else:
        # the plan's moves are what the robot does, in its frame (rotations included); lazy,
        # as in robot_cost_function (which has run): the motion compiler may be left out
        from robocell.services.solver.cube3.motion_compiler import primitive_moves

        stats["face_turns"] = format_moves(moves)
        stats["face_turn_count"] = len(moves)
        moves = primitive_moves(primitives, chosen)
        if not _solved_in_some_orientation(apply_to_facelets(facelets, moves),
                                           chosen.solved_any_orientation):
            raise RuntimeError(f"internal error: primitives {primitives} of profile "
                               f"{chosen.name} do not solve {facelets}")
    return Solution(puzzle=puzzle_name(3), profile=chosen.name, facelets=facelets,
                primitives=primitives, moves=moves, cost=cost, cost_ms=chosen.cost_ms(cost),
                solve_ms=1000 * (time.perf_counter() - started),
                optimal=bool(stats.pop("optimal")) and cost_function is None, stats=stats)


def _solved_in_some_orientation(facelets: str, any_orientation: bool) -> bool:
    return is_solved_any_orientation(facelets) if any_orientation else facelets == solved(3)
