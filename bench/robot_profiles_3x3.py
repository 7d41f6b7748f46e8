"""Robot time of 3x3 plans: shortest solution versus the robot-time-best one, per robot profile.

For the same seeded random cubes, the 3x3 solver is run once per robot profile with a time
budget; among the solutions it found, the shortest (fewest face turns; the first found among
equals, what a move-count solver returns) and the one with the least robot time are compared
by their robot time, as compiled by the motion compiler. Also prints the motion compiler's
own speed (the solver calls it on every candidate).

    python bench/robot_profiles_3x3.py [--cubes 300] [--timeout 0.5] [--seed 2026]
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

import numpy as np

from robocell.common.notation import Move
from robocell.common.profile import Profile, load_profile
from robocell.common.progress import Progress
from robocell.common.scramble import random_facelets
from robocell.common.validation import validate
from robocell.services.solver.cube3 import solver as cube3_solver
from robocell.services.solver.cube3.robot import compile_plan, motion_tables

ROBOT_PROFILES = ("six-motor", "tilt-spin")
FACE_TURNS = [Move(face, turns) for face in "URFDLB" for turns in (1, 2, 3)]
SEQUENCE_LENGTH = 20
N_SPEED_SEQUENCES = 2000
TIMING_REPEATS = 3


def solver_like_sequence(rng: np.random.Generator, n: int) -> list[Move]:
    """Face turns as a solver writes them: no face twice in a row, no axis three times."""
    moves: list[Move] = []
    while len(moves) < n:
        move = FACE_TURNS[rng.integers(0, len(FACE_TURNS))]
        if moves and moves[-1].axis == move.axis and (
                "URFDLB".index(moves[-1].name) >= "URFDLB".index(move.name)
                or (len(moves) >= 2 and moves[-2].axis == move.axis)):
            continue
        moves.append(move)
    return moves


def compiler_speed(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sequences = [solver_like_sequence(rng, SEQUENCE_LENGTH) for _ in range(N_SPEED_SEQUENCES)]
    print(f"motion compiler: {N_SPEED_SEQUENCES} solver-like sequences of {SEQUENCE_LENGTH} "
          f"face turns, least of {TIMING_REPEATS} timings each")
    print(f"{'profile':<12} {'tables s':>9} {'mean us':>8} {'p50 us':>7} {'p99 us':>7} "
          f"{'primitives':>10} {'robot s':>8}")
    for name in ROBOT_PROFILES + ("htm",):
        profile = load_profile(name)
        start = time.perf_counter()
        motion_tables(profile)
        build_s = time.perf_counter() - start
        compile_plan(sequences[0], profile)  # first call: numba dispatch warm-up
        times = []
        n_primitives = []
        costs = []
        for moves in sequences:
            best_us = np.inf
            for _ in range(TIMING_REPEATS):  # the least of a few: the others' load is noise
                start = time.perf_counter()
                primitives, cost = compile_plan(moves, profile)
                best_us = min(best_us, (time.perf_counter() - start) * 1e6)
            times.append(best_us)
            n_primitives.append(len(primitives))
            costs.append(profile.cost_ms(cost) / 1000)
        p50, p99 = np.percentile(times, [50, 99])
        print(f"{name:<12} {build_s:>9.3f} {statistics.fmean(times):>8.1f} {p50:>7.1f} "
              f"{p99:>7.1f} {statistics.fmean(n_primitives):>10.1f} "
              f"{statistics.fmean(costs):>8.2f}")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cubes", type=int, default=300)
    parser.add_argument("--timeout", type=float, default=cube3_solver.DEFAULT_ROBOT_TIMEOUT_S,
                        help="solver budget per cube and plan, s (default: the solver's "
                             "budget for robot profiles)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--speed-only", action="store_true",
                        help="only the motion compiler's speed")
    args = parser.parse_args()
    compiler_speed(args.seed)
    if args.speed_only:
        return
    cubes = [random_facelets(3, np.random.default_rng([args.seed, i])) for i in range(args.cubes)]
    solver_figures(cubes, args.timeout)


@dataclass
class CubeFigures:
    """One cube, one profile: lengths and robot times (s) of the plans compared."""

    htm_length: int
    htm_robot_s: float
    shortest_length: int
    shortest_robot_s: float
    best_length: int
    best_robot_s: float
    candidates: int


def profile_figures(facelets: str, profile: Profile, timeout: float) -> CubeFigures:
    """Run the solver for ``profile`` recording every candidate it prices, and the plain
    move-count solver with the same budget."""
    priced: list[tuple[int, float]] = []

    def price(moves: list[Move]) -> tuple[list[str], float]:
        primitives, cost = compile_plan(moves, profile)
        priced.append((len(moves), cost))
        return primitives, cost

    moves, _, best_cost, _ = cube3_solver.solve_state(
        validate(facelets, 3), timeout=timeout, cost_function=price)
    # the shortest candidate, first found among equals: what a move-count solver keeps
    shortest_length = min(length for length, _ in priced)
    shortest_cost = next(cost for length, cost in priced if length == shortest_length)
    htm_plan = cube3_solver.solve_3x3(facelets, "htm", timeout=timeout)
    _, htm_cost = compile_plan(htm_plan.moves, profile)
    to_s = profile.unit_ms / 1000
    return CubeFigures(
        htm_length=htm_plan.length, htm_robot_s=htm_cost * to_s,
        shortest_length=shortest_length, shortest_robot_s=shortest_cost * to_s,
        best_length=len(moves), best_robot_s=best_cost * to_s, candidates=len(priced))


def solver_figures(cubes: list[str], timeout: float) -> None:
    cube3_solver.warm_up()
    print(f"robot time of 3x3 plans: {len(cubes)} seeded random cubes, solver budget "
          f"{timeout:g} s per cube and plan; candidates = solutions up to "
          f"{cube3_solver.ROBOT_LENGTH_SLACK} moves longer than the shortest found")
    print(f"{'profile':<10} {'plan':<34} {'moves':>6} {'robot s':>8} {'max s':>7} "
          f"{'vs shortest':>11}")
    for name in ROBOT_PROFILES:
        profile = load_profile(name)
        rows: list[CubeFigures] = []
        with Progress(f"{name} solves", len(cubes)) as progress:
            for facelets in cubes:
                rows.append(profile_figures(facelets, profile, timeout))
                progress.advance()
        shortest_s = statistics.fmean(r.shortest_robot_s for r in rows)
        for label, lengths, times in (
            ("htm plan (move-count solver)", [r.htm_length for r in rows],
             [r.htm_robot_s for r in rows]),
            ("shortest candidate", [r.shortest_length for r in rows],
             [r.shortest_robot_s for r in rows]),
            ("robot-time-best candidate", [r.best_length for r in rows],
             [r.best_robot_s for r in rows]),
        ):
            mean_s = statistics.fmean(times)
            print(f"{name:<10} {label:<34} {statistics.fmean(lengths):>6.2f} {mean_s:>8.2f} "
                  f"{max(times):>7.2f} {100 * (mean_s / shortest_s - 1):>+10.1f}%")
        better = sum(r.best_robot_s < r.shortest_robot_s - 1e-9 for r in rows)
        mean_candidates = statistics.fmean(r.candidates for r in rows)
        print(f"{name:<10} candidates per cube: mean {mean_candidates:.0f}"
              f"; the robot-time-best is faster than the shortest on {better}/{len(rows)} cubes")


if __name__ == "__main__":
    main()
