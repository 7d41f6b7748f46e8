"""Phase 2 of the robot-time search (`phase1_search`): a phase-1 path that enters G1 is
finished by IDA* on the profile's cost within G1, under the best total found so far. Most
leaves are refused before that, on bounds of their corners and slice edges alone
(`leaf_precheck`), then on the profile's phase-2 tables (`phase2_root`).

The phase-2 stack's level 0 is the phase-1 leaf (`leaf_phase2` fills it); a child's bound is
worked out cheapest part first and given up as soon as it refuses the child
(`phase2_child`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.services.solver.cube3 import coord
from robocell.services.solver.cube3.defs import (
    FIRST_SLICE_EDGE,
    MAX_LENGTH,
    N_CORNER,
    N_EDGE,
    N_PERM_4,
    PHASE2_MOVES,
)
from robocell.services.solver.cube3.pruning import mod3, next_depth
from robocell.services.solver.cube3.robot_time.axial_metric import FACE_KIND
from robocell.services.solver.cube3.robot_time.block_costs import (
    bound,
    chain,
    chain_least,
    child_kind,
    final_cost,
)
from robocell.services.solver.cube3.robot_time.cost_lookups import (
    corner_slice2,
    full2,
    phase2_index,
    weighted2,
)
from robocell.services.solver.cube3.robot_time.search_state import EPS, INF, N_SLICE_ORDER
from robocell.services.solver.cube3.search import allowed_after

P2_FACE_MOVES = np.array(PHASE2_MOVES, dtype=np.int64)
"""The face turns that keep a cube in G1, in the order phase 2 tries them."""

# As in `block_costs`, these are compiled without numba's reference counting (``_nrt=False``):
# they create no arrays, and counting the references of the array views a node takes cost
# about a fifth of the search's time (measured on six-motor, same nodes either way).


@njit(cache=True, _nrt=False)
def residue2(T, D, corners, ud_edges):
    return mod3(D.phase2_pruning, phase2_index(T, corners, ud_edges))


@njit(cache=True, _nrt=False)
def open_steps2(T, D, corners, ud_edges, last, depth):
    """`phase1_search.open_steps1` within G1: only the turns that keep the cube there."""
    nearer = (depth + 2) % 3
    face = last // 3 + 3
    for q in range(3):
        if face != 3 and q != 1:
            continue
        col = FACE_KIND[face * 3 + q]
        if residue2(T, D, T.corners_move[corners, col], T.ud_edges_move[ud_edges, col]) \
                == nearer:
            return depth - 1
    return depth


@njit(cache=True, _nrt=False)
def distance2(T, D, corners, ud_edges):
    """Exact phase-2 distance (slice order ignored) in the metric of ``D``."""
    depth = 0
    while corners != 0 or ud_edges != 0:
        r = residue2(T, D, corners, ud_edges)
        for m in D.moves2:
            c1 = T.corners_move[corners, m]
            u1 = T.ud_edges_move[ud_edges, m]
            if residue2(T, D, c1, u1) == (r + 2) % 3:
                corners, ud_edges = c1, u1
                depth += 1
                break
    return depth


@njit(cache=True, inline="always", _nrt=False)
def cornslice_steps(D, corners, slice_sorted):
    """Exact phase-2 steps of the corners with the order of the slice edges."""
    return np.int64(D.cornslice_depth[np.int64(corners) * N_PERM_4 + slice_sorted % N_PERM_4])


@njit(cache=True, _nrt=False)
def phase2_root(T, D, W, steps_cost, leaf, after0, g0, best):
    """The bound at a phase-1 leaf (``leaf``: level 0 of the phase-2 stack), the cheap parts
    first (most leaves end there): (the bound, the exact phase-2 step distance or, for one
    robot state, 0 solved / 1 not, the steps left counting the slice order)."""
    corners, ud_edges, last_move = leaf.corners, leaf.ud_edges, leaf.move
    cs_root = cornslice_steps(D, corners, leaf.slice_sorted)
    ext0 = 1 if (last_move >= 0 and last_move // 3 < 3) else 0
    axis0 = leaf.kind // 16 if last_move >= 0 else 3
    threshold = bound(after0, steps_cost, cs_root, ext0, axis0)
    if last_move < 0:
        # the cube's root: its first block follows none, which the profile's tables assume
        d_root = distance2(T, D, corners, ud_edges)
        h_root = max(d_root, cs_root)
        return max(threshold, bound(after0, steps_cost, h_root, ext0, axis0)), d_root, h_root
    threshold = max(threshold, g0 + weighted2(T, W, corners, ud_edges, leaf.slice_sorted,
                                              last_move, ext0, -INF))
    if threshold >= best - EPS:
        return threshold, 0, 0
    h0, h = full2(T, W, corners, ud_edges, last_move, ext0, -INF)
    threshold = max(threshold, g0 + h)
    if threshold >= best - EPS:
        return threshold, 0, 0
    # one robot state: the profile's phase-2 table bounds at least as tightly as the steps
    one = after0.shape[0] == 1
    d_root = (0 if h0 == 0 else 1) if one else distance2(T, D, corners, ud_edges)
    h_root = max(d_root, cs_root)
    return max(threshold, bound(after0, steps_cost, h_root, ext0, axis0)), d_root, h_root


@njit(cache=True, inline="always", _nrt=False)
def phase2_child(T, D, W, prices, stack, sp, m, threshold, best):
    """The child of face turn ``m`` from level ``sp``: (its bound, its path cost, block kind,
    whether the block is open, corners, U/D edges, slice edges, corner-slice steps, phase-2
    step distance). The bound is raised cheapest part first and returned as soon as it is
    over ``threshold`` or not under ``best``; the child's cost vectors are worked out into
    level sp + 1 once its cheap bound lets it through."""
    node = stack.levels[sp]
    child = sp + 1
    after = stack.after[child]
    col = FACE_KIND[m]
    corners = T.corners_move[node.corners, col]
    slice_sorted = T.slice_sorted_move[node.slice_sorted, col]
    cs = cornslice_steps(D, corners, slice_sorted)
    kind, ext, joins = child_kind(node, m)
    src = stack.before[sp] if joins else stack.after[sp]
    g = chain_least(src, prices.exits, kind)  # as in phase 1
    ud_edges = T.ud_edges_move[node.ud_edges, col]
    enough = min(threshold + EPS, best - 2 * EPS) - g
    f = g + weighted2(T, W, corners, ud_edges, slice_sorted, m, ext, enough)
    if f < best - EPS and f <= threshold + EPS:
        for s in range(src.shape[0]):
            stack.before[child, s] = src[s]
        chain(stack.before[child], prices.block_cost, kind, after)
        f = max(f, bound(after, prices.phase2_steps_cost, cs, ext, kind // 16))
    if f >= best - EPS or f > threshold + EPS:
        return f, g, kind, ext, corners, ud_edges, slice_sorted, cs, 0
    h0, h = full2(T, W, corners, ud_edges, m, ext, enough)
    f = max(f, g + h)
    depth = 0 if h0 == 0 else 1  # one robot state: as in phase 1
    if src.shape[0] > 1 and f <= threshold + EPS and f < best - EPS:
        depth = next_depth(node.depth, node.depth % 3, residue2(T, D, corners, ud_edges))
        f = max(f, bound(after, prices.phase2_steps_cost, depth, ext, kind // 16))
        if ext and depth > 0 and f <= threshold + EPS and f < best - EPS:
            # the open block's one free step, only if a turn joining it helps
            f = max(f, bound(after, prices.phase2_steps_cost,
                             open_steps2(T, D, corners, ud_edges, m, depth) + 1, ext,
                             kind // 16))
    return f, g, kind, ext, corners, ud_edges, slice_sorted, cs, depth


@njit(cache=True, inline="always", _nrt=False)
def keep_solution(stack, length):
    """The path's first ``length`` turns are a solution: keep them."""
    for i in range(length):
        stack.solution[i] = stack.path[i]


