"""Move notation: parsing, formatting, inverse and simplification of move sequences.

Tokens (WCA-style, case-sensitive):
- face turns ``U R F D L B``;
- wide turns ``Uw Rw Fw Dw Lw Bw`` and their lower-case synonyms ``u r f d l b`` (two layers);
- slice turns ``M`` (follows L), ``E`` (follows D), ``S`` (follows F) — 3x3 only;
- whole-cube rotations ``x`` (follows R), ``y`` (follows U), ``z`` (follows F); ``X Y Z`` are
  accepted as synonyms and written in lower case.
Each may carry a suffix: none (90° clockwise seen looking at that face), ``'`` (90°
counter-clockwise; the typographic ``’`` is accepted too), ``2`` or ``2'`` (180°; ``2'`` records
the counter-clockwise direction, which matters to robots that turn one way only).
Tokens may be separated by any whitespace, commas, or nothing at all (``RUR'U'``); an
unknown token is reported with its 0-based character position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from robocell.errors import RobocellError

FACE_TURNS = "URFDLB"
SLICES = "MES"
ROTATIONS = "xyz"

MOVE_AXIS: dict[str, str] = {}
"""Axis (x, y or z) of every move name; moves about the same axis commute."""
for _name, _axis in (
    ("R", "x"), ("L", "x"), ("M", "x"), ("x", "x"), ("Rw", "x"), ("Lw", "x"),
    ("U", "y"), ("D", "y"), ("E", "y"), ("y", "y"), ("Uw", "y"), ("Dw", "y"),
    ("F", "z"), ("B", "z"), ("S", "z"), ("z", "z"), ("Fw", "z"), ("Bw", "z"),
):
    MOVE_AXIS[_name] = _axis

MOVE_NAMES = tuple(MOVE_AXIS)


class NotationError(RobocellError, ValueError):
    """A move sequence that cannot be parsed; ``position`` is the 0-based character index."""

    def __init__(self, text: str, position: int, reason: str) -> None:
        self.text = text
        self.position = position
        self.reason = reason
        pointer = f"\n  {text}\n  {' ' * position}^"
        super().__init__(f"{reason} at position {position}{pointer}")


@dataclass(frozen=True, slots=True)
class Move:
    """One move: ``name`` from MOVE_NAMES and ``turns`` in quarter turns clockwise.

    ``turns`` is 1, 2, 3 (written ``'``) or -2 (written ``2'``, a half turn made
    counter-clockwise); as a change of state -2 equals 2.
    """

    name: str
    turns: int

    def __post_init__(self) -> None:
        if self.name not in MOVE_AXIS:
            raise ValueError(f"unknown move name {self.name!r}")
        if self.turns not in (1, 2, 3, -2):
            raise ValueError(f"turns must be 1, 2, 3 or -2, not {self.turns}")

    @property
    def quarter_turns(self) -> int:
        """Clockwise quarter turns modulo 4 (1, 2 or 3): the change of state."""
        return self.turns % 4

    @property
    def axis(self) -> str:
        return MOVE_AXIS[self.name]

    @property
    def is_face_turn(self) -> bool:
        return self.name in FACE_TURNS

    def inverse(self) -> Move:
        return Move(self.name, {1: 3, 3: 1, 2: -2, -2: 2}[self.turns])

    def __str__(self) -> str:
        return self.name + {1: "", 2: "2", 3: "'", -2: "2'"}[self.turns]


def parse_moves(text: str | Sequence[str]) -> list[Move]:
    """Parse a move sequence (see the module docstring for the accepted notation): notation
    text, or a list of moves in notation (as plans carry them)."""
    if not isinstance(text, str):
        return [move for name in text for move in parse_moves(name)]
    moves: list[Move] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch.isspace() or ch == ",":
            i += 1
            continue
        start = i
        if ch in FACE_TURNS:
            if i + 1 < n and text[i + 1] == "w":
                name = ch + "w"
                i += 2
            else:
                name = ch
                i += 1
        elif ch in "urfdlb":
            name = ch.upper() + "w"
            i += 1
        elif ch in SLICES:
            name = ch
            i += 1
        elif ch in "xyzXYZ":
            name = ch.lower()
            i += 1
        else:
            raise NotationError(
                text, start,
                f"unknown move {ch!r}: expected one of U R F D L B (with w), u r f d l b, "
                "M E S, x y z",
            )
        turns = 1
        if i < n and text[i] == "2":
            turns = 2
            i += 1
            if i < n and text[i] in "'’":
                turns = -2
                i += 1
        elif i < n and text[i] in "'’":
            turns = 3
            i += 1
        if i < n and not (text[i].isspace() or text[i] == ","):
            nxt = text[i]
            if nxt.isdigit() or nxt in "'’":
                raise NotationError(
                    text, i, f"bad suffix {nxt!r} on {text[start:i]!r}: use ', 2 or 2'"
                )
        moves.append(Move(name, turns))
    return moves


def format_moves(moves: list[Move] | tuple[Move, ...]) -> str:
    """Space-separated standard notation; the empty sequence is the empty string."""
    return " ".join(str(m) for m in moves)


def invert_moves(moves: list[Move] | tuple[Move, ...]) -> list[Move]:
    """The sequence that undoes ``moves``."""
    return [m.inverse() for m in reversed(moves)]


def simplify_moves(moves: list[Move] | tuple[Move, ...]) -> list[Move]:
    """Cancel and merge moves: consecutive moves of the same name merge (``R R`` -> ``R2``,
    ``R R'`` -> nothing), also across moves about the same axis, which commute
    (``R L R`` -> ``R2 L``). The result produces the same state and is never longer."""
    out: list[Move] = []
    for move in moves:
        merged = False
        for j in range(len(out) - 1, -1, -1):
            other = out[j]
            if other.axis != move.axis:
                break
            if other.name == move.name:
                total = (other.quarter_turns + move.quarter_turns) % 4
                if total == 0:
                    del out[j]
                else:
                    out[j] = Move(move.name, total)
                merged = True
                break
        if not merged:
            out.append(move)
    return out
