"""Which search budget makes a robot's whole time least: search time plus execution time.

A longer search finds cheaper plans, but the robot waits for it. For each budget, the same
seeded random cubes are searched as the solver service searches them (split over two solver
processes, each with the whole budget), and the mean robot time of the plans (the motion
compiler's price) is printed beside the mean wall time of the search and their sum. The
budgets are run in turn on each cube, their order reversed every other cube, so the machine's
drift falls on all alike. The profile's ``search_budget_ms`` should sit where the sum is least.
Run it on a quiet machine.

    python bench/robot_budget.py [--profile six-motor] [--budgets 25,50,100,200] [--cubes 60]
        [--seed 9100]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from robot_rolling import PARTS, _warm, robot_profile, search  # noqa: E402

from robocell.common.scramble import random_cubie_state  # noqa: E402


def budgets_arg(text: str) -> list[float]:
    try:
        budgets = [float(b) for b in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give budgets in ms separated by commas, e.g. 25,50,100") from None
    if not budgets or any(b <= 0 for b in budgets):
        raise argparse.ArgumentTypeError(f"{text!r}: every budget must be more than 0 ms")
    return budgets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="six-motor")
    parser.add_argument("--budgets", type=budgets_arg, default=[25.0, 50.0, 100.0, 200.0])
    parser.add_argument("--cubes", type=int, default=60)
    parser.add_argument("--seed", type=int, default=9100)
    args = parser.parse_args()
    if args.cubes < 1:
        parser.error(f"--cubes {args.cubes}: give at least one cube")
    profile = robot_profile(parser, args.profile)
    robot: dict[float, list[float]] = {b: [] for b in args.budgets}
    wall: dict[float, list[float]] = {b: [] for b in args.budgets}
    started = time.perf_counter()
    with ProcessPoolExecutor(PARTS) as pool:
        for future in [pool.submit(_warm, str(profile.path)) for _ in range(PARTS)]:
            future.result()
        # one search at the longest budget first, so the tables' first page faults fall on
        # no budget's figures
        search(pool, random_cubie_state(3, args.seed - 1).to_facelets(), profile,
               max(args.budgets) / 1000)
        for i in range(args.cubes):
            facelets = random_cubie_state(3, args.seed + i).to_facelets()
            for budget in args.budgets if i % 2 == 0 else args.budgets[::-1]:
                t = time.perf_counter()
                _, cost = search(pool, facelets, profile, budget / 1000)
                wall[budget].append((time.perf_counter() - t) * 1000)
                robot[budget].append(profile.cost_ms(cost))
    sums = {b: statistics.mean(robot[b]) + statistics.mean(wall[b]) for b in args.budgets}
    least = min(sums, key=sums.__getitem__)
    print(f"{profile.name}: {args.cubes} seeded random cubes (seed {args.seed}), each searched "
          f"at every budget on {PARTS} processes; profile budget "
          f"{profile.search_budget_s * 1000:g} ms; {time.perf_counter() - started:.0f} s")
    print(f"{'budget':>9s} {'robot time':>12s} {'search wall':>12s} {'sum':>10s} "
          f"{'vs least, cube by cube (mean +- standard error)':>48s}")
    for budget in args.budgets:
        if budget == least:
            versus = "least"
        else:
            diff = [robot[budget][i] + wall[budget][i] - robot[least][i] - wall[least][i]
                    for i in range(args.cubes)]
            error = statistics.stdev(diff) / len(diff) ** 0.5 if len(diff) > 1 else float("nan")
            versus = f"{statistics.mean(diff):+,.0f} +- {error:,.0f} ms"
        print(f"{budget:6g} ms {statistics.mean(robot[budget]):9,.0f} ms "
              f"{statistics.mean(wall[budget]):9,.0f} ms {sums[budget]:7,.0f} ms {versus:>48s}")


if __name__ == "__main__":
    main()
