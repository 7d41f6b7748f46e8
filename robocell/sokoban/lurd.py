"""LURD replay: walk a move string over a level and say whether, and where, it fails."""

from __future__ import annotations

from dataclasses import dataclass

from robocell.sokoban.level import Level, square_name

LURD_DELTAS = {"u": (-1, 0), "d": (1, 0), "l": (0, -1), "r": (0, 1)}


@dataclass
class Replay:
    """Result of replaying a LURD string: ``solved`` only if every step was legal and all
    boxes end on goals; otherwise ``error`` says which step failed and why."""

    solved: bool
    legal: bool
    moves: int
    pushes: int
    error: str = ""
    failed_step: int = -1      # 1-based index into the LURD string, -1 if none
    final: str = ""            # the position reached, as XSB


def replay(level: Level, lurd: str) -> Replay:
    """Replay ``lurd`` (lower case walks, upper case pushes; whitespace ignored)."""
    walls = level.walls
    goals = level.goals
    boxes = set(level.boxes)
    player = level.player
    moves = pushes = 0

    def draw() -> str:
        grid = [list(row) for row in level.rows]
        for r, row in enumerate(grid):
            for c, ch in enumerate(row):
                if ch in "@+$*.":
                    row[c] = "." if (r, c) in goals else " "
        for r, c in boxes:
            grid[r][c] = "*" if (r, c) in goals else "$"
        pr, pc = player
        grid[pr][pc] = "+" if player in goals else "@"
        return "\n".join("".join(row).rstrip() for row in grid)

    def fail(step: int, message: str) -> Replay:
        return Replay(False, False, moves, pushes, f"step {step} ({lurd_clean[step - 1]!r}): "
                      f"{message}", step, draw())

    lurd_clean = "".join(lurd.split())
    for step, ch in enumerate(lurd_clean, 1):
        key = ch.lower()
        if key not in LURD_DELTAS:
            return fail(step, "not a LURD letter; use u d l r (walk) and U D L R (push)")
        dr, dc = LURD_DELTAS[key]
        target = (player[0] + dr, player[1] + dc)
        if target in walls:
            return fail(step, f"walks into the wall at {square_name(*target)}")
        if not (0 <= target[0] < level.height and 0 <= target[1] < level.width):
            return fail(step, f"leaves the board at {square_name(*target)}")
        if target in boxes:
            if ch.islower():
                return fail(step, f"moves into the box at {square_name(*target)} without pushing; "
                            "write pushes in upper case")
            beyond = (target[0] + dr, target[1] + dc)
            if beyond in walls or beyond in boxes:
                what = "wall" if beyond in walls else "box"
                return fail(step, f"cannot push the box at {square_name(*target)}: {what} at "
                            f"{square_name(*beyond)}")
            boxes.remove(target)
            boxes.add(beyond)
            pushes += 1
        elif ch.isupper():
            return fail(step, f"push with no box at {square_name(*target)}; "
                        "write walks in lower case")
        player = target
        moves += 1
    solved = boxes == goals
    error = "" if solved else f"all {moves} moves are legal but {len(boxes - goals)} boxes are " \
        "not on goals at the end"
    return Replay(solved, True, moves, pushes, error, -1, draw())
