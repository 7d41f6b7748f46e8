"""Feature space: the open list of the feature-guided search (after FESS, Shoham & Schaeffer).

Every position is projected onto a small vector of features - here how many boxes are packed
on goals in the packing order, and into how many separate areas the boxes cut the free
squares. Positions with the same vector share a *cell*. The search does not take the best
position overall, as A* does; it visits the cells that hold open positions in turn, one
expansion each, so progress on any feature keeps being followed while the heuristic is flat.
Inside a cell it takes the position reached with the fewest *unadvised* pushes (pushes the
advisors did not propose, see ``file_children``), then the smallest bound.

Each cell's open positions are a pairing heap threaded through per-node arrays (first child,
next sibling), so filing a node is O(1) and nothing is allocated per node.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from robocell.sokoban.board import count_regions
from robocell.sokoban.nodes import grown_array
from robocell.sokoban.packing import misordered_goals

KEY_SHIFT = 24
"""A node's key in its cell: unadvised pushes << KEY_SHIFT | bound (capped)."""
MAX_KEY_H = (1 << KEY_SHIFT) - 1
MAX_REGIONS = 32
"""Areas counted per position (more are filed with the last)."""
MAX_BLOCKED = 16
"""Blocked doorways counted per position (more are filed with the last)."""
NEVER = -2
"""cell_root of a cell that never held a node (-1: held some, empty now)."""
FS_ACTIVE, FS_CURSOR, FS_CELLS_VISITED, FS_GOAL, FS_HEAP_EVERY, FS_TURN = range(6)
N_COUNTERS = 6


class FeatureSpace(NamedTuple):
    """The arrays of a feature space (numba takes it as a tuple)."""

    key: np.ndarray        # int64[node]: unadvised pushes << KEY_SHIFT | bound
    first: np.ndarray      # int32[node]: first child in the cell's pairing heap
    sibling: np.ndarray    # int32[node]: next sibling in the pairing heap
    packed: np.ndarray     # int16[node]: boxes on goals filled in the packing order
    regions: np.ndarray    # int16[node]: areas of free squares
    blocked: np.ndarray    # int16[node]: boxes off goal on the board's doorways
    cell_root: np.ndarray  # int32[cell]: best node of the cell, -1 empty, NEVER unused
    active: np.ndarray     # int32[cell]: the cells that ever held a node, in order
    doorway: np.ndarray    # bool[square]: squares whose loss splits the floor
    pack_depth: np.ndarray  # int32[square]: a goal's place in the packing order, deepest high
    counters: np.ndarray   # int64[N_COUNTERS]


N_NODE_ARRAYS = 6
"""The first six arrays are per node and grow with the node arrays."""


def feature_space(n_boxes: int, capacity: int,
                  board_features: tuple[np.ndarray, np.ndarray] | None = None) -> FeatureSpace:
    """An empty feature space for ``capacity`` nodes; ``board_features`` are the board's
    doorways (``doorways``) and packing depths (``packing.packing_depth``)."""
    if board_features is None:
        board_features = (np.zeros(1, dtype=np.bool_), np.zeros(1, dtype=np.int32))
    n_cells = (n_boxes + 1) * MAX_REGIONS * MAX_BLOCKED
    return FeatureSpace(
        np.zeros(capacity, dtype=np.int64), np.full(capacity, -1, dtype=np.int32),
        np.full(capacity, -1, dtype=np.int32), np.zeros(capacity, dtype=np.int16),
        np.zeros(capacity, dtype=np.int16), np.zeros(capacity, dtype=np.int16),
        np.full(n_cells, NEVER, dtype=np.int32), np.zeros(n_cells, dtype=np.int32),
        board_features[0], board_features[1],
        np.zeros(N_COUNTERS, dtype=np.int64))


