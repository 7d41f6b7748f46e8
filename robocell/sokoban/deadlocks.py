"""Deadlock detection: dead squares come from the board; freeze deadlocks are checked here."""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.sokoban.board import UNREACHABLE, label_regions, side_distances

AXIS_VERTICAL = 0
AXIS_HORIZONTAL = 1


FRAME_SQUARE, FRAME_AXIS, FRAME_STAGE = 0, 1, 2
STAGE_ENTER, STAGE_AFTER_FIRST, STAGE_AFTER_SECOND = 0, 1, 2


@njit(cache=True)
def blocked_on_axis(square: int, axis: int, neighbours: np.ndarray, occupied: np.ndarray,
                    dead: np.ndarray, fixed: np.ndarray, stack: np.ndarray) -> bool:
    """True when the box on ``square`` can never move along ``axis`` (0 vertical, 1 horizontal).

    Pushing along an axis needs both neighbours on it: one for the box, one for the player.
    So the axis is blocked by a wall (or a box already assumed immovable, ``fixed``) on either
    side, by dead squares on both sides, or by a neighbouring box that is itself blocked on the
    other axis once this box is assumed immovable. The recursion is run on an explicit stack
    of frames (square, axis, stage). ``fixed`` must be all False on entry and is restored.
    """
    top = 1
    stack[0, FRAME_SQUARE] = square
    stack[0, FRAME_AXIS] = axis
    stack[0, FRAME_STAGE] = STAGE_ENTER
    result = False
    while top > 0:
        s = stack[top - 1, FRAME_SQUARE]
        ax = stack[top - 1, FRAME_AXIS]
        stage = stack[top - 1, FRAME_STAGE]
        a = neighbours[s, 2 * ax]
        b = neighbours[s, 2 * ax + 1]
        if stage == STAGE_ENTER:
            if a < 0 or b < 0 or fixed[a] or fixed[b] or (dead[a] and dead[b]):
                result = True
                top -= 1
                continue
            fixed[s] = True
            if occupied[a]:
                stack[top - 1, FRAME_STAGE] = STAGE_AFTER_FIRST
                stack[top, FRAME_SQUARE] = a
                stack[top, FRAME_AXIS] = 1 - ax
                stack[top, FRAME_STAGE] = STAGE_ENTER
                top += 1
                continue
            result = False
            stage = STAGE_AFTER_FIRST
        if stage == STAGE_AFTER_FIRST:
            if not result and occupied[b]:
                stack[top - 1, FRAME_STAGE] = STAGE_AFTER_SECOND
                stack[top, FRAME_SQUARE] = b
                stack[top, FRAME_AXIS] = 1 - ax
                stack[top, FRAME_STAGE] = STAGE_ENTER
                top += 1
                continue
        fixed[s] = False
        top -= 1
    return result


@njit(cache=True)
def is_frozen(square: int, neighbours: np.ndarray, occupied: np.ndarray, dead: np.ndarray,
              fixed: np.ndarray, stack: np.ndarray) -> bool:
    """True when the box on ``square`` can never move again (blocked on both axes)."""
    if not blocked_on_axis(square, AXIS_VERTICAL, neighbours, occupied, dead, fixed, stack):
        return False
    return blocked_on_axis(square, AXIS_HORIZONTAL, neighbours, occupied, dead, fixed, stack)


@njit(cache=True)
def freeze_deadlock_after_push(target: int, neighbours: np.ndarray, occupied: np.ndarray,
                               dead: np.ndarray, is_goal: np.ndarray, fixed: np.ndarray,
                               stack: np.ndarray) -> bool:
    """True when the box just pushed to ``target``, or a box next to it, is frozen off a goal.

    ``occupied`` must already show the position after the push.
    """
    if not is_goal[target] and is_frozen(target, neighbours, occupied, dead, fixed, stack):
        return True
    for d in range(4):
        s = neighbours[target, d]
        if s >= 0 and occupied[s] and not is_goal[s]:
            if is_frozen(s, neighbours, occupied, dead, fixed, stack):
                return True
    return False


FROZEN_CACHE_SLOTS = 4096
"""Frozen-goal sets whose reach masks are kept (direct-mapped by the set's hash)."""
MAX_MASK_GOALS = 63
"""Levels with more goals skip the frozen-goal check (a goal set is one int64 bit mask)."""


