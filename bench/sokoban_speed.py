"""Benchmark: expansions per second of the fast searches, per level and stage.

Usage (from the checkout root):
    PYTHONPATH=. python bench/sokoban_speed.py --levels 13,14,28,29,45,16,86 \
        --stages 2fom/0,2fo/2 --max-nodes 300000 --timeout 60
Each (level, stage) is first warmed up (a short solve of the same level, which loads or
compiles the kernels), then solved once with a fixed cap on stored nodes (``max_nodes``: the
search stops deterministically with status "memory"), so two checkouts run the same search
and can be compared by their expansions per second. Prints one row per level and stage:
status, expanded, generated, stored, most packed, seconds, expansions per second, and the
same per second of the process's CPU time (less hurt by other work on the machine); then the
totals per stage. Wall-clock figures: compare checkouts back to back on the same machine.
The first run in a checkout compiles the kernels twice (the second time when the node arrays
first grow, inside a timed run): run it once before measuring.
"""

from __future__ import annotations

import argparse
import sys
import time

from robocell.common.paths import shared_data_dir
from robocell.sokoban.board import build_board
from robocell.sokoban.level import load_levels
from robocell.sokoban.schedule import parse_schedule, stage_options
from robocell.sokoban.solver import solve

COLLECTIONS = {
    "microban": "microban.txt",
    "xsokoban": "xsokoban-original-extra.txt",
    "boxoban-hard": "boxoban-hard-000.txt",
}


def parse_levels(text: str) -> list[int]:
    levels: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        levels += range(int(first), int(last or first) + 1)
    return levels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", default="xsokoban",
                        help=f"one of {', '.join(COLLECTIONS)} or an XSB file")
    parser.add_argument("--levels", default="13,14,28,29,45,16,86")
    parser.add_argument("--stages", default="2fom/0,2fo/2",
                        help="schedule stages without seconds, comma-separated")
    parser.add_argument("--max-nodes", type=int, default=300_000,
                        help="stored-node cap: the search stops there (status memory)")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)

    path = COLLECTIONS.get(args.collection)
    path = shared_data_dir() / "sokoban" / path if path else args.collection
    levels = {level.index: level for level in load_levels(path)}
    stages = [(spec, stage_options(parse_schedule(f"{spec}:1")[0]))
              for spec in args.stages.split(",")]
    print(f"max_nodes {args.max_nodes}, timeout {args.timeout} s")
    print(f"{'level':>5} {'stage':>7} {'status':>8} {'expanded':>9} {'generated':>10} "
          f"{'stored':>8} {'packed':>6} {'seconds':>8} {'exp/s':>8} {'cpu s':>7} {'exp/cpu s':>9}")
    totals = {spec: [0, 0.0, 0.0] for spec, _ in stages}
    for index in parse_levels(args.levels):
        board = build_board(levels[index])
        for spec, options in stages:
            solve(board, timeout=0.2, max_nodes=args.max_nodes, **options)
            started = time.perf_counter()
            cpu_started = time.process_time()
            result = solve(board, timeout=args.timeout, max_nodes=args.max_nodes, **options)
            seconds = time.perf_counter() - started
            cpu = time.process_time() - cpu_started
            totals[spec][0] += result.expanded
            totals[spec][1] += seconds
            totals[spec][2] += cpu
            print(f"{index:>5} {spec:>7} {result.status:>8} {result.expanded:>9} "
                  f"{result.generated:>10} {result.stored:>8} {result.most_packed:>6} "
                  f"{seconds:>8.2f} {result.expanded / seconds:>8.0f} {cpu:>7.2f} "
                  f"{result.expanded / cpu:>9.0f}", flush=True)
    for spec, (expanded, seconds, cpu) in totals.items():
        print(f"total {spec:>7}: {expanded} expanded in {seconds:.1f} s ({cpu:.1f} s CPU), "
              f"{expanded / seconds:.0f} per second, {expanded / cpu:.0f} per CPU second")
    return 0


if __name__ == "__main__":
    sys.exit(main())