@njit(cache=True, _nrt=False)
def phase2(T, D, W, prices, stack, offset, best, counters):
    """Cheapest phase-2 finish (IDA* on cost) of the phase-1 path in stack.path[:offset],
    whose leaf is the stack's level 0, with a total under ``best``. Writes the whole
    solution into stack.solution and returns (its cost, its length), or (inf, 0)."""
    leaf = stack.levels[0]
    threshold, d_root, h_root = phase2_root(T, D, W, prices.phase2_steps_cost, leaf,
                                            stack.after[0], stack.g[0], best)
    if threshold >= best - EPS:
        return INF, 0
    if h_root == 0:
        c = final_cost(stack.after[0], prices.finish)
        if c < best - EPS:
            keep_solution(stack, offset)
            return c, offset
    found_cost, found_length = INF, 0
    limit, max_depth = counters.phase2_nodes + stack.node_cap, MAX_LENGTH - offset
    leaf.depth = d_root
    while True:
        next_threshold = INF
        leaf.next_turn = 0
        sp = 0
        while sp >= 0:
            node = stack.levels[sp]
            k = node.next_turn
            if k >= P2_FACE_MOVES.shape[0] or sp >= max_depth:
                sp -= 1
                continue
            if counters.phase2_nodes >= limit:
                counters.capped += 1
                return found_cost, found_length
            node.next_turn = k + 1
            m = P2_FACE_MOVES[k]
            if not allowed_after(node.move, m):
                continue
            counters.phase2_nodes += 1
            f, g, kind, ext, corners, ud_edges, slice_sorted, cs, depth = phase2_child(
                T, D, W, prices, stack, sp, m, threshold, best)
            if f >= best - EPS:
                continue
            if f > threshold + EPS:
                next_threshold = min(next_threshold, f)
                continue
            stack.path[offset + sp] = m
            if depth == 0 and cs == 0:
                c = final_cost(stack.after[sp + 1], prices.finish)
                if c < best - EPS:
                    # keep looking under this threshold for a cheaper one
                    found_cost, found_length = c, offset + sp + 1
                    keep_solution(stack, found_length)
                    best = c
                continue
            sp += 1
            child = stack.levels[sp]
            child.corners, child.ud_edges, child.slice_sorted = corners, ud_edges, slice_sorted
            child.depth, child.move, child.kind, child.next_turn = depth, m, kind, 0
            stack.g[sp] = g
        if found_length > 0 or next_threshold >= best - EPS:
            break
        # a step at least; past ``best`` it searches everything under it (the finishes
        # between the last threshold and ``best`` are not to be skipped)
        threshold = max(next_threshold, threshold + prices.step)
    return found_cost, found_length


