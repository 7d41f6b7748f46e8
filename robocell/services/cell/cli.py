"""`robocell up | demo | cycle | cell [scramble] | health`: run the cell and talk to it."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from robocell.common import config
from robocell.common.bus import CommandFailed, Node
from robocell.common.bus.options import add_remote_options, broker_endpoints, endpoints_of
from robocell.errors import CommandError
from robocell.services.cell.history import (
    DB_NAME,
    ERROR_FLAG,
    HISTORY_ENV,
    CycleLog,
    CycleRecord,
    HistoryError,
    parse_since,
    summary,
)
from robocell.services.cell.service import CellService
from robocell.tools.cycle import scramble_line


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `history` and `cell` (with `cell scramble`) to the subcommands."""
    p = subparsers.add_parser(
        "history", help="the cycle log: every cycle the cell ran, with summary statistics",
        description="Read the cell's cycle log (SQLite, kept across restarts): the cycles, "
                    "the success rate and the percentiles of cycle and stage times.")
    p.add_argument("--since", help="only cycles started since: 30m, 2h, 7d, or a date/time "
                   "such as 2026-12-01T09:30")
    p.add_argument("--limit", type=int, default=20, help="cycles listed (default 20; the "
                   "statistics cover every cycle since --since)")
    p.add_argument("--db", type=Path, metavar="FILE",
                   help=f"the cycle log (default ${HISTORY_ENV}, else {DB_NAME} in the data "
                        "directory)")
    p.add_argument("--json", action="store_true", help="cycles and statistics as JSON")
    p.set_defaults(func=cmd_history)

    p = subparsers.add_parser("cell", help="run the cycle coordinator service",
                              description="Without a subcommand: run the cycle coordinator "
                                          "service. `robocell cell scramble` scrambles the "
                                          "twin of a running simulated cell.")
    add_remote_options(p)
    p.add_argument("--history", type=Path, metavar="FILE",
                   help=f"the cycle log (SQLite; default ${HISTORY_ENV}, else "
                        f"{DB_NAME} in the data directory)")
    p.set_defaults(func=cmd_cell)
    cell_sub = p.add_subparsers(dest="cell_command", metavar="SUBCOMMAND")
    s = cell_sub.add_parser("scramble", help="scramble the twin of a running simulated cell",
                            description="Scramble the digital twin of a cell started with "
                                        "`robocell up --sim` (the cell.scramble command); "
                                        "then `robocell cycle` solves it.")
    s.add_argument("--seed", type=int, help="random seed (the same seed, the same scramble)")
    s.add_argument("--moves", type=int, help="number of random moves (default: the "
                   "simulator's)")
    add_remote_options(s, inherited=True)
    s.set_defaults(func=cmd_scramble)


def cmd_cell(args: argparse.Namespace) -> int:
    speed = config.speed()
    try:
        log = CycleLog(args.history)
    except HistoryError as exc:
        raise CommandError(str(exc)) from None
    with Node("cell", endpoints_of(args)) as node:
        service = CellService(node, speed, log)
        service.start()
        node.wait()
        service.stop()
    log.close()
    return 0


def cmd_scramble(args: argparse.Namespace) -> int:
    if args.moves is not None and args.moves < 1:
        raise CommandError(f"--moves must be at least 1, not {args.moves}")
    request = {k: v for k, v in (("seed", args.seed), ("moves", args.moves)) if v is not None}
    with Node("scramble-cli", broker_endpoints(args), track_peers=False) as node:
        try:
            scrambled = node.call("cell", "scramble", request, timeout=10.0)
        except CommandFailed as exc:
            hint = (" (is the cell running? `robocell up --sim`)"
                    if exc.code == "unavailable" else "")
            raise CommandError(f"cannot scramble the twin: {exc}{hint}") from None
    print(scramble_line(scrambled))
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    try:
        since = parse_since(args.since) if args.since else None
        log = CycleLog(args.db, readonly=True)
    except HistoryError as exc:
        raise CommandError(str(exc)) from None
    try:
        records = log.cycles(since=since)
    except HistoryError as exc:
        raise CommandError(str(exc)) from None
    finally:
        log.close()
    stats = summary(records)
    shown = records[-args.limit:] if args.limit > 0 else []
    if args.json:
        print(json.dumps({"path": str(log.path), "summary": stats,
                          "cycles": [r.as_dict() for r in shown]}))
        return 0
    print_history(log.path, stats, shown)
    return 0


def _robot_time(record: CycleRecord) -> str:
    """``predicted -> measured ms (error)``, or dashes when the cycle has no measurement."""
    predicted = "-" if record.predicted_ms is None else f"{record.predicted_ms:,.0f}"
    measured = "-" if record.measured_ms is None else f"{record.measured_ms:,.0f}"
    error = "" if record.error_pct is None else f"({record.error_pct:+5.1f} %)"
    return f"{predicted:>6} -> {measured:>6} ms {error:>9}"


def print_history(path: Path, stats: dict, shown: list) -> None:
    print(f"cycle log {path}")
    for r in shown:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started_wall))
        total = "" if r.total_s is None else f"{r.total_s:7.2f} s"
        why = f"  {r.failed_stage or ''}: {r.error}" if r.error else ""
        print(f"  {when}  {r.cycle_id}  {r.result:<11} {total:>9}  {_robot_time(r)}  "
              f"{r.profile or ''}{why}")
    rate = stats["success_rate"]
    print(f"cycles {stats['cycles']}: {stats['solved']} solved, {stats['failed']} not "
          f"solved, {stats['running']} running; success rate "
          f"{'-' if rate is None else f'{rate:.1%}'}")
    if stats["failed_by_stage"]:
        print("  not solved, by stage: " + ", ".join(
            f"{k} {v}" for k, v in sorted(stats["failed_by_stage"].items())))
    timing = stats["prediction"]
    if timing["n"]:
        spread = timing["abs_error_pct"]
        print(f"  robot time over {timing['n']} cycles: predicted "
              f"{timing['predicted_ms']:,.0f} ms, measured {timing['measured_ms']:,.0f} ms "
              f"(means); error {timing['mean_error_pct']:+.1f} % mean, |error| p50 "
              f"{spread['p50']:.1f} %, p90 {spread['p90']:.1f} %, {timing['flagged']} over "
              f"{100 * ERROR_FLAG:.0f} %")
    rows = [("cycle", stats["cycle_s"]), *sorted(stats["stages_s"].items())]
    print(f"  {'seconds':<10} {'n':>5} {'p50':>9} {'p90':>9} {'p99':>9}")
    for name, spread in rows:
        if spread["n"]:
            print(f"  {name:<10} {spread['n']:>5} {spread['p50']:>9.3f} {spread['p90']:>9.3f} "
                  f"{spread['p99']:>9.3f}")


