"""Robot time of 3x3 plans, planner against planner, per robot profile.

The same seeded random cubes go to each planner at the same budget a cube, the planners
taking turns cube by cube, each using both cores: rob-twophase in its HT (shortest face
turns), AX (axial metric) and AXQT (axial quarter-turn metric: a half turn counts two, the
nearest of its compiled-in metrics to a robot whose half turn costs about twice a quarter
turn) modes, built from
../shared/peers/rob-twophase (skipped, with a line saying so, when absent), `-t 2`; robocell's
face-turn search (the htm profile) and its robot-time search (the robot's profile), each
split over two solver processes as the solver service splits it. Every plan's robot time is
computed by robocell's motion compiler from the profile, and the primitives it compiles to are
checked to solve the cube; printed: mean and p99 robot time,
the change of the mean against the shortest-face-turn plan of the same run (rob-twophase HT),
mean face turns, and search time p50/p99 (as each planner reports it). `--htm` adds plain
move counts of the htm profile beside rob-twophase HT at 10 ms, 100 ms and 1 s;
`--speed-only` the motion compiler's own speed. Under each table: the counting bound
(`cube3.robot_time.counting_bound`), below which no planner's mean over all cubes can
be, and the issue's target with the share of all cubes a plan that fast can solve at most;
`--bound-only` prints the bound alone, for any 3x3 profile. The machine's other load slows
the budgeted searches; run it on a quiet machine for the best figures. A budgeted planner's
mean moves from run to run (rob-twophase AX by about 1 % on 300 cubes): `--rounds N` runs
every planner N times, once a round, and prints the figures over all rounds with the spread
of the rounds' means. Under the table, the robot-time search against each rob-twophase mode
with a 95 % interval, the plans paired cube by cube (and round by round): how far the run's
change could be from the same planners' over all cubes. `--longer 200,1000` adds the
robot-time search at those budgets on the same cubes, each against the best rob-twophase
mode at the table's budget: how long a search a target asks for.

    python bench/robot_profiles_3x3.py [--cubes 300] [--budgets 50] [--seed 2026] [--htm 100]
        [--rounds 1] [--longer MS,MS]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import numpy as np

from robocell.common.facelets import is_solved_any_orientation
from robocell.common.moves import apply_to_facelets
from robocell.common.notation import Move, parse_moves
from robocell.common.profile import ProfileError, load_profile
from robocell.common.progress import Progress
from robocell.common.scramble import random_facelets
from robocell.services.solver.cube3.motion_compiler import (
    compile_plan,
    motion_tables,
    primitive_moves,
)
from robocell.services.solver.cube3.robot_time.counting_bound import BoundError, count_by_cost
from robocell.services.solver.planning import merge_outcomes
from robocell.services.solver.pool import SolverPool
from robocell.services.solver.worker import solve_in_worker

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_twophase import TwoPhasePeer, source_dir  # noqa: E402  (a sibling bench module)

ROBOT_PROFILES = ("six-motor", "tilt-spin")
TARGETS = {"six-motor": 0.18, "tilt-spin": 0.20}
"""Issue 22's targets: mean robot time this much under the shortest-face-turn plan."""
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


WORKERS = 2
HTM_BUDGETS_MS = (10, 100, 1000)

Planner = Callable[[str], tuple[list[Move], float, float | None]]
"""facelets -> (face turns; search ms; robot time in profile units when the planner says
it)."""


def robocell_planner(pool: SolverPool, profile: str, budget_s: float,
                     says_cost: bool = True) -> Planner:
    """A split search on the pool's two processes, each sharing the whole budget (as the
    peer's threads do); ``says_cost`` False: its plans are priced by another profile."""
    def plan(facelets: str) -> tuple[list[Move], float, float | None]:
        until = time.monotonic() + budget_s
        jobs = [(solve_in_worker, facelets, profile, None, budget_s, (k, WORKERS), until)
                for k in range(WORKERS)]
        outcome = merge_outcomes(pool.solve_split(lambda n: jobs, time.monotonic() + 60))
        if "error" in outcome:
            raise RuntimeError(f"robocell could not plan {facelets}: {outcome['error']}")
        found = outcome["plan"]
        if profile == "htm" or not says_cost:
            turns = found["moves"] if profile == "htm" else found["stats"]["face_turns"]
            return parse_moves(turns), found["solve_ms"], None
        # the face turns the search chose (the plan's moves are the robot's, rotations too)
        return (parse_moves(found["stats"]["face_turns"]), found["solve_ms"],
                float(found["cost"]))
    return plan


