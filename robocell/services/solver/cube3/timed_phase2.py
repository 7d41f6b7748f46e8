"""Phase 2 of the robot-time search (`timed_search`): a phase-1 path that enters G1 is
finished by IDA* on the profile's cost within G1, under the best total found so far. Most
leaves are refused before that, on bounds of their corners and slice edges alone
(`leaf_precheck`), then on the profile's phase-2 tables (`phase2_root`)."""

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
)
from robocell.services.solver.cube3.pruning import mod3, next_depth
from robocell.services.solver.cube3.search import allowed_after
from robocell.services.solver.cube3.timed_blocks import (
    CAPPED,
    CO,
    DD,
    EPS,
    FACE_KIND,
    INF,
    KIND,
    LCO,
    LSS,
    MV,
    NEXT,
    P2_FACE_MOVES,
    P2NODES,
    SS,
    UE,
    VALID,
    bound,
    chain,
    chain_least,
    child_kind,
    final_cost,
)
from robocell.services.solver.cube3.weighted import (
    corner_slice2,
    full2,
    phase2_index,
    weighted2,
)

# As in `timed_blocks`, these are compiled without numba's reference counting (``_nrt=False``):
# they create no arrays, and counting the references of the array views a node takes cost
# about a fifth of the search's time (measured on six-motor, same nodes either way).

@njit(cache=True, _nrt=False)
def residue2(T, D, corners, ud_edges):
    return mod3(D.phase2_pruning, phase2_index(T, corners, ud_edges))


@njit(cache=True, _nrt=False)
def open_steps2(T, D, corners, ud_edges, last, depth):
    """`open_steps1` within G1: only the turns that keep the cube there."""
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


