"""Packing order: the order in which a level's goals can be filled, by pulling boxes out.

Retrograde analysis over the whole board: start with every goal full, and repeatedly take
out the box whose goal is easiest to empty - a lone box on that goal (the other full goals
are walls) that can be pulled, in the fewest pulls, to a square off the goals that a box from
the start can reach, with the player then able to walk back to the start area. (A square no
box can be pushed to - the far end of a dead-end corridor behind the goals - is no way out:
a box pulled there could never have come in that way.) Pulling is the exact reverse of
pushing, so the reverse of that removal order is an order in which boxes can be pushed onto
the goals one after the other without a filled goal ever blocking a later one (as far as
the lone-box view sees). When no box comes out alone, the shallowest goal is taken out (the
order is a guide for the fast modes, never a pruning rule, so a poor order costs time, not
solutions).
"""

from __future__ import annotations

from collections import deque

import numpy as np
from numba import njit

from robocell.sokoban.board import N_DIRS, NO_SQUARE, Board, floor_region

NOT_A_GOAL = -1
MAX_PULL_STATES = 20_000
"""Bound on the (box square, player region) states of one pull-out search."""


def _home_square(board: Board) -> int:
    """A square of the start area: the player's start, or the nearest square off the goals."""
    start = board.start_player
    if not board.is_goal[start]:
        return start
    seen = {start}
    queue = deque([start])
    while queue:
        s = queue.popleft()
        if not board.is_goal[s]:
            return s
        for d in range(N_DIRS):
            t = int(board.neighbours[s, d])
            if t != NO_SQUARE and t not in seen:
                seen.add(t)
                queue.append(t)
    return start


def box_reachable(board: Board) -> np.ndarray:
    """bool[n]: the squares some start box can be pushed to, alone on the board (the other
    boxes taken away): a breadth-first search over (box square, player's region) states."""
    label = board.region_with_box
    reach = np.zeros(board.n_squares, dtype=np.bool_)
    seen: set[tuple[int, int]] = set()
    queue: deque[tuple[int, int]] = deque()
    for b in board.start_boxes:
        state = (int(b), int(label[b, board.start_player]))
        if state not in seen:
            seen.add(state)
            queue.append(state)
    while queue:
        box, region = queue.popleft()
        reach[box] = True
        for d in range(N_DIRS):
            behind = int(board.neighbours[box, d ^ 1])
            target = int(board.neighbours[box, d])
            if behind == NO_SQUARE or target == NO_SQUARE or label[box, behind] != region:
                continue
            state = (target, int(label[target, box]))
            if state not in seen:
                seen.add(state)
                queue.append(state)
    return reach


def pulls_to_leave(board: Board, goal: int, walls: set[int], home: int,
                   way_out: np.ndarray | None = None) -> int | None:
    """Fewest pulls that take a lone box from ``goal`` to a square off the goals with the
    player's region then holding ``home`` (``walls``: the other full goals); None if none.
    ``way_out`` (bool per square; default all): the squares the box may end on."""
    starts = []
    seen: set[tuple[int, int]] = set()
    for d in range(N_DIRS):
        p = int(board.neighbours[goal, d])
        if p == NO_SQUARE or p in walls:
            continue
        region = floor_region(board, p, walls | {goal})
        key = (goal, min(region))
        if key not in seen:
            seen.add(key)
            starts.append((goal, region, 0))
    queue = deque(starts)
    while queue and len(seen) < MAX_PULL_STATES:
        box, region, pulls = queue.popleft()
        for d in range(N_DIRS):
            stand = int(board.neighbours[box, d])
            if stand == NO_SQUARE or stand not in region:
                continue
            back = int(board.neighbours[stand, d])
            if back == NO_SQUARE or back in walls:
                continue
            blocked = walls | {stand}
            new_region = floor_region(board, back, blocked)
            key = (stand, min(new_region))
            if key in seen:
                continue
            seen.add(key)
            if (not board.is_goal[stand] and home in new_region
                    and (way_out is None or way_out[stand])):
                return pulls + 1
            queue.append((stand, new_region, pulls + 1))
    return None


