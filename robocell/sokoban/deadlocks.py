"""Deadlock detection: dead squares come from the board; freeze deadlocks are checked here."""

from __future__ import annotations

import numpy as np
from numba import njit

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
