"""`robocell sokoban`: parse, graph, solve, verify and generate Sokoban levels."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from robocell.errors import CommandError
from robocell.sokoban.board import build_board
from robocell.sokoban.explorer import render_page, serve_page
from robocell.sokoban.generator import generate
from robocell.sokoban.graph import GraphTooLarge, build_graph
from robocell.sokoban.graph_view import MAX_DRAWN_STATES, view_data
from robocell.sokoban.level import LevelError, load_level, load_levels
from robocell.sokoban.lurd import replay
from robocell.sokoban.schedule import (
    LaneError,
    default_lanes,
    lanes_text,
    parse_lanes,
    solve_lanes,
    stage_options,
    usable_lanes,
)
from robocell.sokoban.search_report import SearchReport, prepare_search
from robocell.sokoban.solver import FAST_WEIGHT, solve

EXIT_OK, EXIT_FAILED = 0, 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("sokoban", help="Sokoban levels: parse, graph, solve, "
                                   "verify, generate",
                                   description="Sokoban levels in XSB files (--level counts "
                                   "levels from 1 in file order).")
    sub = parser.add_subparsers(dest="sokoban_command", metavar="SUBCOMMAND", required=True)

    p = sub.add_parser("parse", help="read a level file and validate its levels")
    p.add_argument("file", type=Path)
    p.add_argument("--level", type=int, help="show only this level (1-based)")
    p.set_defaults(func=cmd_parse)

    p = sub.add_parser("graph", help="the complete push graph of a small level")
    p.add_argument("file", type=Path)
    p.add_argument("--level", type=int, default=1)
    p.add_argument("--max-states", type=int, default=2_000_000,
                   help="stop with a message above this many states (default 2000000)")
    p.add_argument("--export", type=Path, help="write the live graph here (.dot, .graphml or "
                   ".json, chosen by the suffix unless --format is given)")
    p.add_argument("--format", choices=("dot", "graphml", "json"))
    p.add_argument("--max-export", type=int, default=5_000,
                   help="largest live graph that will be exported (default 5000 states)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--html", type=Path, help="write the interactive explorer here: one "
                   "self-contained page (open it in any browser, no network needed)")
    p.add_argument("--max-drawn", type=int, default=MAX_DRAWN_STATES,
                   help="above this many states the page draws a reduced view (default "
                   f"{MAX_DRAWN_STATES})")
    p.set_defaults(func=cmd_graph)

    p = sub.add_parser("explore", help="the push graph of a small level, explored in the "
                       "browser (served on loopback)")
    p.add_argument("file", type=Path)
    p.add_argument("--level", type=int, default=1)
    p.add_argument("--max-states", type=int, default=2_000_000,
                   help="stop with a message above this many states (default 2000000)")
    p.add_argument("--max-drawn", type=int, default=MAX_DRAWN_STATES,
                   help="above this many states the page draws a reduced view (default "
                   f"{MAX_DRAWN_STATES})")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free)")
    p.add_argument("--no-browser", action="store_true",
                   help="only print the address; do not open a browser")
    p.set_defaults(func=cmd_explore)

    p = sub.add_parser("solve", help="solve a level (push- or move-optimal, or fast)")
    p.add_argument("file", type=Path)
    p.add_argument("--level", type=int, default=1)
    p.add_argument("--metric", choices=("pushes", "moves"), default="pushes")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds (default 60)")
    p.add_argument("--fast", action="store_true",
                   help="solve as many levels as possible within --timeout: optimal A* for a "
                   "moment, then the feature searches (the default schedule, see --schedule); "
                   "with --weight, --packing, --features or --box-moves: that one search "
                   "(weight 2 unless given)")
    p.add_argument("--weight", type=int, help="weight of the bound in f = g + w*h (1 = optimal)")
    p.add_argument("--packing", action="store_true",
                   help="fast modes: penalise boxes on goals filled out of the packing order "
                   "(found by pulling boxes out of the solved position)")
    p.add_argument("--features", action="store_true",
                   help="fast feature search: visit cells of positions with equal packing and "
                   "connectivity in turn, taking turns with weighted A* (not proven "
                   "optimal)")
    p.add_argument("--box-moves", action="store_true",
                   help="fast modes: every step pushes one box to any place it can reach with "
                   "the others where they are (far fewer steps on big levels)")
    p.add_argument("--schedule", metavar="STAGES",
                   help="searches in turn, W[flags][/E]:SECONDS,..., e.g. 1:5,2fom/0:25,2fo/2:30 "
                   "(optimal A* for 5 s, feature search with box moves on its cells alone for "
                   "25 s, then over single pushes with a weight-2 heap taking every 2nd "
                   "expansion for 30 s); flags: p plain, "
                   "o packing penalty, f feature search, m box moves, c deep corral "
                   "deadlock search, h hotspot advisor, r room links, u out of plan, "
                   "e explorer advisor, l packing layers, b backward search by pulls (with "
                   "f only: its feature cells, e.g. 10bf/3:6); replaces --timeout; "
                   "LANE|LANE runs lanes at the same time, one process each, "
                   "e.g. 1:2,10b:5,2fom/0:53|2foml/2:15,3:15,2fo/2:30")
    p.add_argument("--lanes", type=int, metavar="N",
                   help="--fast: run the default schedule in N lanes at the same time, one "
                   "process (core) each, the first solution wins (default: the usable CPUs, "
                   "at most 2; 1 = the stages in turn in this process)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("verify", help="replay a LURD solution and say whether it solves")
    p.add_argument("file", type=Path)
    p.add_argument("lurd", help="the solution in LURD, or @FILE to read it from a file")
    p.add_argument("--level", type=int, default=1)
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("generate", help="new levels: the states farthest from solved, by "
                       "pulling boxes back from the goals")
    p.add_argument("file", type=Path)
    p.add_argument("--level", type=int, default=1)
    p.add_argument("--count", type=int, default=3)
    p.add_argument("--max-states", type=int, default=1_000_000)
    p.add_argument("--moves", action="store_true", help="also state the move-optimal length")
    p.add_argument("--output", type=Path, help="write the levels to this XSB file")
    p.set_defaults(func=cmd_generate)


def _load(file: Path, number: int):
    try:
        return load_level(file, number)
    except LevelError as exc:
        raise CommandError(str(exc)) from exc


def cmd_parse(args: argparse.Namespace) -> int:
    try:
        levels = load_levels(args.file)
    except LevelError as exc:
        raise CommandError(str(exc)) from exc
    if not levels:
        raise CommandError(f"{args.file}: no levels found; expected XSB rows of #@+$*. and "
                           "spaces")
    if args.level is not None:
        if not 1 <= args.level <= len(levels):
            raise CommandError(f"{args.file}: has levels 1..{len(levels)}, not {args.level}")
        levels = [levels[args.level - 1]]
    bad = 0
    for level in levels:
        try:
            level.validate()
            status = f"ok: {level.width}x{level.height}, {len(level.boxes)} boxes"
        except LevelError as exc:
            bad += 1
            status = f"INVALID: {exc}"
        print(f"level {level.index} (line {level.line}, title {level.title!r}): {status}")
        if args.level is not None:
            print(level.xsb())
    print(f"{len(levels) - bad} of {len(levels)} levels valid")
    return EXIT_FAILED if bad else EXIT_OK


def _build_graph(args: argparse.Namespace) -> Any:
    level = _load(args.file, args.level)
    try:
        return build_graph(build_board(level), max_states=args.max_states)
    except GraphTooLarge as exc:
        raise CommandError(f"level {args.level}: {exc}") from exc


def _explorer_page(args: argparse.Namespace, graph: Any) -> tuple[str, dict]:

    if args.max_drawn < 1:
        raise CommandError("--max-drawn must be at least 1")
    data = view_data(graph, max_drawn=args.max_drawn)
    return render_page(data), data


def _drawn(data: dict) -> str:
    n_drawn = len(data["states"]["id"])
    note = f"; reduced view: {data['reduced']['message']}" if data["reduced"] else ""
    return f"{n_drawn} states, {len(data['arcs']['source'])} arcs drawn{note}"


def cmd_graph(args: argparse.Namespace) -> int:
    graph = _build_graph(args)
    summary = graph.summary()
    if args.json:
        print(json.dumps(summary))
    else:
        for key, value in summary.items():
            print(f"{key:>21}: {'n/a (too many states)' if value is None else value}")
    if args.export:
        fmt = args.format or args.export.suffix.lstrip(".").lower()
        writers = {"dot": graph.to_dot, "gv": graph.to_dot, "graphml": graph.to_graphml,
                   "json": graph.to_json}
        if fmt not in writers:
            raise CommandError(f"cannot tell the export format from {args.export.name!r}; "
                               "use a .dot, .graphml or .json name or --format")
        try:
            text = writers[fmt](limit=args.max_export)
        except GraphTooLarge as exc:
            raise CommandError(f"level {args.level}: {exc}") from exc
        args.export.write_text(text)
        print(f"wrote {args.export} ({summary['live_states']} states, "
              f"{summary['live_arcs']} arcs)")
    if args.html:
        page, data = _explorer_page(args, graph)
        try:
            args.html.write_text(page, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot write {args.html}: {exc.strerror}") from exc
        print(f"wrote {args.html} ({_drawn(data)})", file=sys.stderr if args.json else sys.stdout)
    return EXIT_OK


def cmd_explore(args: argparse.Namespace) -> int:

    graph = _build_graph(args)
    page, data = _explorer_page(args, graph)
    print(f"level {args.level}: {graph.n_states} states; {_drawn(data)}", flush=True)
    try:
        serve_page(page, args.port, open_browser=not args.no_browser)
    except OSError as exc:
        raise CommandError(f"cannot serve on 127.0.0.1:{args.port}: {exc.strerror}; pick "
                           "another --port or leave it out") from exc
    return EXIT_OK


def cmd_solve(args: argparse.Namespace) -> int:
    level = _load(args.file, args.level)
    single = args.weight is not None or args.packing or args.features or args.box_moves
    if args.schedule or (args.fast and not single):
        if args.schedule and (args.fast or single):
            raise CommandError("--schedule gives the searches itself: leave out --fast, "
                               "--weight, --packing, --features and --box-moves")
        if args.schedule and args.lanes is not None:
            raise CommandError("--schedule gives its lanes itself (LANE|LANE): leave out "
                               "--lanes")
        if args.lanes is not None and args.lanes < 1:
            raise CommandError(f"--lanes {args.lanes}: give 1 or more")
        try:
            lanes = (parse_lanes(args.schedule) if args.schedule else default_lanes(
                args.metric, args.timeout, args.lanes or usable_lanes()))
            prepare_search(args.metric, [stage_options(stage) for stages in lanes
                                         for stage in stages])
            result, spent = solve_lanes(level, lanes, args.metric)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        except LaneError as exc:
            raise CommandError(f"{exc}\n(schedule {lanes_text(lanes)})") from None
        result.seconds = spent
        return _print_solve(args, level, result)
    if args.lanes is not None:
        raise CommandError("--lanes runs the default schedule in lanes: give --fast without "
                           "--weight, --packing, --features and --box-moves")
    weight = args.weight if args.weight is not None else (FAST_WEIGHT if args.fast else 1)
    if weight < 1:
        raise CommandError("--weight must be 1 (optimal) or more")
    if (args.features or args.box_moves) and args.weight is None:
        weight = FAST_WEIGHT
    for flag, given in (("--features", args.features), ("--box-moves", args.box_moves)):
        if given and weight == 1:
            raise CommandError(f"{flag} is a fast mode: leave out --weight 1")
        if given and args.metric != "pushes":
            raise CommandError(f"{flag} searches in the push metric: leave out --metric moves")
    if args.packing and weight == 1:
        raise CommandError("--packing needs a fast mode: add --fast or --weight W (W > 1)")
    options = {"weight": weight, "packing": args.packing, "features": args.features,
               "box_moves": args.box_moves}
    prepare_search(args.metric, [options])
    with SearchReport(sys.stderr) as report:
        result = solve(build_board(level), metric=args.metric, timeout=args.timeout,
                       on_progress=report, **options)
    return _print_solve(args, level, result)


def _print_solve(args: argparse.Namespace, level: Any, result: Any) -> int:
    if result.solved and not replay(level, result.lurd).solved:
        raise CommandError("internal error: the solution found does not replay; please report")
    if args.json:
        print(json.dumps(result.__dict__))
    elif result.dead_start:
        print(f"status: unsolvable (dead start: {result.dead_start}); {result.seconds:.2f} s")
    else:
        if result.solved:
            print(result.lurd)
        print(f"status: {result.status}; {result.metric}-optimal: "
              f"{'yes' if result.optimal and result.solved else 'no'}; pushes {result.pushes}, "
              f"moves {result.moves}; expanded {result.expanded}, stored {result.stored}, "
              f"deadlocks pruned {result.deadlocks}; {result.seconds:.2f} s; "
              f"start lower bound {result.lower_bound} pushes")
    return EXIT_OK if result.solved else EXIT_FAILED


def cmd_verify(args: argparse.Namespace) -> int:
    level = _load(args.file, args.level)
    lurd = args.lurd
    if lurd.startswith("@"):
        try:
            lurd = Path(lurd[1:]).read_text()
        except OSError as exc:
            raise CommandError(f"cannot read the solution file {lurd[1:]}: {exc.strerror}") \
                from exc
    result = replay(level, lurd)
    if result.solved:
        print(f"solved: {result.moves} moves, {result.pushes} pushes")
        return EXIT_OK
    print(f"not solved: {result.error}")
    print(result.final)
    return EXIT_FAILED


def cmd_generate(args: argparse.Namespace) -> int:
    level = _load(args.file, args.level)
    result = generate(level, count=args.count, max_states=args.max_states,
                      with_moves=args.moves)
    lines = []
    for g in result.levels:
        lines.append(g.xsb())
        moves = f", {g.moves} moves (move-optimal)" if g.moves is not None else ""
        lines.append(f"; {g.level.title}: {g.pushes} pushes (push-optimal){moves}")
        lines.append("")
    text = "\n".join(lines)
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    scope = "all" if result.complete else f"the first {result.states_explored} (limit reached)"
    print(f"; searched {scope} of the {result.states_explored} solvable states; deepest "
          f"{result.max_depth} pushes", file=sys.stderr)
    return EXIT_OK
