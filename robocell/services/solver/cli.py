"""The solver process's command line: `robocell solve` (plan a cube for a robot profile, in
this process), `robocell tables` (build, verify and describe the generated tables) and
`robocell solver` (the solver service on the bus)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import textwrap
import time
from typing import Any

from robocell.common import config, tables
from robocell.common.bus import Node
from robocell.common.bus.options import add_remote_options, services_endpoints
from robocell.common.facelets import puzzle_size, size_of, solved, typed_facelets
from robocell.common.profile import ProfileError, available_profiles, load_profile
from robocell.common.progress import Ticker
from robocell.common.validation import CubeStateError, validate
from robocell.errors import CommandError, RobocellError
from robocell.services.solver.api import solve
from robocell.services.solver.planning import DEFAULT_TIMEOUT_S, merge_outcomes, split_jobs
from robocell.services.solver.pool import SolverPool
from robocell.services.solver.service import SolverService
from robocell.services.solver.table_groups import TableChoice, all_groups, choose_tables
from robocell.services.solver.worker import warm_profiles


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `solve`, `tables` and `solver` to the subcommands."""
    register_solve(subparsers)
    register_tables(subparsers)
    register_service(subparsers)


POOL_DEADLINE_S = 600.0
"""Longest a split solve may take before the command gives up on it (a budget is far less)."""