def doorways(neighbours: np.ndarray) -> np.ndarray:
    """bool[n]: the articulation squares of the floor (a box there cuts the floor in two:
    corridors and the doorways between rooms), by Tarjan's low-link numbering."""
    n = neighbours.shape[0]
    order = np.full(n, -1, dtype=np.int64)
    low = np.zeros(n, dtype=np.int64)
    cut = np.zeros(n, dtype=np.bool_)
    counter = 0
    for root in range(n):
        if order[root] >= 0:
            continue
        order[root] = low[root] = counter
        counter += 1
        root_children = 0
        stack = [(root, -1, 0)]
        while stack:
            s, parent, d = stack.pop()
            if d < 4:
                stack.append((s, parent, d + 1))
                t = int(neighbours[s, d])
                if t < 0 or t == parent:
                    continue
                if order[t] < 0:
                    order[t] = low[t] = counter
                    counter += 1
                    if s == root:
                        root_children += 1
                    stack.append((t, s, 0))
                else:
                    low[s] = min(low[s], order[t])
            elif parent >= 0:
                low[parent] = min(low[parent], low[s])
                if parent != root and low[s] >= order[parent]:
                    cut[parent] = True
        cut[root] = root_children > 1
    return cut


@njit(cache=True)
def _meld(a: int, b: int, key: np.ndarray, first: np.ndarray, sibling: np.ndarray) -> int:
    """Join two pairing heaps (roots ``a``, ``b``; -1 is empty); returns the new root."""
    if a < 0:
        return b
    if b < 0:
        return a
    if key[b] < key[a]:
        a, b = b, a
    sibling[b] = first[a]
    first[a] = b
    return a


@njit(cache=True)
def _pop_root(root: int, key: np.ndarray, first: np.ndarray, sibling: np.ndarray) -> int:
    """Remove ``root`` from its heap; returns the new root (two-pass pairing)."""
    child = first[root]
    first[root] = -1
    paired = -1
    while child >= 0:
        a = child
        b = sibling[a]
        sibling[a] = -1
        if b < 0:
            child = -1
            m = a
        else:
            child = sibling[b]
            sibling[b] = -1
            m = _meld(a, b, key, first, sibling)
        sibling[m] = paired
        paired = m
    out = -1
    while paired >= 0:
        following = sibling[paired]
        sibling[paired] = -1
        out = _meld(out, paired, key, first, sibling)
        paired = following
    return out


@njit(cache=True)
def cell_of(packed: int, regions: int, blocked: int) -> int:
    return ((packed * MAX_REGIONS + min(regions, MAX_REGIONS - 1)) * MAX_BLOCKED
            + min(blocked, MAX_BLOCKED - 1))


@njit(cache=True)
def file_node(node: int, unadvised: int, h: int, fs: FeatureSpace) -> None:
    """Open ``node`` in the cell of its features (already in the per-node arrays)."""
    fs.key[node] = (np.int64(unadvised) << KEY_SHIFT) | min(h, MAX_KEY_H)
    fs.first[node] = -1
    fs.sibling[node] = -1
    cell = cell_of(fs.packed[node], fs.regions[node], fs.blocked[node])
    root = fs.cell_root[cell]
    if root == NEVER:
        fs.active[fs.counters[FS_ACTIVE]] = cell
        fs.counters[FS_ACTIVE] += 1
        root = -1
    fs.cell_root[cell] = _meld(root, node, fs.key, fs.first, fs.sibling)


@njit(cache=True)
def unadvised_pushes(node: int, fs: FeatureSpace) -> int:
    return fs.key[node] >> KEY_SHIFT


@njit(cache=True)
def next_node(fs: FeatureSpace) -> int:
    """The next cell in turn that holds open nodes gives up its best one; -1 if none is left."""
    counters = fs.counters
    n_active = counters[FS_ACTIVE]
    for _ in range(n_active):
        cursor = counters[FS_CURSOR] % n_active
        counters[FS_CURSOR] = cursor + 1
        cell = fs.active[cursor]
        root = fs.cell_root[cell]
        if root >= 0:
            fs.cell_root[cell] = _pop_root(root, fs.key, fs.first, fs.sibling)
            counters[FS_CELLS_VISITED] += 1
            return root
    return -1


