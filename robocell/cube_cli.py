"""`robocell cube`: apply, check, scramble, invert, simplify and show cube states and moves."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TextIO

import numpy as np

from robocell.common.cube import (
    CubeStateError,
    MoveError,
    apply_to_facelets,
    format_moves,
    invert_moves,
    random_facelets,
    simplify_moves,
    solved,
    validate,
)
from robocell.common.facelets import FACES, size_of, typed_facelets
from robocell.common.notation import NotationError, parse_moves
from robocell.common.scramble import scramble_to
from robocell.errors import CommandError
from robocell.services.solver.api import solve

ANSI_BACKGROUND = {  # face letter -> 256-colour background close to a real cube's sticker
    "U": 231, "R": 160, "F": 34, "D": 226, "L": 208, "B": 27,
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "cube", help="cube model tools: apply, check, scramble, invert, simplify, show",
        description="Cube model tools. Facelet strings are kociemba-style: faces U R F D L B, "
                    "row-major, 54 letters (3x3x3) or 24 (2x2x2).")
    sub = parser.add_subparsers(dest="cube_command", metavar="ACTION", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser("apply", help="apply moves to a cube (default: the solved cube)")
    p.add_argument("moves", metavar="MOVES", help='moves in standard notation, e.g. "R U R\' U\'"')
    p.add_argument("--from", dest="start", metavar="FACELETS", type=typed_facelets,
                   help="start state")
    p.add_argument("--size", type=int, choices=(2, 3), default=None,
                   help="cube size when starting solved (default 3)")
    common(p)
    p.set_defaults(func=cmd_apply)

    p = sub.add_parser("check", help="validate a facelet string; exit 1 with a specific code")
    p.add_argument("facelets", metavar="FACELETS", type=typed_facelets,
                   help="facelet string, or - for stdin lines")
    p.add_argument("--size", type=int, choices=(2, 3), default=None)
    common(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("scramble", help="a uniformly random state (and a sequence reaching it)")
    p.add_argument("--size", type=int, choices=(2, 3), default=3)
    p.add_argument("--seed", type=int, default=None, help="random seed (default: fresh)")
    p.add_argument("--count", type=int, default=1, help="how many scrambles")
    p.add_argument("--no-moves", action="store_true",
                   help="only the state, not the move sequence (which needs the solver tables)")
    common(p)
    p.set_defaults(func=cmd_scramble)

    p = sub.add_parser("invert", help="the sequence that undoes MOVES")
    p.add_argument("moves", metavar="MOVES")
    common(p)
    p.set_defaults(func=cmd_invert)

    p = sub.add_parser("simplify", help="cancel and merge turns (same face, commuting faces)")
    p.add_argument("moves", metavar="MOVES")
    common(p)
    p.set_defaults(func=cmd_simplify)

    p = sub.add_parser("show", help="draw a cube as a coloured net in the terminal")
    p.add_argument("facelets", metavar="FACELETS", nargs="?", type=typed_facelets,
                   help="default: solved 3x3")
    p.add_argument("--size", type=int, choices=(2, 3), default=None)
    p.add_argument("--plain", action="store_true", help="letters only, no colours")
    common(p)
    p.set_defaults(func=cmd_show)


def _parse(text: str) -> list:
    try:
        return parse_moves(text)
    except NotationError as exc:
        raise CommandError(str(exc)) from None


def _emit(args: argparse.Namespace, payload: dict, text: str) -> None:
    if args.json:
        print(json.dumps(payload))
    else:
        print(text)


def cmd_apply(args: argparse.Namespace) -> int:
    if args.start:
        try:
            validate(args.start, args.size)
        except CubeStateError as exc:
            raise CommandError(f"--from: {exc} [{exc.code}]") from None
        start = args.start
    else:
        start = solved(args.size or 3)
    moves = _parse(args.moves)
    try:
        result = apply_to_facelets(start, moves)
    except MoveError as exc:
        raise CommandError(str(exc)) from None
    _emit(args, {"facelets": result, "moves": format_moves(moves),
                 "solved": result == _solved_look(result)}, result)
    return 0


def _solved_look(facelets: str) -> str:
    """The string of this cube if every face showed one colour in its current orientation."""
    n = size_of(facelets) or 3
    per = n * n
    return "".join(facelets[f * per + (per // 2 if n == 3 else 0)] * per for f in range(6))


def cmd_check(args: argparse.Namespace) -> int:
    lines = sys.stdin.read().split() if args.facelets == "-" else [args.facelets]
    status = 0
    for facelets in lines:
        try:
            validate(facelets, args.size)
        except CubeStateError as exc:
            status = 1
            if args.json:
                print(json.dumps({"facelets": facelets, "valid": False, **exc.to_dict()}))
            else:
                print(f"invalid [{exc.code}]: {exc}", file=sys.stderr)
            continue
        if args.json:
            print(json.dumps({"facelets": facelets, "valid": True}))
        else:
            print(f"valid: {facelets}")
    return status


def cmd_scramble(args: argparse.Namespace) -> int:
    rng = np.random.default_rng(args.seed)
    for _ in range(args.count):
        facelets = random_facelets(args.size, rng)
        payload: dict = {"size": args.size, "facelets": facelets}
        text = facelets
        if not args.no_moves:
            moves = format_moves(scramble_to(facelets, solve(facelets, "htm").moves))
            payload["moves"] = moves
            text = f"{facelets}  {moves}"
        _emit(args, payload, text)
    return 0


def cmd_invert(args: argparse.Namespace) -> int:
    result = format_moves(invert_moves(_parse(args.moves)))
    _emit(args, {"moves": result}, result)
    return 0


def cmd_simplify(args: argparse.Namespace) -> int:
    moves = _parse(args.moves)
    simple = simplify_moves(moves)
    _emit(args, {"moves": format_moves(simple), "length": len(simple),
                 "removed": len(moves) - len(simple)}, format_moves(simple))
    return 0


def render_net(facelets: str, colour: bool = True) -> str:
    """The cube as a text net: U on top, then L F R B in a row, then D."""
    n = size_of(facelets) or 3
    per = n * n

    def cell(ch: str) -> str:
        if not colour:
            return ch + " "
        code = ANSI_BACKGROUND.get(ch, 0)
        fg = 16
        return f"\x1b[48;5;{code}m\x1b[38;5;{fg}m{ch} \x1b[0m"

    def row(face: str, r: int) -> str:
        f = FACES.index(face)
        return "".join(cell(facelets[f * per + r * n + c]) for c in range(n))

    pad = "  " * n + " "
    lines = [pad + row("U", r) for r in range(n)]
    lines += [" ".join(row(face, r) for face in "LFRB") for r in range(n)]
    lines += [pad + row("D", r) for r in range(n)]
    return "\n".join(lines)


def colour_wanted(stream: TextIO, plain: bool) -> bool:
    """Colour only on a terminal, unless --plain or $NO_COLOR (set and not empty, as
    https://no-color.org asks) says no."""
    return not plain and not os.environ.get("NO_COLOR") and stream.isatty()


def cmd_show(args: argparse.Namespace) -> int:
    facelets = args.facelets or solved(args.size or 3)
    try:
        validate(facelets, args.size)
    except CubeStateError as exc:
        raise CommandError(f"{exc} [{exc.code}]") from None
    colour = colour_wanted(sys.stdout, args.plain)
    _emit(args, {"facelets": facelets, "net": render_net(facelets, colour=False).splitlines()},
          render_net(facelets, colour=colour))
    return 0