def register_solve(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "solve", help="plan the fastest solution of a cube for a robot profile",
        description="Plan a solution. FACELETS is a kociemba-style facelet string; with - read "
                    "one per line from stdin and write one JSON line per cube.")
    p.add_argument("facelets", metavar="FACELETS", nargs="?", type=typed_facelets,
                   help="facelet string, or - for stdin")
    p.add_argument("--list-profiles", action="store_true",
                   help="list the shipped robot profiles (name, puzzle, primitives, "
                        "description) and exit")
    p.add_argument("--puzzle", choices=("2x2", "3x3", "2x2x2", "3x3x3"), default=None,
                   help="expected puzzle (default: from the string's length)")
    p.add_argument("--profile", default=None, help="robot profile name or .toml file "
                   "(default htm; shipped: see `robocell solve --list-profiles`)")
    p.add_argument("--max-length", type=int, default=None, metavar="N",
                   help="fail unless a solution of at most N face turns is found (3x3: the "
                        "search stops at the first one; see --timeout)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="3x3: search budget in seconds (0: the first solution found)")
    p.add_argument("--workers", type=int, default=None,
                   help="3x3: processes to split a search over (default: every core, "
                        f"{os.cpu_count()} here; 1: in this process)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_solve)


COMPILE_QUIET_S = 2.0
"""A warm-up longer than this is a compile (a cache load takes less): it is said, with ticks."""
COMPILE_EXPECTED_S = {2: 15.0, 3: 35.0}
"""What compiling each size's search takes on two cores, about."""


class TooLongError(RobocellError, ValueError):
    """No solution within ``--max-length`` was found."""

    code = "too_long"


class _Planner:
    """Plans cubes in this process, or split over a pool started on the first 3x3 cube."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.workers = args.workers if args.workers is not None else (os.cpu_count() or 1)
        if self.workers < 1:
            raise CommandError(f"--workers {self.workers}: give 1 or more")
        self.pool: SolverPool | None = None
        self.warm: set[int] = set()

    def warm_up(self, size: int) -> None:
        """Compile the search of this size before the first cube (said while it lasts, if it
        is a compile and not a cache load), so that a plan's time is the search's alone."""
        if size in self.warm:
            return
        with Ticker(f"robocell solve: compiling the {size}x{size} search (first run only)",
                    COMPILE_EXPECTED_S[size],
                    after_s=COMPILE_QUIET_S):
            solve(solved(size), self.args.profile, timeout=0.01)
        self.warm.add(size)

    def plan(self, facelets: str) -> dict[str, Any]:
        args = self.args
        if self.workers == 1 or args.max_length is not None or size_of(facelets) != 3:
            size = size_of(facelets)
            if size is not None:
                self.warm_up(size)
            plan = solve(facelets, args.profile, max_length=args.max_length,
                         timeout=args.timeout)
            return plan.to_dict()
        validate(facelets)  # an impossible cube is refused here, as solve() refuses it
        profile = load_profile(args.profile or "htm")
        budget = args.timeout
        if budget is None:
            budget = profile.search_budget_s or DEFAULT_TIMEOUT_S
        if self.pool is None:
            self.pool = SolverPool(self.workers, (profile.name,), queue_limit=self.workers)
            self.pool.start()
        # the whole budget on each idle core, as the service does
        outcome = merge_outcomes(self.pool.solve_split(
            lambda n: split_jobs(facelets, args.profile, budget, n),
            time.monotonic() + POOL_DEADLINE_S))
        if "error" in outcome:
            error = outcome["error"]
            raise ValueError(error.get("message", str(error)))
        return outcome["plan"]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


def _summary(row: dict[str, Any]) -> str:
    stats = row.get("stats", {})
    turns = stats.get("face_turn_count", row["length"])
    workers = stats.get("workers", 1)
    return (f"# {turns} face turns, {len(row['primitives'])} primitives, predicted robot time "
            f"{row['cost_ms']:,.0f} ms ({row['profile']}: {row['cost']:g} units), searched "
            f"{row['solve_ms']:.1f} ms on {workers} process{'es' if workers > 1 else ''}")


def _plan_dict(facelets: str, args: argparse.Namespace, planner: _Planner) -> dict:
    """The row `robocell solve` prints of a cube's plan: the solution, its moves as
    notation text (``R U2 F'``)."""
    row = planner.plan(facelets)
    row = {**row, "moves": " ".join(row["moves"])}
    turns = row.get("stats", {}).get("face_turn_count", row["length"])
    if args.max_length is not None and turns > args.max_length:
        if row.get("optimal"):
            found = f"the optimal solution for profile {row['profile']} has {turns} moves"
        else:
            budget = "the default search budget" if args.timeout is None else \
                f"a search budget of {args.timeout:g} s"
            found = f"the shortest found in {budget} has {turns} face turns"
        raise TooLongError(f"no solution of at most {args.max_length} moves: {found} "
                           f"({row['moves']}); allow more moves with --max-length"
                           + ("" if row.get("optimal") else ", or search longer with --timeout S"))
    return row


def list_profiles(as_json: bool) -> str:
    """The shipped profiles: name, puzzle, number of primitives, description."""
    rows = []
    for name in available_profiles():
        profile = load_profile(name)
        rows.append({"name": profile.name, "puzzle": profile.puzzle,
                     "primitives": len(profile.primitives),
                     "description": " ".join(profile.description.split())})
    if as_json:
        return json.dumps(rows, indent=2)
    lines = [f"{'NAME':<14} {'PUZZLE':<7} PRIMITIVES"]
    for row in rows:
        lines.append(f"{row['name']:<14} {row['puzzle']:<7} {row['primitives']}")
        lines.extend(textwrap.wrap(row["description"], 96, initial_indent="    ",
                                   subsequent_indent="    "))
    lines.append("Use one with `robocell solve --profile NAME FACELETS`; docs/profiles.md "
                 "describes the file format.")
    return "\n".join(lines)


def _check_options(args: argparse.Namespace) -> None:
    if args.timeout is not None and not args.timeout >= 0:
        raise CommandError(f"--timeout must be 0 or more seconds, not {args.timeout:g} "
                           "(0 takes the first solution found)")
    if args.max_length is not None and args.max_length < 0:
        raise CommandError(f"--max-length must be 0 or more, not {args.max_length}")
    if args.facelets is None:
        raise CommandError("give a FACELETS string (or - to read one per line from stdin); "
                           "`robocell solve --list-profiles` lists the robot profiles")


def cmd_solve(args: argparse.Namespace) -> int:
    if args.list_profiles:
        print(list_profiles(args.json))
        return 0
    _check_options(args)
    planner = _Planner(args)
    try:
        return _run(args, planner)
    finally:
        planner.close()


def _run(args: argparse.Namespace, planner: _Planner) -> int:
    size = puzzle_size(args.puzzle) if args.puzzle else None
    if args.facelets == "-":
        status = 0
        for number, line in enumerate(sys.stdin, 1):
            facelets = line.strip()
            if not facelets:
                continue
            try:
                if size is not None and len(facelets) != 6 * size * size:
                    raise CubeStateError("length", f"line {number}: expected a {args.puzzle} "
                                         f"facelet string ({6 * size * size} letters), "
                                         f"got {len(facelets)}")
                row = _plan_dict(facelets, args, planner)
            except (CubeStateError, ValueError) as exc:
                status = 1
                code = getattr(exc, "code", "invalid")
                row = {"facelets": facelets, "line": number, "error": str(exc), "code": code}
            print(json.dumps(row), flush=True)
        return status
    try:
        if size is not None and len(args.facelets) != 6 * size * size:
            raise CommandError(f"--puzzle {args.puzzle} needs {6 * size * size} letters, "
                               f"got {len(args.facelets)}")
        row = _plan_dict(args.facelets, args, planner)
    except CubeStateError as exc:
        raise CommandError(f"{exc} [{exc.code}]") from None
    except TooLongError as exc:
        print(f"robocell solve: {exc}", file=sys.stderr)
        return 1
    except (ProfileError, ValueError, tables.TableError) as exc:
        raise CommandError(str(exc)) from None
    if args.json:
        print(json.dumps(row))
    else:
        print(row["moves"] if row["moves"] else "(already solved)")
        print(_summary(row), file=sys.stderr)
    return 0


def register_tables(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("tables", help="build, verify and describe solver tables")
    sub = parser.add_subparsers(dest="tables_command", metavar="ACTION", required=True)
    for action, helptext in (("build", "build missing or stale tables (or --force all)"),
                             ("verify", "check manifests and checksums; exit 1 on a problem"),
                             ("info", "list table groups with sizes and build times")):
        p = sub.add_parser(action, help=helptext)
        chosen = p.add_mutually_exclusive_group()
        chosen.add_argument("--profile", help="the tables this robot profile needs (default: "
                                              "the configured cell's, $ROBOCELL_PROFILE or "
                                              f"{config.DEFAULT_PROFILE})")
        chosen.add_argument("--all", action="store_true",
                            help="every shipped robot profile's tables (about 4 GB)")
        p.add_argument("--json", action="store_true")
        if action == "build":
            p.add_argument("--force", action="store_true", help="rebuild even if up to date")
        p.set_defaults(func=globals()[f"cmd_{action}"])


def _chosen_groups(args: argparse.Namespace) -> tuple[list, str]:
    """The groups a `tables` action works on, and whose they are: every shipped profile's
    with --all, else the --profile's, else the configured cell's."""
    if args.all:
        return all_groups(None), "every shipped profile"
    profile = args.profile or config.default_profile()
    return all_groups(profile), f"profile {profile}"


def cmd_build(args: argparse.Namespace) -> int:
    groups, whose = _chosen_groups(args)
    plan = tables.build_plan(list(all_groups(None)) if args.force and args.all else groups,
                             whose)
    if args.force:
        plan = (f"tables: rebuilding {len(groups)} group(s) of {whose}: about "
                f"{sum(g.expected_mb for g in groups):,.0f} MB, about "
                f"{sum(g.expected_s for g in groups):.0f} s on two cores")
    if plan is not None:
        print(plan, file=sys.stderr, flush=True)
    if not args.all:
        print(f"tables: only {whose}'s; every shipped profile's: `robocell tables build "
              "--all`", file=sys.stderr, flush=True)
    for group in groups:
        if tables.ensure_built(group, force=args.force) is None:
            print(f"{group.name}: up to date")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    unbuilt, damaged = [], []
    groups, _ = _chosen_groups(args)
    for group in groups:
        problems = tables.verify(group)
        if tables.staleness(group) is not None:
            unbuilt.append(group.name)
        elif problems:
            damaged.append(group.name)
        if args.json:
            print(json.dumps({"group": group.name, "ok": not problems, "problems": problems}))
        else:
            print(f"{group.name}: " + ("ok" if not problems else "; ".join(problems)))
    hint = rebuild_hint(unbuilt, damaged,
                        " --all" if args.all else f" --profile {args.profile}" if args.profile
                        else "")
    if hint:
        print(hint, file=sys.stderr)
    return 1 if unbuilt or damaged else 0


def rebuild_hint(unbuilt: list[str], damaged: list[str], only: str) -> str:
    """What to run when ``verify`` found groups missing or stale (``unbuilt``) or with a
    checksum mismatch (``damaged``); empty when there is nothing to do. ``only``: the options
    that chose the groups (" --profile P", " --all" or "")."""
    lines = []
    if unbuilt:
        lines.append(f"{len(unbuilt)} table group(s) in {tables.tables_dir()} are not usable "
                     f"({', '.join(unbuilt)}): build them with `robocell tables build{only}` "
                     "(the solver also builds what it needs on first use, with a progress "
                     "bar)")
    if damaged:
        lines.append(f"checksum mismatch in {', '.join(damaged)}: rebuild with `robocell "
                     f"tables build --force{only}`")
    return "\n".join(lines)


def cmd_info(args: argparse.Namespace) -> int:
    groups, _ = _chosen_groups(args)
    for group in groups:
        manifest = tables.read_manifest(group) or {}
        arrays = manifest.get("arrays", {})
        row = {
            "group": group.name, "description": group.description,
            "status": tables.staleness(group) or "ok", "path": str(group.path),
            "megabytes": round(sum(a["bytes"] for a in arrays.values()) / 1e6, 2),
            "build_seconds": manifest.get("build_seconds"), "params": group.params,
            "arrays": {k: {"dtype": v["dtype"], "shape": v["shape"]} for k, v in arrays.items()},
        }
        if args.json:
            print(json.dumps(row))
        else:
            print(f"{row['group']}: {_info_status(row)} — {row['description']}")
    return 0


def _info_status(row: dict) -> str:
    """Status, size and build time of one row of `tables info`, as far as they are known."""
    if not row["arrays"]:
        return row["status"]  # e.g. "not built yet": no size, no build time
    seconds = row["build_seconds"]
    built = "build time not recorded" if seconds is None else f"built in {seconds:.1f} s"
    return f"{row['status']}, {row['megabytes']} MB, {built}"


def register_service(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "solver", help="run the solver service on the bus",
        description="Serve `solve` commands from a pool of worker processes sharing the "
                    "memory-mapped tables (the cell asks for each plan). Against a remote "
                    "cell: --broker tcp://HOST:PORT --curve-key FILE (a key its broker "
                    "allows as service:solver); several cells from one pool and one set of "
                    "tables: --broker repeated.")
    p.add_argument("--workers", type=int,
                   default=config.solver_workers(),
                   help="worker processes (default $ROBOCELL_SOLVER_WORKERS or 2)")
    p.add_argument("--profile", default=config.profile_name(),
                   help="the cell's robot profile (default $ROBOCELL_PROFILE); used for "
                        "cubes of its size, htm for the other size")
    p.add_argument("--timeout", type=float, default=None,
                   help="3x3 search budget per request in seconds (bounded by its deadline; "
                        "default: the robot profile's search_budget_ms, else "
                        f"{DEFAULT_TIMEOUT_S})")
    p.add_argument("--split", action=argparse.BooleanOptionalAction,
                   default=config.switch(config.SOLVER_SPLIT_ENV),
                   help="share a 3x3 search among the workers idle when it arrives (default "
                        "$ROBOCELL_SOLVER_SPLIT or on; --no-split: one worker per request)")
    p.add_argument("--table-budget", type=float, default=None, metavar="MB",
                   help="map at most this many MB of tables: the best of the profile's that "
                        f"fit (default ${config.TABLE_BUDGET_ENV}, else every one; e.g. 128: "
                        "the two-phase tables, plans re-ranked by the motion compiler)")
    add_remote_options(p, several=True)
    p.set_defaults(func=cmd_solver)


def table_choice(profile: str | None, budget_mb: float | None) -> TableChoice:
    """The tables a solver of a cell of ``profile`` maps within ``budget_mb`` (None:
    ${config.TABLE_BUDGET_ENV}, else no budget), said on stderr."""
    if budget_mb is None:
        try:
            budget_mb = config.table_budget_mb()
        except config.ConfigError as exc:
            raise CommandError(str(exc)) from None
    elif not budget_mb > 0:
        raise CommandError(f"--table-budget {budget_mb:g}: give the megabytes of tables the "
                           "solver may map (e.g. 128), or leave it out for every table")
    choice = choose_tables(profile, budget_mb)
    print(choice.describe(), file=sys.stderr, flush=True)
    return choice


def cmd_solver(args: argparse.Namespace) -> int:
    brokers = services_endpoints(args, "solver")  # a missing broker said while tables load
    profiles = {2: "htm", 3: "htm"}
    if args.profile:
        try:
            profile = load_profile(args.profile)
        except ProfileError as exc:
            raise CommandError(str(exc)) from None
        for size in (2, 3):
            if profile.fits(size):
                profiles[size] = args.profile
    # build missing tables once, here, before the workers map them: the cell's profile's
    # alone, those that fit the table budget (another profile's are built, cold, by the
    # first request that needs them, unless a budget holds the solver to these)
    choice = table_choice(args.profile, args.table_budget)
    limit = None
    if choice.budget_mb is not None:
        limit = tables.LoadingLimit(choice.names, f"the table budget of "
                                                  f"{choice.budget_mb:g} MB")
        tables.limit_loading(limit.groups, limit.reason)
    plan = tables.build_plan(list(choice.groups), f"profile {args.profile or 'htm'}")
    if plan is not None:
        print(plan, file=sys.stderr, flush=True)
    for group in choice.groups:
        tables.load(group)
    with contextlib.ExitStack() as nodes:  # one node per broker, one pool for all
        node = [nodes.enter_context(Node("solver", endpoints)) for endpoints in brokers]
        service = SolverService(node, args.workers, profiles, args.timeout, args.split,
                                warm=warm_profiles(args.profile), table_limit=limit)
        try:
            service.start()
            node[0].wait()
        finally:
            service.stop()
    return 0