@njit(cache=True)
def _advise(value: int, parent_value: int, c: int, best: int, best_value: int,
            node_h: np.ndarray) -> int:
    """An advisor's pick after seeing child ``c``: ``c`` when its feature ``value`` (lower is
    better) beats the parent's and the pick so far (ties: lower h), else the pick so far
    (``best``, -1 for none, whose feature is ``best_value``)."""
    if value >= parent_value:
        return best
    if best < 0 or value < best_value or (value == best_value and node_h[c] < node_h[best]):
        return c
    return best


@njit(cache=True)
def file_children(parent: int, first: int, end: int, node_boxes: np.ndarray,
                  node_h: np.ndarray, occupied: np.ndarray, neighbours: np.ndarray,
                  is_goal: np.ndarray, goal_squares: np.ndarray, goal_area: np.ndarray,
                  deepest_empty: np.ndarray, region_mark: np.ndarray,
                  region_stamp: int, queue: np.ndarray, fs: FeatureSpace,
                  regions_known: bool, hot_pick: int = -1) -> int:
    """Compute the features of the new nodes ``first..end-1`` (children of ``parent``, or the
    start node when ``parent == first``), let the advisors pick their pushes, and file every
    node in its cell. ``occupied`` must be all False; returns the region stamp. A solved
    child is reported in the counters (FS_GOAL). With ``regions_known`` the areas were
    counted when the children were made (``fs.regions``). ``hot_pick`` is the hotspot
    advisor's child (``hotspots.hotspot_advice``), -1 for none."""
    packed = fs.packed
    regions = fs.regions
    blocked = fs.blocked
    nb = node_boxes.shape[1]
    best_pack = -1
    best_area = -1
    best_door = -1
    best_h = -1
    for c in range(first, end):
        on_goal = 0
        in_doorways = 0
        for k in range(nb):
            b = node_boxes[c, k]
            occupied[b] = True
            if is_goal[b]:
                on_goal += 1
            elif fs.doorway[b]:
                in_doorways += 1
        blocked[c] = in_doorways
        if not regions_known:
            region_stamp += 1
            regions[c] = count_regions(neighbours, occupied, region_mark, region_stamp, queue)
        packed[c] = on_goal - misordered_goals(node_boxes[c], -1, -1, occupied, goal_squares,
                                               goal_area, fs.pack_depth, deepest_empty)
        for k in range(nb):
            occupied[node_boxes[c, k]] = False
        if node_h[c] == 0:
            fs.counters[FS_GOAL] = c + 1
        if parent == first:
            continue
        # The advisors, each for one push that improves on the parent: packing (packs most),
        # connectivity (fewest areas), doorways (fewest blocked), bound (lowest h); ties go
        # to the lower h.
        best_pack = _advise(-packed[c], -packed[parent], c, best_pack,
                            -packed[best_pack] if best_pack >= 0 else 0, node_h)
        best_area = _advise(regions[c], regions[parent], c, best_area,
                            regions[best_area] if best_area >= 0 else 0, node_h)
        best_door = _advise(blocked[c], blocked[parent], c, best_door,
                            blocked[best_door] if best_door >= 0 else 0, node_h)
        best_h = _advise(node_h[c], node_h[parent], c, best_h,
                         node_h[best_h] if best_h >= 0 else 0, node_h)
    base = 0 if parent == first else unadvised_pushes(parent, fs)
    for c in range(first, end):
        advised = (parent == first or c == best_pack or c == best_area or c == best_door
                   or c == best_h or c == hot_pick)
        file_node(c, base if advised else base + 1, node_h[c], fs)
    return region_stamp


def grown_feature_space(fs: FeatureSpace, capacity: int, n_nodes: int) -> FeatureSpace:
    """The feature space with per-node arrays for ``capacity`` nodes (the first ``n_nodes``
    kept)."""
    return FeatureSpace(*(tuple(grown_array(a, capacity, n_nodes) for a in fs[:N_NODE_ARRAYS])
                          + fs[N_NODE_ARRAYS:]))