def frozen_cache(n_squares: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An empty cache for ``frozen_goals_dead``: keys, and per key the reach masks and the
    mask of the goals its frozen boxes hold."""
    return (np.zeros(FROZEN_CACHE_SLOTS, dtype=np.uint64),
            np.zeros((FROZEN_CACHE_SLOTS, n_squares), dtype=np.int64),
            np.zeros(FROZEN_CACHE_SLOTS, dtype=np.int64))


@njit(cache=True)
def goal_reach_masks(neighbours: np.ndarray, goal_squares: np.ndarray, wall: np.ndarray,
                     out: np.ndarray, queue: np.ndarray, label: np.ndarray,
                     dist: np.ndarray) -> None:
    """out[s]: bit j set when a lone box on square s can be pushed onto goal j with the
    squares marked in ``wall`` blocked, the player starting on some side of it (per goal,
    ``board.side_distances`` on the board with those walls). ``label`` (int16[n, n]),
    ``dist`` (int32[n, 4]) and ``queue`` (int32[4n]) are scratch."""
    n = neighbours.shape[0]
    label_regions(neighbours, wall, label, queue)
    out[:] = 0
    for j in range(goal_squares.shape[0]):
        g = goal_squares[j]
        if wall[g]:
            continue
        bit = np.int64(1) << j
        side_distances(g, neighbours, label, dist, queue)
        for s in range(n):
            for d in range(4):
                if dist[s, d] != UNREACHABLE:
                    out[s] |= bit
                    break


@njit(cache=True)
def frozen_goals_dead(boxes: np.ndarray, frozen: np.ndarray, key: np.uint64,
                      neighbours: np.ndarray, goal_squares: np.ndarray,
                      cache_keys: np.ndarray, cache_reach: np.ndarray,
                      cache_taken: np.ndarray, wall: np.ndarray,
                      queue: np.ndarray, label: np.ndarray, dist: np.ndarray,
                      box_goals: np.ndarray, owner: np.ndarray, came_from: np.ndarray) -> bool:
    """True when the boxes frozen on goals (``frozen[k]``) leave the other boxes no way to
    fill the other goals: with the frozen boxes as walls, some set of boxes can reach too few
    of the free goals between them (no perfect matching of boxes to goals they can reach,
    each alone with the player on any side of it).

    The reach of every goal depends only on the frozen set, so it is computed once per set
    (``key``: the Zobrist hash of the frozen squares) and kept in ``cache_keys``/
    ``cache_reach``/``cache_taken``. ``wall`` must be all False on entry and is restored."""
    n_goals = goal_squares.shape[0]
    slot = np.int64(key & np.uint64(cache_keys.shape[0] - 1))
    reach = cache_reach[slot]
    if cache_keys[slot] != key:
        for k in range(boxes.shape[0]):
            if frozen[k]:
                wall[boxes[k]] = True
        goal_reach_masks(neighbours, goal_squares, wall, reach, queue, label, dist)
        taken = np.int64(0)
        for j in range(n_goals):
            if wall[goal_squares[j]]:
                taken |= np.int64(1) << j
        for k in range(boxes.shape[0]):
            wall[boxes[k]] = False
        cache_keys[slot] = key
        cache_taken[slot] = taken
    # For every box that can still move, the free goals it can reach.
    taken = cache_taken[slot]
    n = 0
    for k in range(boxes.shape[0]):
        if not frozen[k]:
            m = reach[boxes[k]] & ~taken
            if m == 0:
                return True
            box_goals[n] = m
            n += 1
    # A perfect matching, one augmenting path per box (breadth-first over boxes).
    owner[:n_goals] = -1
    for start in range(n):
        visited = np.int64(0)
        queue[0] = start
        head = 0
        tail = 1
        end_goal = -1
        while head < tail and end_goal < 0:
            u = queue[head]
            head += 1
            m = box_goals[u] & ~visited
            while m != 0:
                j = 0
                while (m >> j) & 1 == 0:
                    j += 1
                m &= ~(np.int64(1) << j)
                visited |= np.int64(1) << j
                came_from[j] = u
                if owner[j] < 0:
                    end_goal = j
                    break
                queue[tail] = owner[j]
                tail += 1
        if end_goal < 0:
            return True
        # Flip the path: each goal on it goes to the box that reached it.
        j = end_goal
        while True:
            u = came_from[j]
            previous = -1
            for jj in range(n_goals):
                if owner[jj] == u:
                    previous = jj
                    break
            owner[j] = u
            if u == start:
                break
            j = previous
    return False


def frozen_goals_dead_position(neighbours: np.ndarray, goal_squares: np.ndarray,
                               dead: np.ndarray, is_goal: np.ndarray, zobrist_box: np.ndarray,
                               boxes: np.ndarray) -> bool:
    """``frozen_goals_dead`` for one position, with its own scratch and cache (set-up code
    and tests; the search keeps one cache for the whole run)."""
    n = neighbours.shape[0]
    nb = boxes.shape[0]
    occupied = np.zeros(n, dtype=np.bool_)
    occupied[boxes] = True
    fixed = np.zeros(n, dtype=np.bool_)
    frames = np.zeros((n + 1, 3), dtype=np.int64)
    frozen = np.zeros(nb, dtype=np.bool_)
    key = np.uint64(0)
    for k in range(nb):
        s = int(boxes[k])
        if is_goal[s] and is_frozen(s, neighbours, occupied, dead, fixed, frames):
            frozen[k] = True
            key ^= zobrist_box[s]
    if key == 0 or goal_squares.shape[0] > MAX_MASK_GOALS:
        return False
    n_goals = goal_squares.shape[0]
    return bool(frozen_goals_dead(
        boxes.astype(np.int16), frozen, key, neighbours, goal_squares, *frozen_cache(n),
        np.zeros(n, dtype=np.bool_), np.zeros(4 * n, dtype=np.int32),
        np.zeros((n, n), dtype=np.int16), np.zeros((n, 4), dtype=np.int32),
        np.zeros(nb, dtype=np.int64), np.zeros(n_goals, dtype=np.int32),
        np.zeros(n_goals, dtype=np.int32)))