def peer_planner(peer: TwoPhasePeer) -> Planner:
    def plan(facelets: str) -> tuple[list[Move], float, float | None]:
        moves, millis = peer.solve(facelets)
        return moves, millis, None
    return plan


def run_planners(planners: dict[str, Planner], cubes: list[str], profile_name: str
                 ) -> dict[str, dict[str, list[float]]]:
    """Every cube's plan by every planner, the planners taking turns cube by cube (the
    machine's other load falls on all alike): per planner, each plan's robot time (from the
    motion compiler), face turns and search time."""
    profile = load_profile(profile_name)
    out: dict[str, dict[str, list[float]]] = {
        label: {"robot": [], "search": [], "turns": []} for label in planners}
    with Progress(f"{profile_name}: {len(planners)} planners", len(cubes)) as progress:
        for facelets in cubes:
            for label, planner in planners.items():
                moves, millis, said = planner(facelets)
                # every plan's robot time from the motion compiler, whatever the planner says
                primitives, cost = compile_plan(moves, profile)
                # and the robot's primitives checked to solve the cube
                done = apply_to_facelets(facelets, primitive_moves(primitives, profile))
                if not is_solved_any_orientation(done):
                    raise RuntimeError(
                        f"{label}: its plan for {facelets} ({' '.join(map(str, moves))}) "
                        f"compiled for {profile_name} leaves the cube unsolved: {done}")
                if said is not None and abs(said - cost) > 1e-6:
                    raise RuntimeError(f"{label} priced its plan for {facelets} at {said}, "
                                       f"the motion compiler at {cost}")
                out[label]["turns"].append(float(len(moves)))
                out[label]["robot"].append(profile.cost_ms(cost))
                out[label]["search"].append(millis)
            progress.advance()
    return out


def summary(runs: list[dict[str, list[float]]]) -> dict[str, float]:
    """One planner's runs (rounds) pooled: mean and p99 robot time, mean turns, search time
    p50/p99, and the spread of the rounds' means (largest less least, in % of the mean)."""
    def pooled(key: str) -> list[float]:
        return [x for run in runs for x in run[key]]
    means = [statistics.fmean(run["robot"]) for run in runs]
    robot, search = pooled("robot"), pooled("search")
    mean = statistics.fmean(robot)
    return {"mean": mean, "p99": float(np.percentile(robot, 99)),
            "turns": statistics.fmean(pooled("turns")),
            "s50": float(np.percentile(search, 50)), "s99": float(np.percentile(search, 99)),
            "spread": 100 * (max(means) - min(means)) / mean}


def paired_change(runs: list[dict[str, list[float]]], against: list[dict[str, list[float]]]
                  ) -> tuple[float, float | None]:
    """(change of the mean robot time against ``against``'s, in %; the half-width of its 95 %
    interval), the plans paired cube by cube and round by round (the ratio of means by the
    delta method): how far the run's figure could be from the same planners' on all cubes.
    One plan has no spread to measure, so no interval (None)."""
    x = np.array([v for run in runs for v in run["robot"]])
    y = np.array([v for run in against for v in run["robot"]])
    ratio = x.mean() / y.mean()
    if x.size < 2:
        return 100 * (ratio - 1), None
    d = x - ratio * y
    half = 1.96 * d.std(ddof=1) / np.sqrt(x.size) / y.mean()
    return 100 * (ratio - 1), 100 * half


def interval_text(change: float, half: float | None) -> str:
    if half is None:
        return f"{change:+.1f} % (one plan: no interval)"
    return f"{change:+.1f} % (95 % interval {change - half:+.1f} to {change + half:+.1f} %)"


