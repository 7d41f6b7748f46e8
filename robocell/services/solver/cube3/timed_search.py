"""The two-phase search in a robot's time: IDA* on the profile's cost, not on face turns.

Moves are face turns in canonical order (`search.allowed_after`), but a path is priced the way
the motion compiler prices it: consecutive turns of one axis make a *block* (kind ``axis * 16
+ r1 * 4 + r2``), and a block done from robot state ``s`` (orientation, last group) ending in
``t`` costs ``cost[kind, s, t]``, the motion compiler's least cost of that block. A node keeps
the least cost to have done every block before its current one, ending in each state (a
vector over the states the robot can reach), and the block under way; its cost ``g`` is the
least over the states after the block. A robot that never re-orients the cube has one state.

The bound on what is left is the least cost of as many steps as a distance in a metric counts
(``H``, `timed.steps_bound`; phase 2 reads ``H2``, its own blocks only, whose side-face turns
are half turns): the axial metric (a block is a step) for robots that turn opposite faces at
once, the face-turn metric otherwise (`robocell.services.solver.cube3.axial`). While the
current block could still take the opposite face, that next step may be free, so the bound
counts one step less. The profile's own tables (`weighted`) bound tighter: the least cost of
parts of the cube, and of the whole of each phase (to G1; within G1 to solved, slice order
aside), every block at the least it costs after a block of another axis (so not at the root,
whose first block follows none); while a block is open, the least over joining the opposite
face first. For a robot of one state they bound at least as tightly as the steps,
whose distances are then not followed. In phase 1 each node carries its entry's word of
`weighted_moves`, which tells, for each face turn, the child's bound to within a tick or two:
most children are refused on it without a lookup. Phase 1 runs IDA* on its cost to G1
(thresholds rising to the next f seen); every phase-1 path that enters G1 with a cost new to
this threshold is finished by IDA* on the cost within G1, under the best total found so far.
Both are resumable explicit-stack searches.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.services.solver.cube3 import coord
from robocell.services.solver.cube3.defs import (
    FIRST_SLICE_EDGE,
    MAX_LENGTH,
    N_CORNER,
    N_EDGE,
    N_MOVE,
    N_PERM_4,
    PHASE2_MOVES,
)
from robocell.services.solver.cube3.pruning import mod3, next_depth
from robocell.services.solver.cube3.search import allowed_after
from robocell.services.solver.cube3.tables import SYM_BITS
from robocell.services.solver.cube3.weighted import (
    corner_slice2,
    full2,
    move_bound,
    moves_word,
    phase1_index,
    phase2_index,
    weighted2,
)

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
# (`leaf_precheck`; up to date only as far as ctl[VALID_LEAF])
WORD, WSYM, WHERE, LCO, LSS = 8, 9, 10, 11, 12
N_FIELDS = 13
# phase-2 names of the first three fields: corners, ud_edges, slice_sorted
CO, UE, SS = 0, 1, 2
# control words: ints [sp, last level whose permutations are up to date, last level whose
# LCO and LSS are]; floats [c1,
# previous c1, next c1, best]; counters [children refused by the node's word, nodes looked
# up, phase-2 nodes, phase-2 searches cut short]
SP, NODES, P2NODES, CAPPED = 0, 1, 2, 3
VALID, VALID_LEAF = 1, 2
REFUSED = 0
C1, PREV_C1, NEXT_C1, BEST = 0, 1, 2, 3
BUDGET_SPENT, FOUND, EXHAUSTED = 0, 1, 2


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
def chain_least(before, exits, kind):
    """What `chain` returns, without its vector: the least over s of before[s] +
    exits[kind, s] (exits = the cost table's least over t), in O(states)."""
    best = INF
    for s in range(before.shape[0]):
        c = before[s] + exits[kind, s]
        if c < best:
            best = c
    return best


@njit(cache=True)
def final_cost(after, finish):
    """Least cost to end: ``finish[t]`` re-orients from state ``t`` to an allowed end."""
    best = INF
    for t in range(after.shape[0]):
        c = after[t] + finish[t]
        if c < best:
            best = c
    return best


@njit(cache=True)
def residue1(T, D, twist, flip, slc):
    return mod3(D.phase1_pruning, phase1_index(T, twist, flip, slc))


@njit(cache=True)
def residue2(T, D, corners, ud_edges):
    return mod3(D.phase2_pruning, phase2_index(T, corners, ud_edges))


@njit(cache=True)
def open_steps1(T, D, twist, flip, slc, last, depth):
    """Steps left after the open block of ``last`` (of exact distance ``depth``): one less only
    if a turn of the opposite face, joining the block, brings the cube a step nearer (its
    neighbours' distances differ by one at most, so the residues tell)."""
    nearer = (depth + 2) % 3
    face = last // 3 + 3
    for q in range(3):
        col = FACE_KIND[face * 3 + q]
        if residue1(T, D, T.twist_move[twist, col], T.flip_move[flip, col],
                    T.slice_move[slc, col]) == nearer:
            return depth - 1
    return depth


@njit(cache=True)
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


@njit(cache=True)
def distance1(T, D, twist, flip, slc):
    """Exact phase-1 distance in the metric of ``D``: walk down the residues."""
    depth = 0
    while twist != 0 or flip != 0 or slc != 0:
        r = residue1(T, D, twist, flip, slc)
        for m in D.moves1:
            t1 = T.twist_move[twist, m]
            f1 = T.flip_move[flip, m]
            s1 = T.slice_move[slc, m]
            if residue1(T, D, t1, f1, s1) == (r + 2) % 3:
                twist, flip, slc = t1, f1, s1
                depth += 1
                break
    return depth


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
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
    while threshold < best - EPS:
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
            if prev >= 0 and (m // 3) % 3 == (prev // 3) % 3:
                kind = merge_kind(ints2[sp, KIND], m)
                src = before2[sp]
                ext = 0
            else:
                kind = FACE_KIND[m]
                src = after2[sp]
                ext = 1 if m // 3 < 3 else 0
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
        if found_length > 0 or next_threshold == INF:
            break
        threshold = max(next_threshold, threshold + w)
    return found_cost, found_length


@njit(cache=True)
def leaf_precheck(T, D, W, H2, ints, after, g, sp, best, ctl):
    """Whether the phase-1 leaf at level ``sp`` may be finished under ``best``, from its
    corner permutation and slice edges alone (brought up to date from ctl[VALID_LEAF] by the
    move tables): the two cheapest of `phase2_root`'s bounds, so the leaves they refuse (most)
    are refused without working out the cube's permutations. It refuses no leaf
    `phase2_root` would let through."""
    for j in range(ctl[VALID_LEAF] + 1, sp + 1):
        col = FACE_KIND[ints[j, MV]]
        ints[j, LCO] = T.corners_move[ints[j - 1, LCO], col]
        ints[j, LSS] = T.slice_sorted_move[ints[j - 1, LSS], col]
    ctl[VALID_LEAF] = sp
    corners = ints[sp, LCO]
    slice_sorted = ints[sp, LSS]
    last = ints[sp, MV]
    ext = 1 if last // 3 < 3 else 0
    cs = np.int64(D.cornslice_depth[np.int64(corners) * N_PERM_4 + slice_sorted % N_PERM_4])
    if bound(after[sp], H2, cs, ext, ints[sp, KIND] // 16) >= best - EPS:
        return False
    return g[sp] + corner_slice2(T, W, corners, slice_sorted, last, ext) < best - EPS


@njit(cache=True)
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


@njit(cache=True)
def init_direction(T, D, W, root, start_cp, start_ep, start_vector, ints, before, after, g,
                   ctl, fctl):
    """Set up a direction's phase-1 stack at its root (twist, flip, slice; its permutations
    start_cp, start_ep)."""
    ints[0, TW] = root[0]
    ints[0, FL] = root[1]
    ints[0, SL] = root[2]
    ints[0, DD] = distance1(T, D, root[0], root[1], root[2])
    ints[0, MV] = -1
    ints[0, KIND] = 0
    ints[0, NEXT] = 0
    ints[0, EXT] = 0
    ints[0, WORD], ints[0, WSYM], ints[0, WHERE] = moves_word(T, W, root[0], root[1], root[2])
    ints[0, LCO] = coord.get_corners(start_cp)
    ints[0, LSS] = coord.get_slice_sorted(start_ep)
    for s in range(start_vector.shape[0]):
        before[0, s] = start_vector[s]
        after[0, s] = start_vector[s]
    g[0] = 0.0
    ctl[SP] = -1
    ctl[VALID] = -1
    ctl[VALID_LEAF] = 0
    fctl[C1] = -1.0
    fctl[PREV_C1] = -1.0
    fctl[NEXT_C1] = 0.0


@njit(cache=True)
def search_direction(T, D, W, cost, exits, finish, H, H2, w, start_cp, start_ep, ints, before,
                     after, g, ctl, fctl, budget, path, work, ints2, before2, after2, g2,
                     out_path, counters, cap, perms):
    """Resume one direction's phase-1 IDA* for about ``budget`` nodes, solutions having to
    cost less than fctl[BEST]. Returns (status, cost, length): FOUND with the solution in
    ``out_path`` (fctl[BEST] lowered to its cost), EXHAUSTED when no phase-1 threshold under
    the best is left, or BUDGET_SPENT."""
    sp = ctl[SP]
    n_states = before.shape[1]
    spent = 0
    while True:
        best = fctl[BEST]
        if spent >= budget:
            ctl[SP] = sp
            return BUDGET_SPENT, INF, 0
        if sp < 0:
            if fctl[NEXT_C1] == INF or fctl[NEXT_C1] >= best - EPS:
                ctl[SP] = -1
                return EXHAUSTED, INF, 0
            fctl[PREV_C1] = fctl[C1]
            fctl[C1] = max(fctl[NEXT_C1], bound(after[0], H, ints[0, DD], 0, 3),
                           fctl[C1] + w)  # thresholds rise by a step at least
            fctl[NEXT_C1] = INF
            ints[0, NEXT] = 0
            sp = 0
            if ints[0, DD] == 0 and fctl[PREV_C1] < 0:
                c, n = leaf_phase2(T, D, W, cost, exits, finish, H2, w, start_cp, start_ep,
                                   ints, before, after, g, 0, best, path, work, ints2, before2,
                                   after2, g2, out_path, counters, cap, ctl, perms)
                if n > 0:
                    fctl[BEST] = c
                    ctl[SP] = sp
                    return FOUND, c, n
            continue
        k = ints[sp, NEXT]
        if k >= N_MOVE or sp + 1 >= MAX_LENGTH:
            sp -= 1
            continue
        ints[sp, NEXT] = k + 1
        m = k
        prev = ints[sp, MV]
        if not allowed_after(prev, m):
            continue
        child = sp + 1
        if prev >= 0 and (m // 3) % 3 == (prev // 3) % 3:
            kind = merge_kind(ints[sp, KIND], m)
            src = before[sp]
            ext = 0
        else:
            kind = FACE_KIND[m]
            src = after[sp]
            ext = 1 if m // 3 < 3 else 0
        # the path's cost first (what `chain` returns, in O(states)): most children are
        # refused before their cost vector is worked out
        gc = chain_least(src, exits, kind)
        c1 = fctl[C1]
        # what the turn adds to the full table's bound, from the node's word: most children
        # are refused here, without a lookup
        f = gc + move_bound(W, ints[sp, WORD], ints[sp, WSYM], ints[sp, WHERE], m)
        if f > c1 + EPS or f >= best - EPS:
            counters[REFUSED] += 1
            if f > c1 + EPS and f < fctl[NEXT_C1]:
                fctl[NEXT_C1] = f
            continue
        spent += 1
        counters[NODES] += 1
        col = FACE_KIND[m]
        t1 = T.twist_move[ints[sp, TW], col]
        s1 = T.slice_move[ints[sp, SL], col]
        f1 = T.flip_move[ints[sp, FL], col]
        for s in range(n_states):
            before[child, s] = src[s]
        chain(before[child], cost, kind, after[child])
        word, wsym, here = moves_word(T, W, t1, f1, s1)
        if not ext:
            # the child's own entry; while its block may take the opposite face, the least
            # over doing so first is what the node's word gave (to a tick)
            f = max(f, gc + here * W.phase1_tick[0] * (1.0 - EPS))
        # one robot state: the profile's phase-1 table bounds at least as tightly as the
        # steps, so their distance is not followed (d1 only tells G1 apart)
        d1 = 0 if here == 0 else 1
        if n_states > 1 and f <= c1 + EPS and f < best - EPS:
            d1 = next_depth(ints[sp, DD], ints[sp, DD] % 3, residue1(T, D, t1, f1, s1))
            f = max(f, bound(after[child], H, d1, ext, kind // 16))
            if ext and d1 > 0 and f <= c1 + EPS and f < best - EPS:
                # the open block's one free step, only if a turn joining it helps
                f = max(f, bound(after[child], H, open_steps1(T, D, t1, f1, s1, m, d1) + 1,
                                 ext, kind // 16))
        if f > c1 + EPS or f >= best - EPS:
            if f > c1 + EPS and f < fctl[NEXT_C1]:
                fctl[NEXT_C1] = f
            continue
        if ctl[VALID] >= child:
            ctl[VALID] = child - 1  # its permutations are another path's
        if ctl[VALID_LEAF] >= child:
            ctl[VALID_LEAF] = child - 1
        ints[child, TW] = t1
        ints[child, FL] = f1
        ints[child, SL] = s1
        ints[child, DD] = d1
        ints[child, MV] = m
        ints[child, KIND] = kind
        ints[child, NEXT] = 0
        ints[child, EXT] = ext
        ints[child, WORD] = word
        ints[child, WSYM] = wsym
        ints[child, WHERE] = here
        g[child] = gc
        sp = child
        if d1 == 0 and gc > fctl[PREV_C1] + EPS and not IS_P2[m] and \
                leaf_precheck(T, D, W, H2, ints, after, g, sp, best, ctl):
            c, n = leaf_phase2(T, D, W, cost, exits, finish, H2, w, start_cp, start_ep, ints,
                               before, after, g, sp, best, path, work, ints2, before2, after2, g2,
                               out_path, counters, cap, ctl, perms)
            if n > 0:
                fctl[BEST] = c
                ctl[SP] = sp
                return FOUND, c, n
