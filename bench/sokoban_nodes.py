"""Benchmark: search effort (nodes expanded, stored, pruned) per level for chosen levels.

Usage (from the checkout root):
    PYTHONPATH=. python bench/sokoban_nodes.py xsokoban --levels 1,2,6 --weight 1 --timeout 30
Prints one row per level: status, pushes, expanded, generated, stored (states put in the
transposition table), deadlocks cut at generation, positions closed by a dead corral when
expanded, children dropped by a dead corral when generated, children so checked, corral
searches, children dropped by a learned deadlock pattern, patterns learned and seconds, then
the totals. Used to compare pruning changes by node counts.
"""

from __future__ import annotations

import argparse
import sys

from robocell.common.paths import shared_data_dir
from robocell.sokoban.board import build_board
from robocell.sokoban.level import load_levels
from robocell.sokoban.lurd import replay
from robocell.sokoban.solver import METRIC_MOVES, METRIC_PUSHES, solve

COLLECTIONS = {
    "microban": "microban.txt",
    "xsokoban": "xsokoban-original-extra.txt",
    "boxoban-hard": "boxoban-hard-000.txt",
}
FIELDS = ("expanded", "generated", "stored", "deadlocks", "corral_deadlocks",
          "corral_child_deadlocks", "corral_child_checks", "corral_searches", "pattern_cuts",
          "patterns")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collection", help=f"one of {', '.join(COLLECTIONS)} or an XSB file")
    parser.add_argument("--levels", required=True, help="level numbers, e.g. 1,2,6 or 1-10")
    parser.add_argument("--weight", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--metric", choices=(METRIC_PUSHES, METRIC_MOVES), default=METRIC_PUSHES)
    parser.add_argument("--packing", action="store_true",
                        help="fast modes: the packing-order penalty (solve(packing=True))")
    parser.add_argument("--plain", action="store_true",
                        help="fast modes without goal-room macros, tunnel runs and penalties")
    args = parser.parse_args(argv)
    wanted: list[int] = []
    for part in args.levels.split(","):
        first, _, last = part.partition("-")
        wanted.extend(range(int(first), int(last or first) + 1))
    name = args.collection
    path = (shared_data_dir() / "sokoban" / COLLECTIONS[name]) if name in COLLECTIONS else name
    levels = {lv.index: lv for lv in load_levels(path)}
    missing = [n for n in wanted if n not in levels]
    if missing:
        parser.error(f"no level {missing[0]} in {path} (it has 1-{max(levels)})")
    solve(build_board(levels[wanted[0]]), metric=args.metric, weight=args.weight, timeout=0.5)
    print(f"# {name}, weight {args.weight}{', packing order' if args.packing else ''}, "
          f"metric {args.metric}, timeout {args.timeout:g} s")
    print(f"{'level':>5} {'status':>9} {'pushes':>6} "
          + " ".join(f"{f[:12]:>12}" for f in FIELDS) + f" {'seconds':>8}")
    totals = dict.fromkeys(FIELDS, 0)
    seconds = 0.0
    solved = 0
    for n in wanted:
        result = solve(build_board(levels[n]), metric=args.metric, weight=args.weight,
                       timeout=args.timeout, packing=args.packing,
                       macros=False if args.plain else None)
        ok = result.solved and replay(levels[n], result.lurd).solved
        solved += ok
        status = "solved" if ok else ("WRONG" if result.solved else result.status)
        values = [getattr(result, f) for f in FIELDS]
        for f, v in zip(FIELDS, values, strict=True):
            totals[f] += v
        seconds += result.seconds
        print(f"{n:>5} {status:>9} {result.pushes:>6} "
              + " ".join(f"{v:>12}" for v in values) + f" {result.seconds:>8.2f}", flush=True)
    print(f"{'all':>5} {solved:>4}/{len(wanted):<4} {'':>6} "
          + " ".join(f"{totals[f]:>12}" for f in FIELDS) + f" {seconds:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
