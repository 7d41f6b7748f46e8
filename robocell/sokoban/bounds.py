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
def matching_lower_bound(boxes: np.ndarray, push_distance: np.ndarray,
                         scratch: np.ndarray) -> int:
    """Minimum total pushes over all assignments of boxes to distinct goals, each box
    counted with its lone-box push distance (Hungarian method with potentials, O(n^3)).

    Every push moves one box one square, so this never overestimates: admissible, and it
    changes by at most one per push (consistent). Returns INFEASIBLE when some box cannot be
    given a goal.
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
            delta = big
            j1 = 0
            for j in range(1, n + 1):
                if used[j] == 0:
                    cur = np.int64(push_distance[j - 1, box]) - u[i0] - v[j]
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
        total += push_distance[j - 1, boxes[match_of_goal[j] - 1]]
    if total >= INFEASIBLE:
        return INFEASIBLE
    return total
