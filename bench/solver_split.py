"""A 3x3 search split over the solver's idle workers versus one worker, same search budget.

The solver service splits a 3x3 search over the workers idle when a request arrives: each
searches its share of the six directions for the whole budget, the search's wall time
(`robocell.services.solver.service`). For the same seeded random cubes this runs, on a real
`SolverPool`, the budget on one worker, the split search as the service runs it, and the
split the service ran before, whose shares searched budget/n each; and prints the plans'
robot time (what the budget buys), the wall time of the request (what it costs the cycle)
and their sum (what the robot's whole time is).

    python bench/solver_split.py [--profile six-motor] [--cubes 100] [--workers 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

from robocell.common.profile import load_profile
from robocell.common.scramble import random_facelets
from robocell.services.solver.planning import merge_outcomes, split_jobs
from robocell.services.solver.pool import SolverPool

DEADLINE_S = 30.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="six-motor")
    parser.add_argument("--cubes", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--budget-ms", type=float, default=None,
                        help="search budget (default: the profile's search_budget_ms)")
    parser.add_argument("--seed", type=int, default=7_000)
    args = parser.parse_args()
    profile = load_profile(args.profile)
    budget = (args.budget_ms / 1000.0 if args.budget_ms is not None
              else profile.search_budget_s or 0.1)
    pool = SolverPool(args.workers, (args.profile,), queue_limit=args.workers)
    pool.start()
    rows: dict[str, dict[str, list[float]]] = {}
    try:
        for i in range(args.cubes):
            facelets = random_facelets(3, args.seed + i)
            # rotate the order so that no way always runs on a warmer machine
            ways = [("one worker", 1, budget),
                    (f"split over {args.workers}", args.workers, budget),
                    ("split, budget/n", args.workers, budget / args.workers)]
            for name, parts, each in ways[i % 3:] + ways[:i % 3]:
                start = time.perf_counter()
                outcomes = pool.solve_split(
                    lambda n, parts=parts, each=each, facelets=facelets: split_jobs(
                        facelets, args.profile, each, min(n, parts)),
                    time.monotonic() + DEADLINE_S, max_parts=parts)
                wall_ms = (time.perf_counter() - start) * 1000
                plan = merge_outcomes(outcomes)["plan"]
                row = rows.setdefault(name, {"robot": [], "wall": [], "len": [], "cand": []})
                row["robot"].append(plan["cost_ms"])
                row["wall"].append(wall_ms)
                row["len"].append(plan["stats"].get("face_turn_count", plan["length"]))
                row["cand"].append(plan["stats"].get("candidates", 1))
    finally:
        pool.close()
    print(f"profile {args.profile}, search budget {budget * 1000:.0f} ms, {args.cubes} random "
          f"cubes (seeds {args.seed}..), {args.workers} workers")
    print(f"{'search':<14} {'robot ms mean':>13} {'p50':>7} {'face turns':>10} "
          f"{'candidates':>10} {'wall ms p50':>11} {'p99':>7} {'max':>7} {'mean robot+wall':>15}")
    for name, row in rows.items():
        total = statistics.fmean(r + w for r, w in zip(row["robot"], row["wall"], strict=True))
        print(f"{name:<14} {statistics.fmean(row['robot']):>13.0f} {pct(row['robot'], .5):>7.0f}"
              f" {statistics.fmean(row['len']):>10.1f} {statistics.fmean(row['cand']):>10.0f}"
              f" {pct(row['wall'], .5):>11.1f} {pct(row['wall'], .99):>7.1f}"
              f" {max(row['wall']):>7.1f} {total:>15.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
