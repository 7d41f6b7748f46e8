"""The robot-time search's pricing of a path, shared by its two phases (`timed_search`,
`timed_phase2`): consecutive face turns of one axis make a *block* (kind ``axis * 16 + r1 * 4
+ r2``), and a block done from robot state ``s`` ending in ``t`` costs ``cost[kind, s, t]``,
the motion compiler's least cost of that block. Also the layout of the searches' stacks and
control words."""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.services.solver.cube3.defs import MAX_LENGTH, N_MOVE, PHASE2_MOVES
from robocell.services.solver.cube3.tables import SYM_BITS

# The search's functions are compiled without numba's reference counting (``_nrt=False``):
# they create no arrays, and counting the references of the array views a node takes cost
# about a fifth of the search's time (measured on six-motor, same nodes either way).
SYM_MASK = (1 << SYM_BITS) - 1
EPS = 1e-9
INF = np.inf
LEVELS = MAX_LENGTH + 2
FACE_KIND = np.array([(m // 3 % 3) * 16 + ((m % 3 + 1) * 4 if m // 3 < 3 else m % 3 + 1)
                      for m in range(N_MOVE)], dtype=np.int64)
"""Block kind of each face turn alone."""
P2_FACE_MOVES = np.array(PHASE2_MOVES, dtype=np.int64)
IS_P2 = np.zeros(N_MOVE, dtype=np.bool_)
IS_P2[list(PHASE2_MOVES)] = True

# per-level integer fields of the phase-1 and phase-2 stacks
TW, FL, SL, DD, MV, KIND, NEXT, EXT = 0, 1, 2, 3, 4, 5, 6, 7
# phase 1: the node's `weighted.moves_word`; its corner permutation and slice edges
# (`leaf_precheck`); the children its word lets through (`word_passing`; -1 until then);
# whether their words' reads have been started (`timed_search.prefetch_children`)
WORD, WSYM, WHERE, LCO, LSS, PASSING, STAGED = 8, 9, 10, 11, 12, 13, 14
N_FIELDS = 15
# phase-2 names of the first three fields: corners, ud_edges, slice_sorted
CO, UE, SS = 0, 1, 2
# control words: ints [sp, last level whose permutations are up to date]; floats [c1,
# previous c1, next c1, best]; counters [children refused by the node's word, nodes looked
# up, phase-2 nodes, phase-2 searches cut short]
SP, NODES, P2NODES, CAPPED = 0, 1, 2, 3
VALID = 1
REFUSED = 0
C1, PREV_C1, NEXT_C1, BEST = 0, 1, 2, 3
BUDGET_SPENT, FOUND, EXHAUSTED = 0, 1, 2




@njit(cache=True, _nrt=False)
def merge_kind(kind, m):
    """Block kind after face turn ``m`` joins a block of its axis."""
    face = m // 3
    q = m % 3 + 1
    r1 = (kind % 16) // 4
    r2 = kind % 4
    if face < 3:
        r1 = (r1 + q) % 4
    else:
        r2 = (r2 + q) % 4
    return (kind // 16) * 16 + r1 * 4 + r2


@njit(cache=True, _nrt=False)
def chain(before, cost, kind, after):
    """after[t] = least over s of before[s] + cost[kind, s, t]; returns the least."""
    n = before.shape[0]
    if n == 1:
        after[0] = before[0] + cost[kind, 0, 0]
        return after[0]
    for t in range(n):
        after[t] = INF
    for s in range(n):
        b = before[s]
        if b == INF:  # a state this path cannot be in (`sparse_ends`)
            continue
        for t in range(n):
            c = b + cost[kind, s, t]
            if c < after[t]:
                after[t] = c
    best = INF
    for t in range(n):
        if after[t] < best:
            best = after[t]
    return best


@njit(cache=True, _nrt=False)
def chain_least(before, exits, kind):
    """What `chain` returns, without its vector: the least over s of before[s] +
    exits[kind, s] (exits = the cost table's least over t), in O(states)."""
    best = INF
    for s in range(before.shape[0]):
        c = before[s] + exits[kind, s]
        if c < best:
            best = c
    return best


@njit(cache=True, _nrt=False)
def final_cost(after, finish):
    """Least cost to end: ``finish[t]`` re-orients from state ``t`` to an allowed end."""
    best = INF
    for t in range(after.shape[0]):
        c = after[t] + finish[t]
        if c < best:
            best = c
    return best


@njit(cache=True, _nrt=False)
def bound(after, H, steps, ext, axis):
    """Least over the robot states t of after[t] + H[steps left, t, axis of the open block]:
    the cost so far and the least cost of that many more steps from t (`steps_bound`)."""
    s = steps - ext
    if s < 0:
        s = 0
    if s >= H.shape[0]:
        s = H.shape[0] - 1
    best = INF
    if ext:
        # the open block may still grow and end elsewhere: bound its state and the rest apart
        least = INF
        for t in range(after.shape[0]):
            if after[t] < best:
                best = after[t]
            if H[s, t, axis] < least:
                least = H[s, t, axis]
        return best + least
    for t in range(after.shape[0]):
        c = after[t] + H[s, t, axis]
        if c < best:
            best = c
    return best


@njit(cache=True, inline="always", _nrt=False)
def child_kind(ints, sp, m):
    """(block kind, whether the block may still take the opposite face, whether the turn
    joins the node's block) of face turn ``m`` from the node at level ``sp``."""
    prev = ints[sp, MV]
    if prev >= 0 and (m // 3) % 3 == (prev // 3) % 3:
        return merge_kind(ints[sp, KIND], m), 0, True
    return FACE_KIND[m], (1 if m // 3 < 3 else 0), False
