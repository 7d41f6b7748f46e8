"""What a path costs a robot: consecutive face turns of one axis make a *block* (kind
``axis * 16 + r1 * 4 + r2``), and a block done from robot state ``s`` ending in ``t`` costs
``block_cost[kind, s, t]``, the motion compiler's least cost of that block. A path's cost is
a vector over the robot states it may end in (`chain`), bounded below by the least cost of as
many more steps as are left (`bound`). Shared by the search's two phases (`phase1_search`,
`phase2_search`)."""

from __future__ import annotations

from numba import njit

from robocell.services.solver.cube3.robot_time.axial_metric import FACE_KIND
from robocell.services.solver.cube3.robot_time.search_state import INF

# The search's functions are compiled without numba's reference counting (``_nrt=False``):
# they create no arrays, and counting the references of the array views a node takes cost
# about a fifth of the search's time (measured on six-motor, same nodes either way).


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
def chain(before, block_cost, kind, after):
    """after[t] = least over s of before[s] + block_cost[kind, s, t]; returns the least."""
    n = before.shape[0]
    if n == 1:
        after[0] = before[0] + block_cost[kind, 0, 0]
        return after[0]
    for t in range(n):
        after[t] = INF
    for s in range(n):
        b = before[s]
        if b == INF:  # a state this path cannot be in (`sparse_ends`)
            continue
        for t in range(n):
            c = b + block_cost[kind, s, t]
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
def bound(after, steps_cost, steps, ext, axis):
    """Least over the robot states t of after[t] + steps_cost[steps left, t, axis of the open
    block]: the cost so far and the least cost of that many more steps from t
    (`profile_costs.steps_bound`); with ``ext`` (the open block may still grow) one step
    less."""
    s = steps - ext
    if s < 0:
        s = 0
    if s >= steps_cost.shape[0]:
        s = steps_cost.shape[0] - 1
    best = INF
    if ext:
        # the open block may still grow and end elsewhere: bound its state and the rest apart
        least = INF
        for t in range(after.shape[0]):
            if after[t] < best:
                best = after[t]
            if steps_cost[s, t, axis] < least:
                least = steps_cost[s, t, axis]
        return best + least
    for t in range(after.shape[0]):
        c = after[t] + steps_cost[s, t, axis]
        if c < best:
            best = c
    return best


@njit(cache=True, inline="always", _nrt=False)
def child_kind(node, m):
    """(block kind, whether the block may still take the opposite face, whether the turn
    joins the node's block) of face turn ``m`` from ``node`` (a level of either stack)."""
    prev = node.move
    if prev >= 0 and (m // 3) % 3 == (prev // 3) % 3:
        return merge_kind(node.kind, m), 0, True
    return FACE_KIND[m], (1 if m // 3 < 3 else 0), False
