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
def _augment(i: int, boxes: np.ndarray, masks: np.ndarray, push_cost: np.ndarray,
             scratch: np.ndarray) -> None:
    """One step of the Hungarian method: match row ``i`` (box i-1) along a shortest
    augmenting path, keeping the potentials feasible."""
    n = boxes.shape[0]
    u = scratch[0]
    v = scratch[1]
    match_of_goal = scratch[2]
    way = scratch[3]
    minv = scratch[4]
    used = scratch[5]
    big = np.int64(INFEASIBLE) * (n + 1)
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


@njit(cache=True)
def _matched_total(boxes: np.ndarray, masks: np.ndarray, push_cost: np.ndarray,
                   scratch: np.ndarray) -> int:
    total = np.int64(0)
    for j in range(1, boxes.shape[0] + 1):
        i = scratch[2, j] - 1
        total += push_cost[j - 1, boxes[i], masks[i]]
    if total >= INFEASIBLE:
        return INFEASIBLE
    return total


@njit(cache=True)
def matching_lower_bound(boxes: np.ndarray, masks: np.ndarray, push_cost: np.ndarray,
                         scratch: np.ndarray) -> int:
    """Minimum total pushes over all assignments of boxes to distinct goals, each box
    counted with its lone-box push distance from the sides the player can reach
    (``push_cost[goal, square, side_mask]``; Hungarian method with potentials, O(n^3)).

    Every push moves one box one square, so this never overestimates: admissible, and it
    changes by at most one per push (consistent: a push leaves the player in the same region
    relative to every other box). Returns INFEASIBLE when some box cannot be given a goal.
    The potentials and the matching stay in ``scratch`` (rows 0-2) for ``matching_update``.
    """
    n = boxes.shape[0]
    for j in range(n + 1):
        scratch[0, j] = 0
        scratch[1, j] = 0
        scratch[2, j] = 0
        scratch[3, j] = 0
    for i in range(1, n + 1):
        _augment(i, boxes, masks, push_cost, scratch)
    return _matched_total(boxes, masks, push_cost, scratch)


@njit(cache=True)
def matching_update(boxes: np.ndarray, masks: np.ndarray, base_masks: np.ndarray,
                    moved: int, push_cost: np.ndarray, base: np.ndarray,
                    scratch: np.ndarray) -> int:
    """``matching_lower_bound`` of a position that differs from the one solved into ``base``
    (same row order) in box ``moved`` and in the rows whose side masks changed: those rows
    are taken out of the base matching, their potentials lowered until feasible, and matched
    again one augmenting path each, O(n^2) per changed row instead of O(n^3). Exact: the
    result equals the full matching's."""
    n = boxes.shape[0]
    u = scratch[0]
    v = scratch[1]
    match_of_goal = scratch[2]
    for j in range(n + 1):
        u[j] = base[0, j]
        v[j] = base[1, j]
        match_of_goal[j] = base[2, j]
    for j in range(1, n + 1):
        r = match_of_goal[j]
        if r - 1 == moved or masks[r - 1] != base_masks[r - 1]:
            match_of_goal[j] = 0
            best = np.int64(INFEASIBLE) * (n + 1)
            for k in range(1, n + 1):
                cur = np.int64(push_cost[k - 1, boxes[r - 1], masks[r - 1]]) - v[k]
                if cur < best:
                    best = cur
            u[r] = best
    for r in range(1, n + 1):
        if r - 1 == moved or masks[r - 1] != base_masks[r - 1]:
            _augment(r, boxes, masks, push_cost, scratch)
    return _matched_total(boxes, masks, push_cost, scratch)
