"""From the search's push codes to a LURD solution: arcs unfolded into pushes, walks added.

The search stores one push code per arc (``nodes``): a single push, a tunnel run, a
goal-room macro or a box move. Replaying them from the start position turns each into its
single pushes (box moves by a fewest-push search over the boxes as they stand then), and
the shortest walk to the square behind each box gives the moves between pushes.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from robocell.sokoban.board import DIR_CHARS, N_DIRS, NO_SQUARE, Board, floor_region
from robocell.sokoban.nodes import BOX_MOVE_FLAG, TUNNEL_FLAG
from robocell.sokoban.rooms import MACRO_SHIFT, GoalRooms


def walk_path(board: Board, start: int, goal: int, occupied: set[int]) -> str:
    """Shortest walk (lower-case LURD) from ``start`` to ``goal`` around ``occupied``."""
    if start == goal:
        return ""
    came: dict[int, tuple[int, int]] = {start: (-1, -1)}
    queue = deque([start])
    while queue:
        s = queue.popleft()
        for d in range(N_DIRS):
            t = int(board.neighbours[s, d])
            if t == NO_SQUARE or t in came or t in occupied:
                continue
            came[t] = (s, d)
            if t == goal:
                path = []
                while t != start:
                    t, d2 = came[t]
                    path.append(DIR_CHARS[d2])
                return "".join(reversed(path))
            queue.append(t)
    raise ValueError(f"no walk from {board.name(start)} to {board.name(goal)}")


def expand_macros(pushes: list[int], rooms: GoalRooms, neighbours: np.ndarray) -> list[int]:
    """Push codes with every tunnel run and goal-room macro arc replaced by its pushes."""
    out = []
    for code in pushes:
        if code & BOX_MOVE_FLAG:
            out.append(code)  # expanded by expand_box_moves, which follows the boxes
        elif code & TUNNEL_FLAG:
            run = (code & ~TUNNEL_FLAG) >> MACRO_SHIFT
            box, d = divmod(code & ((1 << MACRO_SHIFT) - 1), N_DIRS)
            for _ in range(run):
                out.append(box * N_DIRS + d)
                box = int(neighbours[box, d])
        elif code >> MACRO_SHIFT:
            out.extend(rooms.macros[(code >> MACRO_SHIFT) - 1])
        else:
            out.append(code)
    return out


def expand_box_moves(board: Board, pushes: list[int]) -> list[int]:
    """Push codes with every box move (BOX_MOVE_FLAG) replaced by a fewest-push sequence
    that carries its box to the same square with the player on the same side."""
    boxes = set(int(b) for b in board.start_boxes)
    player = int(board.start_player)
    out: list[int] = []
    nbr = board.neighbours
    for code in pushes:
        if code & BOX_MOVE_FLAG:
            start = (code & ~BOX_MOVE_FLAG) >> MACRO_SHIFT
            boxes.remove(start)
            path = _box_path(board, boxes, player, start,
                             divmod(code & ((1 << MACRO_SHIFT) - 1), N_DIRS))
            out.extend(path)
            box, d = divmod(path[-1], N_DIRS)
            boxes.add(int(nbr[box, d]))
        else:
            box, d = divmod(code, N_DIRS)
            out.append(code)
            boxes.remove(box)
            boxes.add(int(nbr[box, d]))
        player = box
    return out


def _box_path(board: Board, others: set[int], player: int, start: int,
              goal: tuple[int, int]) -> list[int]:
    """Fewest pushes carrying the box on ``start`` to ``goal`` = (square, last direction)."""
    nbr = board.neighbours
    came: dict[tuple[int, int], tuple[int, int] | None] = {}
    frontier: deque[tuple[int, int]] = deque()
    box, at, prev = start, player, None
    while True:
        reach = floor_region(board, at, others | {box})
        for d in range(N_DIRS):
            behind, target = int(nbr[box, d ^ 1]), int(nbr[box, d])
            if (behind in reach and target != NO_SQUARE and target not in others
                    and (target, d) not in came):
                came[(target, d)] = prev
                frontier.append((target, d))
        if goal in came:
            break
        if not frontier:
            raise ValueError(f"box move from {board.name(start)} cannot be replayed")
        prev = frontier.popleft()
        box, at = prev[0], int(nbr[prev[0], prev[1] ^ 1])
    path = []
    state: tuple[int, int] | None = goal
    while state is not None:
        path.append(int(nbr[state[0], state[1] ^ 1]) * N_DIRS + state[1])
        state = came[state]
    return path[::-1]


def pushes_to_lurd(board: Board, pushes: list[int]) -> str:
    """LURD string of a push sequence (each push coded box_square*4 + direction), with the
    shortest walk to the square behind each box."""
    boxes = set(int(b) for b in board.start_boxes)
    player = board.start_player
    out = []
    for code in pushes:
        box, d = divmod(code, N_DIRS)
        behind = int(board.neighbours[box, d ^ 1])
        out.append(walk_path(board, player, behind, boxes))
        out.append(DIR_CHARS[d].upper())
        boxes.remove(box)
        boxes.add(int(board.neighbours[box, d]))
        player = box
    return "".join(out)
