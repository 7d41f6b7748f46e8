"""Sokoban level files: XSB parsing (comments, titles, run-length rows) and level validation."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from robocell.errors import RobocellError

WALL = "#"
PLAYER = "@"
PLAYER_ON_GOAL = "+"
BOX = "$"
BOX_ON_GOAL = "*"
GOAL = "."
FLOOR = " "
FLOOR_ALIASES = "-_"
BOARD_CHARS = frozenset("#@+$*. -_")
RLE_ROW_SEPARATOR = "|"

_RLE_TOKEN = re.compile(r"(\d*)([#@+$*. \-_|])")


class LevelError(RobocellError, ValueError):
    """A level that cannot be played: says what is wrong and on which square or line."""


def square_name(row: int, col: int) -> str:
    """Human name of a board square, 1-based as people count rows and columns."""
    return f"row {row + 1}, column {col + 1}"


@dataclass
class Level:
    """One Sokoban level as drawn: rectangular grid of XSB characters plus its title.

    ``rows`` is padded with floor to a rectangle; everything else is derived from it.
    """

    rows: list[str]
    title: str = ""
    index: int = 1
    line: int = 1
    comments: list[str] = field(default_factory=list)

    @property
    def height(self) -> int:
        return len(self.rows)

    @property
    def width(self) -> int:
        return max((len(r) for r in self.rows), default=0)

    def cells(self) -> list[tuple[int, int, str]]:
        return [(r, c, ch) for r, row in enumerate(self.rows) for c, ch in enumerate(row)]

    def squares_of(self, chars: str) -> list[tuple[int, int]]:
        return [(r, c) for r, c, ch in self.cells() if ch in chars]

    @property
    def walls(self) -> set[tuple[int, int]]:
        return set(self.squares_of(WALL))

    @property
    def goals(self) -> set[tuple[int, int]]:
        return set(self.squares_of(GOAL + BOX_ON_GOAL + PLAYER_ON_GOAL))

    @property
    def boxes(self) -> set[tuple[int, int]]:
        return set(self.squares_of(BOX + BOX_ON_GOAL))

    @property
    def player(self) -> tuple[int, int]:
        found = self.squares_of(PLAYER + PLAYER_ON_GOAL)
        if len(found) != 1:
            raise LevelError(f"level {self.index}: expected one player, found {len(found)}")
        return found[0]

    def xsb(self) -> str:
        """The level drawn in XSB, trailing spaces removed."""
        return "\n".join(row.rstrip() for row in self.rows)

    def reachable(self) -> set[tuple[int, int]]:
        """Squares the player can reach when boxes are ignored (the level's interior)."""
        start = self.player
        walls = self.walls
        seen = {start}
        stack = [start]
        while stack:
            r, c = stack.pop()
            for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                nxt = (r + dr, c + dc)
                if nxt in seen or nxt in walls:
                    continue
                seen.add(nxt)
                stack.append(nxt)
        return seen

    def validate(self) -> None:
        """Raise LevelError naming the square when the level cannot be played."""
        where = f"level {self.index}" + (f" ({self.title})" if self.title else "")
        players = self.squares_of(PLAYER + PLAYER_ON_GOAL)
        if not players:
            raise LevelError(f"{where}: no player ('@' or '+'); draw the player on one square")
        if len(players) > 1:
            names = "; ".join(square_name(r, c) for r, c in players)
            raise LevelError(f"{where}: {len(players)} players at {names}; keep exactly one")
        walls = self.walls
        start = players[0]
        seen = {start}
        stack = [start]
        while stack:
            r, c = stack.pop()
            for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                nr, nc = r + dr, c + dc
                if not (0 <= nr < self.height and 0 <= nc < len(self.rows[nr])):
                    raise LevelError(
                        f"{where}: not enclosed: the player can walk off the board from "
                        f"{square_name(r, c)}; close the wall around it")
                if (nr, nc) in seen or (nr, nc) in walls:
                    continue
                seen.add((nr, nc))
                stack.append((nr, nc))
        boxes = self.boxes
        goals = self.goals
        if len(boxes) != len(goals):
            raise LevelError(f"{where}: {len(boxes)} boxes but {len(goals)} goals; "
                             "every box needs a goal")
        if not boxes:
            raise LevelError(f"{where}: no boxes; a level needs at least one box and goal")
        for r, c in sorted(boxes):
            if (r, c) not in seen and (r, c) not in goals:
                raise LevelError(f"{where}: box at {square_name(r, c)} is off goal and out of "
                                 "the player's reach; move it inside or onto a goal")
        for r, c in sorted(goals):
            if (r, c) not in seen and (r, c) not in boxes:
                raise LevelError(f"{where}: goal at {square_name(r, c)} is empty and out of "
                                 "the player's reach; move it inside or put a box on it")


def _expand_rle(line: str, lineno: int) -> list[str]:
    """Expand a run-length encoded row (``4#`` = ``####``, ``|`` separates rows)."""
    if not any(ch.isdigit() for ch in line) and RLE_ROW_SEPARATOR not in line:
        return [line]
    rows = [""]
    pos = 0
    for match in _RLE_TOKEN.finditer(line):
        if match.start() != pos:
            raise LevelError(f"line {lineno}: cannot read {line[pos:match.start()]!r} at "
                             f"column {pos + 1}; use XSB characters #@+$*. -_ or counts")
        pos = match.end()
        count = int(match.group(1)) if match.group(1) else 1
        ch = match.group(2)
        if ch == RLE_ROW_SEPARATOR:
            rows.extend([""] * count)
        else:
            rows[-1] += ch * count
    if pos != len(line):
        raise LevelError(f"line {lineno}: trailing {line[pos:]!r} is not part of a row")
    return rows


def _is_board_line(line: str) -> bool:
    stripped = line.rstrip()
    if not stripped or stripped.lstrip().startswith(";"):
        return False
    body = stripped.replace(RLE_ROW_SEPARATOR, "")
    return all(ch in BOARD_CHARS or ch.isdigit() for ch in body) and any(
        ch in "#@+$*." for ch in body)


def parse_levels(text: str) -> list[Level]:
    """All levels of an XSB text, in file order, numbered from 1.

    A level is a block of board lines. Its title is a ``Title:`` comment, else the comment
    right after the block (``; 1`` in Microban), else the last comment before it (Boxoban).
    Floor written as ``-`` or ``_`` is normalised to a space.
    """
    lines = text.splitlines()
    blocks: list[tuple[int, list[str]]] = []
    comments_before: list[list[tuple[int, str]]] = []
    pending: list[tuple[int, str]] = []
    current: list[str] | None = None
    start = 0
    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if _is_board_line(line):
            if current is None:
                current, start = [], lineno
                comments_before.append(pending)
                pending = []
            current.extend(_expand_rle(line.rstrip(), lineno))
            continue
        stripped = line.strip()
        if current is not None:
            if stripped and not stripped.startswith(";") and line.lstrip()[:1] in BOARD_CHARS:
                bad = next((i for i, ch in enumerate(line)
                            if ch not in BOARD_CHARS and not ch.isdigit() and ch != "|"), None)
                if bad is not None:
                    raise LevelError(
                        f"line {lineno}, column {bad + 1}: {line[bad]!r} is not an XSB "
                        "character; use #@+$*. and space (or - _ for floor)")
            blocks.append((start, current))
            current = None
        if stripped:
            pending.append((lineno, stripped))
    if current is not None:
        blocks.append((start, current))
    comments_before.append(pending)

    levels: list[Level] = []
    for i, (start, rows) in enumerate(blocks):
        end = start + len(rows)
        before = [c for _, c in comments_before[i]]
        after = [(n, c) for n, c in comments_before[i + 1] if n == end] if i + 1 < len(
            comments_before) else []
        title = ""
        for c in before:
            if c.lower().startswith("title:"):
                title = c.split(":", 1)[1].strip()
        if not title and after:
            title = after[0][1].lstrip(";").strip()
            comments_before[i + 1] = [(n, c) for n, c in comments_before[i + 1] if n != end]
        if not title and before:
            title = before[-1].lstrip(";").strip()
        grid = [r.translate(str.maketrans("-_", "  ")) for r in rows]
        width = max(len(r) for r in grid)
        grid = [r.ljust(width) for r in grid]
        levels.append(Level(rows=grid, title=title, index=i + 1, line=start, comments=before))
    return levels


def load_levels(path: str | Path) -> list[Level]:
    """Read every level of an XSB file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise LevelError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        return parse_levels(text)
    except LevelError as exc:
        raise LevelError(f"{path}: {exc}") from exc


def load_level(path: str | Path, number: int = 1) -> Level:
    """Level ``number`` (1-based position in the file) of an XSB file, validated."""
    levels = load_levels(path)
    if not levels:
        raise LevelError(f"{path}: no levels found; expected XSB rows of #@+$*. and spaces")
    if not 1 <= number <= len(levels):
        raise LevelError(f"{path}: has levels 1..{len(levels)}, not {number}")
    level = levels[number - 1]
    level.validate()
    return level