@njit(cache=True, _nrt=False)
def phase2_root(T, D, W, H, corners, ud_edges, slice_sorted, after0, kind0, last_move, g0,
                best):
    """The bound at a phase-1 leaf, the cheap parts first (most leaves end there): (the
    bound, the exact phase-2 step distance or, for one robot state, 0 solved / 1 not, the
    steps left counting the slice order)."""
    cs_root = np.int64(D.cornslice_depth[np.int64(corners) * N_PERM_4 + slice_sorted % N_PERM_4])
    ext0 = 1 if (last_move >= 0 and last_move // 3 < 3) else 0
    axis0 = kind0 // 16 if last_move >= 0 else 3
    threshold = bound(after0, H, cs_root, ext0, axis0)
    if last_move < 0:
        # the cube's root: its first block follows none, which the profile's tables assume
        d_root = distance2(T, D, corners, ud_edges)
        h_root = max(d_root, cs_root)
        return max(threshold, bound(after0, H, h_root, ext0, axis0)), d_root, h_root
    threshold = max(threshold, g0 + weighted2(T, W, corners, ud_edges, slice_sorted, last_move,
                                              ext0, -INF))
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
    return max(threshold, bound(after0, H, h_root, ext0, axis0)), d_root, h_root


@njit(cache=True, _nrt=False)
def phase2(T, D, W, cost, exits, finish, H, w, corners, ud_edges, slice_sorted, before0,
           after0, kind0, last_move, g0, best, offset, path, ints2, before2, after2, g2,
           out_path, counters, cap):
    """Cheapest phase-2 finish (IDA* on cost) of the phase-1 path in path[:offset], ending in
    (kind0, before0/after0), with a total under ``best``. Writes the whole solution into
    ``out_path`` and returns (its cost, its length), or (inf, 0)."""
    threshold, d_root, h_root = phase2_root(T, D, W, H, corners, ud_edges, slice_sorted,
                                            after0, kind0, last_move, g0, best)
    if threshold >= best - EPS:
        return INF, 0
    n_states = before0.shape[0]
    if h_root == 0:
        c = final_cost(after0, finish)
        if c < best - EPS:
            for i in range(offset):
                out_path[i] = path[i]
            return c, offset
    found_cost, found_length = INF, 0
    limit, max_depth = counters[P2NODES] + cap, MAX_LENGTH - offset
    while True:
        next_threshold = INF
        # level 0 is the phase-1 leaf
        ints2[0, CO] = corners
        ints2[0, UE] = ud_edges
        ints2[0, SS] = slice_sorted
        ints2[0, DD] = d_root
        ints2[0, MV] = last_move
        ints2[0, KIND] = kind0
        ints2[0, NEXT] = 0
        for s in range(n_states):
            before2[0, s] = before0[s]
            after2[0, s] = after0[s]
        g2[0] = g0
        sp = 0
        while sp >= 0:
            k = ints2[sp, NEXT]
            if k >= P2_FACE_MOVES.shape[0] or sp >= max_depth:
                sp -= 1
                continue
            if counters[P2NODES] >= limit:
                counters[CAPPED] += 1
                return found_cost, found_length
            ints2[sp, NEXT] = k + 1
            m = P2_FACE_MOVES[k]
            prev = ints2[sp, MV]
            if not allowed_after(prev, m):
                continue
            counters[P2NODES] += 1
            col = FACE_KIND[m]
            c1 = T.corners_move[ints2[sp, CO], col]
            s1 = T.slice_sorted_move[ints2[sp, SS], col]
            cs = np.int64(D.cornslice_depth[np.int64(c1) * N_PERM_4 + s1 % N_PERM_4])
            child = sp + 1
            kind, ext, joins = child_kind(ints2, sp, m)
            src = before2[sp] if joins else after2[sp]
            g = chain_least(src, exits, kind)  # as in phase 1
            u1 = T.ud_edges_move[ints2[sp, UE], col]
            f = g + weighted2(T, W, c1, u1, s1, m, ext, min(threshold + EPS, best - 2 * EPS) - g)
            if f < best - EPS and f <= threshold + EPS:
                for s in range(n_states):
                    before2[child, s] = src[s]
                chain(before2[child], cost, kind, after2[child])
                f = max(f, bound(after2[child], H, cs, ext, kind // 16))
            if f >= best - EPS:
                continue
            if f > threshold + EPS:
                if f < next_threshold:
                    next_threshold = f
                continue
            h0, h = full2(T, W, c1, u1, m, ext, min(threshold + EPS, best - 2 * EPS) - g)
            f = max(f, g + h)
            d1 = 0 if h0 == 0 else 1  # one robot state: as in phase 1
            if n_states > 1 and f <= threshold + EPS and f < best - EPS:
                d1 = next_depth(ints2[sp, DD], ints2[sp, DD] % 3, residue2(T, D, c1, u1))
                f = max(f, bound(after2[child], H, d1, ext, kind // 16))
                if ext and d1 > 0 and f <= threshold + EPS and f < best - EPS:
                    # the open block's one free step, only if a turn joining it helps
                    f = max(f, bound(after2[child], H, open_steps2(T, D, c1, u1, m, d1) + 1,
                                     ext, kind // 16))
            if f >= best - EPS:
                continue
            if f > threshold + EPS:
                if f < next_threshold:
                    next_threshold = f
                continue
            path[offset + sp] = m
            if d1 == 0 and cs == 0:
                c = final_cost(after2[child], finish)
                if c < best - EPS:
                    # keep looking under this threshold for a cheaper one
                    for i in range(offset + sp + 1):
                        out_path[i] = path[i]
                    found_cost = c
                    found_length = offset + sp + 1
                    best = c
                continue
            ints2[child, CO] = c1
            ints2[child, UE] = u1
            ints2[child, SS] = s1
            ints2[child, DD] = d1
            ints2[child, MV] = m
            ints2[child, KIND] = kind
            ints2[child, NEXT] = 0
            g2[child] = g
            sp = child
        if found_length > 0 or next_threshold >= best - EPS:
            break
        # a step at least; past ``best`` it searches everything under it (the finishes
        # between the last threshold and ``best`` are not to be skipped)
        threshold = max(next_threshold, threshold + w)
    return found_cost, found_length


@njit(cache=True, _nrt=False)
def leaf_precheck(T, D, W, H2, ints, after, g, sp, best):
    """Whether the phase-1 leaf at level ``sp`` may be finished under ``best``, from its
    corner permutation and slice edges alone (which the stack carries): the two cheapest of
    `phase2_root`'s bounds, so the leaves they refuse (most) are refused without working out
    the cube's permutations. It refuses no leaf `phase2_root` would let through."""
    corners = ints[sp, LCO]
    slice_sorted = ints[sp, LSS]
    last = ints[sp, MV]
    ext = 1 if last // 3 < 3 else 0
    cs = np.int64(D.cornslice_depth[np.int64(corners) * N_PERM_4 + slice_sorted % N_PERM_4])
    if bound(after[sp], H2, cs, ext, ints[sp, KIND] // 16) >= best - EPS:
        return False
    return g[sp] + corner_slice2(T, W, corners, slice_sorted, last, ext) < best - EPS


@njit(cache=True, _nrt=False)
def leaf_phase2(T, D, W, cost, exits, finish, H2, w, start_cp, start_ep, ints, before, after,
                g, sp, best, path, work, ints2, before2, after2, g2, out_path, counters, cap,
                ctl, perms):
    """Bring the permutations of the phase-1 path (levels 1..sp) up to date, then `phase2`.
    perms[j] holds the corner and edge permutations at level j for the levels up to
    ctl[VALID] (a level's are stale once the stack writes it): sibling leaves replay one
    turn, not the path."""
    valid = ctl[VALID]
    if valid < 0:
        for i in range(N_CORNER):
            perms[0, i] = start_cp[i]
        for i in range(N_EDGE):
            perms[0, N_CORNER + i] = start_ep[i]
        valid = 0
    for j in range(1, sp + 1):
        path[j - 1] = ints[j, MV]
    for j in range(valid + 1, sp + 1):
        m = ints[j, MV]
        for i in range(N_CORNER):
            perms[j, i] = perms[j - 1, T.move_corner_perm[m, i]]
        for i in range(N_EDGE):
            perms[j, N_CORNER + i] = perms[j - 1, N_CORNER + T.move_edge_perm[m, i]]
    ctl[VALID] = sp
    cp = perms[sp, :N_CORNER]
    ep = perms[sp, N_CORNER:]
    tmp = work[2, :N_EDGE]
    corners = coord.get_corners(cp)
    ud_edges = coord.get_ud_edges(ep)
    for i in range(FIRST_SLICE_EDGE, N_EDGE):
        tmp[i - FIRST_SLICE_EDGE] = ep[i] - FIRST_SLICE_EDGE
    slice_sorted = coord.perm_rank(tmp, N_EDGE - FIRST_SLICE_EDGE)
    return phase2(T, D, W, cost, exits, finish, H2, w, corners, ud_edges, slice_sorted, before[sp],
                  after[sp], ints[sp, KIND], ints[sp, MV], g[sp], best, sp, path, ints2,
                  before2, after2, g2, out_path, counters, cap)
