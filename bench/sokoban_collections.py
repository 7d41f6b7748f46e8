"""Benchmark: solve a Sokoban collection with a per-level deadline; print solved / proven optimal.

Usage (from the checkout root):
    PYTHONPATH=. python bench/sokoban_collections.py microban --timeout 60
    PYTHONPATH=. python bench/sokoban_collections.py xsokoban \
        --schedule 1:2,2fom/0:22,2foml/2:7,3:8,2fo/2:21
    PYTHONPATH=. python bench/sokoban_collections.py boxoban-hard --timeout 10 --first 200
    PYTHONPATH=. python bench/sokoban_collections.py xsokoban --lanes 2 --timeout 60
Each level runs in this process with the solver's own deadline (checked between compiled
chunks of expansions), one level after the other; a schedule in lanes (``--lanes N``, or
``LANE|LANE`` in ``--schedule``) gives each level N processes at once. ``--out FILE`` also
writes the table as markdown; ``--stage-log FILE`` every stage's end (JSON lines).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from robocell.common.paths import shared_data_dir
from robocell.sokoban.board import build_board
from robocell.sokoban.level import load_levels
from robocell.sokoban.lurd import replay
from robocell.sokoban.schedule import (
    NODE_LIMIT,
    default_lanes,
    lanes_text,
    parse_lanes,
    solve_lanes,
)
from robocell.sokoban.solver import METRIC_MOVES, METRIC_PUSHES, solve

COLLECTIONS = {
    "microban": "microban.txt",
    "xsokoban": "xsokoban-original-extra.txt",
    "boxoban-hard": "boxoban-hard-000.txt",
    "boxoban-medium": "boxoban-medium-valid-000.txt",
}
REFERENCES = {
    "microban": "reference: a Rust solver with dead-square, freeze and tunnel detection solves "
                "144/155 at 10 s per level",
    "xsokoban": "reference (10 min per level): Festival, Sokolution, Takaken, Curry 90/90, "
                "YASS 89/90, Rolling Stone 57/90",
}


def report(rows: list[tuple], args: argparse.Namespace, path: Path, total: float,
           n_levels: int, final: bool) -> list[str]:
    """Summary lines; also (re)writes the markdown file when --out is given."""
    solved = [r for r in rows if r[3] == "solved"]
    optimal = [r for r in solved if r[6]]
    times = [r[8] for r in solved]
    progress = "" if final else f" (in progress: {len(rows)} of {n_levels} levels run)"
    summary = [
        f"collection: {path.name} ({len(rows)} levels){progress}, timeout {args.timeout:g} s "
        f"per level, metric {args.metric}, "
        + (f"schedule {args.schedule} (weight:seconds){_lanes_note(args)}" if args.stages else
           f"weight {args.weight}")
        + (f", fallback weight {args.fallback_weight} for {args.fallback_seconds:g} s"
           if args.fallback_weight > 1 and not args.stages else ""),
        f"solved: {len(solved)}/{len(rows)}",
        f"proven optimal: {len(optimal)}/{len(rows)}",
        f"time per solved level: mean {statistics.mean(times) if times else 0:.2f} s, "
        f"median {statistics.median(times) if times else 0:.2f} s, max "
        f"{max(times) if times else 0:.2f} s",
        f"time per level (all): mean {statistics.mean(r[8] for r in rows) if rows else 0:.2f} s",
        f"wall time: {total:.0f} s on {platform.machine()} ({platform.python_version()}), "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
        f"unsolved: {', '.join(str(r[0]) for r in rows if r[3] != 'solved') or 'none'}",
    ]
    if args.collection in REFERENCES:
        summary.append(REFERENCES[args.collection])
    if args.out:
        lines = [f"# Sokoban benchmark: {path.name}", "", "```",
                 " ".join(["PYTHONPATH=. python bench/sokoban_collections.py",
                           *sys.argv[1:]]), *summary, "```", "",
                 "| level | title | boxes | status | pushes | moves | optimal | expanded | s "
                 "| stage |",
                 "|---:|---|---:|---|---:|---:|---|---:|---:|---|"]
        for r in rows:
            lines.append(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]} | "
                         f"{'yes' if r[6] else 'no'} | {r[7]} | {r[8]:.2f} | {r[9]} |")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")
    return summary


def _lanes_note(args: argparse.Namespace) -> str:
    """The header's word on lanes: how many processes each level gets."""
    n = len(args.stages)
    if n < 2:
        return ""
    return (f", {n} lanes: the levels one after another, each with {n} processes at once "
            f"(the first replayed solution wins)")


