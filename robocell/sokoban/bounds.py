"""Admissible lower bounds on pushes: minimum-cost matching of boxes to goals."""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.sokoban.board import UNREACHABLE

INFEASIBLE = UNREACHABLE
"""Bound returned when no assignment of boxes to distinct goals exists (a deadlock)."""
N_SCRATCH_ROWS = 6


@njit(cache=True)
def matching_scratch(n_boxes: int) -> np.ndarray:
    """Work space for ``matching_lower_bound`` (allocated once per search)."""
    return np.zeros((N_SCRATCH_ROWS, n_boxes + 1), dtype=np.int64)


@njit(cache=True)
def reachable_sides(boxes: np.ndarray, player: int, neighbours: np.ndarray,
                    region_with_box: np.ndarray, masks: np.ndarray) -> None:
    """For each box, the set (bit mask) of its sides the player could ever walk to before
    that box moves: the sides in the player's region of the board with only that box on it.
    Other boxes can move away later, so they are ignored."""
    for i in range(boxes.shape[0]):
        b = boxes[i]
        region = region_with_box[b, player]
        mask = 0
        for d in range(4):
            q = neighbours[b, d]
            if q >= 0 and region_with_box[b, q] == region:
                mask |= 1 << d
        masks[i] = mask


@njit(cache=True)
def matching_lower_bound(boxes: np.ndarray, masks: np.ndarray, push_cost: np.ndarray,
                         scratch: np.ndarray) -> int:
    """Minimum total pushes over all assignments of boxes to distinct goals, each box
    counted with its lone-box push distance from the sides the player can reach
    (``push_cost[goal, square, side_mask]``; Hungarian method with potentials, O(n^3)).

    Every push moves one box one square, so this never overestimates: admissible, and it
    changes by at most one per push (consistent: a push leaves the player in the same region
    relative to every other box). Returns INFEASIBLE when some box cannot be given a goal.
    """
    n = boxes.shape[0]
    u = scratch[0]
    v = scratch[1]
    match_of_goal = scratch[2]
    way = scratch[3]
    minv = scratch[4]
    used = scratch[5]
    big = np.int64(INFEASIBLE) * (n + 1)
    for j in range(n + 1):
        u[j] = 0
        v[j] = 0
        match_of_goal[j] = 0
        way[j] = 0
    for i in range(1, n + 1):
        match_of_goal[0] = i
        j0 = 0
        for j in range(n + 1):
            minv[j] = big
            used[j] = 0
        while True:
            used[j0] = 1
            i0 = match_of_goal[j0]
            box = boxes[i0 - 1]
            mask = masks[i0 - 1]
            delta = big
            j1 = 0
            for j in range(1, n + 1):
                if used[j] == 0:
                    cur = np.int64(push_cost[j - 1, box, mask]) - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(n + 1):
                if used[j] == 1:
                    u[match_of_goal[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if match_of_goal[j0] == 0:
                break
        while True:
            j1 = way[j0]
            match_of_goal[j0] = match_of_goal[j1]
            j0 = j1
            if j0 == 0:
                break
    total = np.int64(0)
    for j in range(1, n + 1):
        i = match_of_goal[j] - 1
        total += push_cost[j - 1, boxes[i], masks[i]]
    if total >= INFEASIBLE:
        return INFEASIBLE
    return total
