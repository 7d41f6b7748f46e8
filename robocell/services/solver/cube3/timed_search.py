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
this threshold is finished by IDA* on the cost within G1, under the best total found so far
(`timed_phase2`). Both are resumable explicit-stack searches; a path's price is worked out by
`timed_blocks`. A node's children are first tested all at once on its word
(`word_passing`); only those that pass are visited. What visiting them reads from the big
tables (a word is a random read of a table over a gigabyte) is started then with prefetches,
and the search goes on with a step of another direction while the reads come (`search_turns`
runs the directions a step each in turn): the misses of several directions overlap, where one
direction alone waits on each of its own in turn. Where a word is depends on a read of its
own (the child's flip-slice class), so `prefetch_children` starts the classes first and the
words a step later, and the children are visited the step after that.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.services.solver.cube3 import coord
from robocell.services.solver.cube3.defs import MAX_LENGTH, N_FLIP, N_MOVE
from robocell.services.solver.cube3.prefetch import prefetch, prefetch2
from robocell.services.solver.cube3.pruning import mod3, next_depth
from robocell.services.solver.cube3.search import allowed_after
from robocell.services.solver.cube3.timed_blocks import (
    BEST,
    BUDGET_SPENT,
    C1,
    DD,
    EPS,
    EXHAUSTED,
    EXT,
    FACE_KIND,
    FL,
    FOUND,
    INF,
    IS_P2,
    KIND,
    LCO,
    LSS,
    MV,
    NEXT,
    NEXT_C1,
    NODES,
    PASSING,
    PREV_C1,
    REFUSED,
    SL,
    SP,
    STAGED,
    TW,
    VALID,
    WHERE,
    WORD,
    WSYM,
    bound,
    chain,
    chain_least,
    child_kind,
)
from robocell.services.solver.cube3.timed_phase2 import (
    leaf_phase2,
    leaf_precheck,
)
from robocell.services.solver.cube3.weighted import (
    move_bound,
    moves_word,
    phase1_entry,
    phase1_index,
)

ALLOWED_AFTER = np.array([sum(1 << m for m in range(N_MOVE) if allowed_after(prev, m))
                          for prev in range(-1, N_MOVE)], dtype=np.int64)
"""ALLOWED_AFTER[prev + 1]: the face turns that may follow ``prev`` (-1: none), as bits."""

# As in `timed_blocks`, these are compiled without numba's reference counting (``_nrt=False``):
# they create no arrays, and counting the references of the array views a node takes cost
# about a fifth of the search's time (measured on six-motor, same nodes either way).

@njit(cache=True, _nrt=False)
def residue1(T, D, twist, flip, slc):
    return mod3(D.phase1_pruning, phase1_index(T, twist, flip, slc))


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
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


@njit(cache=True, inline="always", _nrt=False)
def word_bound(W, exits, ints, before_sp, after_sp, sp, m):
    """(kind, ext, whether it joins the block, the path's cost, the bound from the node's
    word) of the child of face turn ``m`` from the node at level ``sp``."""
    kind, ext, joins = child_kind(ints, sp, m)
    # the path's cost first (what `chain` returns, in O(states))
    gc = chain_least(before_sp if joins else after_sp, exits, kind)
    # what the turn adds to the full table's bound, from the node's word
    return kind, ext, joins, gc, gc + move_bound(W, ints[sp, WORD], ints[sp, WSYM],
                                                 ints[sp, WHERE], m)


@njit(cache=True, inline="always", _nrt=False)
def word_passing(W, exits, ints, before, after, sp, c1, best, fctl, counters):
    """Bit ``m`` set for each face turn ``m`` whose child the node's word lets under ``c1``
    and ``best``; the others (most) are refused here, in one pass over the turns (the least
    bound over ``c1`` they show goes to fctl[NEXT_C1]). `word_bound` for every turn, with
    what is the same for all of them read once. Inlined: a call would pass every array of
    the tables' tuples field by field, once a node (a quarter of the search's time)."""
    prev = ints[sp, MV]
    word = ints[sp, WORD]
    sym = ints[sp, WSYM]
    here = ints[sp, WHERE]
    one = before.shape[1] == 1
    before_sp = before[sp]
    after_sp = after[sp]
    b0 = before_sp[0]
    a0 = after_sp[0]
    high = c1 + EPS
    low = best - EPS
    passing = 0
    refused = 0
    least = fctl[NEXT_C1]
    left = ALLOWED_AFTER[prev + 1]
    m = 0
    while left:
        if left & 1:
            kind, _, joins = child_kind(ints, sp, m)
            if one:
                gc = (b0 if joins else a0) + exits[kind, 0]
            else:
                gc = chain_least(before_sp if joins else after_sp, exits, kind)
            f = gc + move_bound(W, word, sym, here, m)
            if f > high or f >= low:
                refused += 1
                if f > high and f < least:
                    least = f
            else:
                passing |= 1 << m
        left >>= 1
        m += 1
    counters[REFUSED] += refused
    fctl[NEXT_C1] = least
    return passing


@njit(cache=True, _nrt=False)
def prefetch_children(T, W, ints, sp, passing, words):
    """Start reading what visiting the children in ``passing`` will read from the big tables,
    in two steps, since where a child's move word is depends on a read of its own: without
    ``words``, their flip-slice classes (a table of 4 MB, in no cache but the last); with,
    their move words and their corner and slice-edge moves. The reads do not wait on one
    another nor hold up what comes next: their misses overlap, with one another and with the
    other directions' steps taken meanwhile (`search_turns`)."""
    tw = ints[sp, TW]
    fl = ints[sp, FL]
    sl = ints[sp, SL]
    lco = ints[sp, LCO]
    lss = ints[sp, LSS]
    m = 0
    while passing:
        if passing & 1:
            col = FACE_KIND[m]
            f1 = T.flip_move[fl, col]
            s1 = T.slice_move[sl, col]
            if words:
                prefetch(W.moves, phase1_entry(T, T.twist_move[tw, col], f1, s1)[0])
                prefetch2(T.corners_move, lco, col)
                prefetch2(T.slice_sorted_move, lss, col)
            else:
                prefetch(T.flipslice_classsym, np.int64(s1) * N_FLIP + f1)
        passing >>= 1
        m += 1


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
    fctl[C1] = -1.0
    fctl[PREV_C1] = -1.0
    fctl[NEXT_C1] = 0.0


@njit(cache=True, inline="always", _nrt=False)
def next_threshold(H, w, ints, after, fctl, best):
    """Start the root's next phase-1 threshold: the least bound over the last seen, a step
    higher at least. False when none is left under ``best``."""
    if fctl[NEXT_C1] == INF or fctl[NEXT_C1] >= best - EPS:
        return False
    fctl[PREV_C1] = fctl[C1]
    fctl[C1] = max(fctl[NEXT_C1], bound(after[0], H, ints[0, DD], 0, 3), fctl[C1] + w)
    fctl[NEXT_C1] = INF
    ints[0, NEXT], ints[0, PASSING] = 0, -1
    return True


@njit(cache=True, inline="always", _nrt=False)
def search_direction(T, D, W, cost, exits, finish, H, H2, w, start_cp, start_ep, ints, before,
                     after, g, ctl, fctl, budget, path, work, ints2, before2, after2, g2,
                     out_path, counters, cap, perms):
    """Resume one direction's phase-1 IDA* for ``budget`` nodes (up to where reads are started
    next), solutions having to cost less than fctl[BEST] (inlined in `search_turns`). Returns
    (status, cost, length): FOUND with the solution in ``out_path`` (fctl[BEST] lowered to its
    cost), EXHAUSTED when no phase-1 threshold under the best is left, or BUDGET_SPENT."""
    sp = ctl[SP]
    n_states = before.shape[1]
    spent = 0
    while True:
        best = fctl[BEST]
        if sp < 0:
            if not next_threshold(H, w, ints, after, fctl, best):
                ctl[SP] = -1
                return EXHAUSTED, INF, 0
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
        c1 = fctl[C1]
        if ints[sp, PASSING] < 0:
            # most children are refused here, on the node's word, without a lookup
            passing = word_passing(W, exits, ints, before, after, sp, c1, best, fctl, counters)
            ints[sp, PASSING], ints[sp, STAGED] = passing, 0
            # what visiting them reads is started in two steps (`prefetch_children`); the budget
            # is looked at here only, so that other directions' steps go on while reads come
            prefetch_children(T, W, ints, sp, passing, False)
            if spent >= budget:
                ctl[SP] = sp
                return BUDGET_SPENT, INF, 0
            continue
        if not ints[sp, STAGED]:
            ints[sp, STAGED] = 1
            if ints[sp, PASSING] >> k:
                prefetch_children(T, W, ints, sp, ints[sp, PASSING] >> k << k, True)
                ctl[SP] = sp
                return BUDGET_SPENT, INF, 0
        left = ints[sp, PASSING] >> k
        if left == 0:
            sp -= 1
            continue
        while not left & 1:
            left >>= 1
            k += 1
        ints[sp, NEXT] = k + 1
        m = k
        child = sp + 1
        kind, ext, joins, gc, f = word_bound(W, exits, ints, before[sp], after[sp], sp, m)
        src = before[sp] if joins else after[sp]
        if f >= best - EPS:  # a solution found since lowered the best
            counters[REFUSED] += 1
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
        ints[child, TW] = t1
        ints[child, FL] = f1
        ints[child, SL] = s1
        ints[child, DD] = d1
        ints[child, MV] = m
        ints[child, KIND] = kind
        ints[child, NEXT] = 0
        ints[child, PASSING] = -1
        ints[child, EXT] = ext
        ints[child, WORD] = word
        ints[child, WSYM] = wsym
        ints[child, WHERE] = here
        # read beside the word above, not waited for at a leaf
        ints[child, LCO] = T.corners_move[ints[sp, LCO], col]
        ints[child, LSS] = T.slice_sorted_move[ints[sp, LSS], col]
        g[child] = gc
        sp = child
        if d1 == 0 and gc > fctl[PREV_C1] + EPS and not IS_P2[m] and \
                leaf_precheck(T, D, W, H2, ints, after, g, sp, best):
            c, n = leaf_phase2(T, D, W, cost, exits, finish, H2, w, start_cp, start_ep, ints,
                               before, after, g, sp, best, path, work, ints2, before2, after2, g2,
                               out_path, counters, cap, ctl, perms)
            if n > 0:
                fctl[BEST] = c
                ctl[SP] = sp
                return FOUND, c, n


@njit(cache=True, _nrt=False)
def search_turns(T, D, W, cost, exits, finish, H, H2, w, start_cp, start_ep, ints, before,
                 after, g, ctl, fctl, active, steps, best, path, work, ints2, before2, after2,
                 g2, out_path, counters, cap, perms):
    """Run the active directions (``active[i]``; their stacks and tables stacked on a first
    axis) a step each in turn (`search_direction` with a budget of one), about ``steps``
    steps in all, solutions having to cost less than ``best``: a step that starts reads
    (`prefetch_children`) is followed by the other directions' steps while they come.
    Returns (status, direction, cost, length): FOUND with the solution in ``out_path``,
    EXHAUSTED when no direction is active any more, or BUDGET_SPENT."""
    n = ints.shape[0]
    done = 0
    while done < steps:
        running = False
        for i in range(n):
            if not active[i]:
                continue
            running = True
            fctl[i, BEST] = best
            status, c, length = search_direction(
                T, D, W, cost[i], exits[i], finish, H[i], H2[i], w, start_cp[i], start_ep[i],
                ints[i], before[i], after[i], g[i], ctl[i], fctl[i], 1, path, work, ints2,
                before2, after2, g2, out_path, counters, cap, perms[i])
            done += 1
            if status == EXHAUSTED:
                active[i] = False
            elif status == FOUND:
                return FOUND, i, c, length
        if not running:
            return EXHAUSTED, -1, INF, 0
    return BUDGET_SPENT, -1, INF, 0
