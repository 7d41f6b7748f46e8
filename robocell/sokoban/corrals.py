"""PI-corral pruning: when an unsolved corral must be opened first, push only into it.

A corral is an area the player cannot reach, fenced by boxes. Its barrier boxes are the boxes
next to both the corral and the player's region. The corral is an I-corral when every push of
a barrier box that could ever be made without entering the corral goes into it, and a
PI-corral when, in addition, every push of a barrier box into a free corral square is possible
now (the player can reach the square behind it, or that square is a wall). If such a corral
still holds a box off goal or an empty goal, it has to be entered eventually and nothing done
outside can help, so only the pushes into it need to be searched; this keeps push-optimal
solutions (checked against exhaustive search in the tests).
"""

from __future__ import annotations

import numpy as np
from numba import njit

NO_CORRAL = -1


@njit(cache=True)
def _touches_region(square: int, neighbours: np.ndarray, reach_mark: np.ndarray,
                    stamp: int) -> bool:
    for d in range(4):
        t = neighbours[square, d]
        if t >= 0 and reach_mark[t] == stamp:
            return True
    return False


@njit(cache=True)
def pi_corral(neighbours: np.ndarray, occupied: np.ndarray, reach_mark: np.ndarray,
              stamp: int, is_goal: np.ndarray, corral_label: np.ndarray,
              box_seen: np.ndarray, token_base: int, queue: np.ndarray) -> int:
    """Label the corrals (``corral_label``, NO_CORRAL elsewhere) and return the unsolved
    PI-corral with the fewest pushes into it, or NO_CORRAL. ``reach_mark == stamp`` marks the
    player's region; ``box_seen`` is scratch keyed by ``token_base`` + corral number (the
    caller keeps tokens unique across calls)."""
    n = neighbours.shape[0]
    for s in range(n):
        corral_label[s] = NO_CORRAL
    n_corrals = 0
    best = NO_CORRAL
    best_pushes = n * 4 + 1
    for s0 in range(n):
        if reach_mark[s0] == stamp or corral_label[s0] != NO_CORRAL:
            continue
        if occupied[s0] and _touches_region(s0, neighbours, reach_mark, stamp):
            continue
        k = n_corrals
        n_corrals += 1
        token = token_base + k
        corral_label[s0] = k
        queue[0] = s0
        head = 0
        tail = 1
        while head < tail:
            s = queue[head]
            head += 1
            for d in range(4):
                t = neighbours[s, d]
                if t < 0 or corral_label[t] != NO_CORRAL or reach_mark[t] == stamp:
                    continue
                if occupied[t] and _touches_region(t, neighbours, reach_mark, stamp):
                    continue
                corral_label[t] = k
                queue[tail] = t
                tail += 1
        unsolved = False
        valid = True
        pushes = 0
        for q in range(tail):
            s = queue[q]
            if occupied[s] != is_goal[s]:
                unsolved = True
            for d in range(4):
                b = neighbours[s, d]
                if b < 0 or not occupied[b] or box_seen[b] == token:
                    continue
                if not _touches_region(b, neighbours, reach_mark, stamp):
                    continue
                box_seen[b] = token
                if not is_goal[b]:
                    unsolved = True
                for d2 in range(4):
                    target = neighbours[b, d2]
                    if target < 0:
                        continue
                    behind = neighbours[b, d2 ^ 1]
                    reachable_behind = behind >= 0 and reach_mark[behind] == stamp
                    if corral_label[target] != k:
                        # A push that does not enter the corral and may be possible now or
                        # later (the player may reach the square behind, the box in front
                        # may move): the corral could change without being entered.
                        if behind >= 0 and corral_label[behind] != k:
                            valid = False
                    elif not occupied[target] and behind >= 0:
                        if reachable_behind:
                            pushes += 1
                        else:
                            valid = False
            if not valid:
                break
        if valid and unsolved and 0 < pushes < best_pushes:
            best = k
            best_pushes = pushes
    return best