def planner_table(cubes: list[str], budgets_ms: list[int | None], pool: SolverPool,
                  profiles: list[str], rounds: int = 1, also: str | None = None,
                  longer_ms: tuple[int, ...] = ()) -> None:
    have_peer = source_dir() is not None
    if not have_peer:
        print("rob-twophase: skipped (../shared/peers/rob-twophase is absent; set "
              "ROBOCELL_PEERS to its folder)")
    for profile_name in profiles:
        profile = load_profile(profile_name)
        for budget in budgets_ms:
            ms = budget if budget is not None else int(round(1000 * profile.search_budget_s))
            runs: dict[str, list[dict[str, list[float]]]] = {}
            for _ in range(rounds):  # every planner once a round: drift falls on all alike
                with ExitStack() as peers:
                    planners: dict[str, Planner] = {}
                    opened = {}
                    for mode in ("HT", "AX", "AXQT") if have_peer else ():
                        peer = peers.enter_context(TwoPhasePeer(mode, WORKERS, ms))
                        opened[mode] = peer
                        planners[f"rob-twophase {mode} mode (-t 2)"] = peer_planner(peer)
                    planners["robocell face-turn search (htm, 2 procs)"] = robocell_planner(
                        pool, "htm", ms / 1000)
                    planners["robocell robot-time search (2 procs)"] = robocell_planner(
                        pool, profile_name, ms / 1000)
                    if also is not None and also != profile_name:
                        # the same search planning for a robot that does not cut corners
                        planners[f"robocell searching for {Path(also).stem}"] = (
                            robocell_planner(pool, also, ms / 1000, False))
                    for longer in longer_ms:  # how far a longer search gets on the same cubes
                        planners[f"robocell robot-time search, {longer} ms"] = (
                            robocell_planner(pool, profile_name, longer / 1000))
                    for label, run in run_planners(planners, cubes, profile_name).items():
                        runs.setdefault(label, []).append(run)
                    for mode, peer in opened.items():
                        if peer.misses:
                            print(f"rob-twophase {mode}: no solution in its time limit "
                                  f"{peer.misses} times; asked again (its search time "
                                  "counts every try)")
            rows = [(label, summary(r)) for label, r in runs.items()]
            reference = rows[0][1]["mean"]
            print(f"\n{profile_name}: {len(cubes)} seeded random cubes, {ms} ms a cube"
                  f"{' (the profile budget)' if budget is None else ''}; robot time from the "
                  "motion compiler; vs = mean against the first row (shortest face turns)"
                  + (f"; {rounds} rounds, each planner once a round, figures over all; "
                     "spread = largest less least round mean" if rounds > 1 else ""))
            print(f"{'planner':<42} {'mean ms':>9} {'p99 ms':>9} {'vs':>7} {'turns':>6} "
                  f"{'search p50':>10} {'p99 ms':>7}" + (f" {'spread':>7}" if rounds > 1 else ""))
            for label, r in rows:
                print(f"{label:<42} {r['mean']:>9,.0f} {r['p99']:>9,.0f} "
                      f"{100 * (r['mean'] / reference - 1):>+6.1f}% {r['turns']:>6.2f} "
                      f"{r['s50']:>10.1f} {r['s99']:>7.1f}"
                      + (f" {r['spread']:>6.1f}%" if rounds > 1 else ""))
            robot = runs["robocell robot-time search (2 procs)"]
            peers = [k for k in runs if k.startswith("rob-twophase")]
            for label in peers:
                change, half = paired_change(robot, runs[label])
                print(f"robot-time search against {label.split(' (')[0]}: "
                      f"{interval_text(change, half)}, the plans paired cube by cube")
            if peers and longer_ms:
                best = min(peers, key=lambda k: statistics.fmean(
                    x for run in runs[k] for x in run["robot"]))
                for longer in longer_ms:
                    change, half = paired_change(
                        runs[f"robocell robot-time search, {longer} ms"], runs[best])
                    print(f"robot-time search at {longer} ms against {best.split(' (')[0]} at "
                          f"{ms} ms: {interval_text(change, half)}")
            bound_rows(profile_name, reference)