@njit(cache=True, _nrt=False)
def leaf_precheck(T, D, W, prices, stack, sp, best):
    """Whether the phase-1 leaf at level ``sp`` may be finished under ``best``, from its
    corner permutation and slice edges alone (which the stack carries): the two cheapest of
    `phase2_root`'s bounds, so the leaves they refuse (most) are refused without working out
    the cube's permutations. It refuses no leaf `phase2_root` would let through."""
    leaf = stack.levels[sp]
    ext = 1 if leaf.move // 3 < 3 else 0
    cs = cornslice_steps(D, leaf.corners, leaf.slice_sorted)
    if bound(stack.after[sp], prices.phase2_steps_cost, cs, ext, leaf.kind // 16) >= best - EPS:
        return False
    return stack.g[sp] + corner_slice2(T, W, leaf.corners, leaf.slice_sorted, leaf.move,
                                       ext) < best - EPS


@njit(cache=True, inline="always", _nrt=False)
def replay_permutations(T, stack, control, sp):
    """Bring the corner and edge permutations of the phase-1 path (levels 1..sp) up to date.
    perms[j] holds them at level j for the levels up to control.replayed (a level's are stale
    once the stack writes it): sibling leaves replay one turn, not the path."""
    valid = control.replayed
    perms = stack.perms
    if valid < 0:
        for i in range(N_CORNER):
            perms[0, i] = stack.start_cp[i]
        for i in range(N_EDGE):
            perms[0, N_CORNER + i] = stack.start_ep[i]
        valid = 0
    for j in range(valid + 1, sp + 1):
        m = stack.levels[j].move
        for i in range(N_CORNER):
            perms[j, i] = perms[j - 1, T.move_corner_perm[m, i]]
        for i in range(N_EDGE):
            perms[j, N_CORNER + i] = perms[j - 1, N_CORNER + T.move_edge_perm[m, i]]
    control.replayed = sp


@njit(cache=True, _nrt=False)
def leaf_phase2(T, D, W, prices, stack, control, sp, best, phase2_stack, counters):
    """`phase2` from the phase-1 leaf at level ``sp`` of ``stack``: its path and cost vectors
    and the coordinates of its permutations (`replay_permutations`) become the phase-2
    stack's level 0."""
    finish = phase2_stack
    for j in range(1, sp + 1):
        finish.path[j - 1] = stack.levels[j].move
    replay_permutations(T, stack, control, sp)
    cp = stack.perms[sp, :N_CORNER]
    ep = stack.perms[sp, N_CORNER:]
    for i in range(N_SLICE_ORDER):
        finish.slice_order[i] = ep[FIRST_SLICE_EDGE + i] - FIRST_SLICE_EDGE
    node = stack.levels[sp]
    leaf = finish.levels[0]
    leaf.corners = coord.get_corners(cp)
    leaf.ud_edges = coord.get_ud_edges(ep)
    leaf.slice_sorted = coord.perm_rank(finish.slice_order, N_SLICE_ORDER)
    leaf.move, leaf.kind = node.move, node.kind
    for s in range(stack.before.shape[1]):
        finish.before[0, s] = stack.before[sp, s]
        finish.after[0, s] = stack.after[sp, s]
    finish.g[0] = stack.g[sp]
    return phase2(T, D, W, prices, finish, sp, best, counters)
