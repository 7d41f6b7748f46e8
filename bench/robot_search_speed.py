"""The 3x3 robot-time search's own speed: how many nodes it visits in its budget, and the plans
it ends with, one process per search, on the same seeded cubes. With ``--other PATH`` the same
runs are made with another checkout of robocell (for example a git worktree of main) side by
side, interleaved run by run, so the machine's drift falls on both alike; medians over the
repeats are printed.

A search takes the directions one solver process takes (half of them, ``--part 0/2``, as the
solver service and `robocell solve` split a cube over two processes; ``--part 0/1`` for all):
how much of a read's wait the other directions' steps hide depends on how many there are.

Nodes are the phase-1 children looked up plus the phase-2 nodes (`RobotTimeSearch.nodes`).
Two versions that search alike visit more nodes in the same budget when faster; when they
search differently, compare the robot time too. The budgeted searches feel the machine's
other load: run it on a quiet machine.

    python bench/robot_search_speed.py [--profile six-motor] [--budget-ms 50] [--cubes 60]
        [--repeats 3] [--other PATH] [--part 0/2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def worker(profile_name: str, budget_ms: float, cubes: int, seed: int,
           part: tuple[int, int]) -> None:
    """Search each cube for the budget; print one JSON line of totals."""
    from robocell.common.profile import load_profile
    from robocell.common.scramble import random_cubie_state
    try:
        from robocell.services.solver.cube3.robot_time import cost_tables
        from robocell.services.solver.cube3.robot_time.driver import RobotTimeSearch
    except ModuleNotFoundError:  # a checkout from before the robot_time package
        from robocell.services.solver.cube3 import weighted as cost_tables
        from robocell.services.solver.cube3.robot_time.driver import RobotTimeSearch

    profile = load_profile(profile_name)
    for _ in RobotTimeSearch(random_cubie_state(3, seed - 1), profile).solutions(0.05):
        pass  # compiled before the clock starts
    if hasattr(cost_tables, "touch_loaded"):
        cost_tables.touch_loaded()  # the tables' pages mapped, as a solver worker does
    costs, nodes, cpu = [], [], 0.0
    for i in range(cubes):
        search = RobotTimeSearch(random_cubie_state(3, seed + i), profile, part)
        best = float("inf")
        start = time.process_time()
        for _, cost in search.solutions(budget_ms / 1000):
            best = cost
        cpu += time.process_time() - start
        costs.append(best)
        nodes.append(search.nodes)
    print(json.dumps({"cost": statistics.mean(costs), "nodes": statistics.mean(nodes),
                      "cpu_ms": cpu / cubes * 1000}))


def parse_part(text: str) -> tuple[int, int]:
    k, n = (int(x) for x in text.split("/"))
    if not 0 <= k < n:
        raise ValueError(text)
    return k, n


def run(checkout: Path, args: argparse.Namespace) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", "--profile", args.profile,
         "--budget-ms", str(args.budget_ms), "--cubes", str(args.cubes), "--seed",
         str(args.seed), "--part", args.part], env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"robot_search_speed: the run with {checkout} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="six-motor")
    parser.add_argument("--budget-ms", type=float, default=50.0)
    parser.add_argument("--cubes", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--other", type=Path, default=None,
                        help="another checkout of robocell to run side by side")
    parser.add_argument("--part", default="0/2", metavar="K/N",
                        help="search the K-th of N shares of the directions (default 0/2: one "
                             "of the service's two processes)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    try:
        parse_part(args.part)
    except ValueError:
        parser.error(f"--part {args.part}: give K/N with 0 <= K < N, for example 0/2")
    if args.worker:
        worker(args.profile, args.budget_ms, args.cubes, args.seed, parse_part(args.part))
        return
    checkouts = [("this checkout", ROOT)]
    if args.other is not None:
        if not (args.other / "robocell").is_dir():
            sys.exit(f"robot_search_speed: {args.other} holds no robocell package; give the "
                     f"root of a checkout")
        checkouts.append((f"--other {args.other}", args.other.resolve()))
    runs: dict[str, list[dict]] = {name: [] for name, _ in checkouts}
    for _ in range(args.repeats):
        for name, path in checkouts:
            runs[name].append(run(path, args))
    print(f"{args.profile}: {args.cubes} seeded random cubes, {args.budget_ms:g} ms a search, "
          f"one process, directions {args.part}; medians of {args.repeats} interleaved runs")
    print(f"{'checkout':40s} {'nodes/search':>13s} {'nodes/ms':>9s} {'mean cost':>10s}")
    for name, results in runs.items():
        nodes = statistics.median(r["nodes"] for r in results)
        per_ms = statistics.median(r["nodes"] / r["cpu_ms"] for r in results)
        cost = statistics.median(r["cost"] for r in results)
        print(f"{name:40s} {nodes:13,.0f} {per_ms:9,.0f} {cost:10.2f}")


if __name__ == "__main__":
    main()