def bound_rows(profile_name: str, reference_ms: float | None) -> None:
    """The counting bound (`cube3.robot_time.counting_bound`): no planner's mean over all
    cubes is below it; and the target, with the share of all cubes a plan that fast can solve
    at most."""
    profile = load_profile(profile_name)
    try:
        counts = count_by_cost(profile)
    except BoundError as exc:
        print(f"counting bound: none ({exc})")
        return
    bound_ms = profile.cost_ms(counts.mean_units())
    vs = f"{100 * (bound_ms / reference_ms - 1):>+6.1f}%" if reference_ms else f"{'':>7}"
    print(f"{'any planner, all cubes: at least':<42} {bound_ms:>9,.0f} {'':>9} {vs}"
          "   (counting bound)")
    if reference_ms and profile_name in TARGETS:
        target_ms = reference_ms * (1 - TARGETS[profile_name])
        share = counts.share_within(target_ms / profile.unit_ms)
        what = (f"a plan that fast solves at most {100 * share:.2g} % of all cubes"
                if share < 1 else "the bound does not rule it out")
        print(f"{'target':<42} {target_ms:>9,.0f} {'':>9} {-100 * TARGETS[profile_name]:>+6.1f}%"
              f"   {what}")


def htm_table(cubes: list[str], pool: SolverPool) -> None:
    print(f"\nhtm: mean face turns, {len(cubes)} seeded random cubes")
    print(f"{'budget':>8} {'robocell htm (2 procs)':>24} {'rob-twophase HT (-t 2)':>24}")
    for ms in HTM_BUDGETS_MS:
        ours = [len(robocell_planner(pool, "htm", ms / 1000)(f)[0] or []) for f in cubes]
        theirs = float("nan")
        if source_dir() is not None:
            with TwoPhasePeer("HT", WORKERS, ms) as peer:
                theirs = statistics.fmean(len(peer.solve(f)[0]) for f in cubes)
        print(f"{ms:>6}ms {statistics.fmean(ours):>24.2f} {theirs:>24.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cubes", type=int, default=300)
    parser.add_argument("--budgets", default="50",
                        help="comma-separated budgets a cube in ms; 'profile' = the profile's "
                             "search_budget_ms (default 50)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--profiles", nargs="+", default=list(ROBOT_PROFILES))
    parser.add_argument("--htm", type=int, default=0, metavar="N",
                        help="also the htm move counts on N cubes at 10 ms, 100 ms and 1 s")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every planner this many times, once a round (the peers' "
                             "means move by about 1 %% from run to run)")
    parser.add_argument("--also-search", metavar="PROFILE",
                        help="a row more: robocell's robot-time search planning for PROFILE "
                             "(e.g. six-motor beside a six-motor that cuts corners), its plans "
                             "priced by the table's profile")
    parser.add_argument("--longer", default="", metavar="MS,MS",
                        help="rows more: the robot-time search at these longer budgets (ms) "
                             "on the same cubes, each against the best rob-twophase mode at "
                             "the table's budget")
    parser.add_argument("--speed-only", action="store_true",
                        help="only the motion compiler's speed")
    parser.add_argument("--bound-only", action="store_true",
                        help="only the counting bound on each profile's mean least robot time")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: give 1 or more")
    if args.speed_only:
        compiler_speed(args.seed)
        return
    if args.bound_only:
        for name in args.profiles:
            try:
                profile = load_profile(name)
                counts = count_by_cost(profile)
            except (ProfileError, BoundError) as exc:
                parser.error(f"--profiles {name}: {exc}")
            mean, half = counts.mean_units(), counts.quantile_units(0.5)
            print(f"{name}: any planner needs at least {mean:,.2f} units "
                  f"({profile.cost_ms(mean):,.0f} ms) a cube on average over all cubes, and "
                  f"half of all cubes at least {half:,.0f} units (counting bound)")
        return
    budgets = [None if b == "profile" else int(b) for b in args.budgets.split(",")]
    cubes = [random_facelets(3, np.random.default_rng([args.seed, i])) for i in range(args.cubes)]
    extra = (args.also_search,) if args.also_search else ()
    pool = SolverPool(WORKERS, ("htm", *args.profiles, *extra), queue_limit=WORKERS)
    pool.start()
    try:
        longer = tuple(int(b) for b in args.longer.split(",") if b)
        planner_table(cubes, budgets, pool, args.profiles, args.rounds, args.also_search,
                      longer)
        if args.htm:
            htm_table(cubes[:args.htm], pool)
    finally:
        pool.close()


if __name__ == "__main__":
    main()
