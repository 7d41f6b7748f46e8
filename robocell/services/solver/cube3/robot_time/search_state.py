"""What the compiled robot-time search runs on: its stacks, its control words, its counters
and a direction's prices, as named records.

The kernels (`phase1_search`, `phase2_search`) take a few named tuples of arrays, which numba
compiles to plain structs of arrays, so they read ``prices.exits`` or ``stack.after[sp]``
instead of taking every array as a parameter of its own. A level of a stack is a record of a
structured array: ``node = stack.levels[sp]`` is a reference into it, and the search reads
``node.depth`` and writes ``child.twist``; in memory a level is still one row of int64, as a
table of numbered columns would be. The control words (`CONTROL`) and counters (`COUNTERS`)
are records too, taken by reference from their one-row arrays.

The driver (`driver.RobotTimeSearch`) keeps every direction's `Prices`, `Phase1Stack` and
control words stacked on a first axis; `direction_prices` and `direction_stack` take one
direction's views of them (no copy).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from robocell.services.solver.cube3.defs import MAX_LENGTH, N_CORNER, N_EDGE

LEVELS = MAX_LENGTH + 2
"""Levels of every stack: the root, a face turn each, and one spare."""
EPS = 1e-9
"""Costs are sums of float costs: two within EPS are equal."""
INF = np.inf
BUDGET_SPENT, FOUND, EXHAUSTED = 0, 1, 2
"""What a resumed search returns: its budget of steps spent, a solution, nothing left."""
N_PERMS = N_CORNER + N_EDGE
"""A level's corner permutation then its edge permutation (`Phase1Stack.perms`)."""
N_SLICE_ORDER = 4
"""Slice edges, whose order `phase2_search.leaf_phase2` ranks."""

PHASE1_LEVEL = np.dtype([
    ("twist", np.int64),
    ("flip", np.int64),
    ("slice", np.int64),
    ("depth", np.int64),  # exact distance to G1 in the metric (one robot state: 0 in G1, else 1)
    ("move", np.int64),  # the face turn that led here (-1 at the root)
    ("kind", np.int64),  # the block under way, that ``move`` ends
    ("next_turn", np.int64),  # the first face turn not yet tried from here
    ("open", np.int64),  # 1 while that block may still take a turn of its opposite face
    ("word", np.int64),  # the entry's `move_words` word: what each turn adds to the bound
    ("word_sym", np.int64),  # the symmetry that maps the node to that entry
    ("entry_ticks", np.int64),  # the entry's own value in the phase-1 cost table (ticks)
    ("corners", np.int64),  # the corner permutation and the slice edges of the path
    ("slice_sorted", np.int64),  # (read by `phase2_search.leaf_precheck`)
    ("passing", np.int64),  # bits of the children the word lets through (-1: not yet known)
    ("staged", np.int64),  # 1 once the reads of those children's words are started
])
"""A level of the phase-1 stack: a node of the path being searched."""

PHASE2_LEVEL = np.dtype([
    ("corners", np.int64),
    ("ud_edges", np.int64),
    ("slice_sorted", np.int64),
    ("depth", np.int64),  # exact phase-2 distance, slice order aside (one state: 0 solved/1 not)
    ("move", np.int64),
    ("kind", np.int64),
    ("next_turn", np.int64),  # index into the phase-2 face turns of the next one to try
])
"""A level of the phase-2 stack (level 0: the phase-1 leaf being finished)."""

CONTROL = np.dtype([
    ("top", np.int64),  # the level whose children are being tried (-1: start a threshold)
    ("replayed", np.int64),  # the last level whose permutations are up to date
    ("threshold", np.float64),  # IDA*'s bound on the phase-1 cost under way
    ("previous_threshold", np.float64),  # the one before (-1: the first threshold)
    ("next_threshold", np.float64),  # the least bound seen over the threshold
    ("best", np.float64),  # what a solution must cost less than
])
"""A direction's control words: where its resumable phase-1 search stands."""

COUNTERS = np.dtype([
    ("refused", np.int64),  # children refused on their parent's word, without a lookup
    ("nodes", np.int64),  # phase-1 children looked up
    ("phase2_nodes", np.int64),
    ("capped", np.int64),  # phase-2 searches cut short at their node cap
])
"""What the search has done so far (all its directions together)."""


