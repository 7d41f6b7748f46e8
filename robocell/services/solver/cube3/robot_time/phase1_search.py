"""The two-phase search in a robot's time: IDA* on the profile's cost, not on face turns.

Moves are face turns in canonical order (`search.allowed_after`), but a path is priced the way
the motion compiler prices it: consecutive turns of one axis make a *block* (kind ``axis * 16
+ r1 * 4 + r2``), and a block done from robot state ``s`` (orientation, last group) ending in
``t`` costs ``block_cost[kind, s, t]``, the motion compiler's least cost of that block. A node
keeps the least cost to have done every block before its current one, ending in each state (a
vector over the states the robot can reach), and the block under way; its cost ``g`` is the
least over the states after the block. A robot that never re-orients the cube has one state.

The bound on what is left is the least cost of as many steps as a distance in a metric counts
(``steps_cost``, `profile_costs.steps_bound`; phase 2 reads ``phase2_steps_cost``, its own
blocks only, whose side-face turns are half turns): the axial metric (a block is a step) for
robots that turn opposite faces at once, the face-turn metric otherwise (`axial_metric`).
While the current block could still take the opposite face, that next step may be free, so
the bound counts one step less. The profile's own tables (`cost_tables`) bound tighter: the
least cost of parts of the cube, and of the whole of each phase (to G1; within G1 to solved,
slice order aside), every block at the least it costs after a block of another axis (so not
at the root, whose first block follows none); while a block is open, the least over joining
the opposite face first. For a robot of one state they bound at least as tightly as the
steps, whose distances are then not followed. In phase 1 each node carries its entry's word
of `move_words`, which tells, for each face turn, the child's bound to within a tick or two:
most children are refused on it without a lookup. Phase 1 runs IDA* on its cost to G1
(thresholds rising to the next f seen); every phase-1 path that enters G1 with a cost new to
this threshold is finished by IDA* on the cost within G1, under the best total found so far
(`phase2_search`). Both are resumable explicit-stack searches over the records of
`search_state`; a path's price is worked out by `block_costs`. A node's children are first
tested all at once on its word (`word_passing`); only those that pass are visited. What
visiting them reads from the big tables (a word is a random read of a table over a gigabyte)
is started then with prefetches, and the search goes on with a step of another direction
while the reads come (`search_turns` runs the directions a step each in turn): the misses of
several directions overlap, where one direction alone waits on each of its own in turn. Where
a word is depends on a read of its own (the child's flip-slice class), so `prefetch_children`
starts the classes first and the words a step later, and the children are visited the step
after that.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.services.solver.cube3 import coord
from robocell.services.solver.cube3.defs import MAX_LENGTH, N_FLIP, N_MOVE, PHASE2_MOVES
from robocell.services.solver.cube3.pruning import mod3, next_depth
from robocell.services.solver.cube3.robot_time.axial_metric import FACE_KIND
from robocell.services.solver.cube3.robot_time.block_costs import (
    bound,
    chain,
    chain_least,
    child_kind,
)
from robocell.services.solver.cube3.robot_time.cost_lookups import (
    move_bound,
    moves_word,
    phase1_entry,
    phase1_index,
)
from robocell.services.solver.cube3.robot_time.phase2_search import leaf_phase2, leaf_precheck
from robocell.services.solver.cube3.robot_time.prefetch import prefetch, prefetch2
from robocell.services.solver.cube3.robot_time.search_state import (
    BUDGET_SPENT,
    EPS,
    EXHAUSTED,
    FOUND,
    INF,
    direction_prices,
    direction_stack,
)
from robocell.services.solver.cube3.search import allowed_after

ALLOWED_AFTER = np.array([sum(1 << m for m in range(N_MOVE) if allowed_after(prev, m))
                          for prev in range(-1, N_MOVE)], dtype=np.int64)
"""ALLOWED_AFTER[prev + 1]: the face turns that may follow ``prev`` (-1: none), as bits."""
IS_P2 = np.zeros(N_MOVE, dtype=np.bool_)
IS_P2[list(PHASE2_MOVES)] = True
"""The face turns that keep a cube in G1: phase 1 never ends on one."""

# As in `block_costs`, these are compiled without numba's reference counting (``_nrt=False``):
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
def word_passing(W, exits, node, before, after, threshold, best, control, counters):
    """Bit ``m`` set for each face turn ``m`` whose child the node's word lets under
    ``threshold`` and ``best`` (``before`` and ``after``: the node's cost vectors); the
    others (most) are refused here, in one pass over the turns (the least bound over the
    threshold they show goes to control.next_threshold). What is the same for every turn is
    read once. Inlined: a call would pass every array of the tables' tuples field by field,
    once a node (a quarter of the search's time)."""
    word = node.word
    sym = node.word_sym
    here = node.entry_ticks
    one = before.shape[0] == 1
    b0 = before[0]
    a0 = after[0]
    high = threshold + EPS
    low = best - EPS
    passing = 0
    refused = 0
    least = control.next_threshold
    left = ALLOWED_AFTER[node.move + 1]
    m = 0
    while left:
        if left & 1:
            kind, _, joins = child_kind(node, m)
            if one:
                g = (b0 if joins else a0) + exits[kind, 0]
            else:
                g = chain_least(before if joins else after, exits, kind)
            f = g + move_bound(W, word, sym, here, m)
            if f > high or f >= low:
                refused += 1
                if f > high and f < least:
                    least = f
            else:
                passing |= 1 << m
        left >>= 1
        m += 1
    counters.refused += refused
    control.next_threshold = least
    return passing


@njit(cache=True, _nrt=False)
def prefetch_children(T, W, node, passing, words):
    """Start reading what visiting the children in ``passing`` will read from the big tables,
    in two steps, since where a child's move word is depends on a read of its own: without
    ``words``, their flip-slice classes (a table of 4 MB, in no cache but the last); with,
    their move words and their corner and slice-edge moves. The reads do not wait on one
    another nor hold up what comes next: their misses overlap, with one another and with the
    other directions' steps taken meanwhile (`search_turns`)."""
    m = 0
    while passing:
        if passing & 1:
            col = FACE_KIND[m]
            f1 = T.flip_move[node.flip, col]
            s1 = T.slice_move[node.slice, col]
            if words:
                prefetch(W.moves, phase1_entry(T, T.twist_move[node.twist, col], f1, s1)[0])
                prefetch2(T.corners_move, node.corners, col)
                prefetch2(T.slice_sorted_move, node.slice_sorted, col)
            else:
                prefetch(T.flipslice_classsym, np.int64(s1) * N_FLIP + f1)
        passing >>= 1
        m += 1


@njit(cache=True)
def init_direction(T, D, W, root, stack, control, start_vector):
    """Set up a direction's phase-1 stack at its root (twist, flip, slice; its permutations
    in the stack) and its control words, to start its first threshold."""
    node = stack.levels[0]
    node.twist, node.flip, node.slice = root[0], root[1], root[2]
    node.depth = distance1(T, D, root[0], root[1], root[2])
    node.move, node.kind, node.next_turn, node.open = -1, 0, 0, 0
    node.word, node.word_sym, node.entry_ticks = moves_word(T, W, root[0], root[1], root[2])
    node.corners = coord.get_corners(stack.start_cp)
    node.slice_sorted = coord.get_slice_sorted(stack.start_ep)
    for s in range(start_vector.shape[0]):
        stack.before[0, s] = start_vector[s]
        stack.after[0, s] = start_vector[s]
    stack.g[0] = 0.0
    control.top = -1
    control.replayed = -1
    control.threshold = -1.0
    control.previous_threshold = -1.0
    control.next_threshold = 0.0


@njit(cache=True, inline="always", _nrt=False)
def start_next_threshold(prices, stack, control, best):
    """Start the root's next phase-1 threshold: the least bound over the last seen, a step
    higher at least. False when none is left under ``best``."""
    if control.next_threshold == INF or control.next_threshold >= best - EPS:
        return False
    root = stack.levels[0]
    control.previous_threshold = control.threshold
    control.threshold = max(control.next_threshold,
                            bound(stack.after[0], prices.steps_cost, root.depth, 0, 3),
                            control.threshold + prices.step)
    control.next_threshold = INF
    root.next_turn, root.passing = 0, -1
    return True


@njit(cache=True, inline="always", _nrt=False)
def child_bound(T, D, W, prices, stack, control, sp, f):
    """The bound of the child taken at level sp + 1 (its turn, block and cost so far written
    there by `search_direction`): ``f``, the bound the node's word gave, raised by the child's
    own entry and, for a robot of more than one state, by its step distance. Works out the
    child's coordinates, word and cost vector on the way; the level becomes part of the path
    only if `push_child` runs."""
    node = stack.levels[sp]
    child = stack.levels[sp + 1]
    after = stack.after[sp + 1]
    m, kind, ext, g = child.move, child.kind, child.open, stack.g[sp + 1]
    col = FACE_KIND[m]
    t1 = T.twist_move[node.twist, col]
    s1 = T.slice_move[node.slice, col]
    f1 = T.flip_move[node.flip, col]
    child.twist, child.flip, child.slice = t1, f1, s1
    chain(stack.before[sp + 1], prices.block_cost, kind, after)
    word, wsym, here = moves_word(T, W, t1, f1, s1)
    child.word, child.word_sym, child.entry_ticks = word, wsym, here
    if not ext:
        # the child's own entry; while its block may take the opposite face, the least
        # over doing so first is what the node's word gave (to a tick)
        f = max(f, g + here * W.phase1_tick[0] * (1.0 - EPS))
    # one robot state: the profile's phase-1 table bounds at least as tightly as the
    # steps, so their distance is not followed (depth only tells G1 apart)
    depth = 0 if here == 0 else 1
    threshold, best = control.threshold, control.best
    if after.shape[0] > 1 and f <= threshold + EPS and f < best - EPS:
        depth = next_depth(node.depth, node.depth % 3, residue1(T, D, t1, f1, s1))
        f = max(f, bound(after, prices.steps_cost, depth, ext, kind // 16))
        if ext and depth > 0 and f <= threshold + EPS and f < best - EPS:
            # the open block's one free step, only if a turn joining it helps
            f = max(f, bound(after, prices.steps_cost, open_steps1(T, D, t1, f1, s1, m, depth)
                             + 1, ext, kind // 16))
    child.depth = depth
    return f


@njit(cache=True, inline="always", _nrt=False)
def push_child(T, stack, control, sp):
    """Make the child `child_bound` worked out at level sp + 1 part of the path."""
    if control.replayed > sp:
        control.replayed = sp  # its permutations are another path's
    node = stack.levels[sp]
    child = stack.levels[sp + 1]
    col = FACE_KIND[child.move]
    child.next_turn, child.passing = 0, -1
    # read beside the word, not waited for at a leaf
    child.corners = T.corners_move[node.corners, col]
    child.slice_sorted = T.slice_sorted_move[node.slice_sorted, col]


@njit(cache=True, inline="always", _nrt=False)
def next_passing_turn(node, k):
    """The first face turn from ``k`` on that the node's word let through (-1: none)."""
    left = node.passing >> k
    if left == 0:
        return -1
    while not left & 1:
        left >>= 1
        k += 1
    return k


@njit(cache=True, inline="always", _nrt=False)
def search_direction(T, D, W, prices, stack, control, phase2_stack, counters, budget):
    """Resume one direction's phase-1 IDA* for ``budget`` nodes (up to where reads are started
    next), solutions having to cost less than control.best (inlined in `search_turns`).
    Returns (status, cost, length): FOUND with the solution in phase2_stack.solution
    (control.best lowered to its cost), EXHAUSTED when no phase-1 threshold under the best is
    left, or BUDGET_SPENT."""
    sp = control.top
    spent = 0
    while True:
        best = control.best
        if sp < 0:
            if not start_next_threshold(prices, stack, control, best):
                control.top = -1
                return EXHAUSTED, INF, 0
            sp = 0
            if stack.levels[0].depth == 0 and control.previous_threshold < 0:
                c, n = leaf_phase2(T, D, W, prices, stack, control, 0, best, phase2_stack,
                                   counters)
                if n > 0:
                    control.best, control.top = c, sp
                    return FOUND, c, n
            continue
        node = stack.levels[sp]
        k = node.next_turn
        if k >= N_MOVE or sp + 1 >= MAX_LENGTH:
            sp -= 1
            continue
        threshold = control.threshold
        if node.passing < 0:
            # most children are refused here, on the node's word, without a lookup
            node.passing = word_passing(W, prices.exits, node, stack.before[sp],
                                        stack.after[sp], threshold, best, control, counters)
            node.staged = 0
            # what visiting them reads is started in two steps (`prefetch_children`); the budget
            # is looked at here only, so that other directions' steps go on while reads come
            prefetch_children(T, W, node, node.passing, False)
            if spent >= budget:
                control.top = sp
                return BUDGET_SPENT, INF, 0
            continue
        if not node.staged:
            node.staged = 1
            if node.passing >> k:
                prefetch_children(T, W, node, node.passing >> k << k, True)
                control.top = sp
                return BUDGET_SPENT, INF, 0
        m = next_passing_turn(node, k)
        if m < 0:
            sp -= 1
            continue
        node.next_turn = m + 1
        kind, ext, joins = child_kind(node, m)
        src = stack.before[sp] if joins else stack.after[sp]
        g = chain_least(src, prices.exits, kind)
        f = g + move_bound(W, node.word, node.word_sym, node.entry_ticks, m)
        if f >= best - EPS:  # a solution found since lowered the best
            counters.refused += 1
            continue
        spent += 1
        counters.nodes += 1
        child = stack.levels[sp + 1]
        child.move, child.kind, child.open = m, kind, ext
        stack.g[sp + 1] = g
        for s in range(src.shape[0]):
            stack.before[sp + 1, s] = src[s]
        f = child_bound(T, D, W, prices, stack, control, sp, f)
        if f > threshold + EPS or f >= best - EPS:
            if f > threshold + EPS and f < control.next_threshold:
                control.next_threshold = f
            continue
        push_child(T, stack, control, sp)
        sp += 1
        if stack.levels[sp].depth == 0 and g > control.previous_threshold + EPS and \
                not IS_P2[m] and leaf_precheck(T, D, W, prices, stack, sp, best):
            c, n = leaf_phase2(T, D, W, prices, stack, control, sp, best, phase2_stack,
                               counters)
            if n > 0:
                control.best, control.top = c, sp
                return FOUND, c, n


@njit(cache=True, _nrt=False)
def search_turns(T, D, W, prices, stacks, controls, active, steps, best, phase2_stack,
                 counters):
    """Run the active directions (``active[i]``; their prices, stacks and control words
    stacked on a first axis) a step each in turn (`search_direction` with a budget of one),
    about ``steps`` steps in all, solutions having to cost less than ``best``: a step that
    starts reads (`prefetch_children`) is followed by the other directions' steps while they
    come. Returns (status, direction, cost, length): FOUND with the solution in
    phase2_stack.solution, EXHAUSTED when no direction is active any more, or BUDGET_SPENT."""
    n = controls.shape[0]
    counts = counters[0]
    done = 0
    while done < steps:
        running = False
        for i in range(n):
            if not active[i]:
                continue
            running = True
            control = controls[i]
            control.best = best
            status, c, length = search_direction(
                T, D, W, direction_prices(prices, i), direction_stack(stacks, i), control,
                phase2_stack, counts, 1)
            done += 1
            if status == EXHAUSTED:
                active[i] = False
            elif status == FOUND:
                return FOUND, i, c, length
        if not running:
            return EXHAUSTED, -1, INF, 0
    return BUDGET_SPENT, -1, INF, 0
