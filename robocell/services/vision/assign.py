"""Cheapest valid cubie assignment: which cubie, in which orientation, sits at each position.

Given a cost for putting cubie ``j`` at position ``p`` with orientation ``o``, the dynamic
programme below finds the cheapest *permutation* of the cubies over the positions whose
orientations sum to 0 (mod the number of orientations: corner twist mod 3, edge flip mod 2),
separately for each permutation parity (so that the corner and edge parities of a 3x3 can be
matched). The state is (set of cubies already placed, orientation sum, parity): positions are
filled in order, so the position is the number of cubies placed, and the parity contribution
of placing cubie ``j`` is the number of already placed cubies with a larger index
(inversions). 8 corners: 256 x 3 x 2 states; 12 edges: 4096 x 2 x 2 states.
"""

from __future__ import annotations

import numpy as np
from numba import njit

N_PARITY = 2
INFEASIBLE = 1e30


@njit(cache=True)
def _popcount(x: int) -> int:
    count = 0
    while x:
        x &= x - 1
        count += 1
    return count


@njit(cache=True)
def cheapest_assignment(cost: np.ndarray, upper: float = INFEASIBLE
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cheapest valid assignment per permutation parity.

    ``cost[p, j, o]``: cost of cubie ``j`` at position ``p`` with orientation ``o``.
    Returns ``(total[parity], cubie[parity, p], orientation[parity, p])``; a total of
    INFEASIBLE marks a parity with no assignment. With ``upper`` (the cost of a known
    assignment), states that cannot end below it are pruned (by the per-position minimum
    cost still to come) and parities that cannot beat it are reported INFEASIBLE.
    """
    n = cost.shape[0]
    n_ori = cost.shape[2]
    floor = np.zeros(n + 1)
    for position in range(n - 1, -1, -1):
        floor[position] = floor[position + 1] + cost[position].min()
    n_masks = 1 << n
    best = np.full((n_masks, n_ori, N_PARITY), INFEASIBLE)
    came_cubie = np.full((n_masks, n_ori, N_PARITY), -1, dtype=np.int8)
    came_ori = np.zeros((n_masks, n_ori, N_PARITY), dtype=np.int8)
    best[0, 0, 0] = 0.0
    for mask in range(n_masks):
        position = _popcount(mask)
        if position >= n:
            continue
        for ori_sum in range(n_ori):
            for parity in range(N_PARITY):
                here = best[mask, ori_sum, parity]
                if here >= INFEASIBLE or here + floor[position] >= upper:
                    continue
                for j in range(n):
                    bit = 1 << j
                    if mask & bit:
                        continue
                    above = mask >> (j + 1)
                    new_parity = (parity + _popcount(above)) & 1
                    new_mask = mask | bit
                    for o in range(n_ori):
                        new_sum = (ori_sum + o) % n_ori
                        value = here + cost[position, j, o]
                        if value < best[new_mask, new_sum, new_parity]:
                            best[new_mask, new_sum, new_parity] = value
                            came_cubie[new_mask, new_sum, new_parity] = j
                            came_ori[new_mask, new_sum, new_parity] = o
    total = np.full(N_PARITY, INFEASIBLE)
    cubie = np.full((N_PARITY, n), -1, dtype=np.int64)
    orientation = np.zeros((N_PARITY, n), dtype=np.int64)
    full = n_masks - 1
    for parity in range(N_PARITY):
        total[parity] = best[full, 0, parity]
        if total[parity] >= upper:
            total[parity] = INFEASIBLE
        if total[parity] >= INFEASIBLE:
            continue
        mask, ori_sum, par = full, 0, parity
        for position in range(n - 1, -1, -1):
            j = came_cubie[mask, ori_sum, par]
            o = came_ori[mask, ori_sum, par]
            cubie[parity, position] = j
            orientation[parity, position] = o
            mask ^= 1 << j
            ori_sum = (ori_sum - o) % n_ori
            par = (par + _popcount(mask >> (j + 1))) & 1
        # `par` is now 0 by construction.
    return total, cubie, orientation


NODE_BUDGET = 200_000
"""Search nodes `assignments_below` may visit before it hands over to the full programme."""


@njit(cache=True)
def cheapest_below(cost: np.ndarray, bound: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Like `cheapest_assignment`, but only assignments whose total is below
    ``bound[parity]`` (INFEASIBLE and no assignment otherwise). A depth-first search
    (explicit stack) that prunes with the per-position minimum cost, fast when the costs
    are peaked; past NODE_BUDGET nodes it runs the full programme instead."""
    n = cost.shape[0]
    n_ori = cost.shape[2]
    n_choices = n * n_ori
    floor = np.zeros(n + 1)
    for position in range(n - 1, -1, -1):
        floor[position] = floor[position + 1] + cost[position].min()
    best = np.full(N_PARITY, INFEASIBLE)
    for p in range(N_PARITY):
        best[p] = bound[p]
    best_cubie = np.full((N_PARITY, n), -1, dtype=np.int64)
    best_ori = np.zeros((N_PARITY, n), dtype=np.int64)
    # Stack frame per position: next choice to try, and the state on entering the position.
    choice = np.zeros(n + 1, dtype=np.int64)
    mask = np.zeros(n + 1, dtype=np.int64)
    ori_sum = np.zeros(n + 1, dtype=np.int64)
    parity = np.zeros(n + 1, dtype=np.int64)
    spent = np.zeros(n + 1)
    path_cubie = np.zeros(n, dtype=np.int64)
    path_ori = np.zeros(n, dtype=np.int64)
    nodes = 0
    depth = 0
    while depth >= 0:
        if depth == n:
            p = parity[n]
            if ori_sum[n] == 0 and spent[n] < best[p]:
                best[p] = spent[n]
                best_cubie[p] = path_cubie
                best_ori[p] = path_ori
            depth -= 1
            continue
        if choice[depth] >= n_choices:
            depth -= 1
            continue
        c = choice[depth]
        choice[depth] += 1
        j = c // n_ori
        o = c % n_ori
        bit = 1 << j
        if mask[depth] & bit:
            continue
        new_sum = (ori_sum[depth] + o) % n_ori
        if depth == n - 1 and new_sum != 0:
            continue
        value = spent[depth] + cost[depth, j, o]
        if value + floor[depth + 1] >= max(best[0], best[1]):
            continue
        nodes += 1
        if nodes > NODE_BUDGET:
            best, best_cubie, best_ori = cheapest_assignment(cost)
            break
        path_cubie[depth] = j
        path_ori[depth] = o
        depth += 1
        choice[depth] = 0
        mask[depth] = mask[depth - 1] | bit
        ori_sum[depth] = new_sum
        parity[depth] = (parity[depth - 1] + _popcount(mask[depth - 1] >> (j + 1))) & 1
        spent[depth] = value
    for p in range(N_PARITY):
        if best[p] >= bound[p]:
            best[p] = INFEASIBLE
            best_cubie[p] = -1
    return best, best_cubie, best_ori


@njit(cache=True)
def cheapest_totals(costs: np.ndarray) -> np.ndarray:
    """Cheapest total over both parities for each of several cost tables ``costs[k]``
    (one call for all, e.g. every colour scheme of a 2x2)."""
    totals = np.empty(costs.shape[0])
    for k in range(costs.shape[0]):
        total, _, _ = cheapest_assignment(costs[k])
        totals[k] = min(total[0], total[1])
    return totals
