"""`robocell solve`: plan a solution for one cube, or one per stdin line with `-`."""

from __future__ import annotations

import argparse
import json
import sys

from robocell.common.facelets import puzzle_size
from robocell.common.profile import ProfileError
from robocell.common.validation import CubeStateError
from robocell.errors import CommandError
from robocell.services.solver.api import solve


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "solve", help="plan the fastest solution of a cube for a robot profile",
        description="Plan a solution. FACELETS is a kociemba-style facelet string; with - read "
                    "one per line from stdin and write one JSON line per cube.")
    p.add_argument("facelets", metavar="FACELETS", help="facelet string, or - for stdin")
    p.add_argument("--puzzle", choices=("2x2", "3x3", "2x2x2", "3x3x3"), default=None,
                   help="expected puzzle (default: from the string's length)")
    p.add_argument("--profile", default=None, help="robot profile name or .toml file "
                   "(default htm; shipped: see `robocell solve --list-profiles`)")
    p.add_argument("--max-length", type=int, default=None, help="3x3: stop at this length")
    p.add_argument("--timeout", type=float, default=None, help="3x3: search budget in seconds")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_solve)


def _plan_dict(facelets: str, args: argparse.Namespace) -> dict:
    plan = solve(facelets, args.profile, max_length=args.max_length, timeout=args.timeout)
    return plan.to_dict()


def cmd_solve(args: argparse.Namespace) -> int:
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
                row = _plan_dict(facelets, args)
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
        row = _plan_dict(args.facelets, args)
    except CubeStateError as exc:
        raise CommandError(f"{exc} [{exc.code}]") from None
    except (ProfileError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    if args.json:
        print(json.dumps(row))
    else:
        print(row["moves"] if row["moves"] else "(already solved)")
        print(f"# {row['length']} moves, {len(row['primitives'])} primitives, cost "
              f"{row['cost']:g} units = {row['cost_ms']:.0f} ms ({row['profile']}), "
              f"solved in {row['solve_ms']:.2f} ms", file=sys.stderr)
    return 0
