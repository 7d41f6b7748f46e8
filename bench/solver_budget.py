"""The table budget: plan quality and memory of a solver worker at each budget level.

For each budget (MB) a fresh process holds itself to the tables the solver would choose
(`choose_tables`), warms up as a solver worker does (maps its tables, touches their pages,
compiles the search) and plans the same seeded random cubes, one process, the same search
budget each. Printed per budget: the tables mapped and their bytes (read from the process's
/proc maps), its resident memory (VmRSS, VmHWM), and the plans' mean robot time (the motion
model's prediction, `predicted_ms`) and mean face turns; beside each level, its robot time
against the level with every table. A budget below the smallest set is shown refused with the
solver's own message.

    python bench/solver_budget.py [--profile six-motor] [--budgets 64,128,2048] [--cubes 200]
        [--budget-ms 50] [--seed 5000] [--out bench/results/solver_budget.txt]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from robocell.common import tables  # noqa: E402
from robocell.common.cube import random_facelets  # noqa: E402
from robocell.errors import CommandError  # noqa: E402
from robocell.services.solver.table_groups import choose_tables  # noqa: E402
from robocell.services.solver.worker import solve_in_worker, warm_worker  # noqa: E402


def status_mb(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run_level(profile: str, budget_mb: float, cubes: int, budget_s: float, seed: int) -> dict:
    """In this process: hold to the budget's tables, warm up, plan the cubes."""
    choice = choose_tables(profile, budget_mb)
    tables.limit_loading(choice.names, f"the table budget of {budget_mb:g} MB")
    warm_worker((profile,))
    robot_ms, turns, kinds = [], [], set()
    started = time.perf_counter()
    for i in range(cubes):
        outcome = solve_in_worker(random_facelets(3, seed + i), profile, None, budget_s)
        plan = outcome["plan"]
        robot_ms.append(plan["robot_ms"])
        turns.append(plan["stats"]["face_turn_count"])
        kinds.add(plan["stats"]["tables"])
    return {"budget_mb": budget_mb, "search": choice.search, "tables_used": sorted(kinds),
            "mapped": tables.mapped_groups(), "rss_mb": status_mb("VmRSS"),
            "hwm_mb": status_mb("VmHWM"), "robot_ms": statistics.fmean(robot_ms),
            "robot_ms_median": statistics.median(robot_ms), "turns": statistics.fmean(turns),
            "seconds": time.perf_counter() - started}


def level_in_child(args: argparse.Namespace, budget_mb: float) -> dict:
    try:
        choose_tables(args.profile, budget_mb)
    except CommandError as exc:
        return {"budget_mb": budget_mb, "refused": str(exc)}
    done = subprocess.run([sys.executable, __file__, "--level", str(budget_mb),
                           "--profile", args.profile, "--cubes", str(args.cubes),
                           "--budget-ms", str(args.budget_ms), "--seed", str(args.seed)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(rows: list[dict], args: argparse.Namespace) -> str:
    full = max((r for r in rows if "refused" not in r), key=lambda r: r["budget_mb"])
    lines = [f"table budget, profile {args.profile}: {args.cubes} random cubes (seeds "
             f"{args.seed}..{args.seed + args.cubes - 1}), {args.budget_ms:g} ms search each, "
             "one process warmed up as a solver worker",
             f"{'budget MB':>9}  {'tables mapped (MB)':<62} {'mapped':>7} {'RSS':>6} "
             f"{'peak':>6} {'robot ms':>9} {'vs full':>8} {'turns':>6}  search"]
    for r in rows:
        if "refused" in r:
            lines.append(f"{r['budget_mb']:>9g}  refused: {r['refused']}")
            continue
        mapped = ", ".join(f"{g} {b / 1e6:,.0f}" for g, b in sorted(r["mapped"].items()))
        total = sum(r["mapped"].values()) / 1e6
        lines.append(
            f"{r['budget_mb']:>9g}  {mapped:<62} {total:>7,.0f} {r['rss_mb']:>6,.0f} "
            f"{r['hwm_mb']:>6,.0f} {r['robot_ms']:>9,.1f} "
            f"{100 * (r['robot_ms'] / full['robot_ms'] - 1):>+7.1f}% {r['turns']:>6.2f}  "
            f"{r['search']} ({', '.join(r['tables_used'])})")
    lines.append("mapped: table bytes mapped (/proc maps); RSS, peak: VmRSS, VmHWM in MB after "
                 "the cubes; robot ms: mean predicted robot time of the plans")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="six-motor")
    parser.add_argument("--budgets", default="64,128,2048")
    parser.add_argument("--cubes", type=int, default=200)
    parser.add_argument("--budget-ms", type=float, default=50.0)
    parser.add_argument("--seed", type=int, default=5000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--level", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.level is not None:
        print(json.dumps(run_level(args.profile, args.level, args.cubes,
                                   args.budget_ms / 1000, args.seed)))
        return
    try:
        budgets = [float(b) for b in args.budgets.split(",")]
    except ValueError:
        parser.error(f"--budgets {args.budgets!r}: give megabytes separated by commas")
    rows = [level_in_child(args, b) for b in budgets]
    text = table(rows, args)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