def level_numbers(text: str) -> set[int]:
    """The level numbers of a list such as ``11,12,24-30``."""
    numbers: set[int] = set()
    for part in (p.strip() for p in text.split(",") if p.strip()):
        first, dash, last = part.partition("-")
        numbers.update(range(int(first), int(last if dash else first) + 1))
    return numbers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collection", help=f"one of {', '.join(COLLECTIONS)} or an XSB file")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per level")
    parser.add_argument("--first", type=int, default=0, help="only the first N levels")
    parser.add_argument("--start", type=int, default=1, help="first level number to run")
    parser.add_argument("--levels", default="",
                        help="only these level numbers, e.g. 11,12,24-30 (a subset to compare "
                             "a change on)")
    parser.add_argument("--metric", choices=(METRIC_PUSHES, METRIC_MOVES), default=METRIC_PUSHES)
    parser.add_argument("--weight", type=int, default=1,
                        help="1 = optimal A*; >1 = fast weighted A* (not proven optimal)")
    parser.add_argument("--fallback-weight", type=int, default=0,
                        help="if optimal A* times out, spend --fallback-seconds on this weight")
    parser.add_argument("--fallback-seconds", type=float, default=0.0)
    parser.add_argument("--schedule", default="",
                        help="searches per level in turn, W[flags][/E]:SECONDS,... (see "
                             "robocell.sokoban.schedule), e.g. 1:5,2fo:25,100fo/2:30 = optimal "
                             "A* for 5 s, then the feature search (weight-2 heap, packing "
                             "penalty) for 25 s, then the feature search with a greedy heap "
                             "taking every 2nd expansion for 30 s; the first verified solution "
                             "counts (overrides --timeout); LANE|LANE|... runs lanes at the "
                             "same time, one process each, per level")
    parser.add_argument("--lanes", type=int, default=0,
                        help="without --schedule: the default schedule in N lanes (1 = the "
                             "stages in turn) over --timeout; the levels run one after another, "
                             "each with N processes")
    parser.add_argument("--stage-log", type=Path,
                        help="write every stage's end here, one JSON line each (level, lane, "
                             "stage, status, second, expanded, most packed); the file is "
                             "started afresh")
    parser.add_argument("--out", type=Path, help="also write a markdown table here")
    args = parser.parse_args(argv)
    if args.schedule and args.lanes:
        parser.error("--schedule gives its lanes itself (LANE|LANE): leave out --lanes")
    if args.lanes < 0:
        parser.error(f"--lanes {args.lanes}: give 1 or more")
    try:
        args.stages = parse_lanes(args.schedule) if args.schedule else []
    except ValueError as exc:
        parser.error(f"--schedule: {exc}")
    if args.lanes:
        args.stages = default_lanes(args.metric, args.timeout, args.lanes)
        args.schedule = lanes_text(args.stages)
    if args.stages:
        args.timeout = max(sum(stage.seconds for stage in lane) for lane in args.stages)

    name = args.collection
    path = Path(name) if name not in COLLECTIONS else shared_data_dir() / "sokoban" / COLLECTIONS[
        name]
    levels = load_levels(path)
    levels = [lv for lv in levels if lv.index >= args.start]
    if args.levels:
        try:
            chosen = level_numbers(args.levels)
        except ValueError:
            parser.error(f"--levels: write numbers and ranges, e.g. 11,12,24-30, not "
                         f"{args.levels!r}")
        levels = [lv for lv in levels if lv.index in chosen]
    if args.first:
        levels = levels[: args.first]
    # Compile (or load the cached) search before timing anything.
    solve(build_board(load_levels(shared_data_dir() / "sokoban" / COLLECTIONS["microban"])[0]),
          metric=args.metric, weight=args.weight)

    rows = []
    header = (f"{'level':>6} {'title':>6} {'boxes':>5} {'status':>11} {'pushes':>6} "
              f"{'moves':>6} {'optimal':>7} {'expanded':>10} {'seconds':>8}")
    mode = (f"schedule {args.schedule}{_lanes_note(args)}" if args.stages else
            f"weight {args.weight}")
    print(f"# {path.name}: {len(levels)} levels, {args.timeout:g} s per level, metric "
          f"{args.metric}, {mode}")
    print(header + " stage", flush=True)
    if args.stage_log:
        args.stage_log.write_text("")  # one run per file: a rerun must not mix with the last
    started = time.monotonic()
    for level in levels:
        board = build_board(level)
        log: list[dict] = []
        if args.stages:
            result, spent = solve_lanes(level, args.stages, args.metric, log=log)
        else:
            result = solve(board, metric=args.metric, timeout=args.timeout, weight=args.weight,
                           max_nodes=NODE_LIMIT)
            spent = result.seconds
            if not result.solved and args.fallback_weight > 1 and args.fallback_seconds > 0:
                fast = solve(board, metric=args.metric, timeout=args.fallback_seconds,
                             weight=args.fallback_weight, max_nodes=NODE_LIMIT)
                spent += fast.seconds
                if fast.solved:
                    result = fast
        verified = replay(level, result.lurd).solved if result.solved else False
        if result.solved and not verified:
            print(f"level {level.index}: solver output does not replay!", file=sys.stderr)
        status = result.status if (verified or not result.solved) else "WRONG"
        row = (level.index, level.title, board.n_boxes, status, result.pushes, result.moves,
               result.optimal and verified, result.expanded, spent, result.stage)
        rows.append(row)
        print(f"{row[0]:>6} {row[1][:6]:>6} {row[2]:>5} {row[3]:>11} {row[4]:>6} {row[5]:>6} "
              f"{'yes' if row[6] else 'no':>7} {row[7]:>10} {row[8]:>8.2f} {row[9]}",
              flush=True)
        if args.stage_log:
            with args.stage_log.open("a") as out:
                for entry in log:
                    out.write(json.dumps({"level": level.index, **entry}) + "\n")
        report(rows, args, path, time.monotonic() - started, len(levels), False)
    summary = report(rows, args, path, time.monotonic() - started, len(levels), True)
    print()
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