def packing_order(board: Board) -> list[int]:
    """Goal squares in the order they should be filled (first = deepest)."""
    home = _home_square(board)
    way_out = box_reachable(board)
    full = set(int(g) for g in board.goal_squares)
    removed: list[int] = []
    while full:
        best: tuple[int, int, int] | None = None
        for goal in sorted(full):
            pulls = pulls_to_leave(board, goal, full - {goal}, home, way_out)
            if pulls is not None:
                rank = (pulls, int(board.goal_depth[goal]), goal)
                if best is None or rank < best:
                    best = rank
        if best is None:
            goal = min(full, key=lambda g: (int(board.goal_depth[g]), g))
        else:
            goal = best[2]
        removed.append(goal)
        full.remove(goal)
    return removed[::-1]


def packing_depth(board: Board) -> np.ndarray:
    """int32[n]: for a goal, how early it is filled (n_goals for the first goal of the order,
    1 for the last), NOT_A_GOAL elsewhere - larger is deeper, as ``Board.goal_depth``."""
    depth = np.full(board.n_squares, NOT_A_GOAL, dtype=np.int32)
    order = packing_order(board)
    for k, goal in enumerate(order):
        depth[goal] = len(order) - k
    return depth


def packing_layers(board: Board) -> np.ndarray:
    """int32[n]: the packing order as layers, for the feature search's packing feature (a
    box on a goal counts unless a goal of a deeper layer in its goal area is empty);
    NOT_A_GOAL off the goals. Retrograde analysis by rounds: with the goals still full,
    every goal whose lone box can be pulled out (``pulls_to_leave``: to a square off the
    goals that a start box can reach, the player then able to walk back to the start area)
    is emptied in the same round; when none can, the shallowest goal (by depth in its goal
    area) is. The goals emptied in round r are filled in layer rounds - r: the last round's
    goals are the deepest, filled first. Goals of one round do not wait on each other, so
    a box on any of them counts once the deeper layers are full (the strict order of
    ``packing_depth`` would count none but the first)."""
    home = _home_square(board)
    way_out = box_reachable(board)
    full = set(int(g) for g in board.goal_squares)
    rounds: list[list[int]] = []
    while full:
        out = [g for g in sorted(full)
               if pulls_to_leave(board, g, full - {g}, home, way_out) is not None]
        if not out:
            out = [min(full, key=lambda g: (int(board.goal_depth[g]), g))]
        rounds.append(out)
        full.difference_update(out)
    depth = np.full(board.n_squares, NOT_A_GOAL, dtype=np.int32)
    for r, goals in enumerate(rounds):
        for g in goals:
            depth[g] = r + 1
    return depth


@njit(cache=True)
def misordered_goals(boxes: np.ndarray, moved_from: int, moved_to: int, occupied: np.ndarray,
                     goal_squares: np.ndarray, goal_area: np.ndarray, goal_depth: np.ndarray,
                     deepest_empty: np.ndarray) -> int:
    """Boxes on goals filled out of order: that still have an empty deeper goal (by
    ``goal_depth``, the packing order or the depth in the goal area) in their goal area.
    ``occupied`` shows the parent position; the push moved_from -> moved_to (-1, -1: none)
    is applied on the fly. ``deepest_empty`` (int32[n_goal_areas + 1]) is scratch."""
    deepest_empty[:] = 0
    for gsq in goal_squares:
        full = occupied[gsq]
        if gsq == moved_from:
            full = False
        elif gsq == moved_to:
            full = True
        if not full and goal_depth[gsq] > deepest_empty[goal_area[gsq]]:
            deepest_empty[goal_area[gsq]] = goal_depth[gsq]
    count = 0
    for box in boxes:
        if goal_area[box] >= 0 and goal_depth[box] < deepest_empty[goal_area[box]]:
            count += 1
    return count