class Prices(NamedTuple):
    """What a direction's path costs, in its own frame's block kinds (`profile_costs`)."""

    block_cost: np.ndarray
    """block_cost[kind, s, t]: least cost of a block of ``kind`` from robot state s to t."""
    exits: np.ndarray
    """exits[kind, s]: least cost of a block of ``kind`` from state s, to any state."""
    finish: np.ndarray
    """finish[t]: least cost of ending from state t (the same for every direction)."""
    steps_cost: np.ndarray
    """steps_cost[n, t, axis]: least cost of n more steps (`profile_costs.steps_bound`)."""
    phase2_steps_cost: np.ndarray
    """The same of phase 2's blocks only."""
    step: float
    """Least cost of a step of the bounding metric: the least a threshold rises."""


class Phase1Stack(NamedTuple):
    """A direction's phase-1 path, a level a node (level 0 the direction's root)."""

    levels: np.ndarray
    """`PHASE1_LEVEL` [LEVELS]"""
    before: np.ndarray
    """before[level, s]: least cost of the blocks before the one under way, ending in s."""
    after: np.ndarray
    """after[level, t]: the same with the block under way done, ending in t."""
    g: np.ndarray
    """g[level]: the path's cost, the least of ``after`` (IDA*'s g)."""
    perms: np.ndarray
    """perms[level]: the corner and edge permutations after the path (`N_PERMS`), up to
    date up to control ``replayed``."""
    start_cp: np.ndarray
    start_ep: np.ndarray
    """The root's corner and edge permutations."""


class Phase2Stack(NamedTuple):
    """The phase-2 search's stack and the path being finished (one for all directions)."""

    levels: np.ndarray
    """`PHASE2_LEVEL` [LEVELS]"""
    before: np.ndarray
    after: np.ndarray
    g: np.ndarray
    """As in `Phase1Stack`."""
    path: np.ndarray
    """The face turns of the path under way: phase 1's, then phase 2's."""
    solution: np.ndarray
    """The face turns of the last solution found."""
    slice_order: np.ndarray
    """Scratch: the order of the slice edges at a leaf (`N_SLICE_ORDER`)."""
    node_cap: int
    """Phase-2 nodes one phase-1 leaf may take: past it, the leaf is left (counted)."""


def phase1_stacks(n_directions: int, n_states: int, start_cp: np.ndarray,
                  start_ep: np.ndarray) -> Phase1Stack:
    """Zeroed phase-1 stacks of ``n_directions`` directions, on a first axis, with their
    roots' permutations (``start_cp[direction]``, ``start_ep[direction]``)."""
    return Phase1Stack(
        levels=np.zeros((n_directions, LEVELS), PHASE1_LEVEL),
        before=np.zeros((n_directions, LEVELS, n_states)),
        after=np.zeros((n_directions, LEVELS, n_states)),
        g=np.zeros((n_directions, LEVELS)),
        perms=np.zeros((n_directions, LEVELS, N_PERMS), np.int64),
        start_cp=np.ascontiguousarray(start_cp, dtype=np.int64).reshape(n_directions, N_CORNER),
        start_ep=np.ascontiguousarray(start_ep, dtype=np.int64).reshape(n_directions, N_EDGE))


def phase2_stack(n_states: int, node_cap: int) -> Phase2Stack:
    """A zeroed phase-2 stack for a robot of ``n_states`` states."""
    return Phase2Stack(
        levels=np.zeros(LEVELS, PHASE2_LEVEL), before=np.zeros((LEVELS, n_states)),
        after=np.zeros((LEVELS, n_states)), g=np.zeros(LEVELS),
        path=np.zeros(LEVELS, np.int64), solution=np.zeros(LEVELS, np.int64),
        slice_order=np.zeros(N_SLICE_ORDER, np.int64), node_cap=int(node_cap))


@njit(cache=True, inline="always", _nrt=False)
def direction_prices(prices, i):
    """Direction ``i``'s prices, from prices stacked over the directions."""
    return Prices(prices.block_cost[i], prices.exits[i], prices.finish, prices.steps_cost[i],
                  prices.phase2_steps_cost[i], prices.step)


@njit(cache=True, inline="always", _nrt=False)
def direction_stack(stacks, i):
    """Direction ``i``'s phase-1 stack, from stacks stacked over the directions."""
    return Phase1Stack(stacks.levels[i], stacks.before[i], stacks.after[i], stacks.g[i],
                       stacks.perms[i], stacks.start_cp[i], stacks.start_ep[i])
