"""Feature space: the open list of the feature-guided search (after FESS, Shoham & Schaeffer).

Every position is projected onto a small vector of features - here how many boxes are packed
on goals in the packing order, into how many separate areas the boxes cut the free
squares, how many boxes off goal stand on doorways (or, as an option, how many links between
rooms a box obstructs: ``room_links``), and, as an option, how many boxes the packing plan is
about to shut in (``out_of_plan``). Positions with the same vector share a *cell*. The
search does not take the best position overall, as A* does; it visits the cells that hold
open positions in turn, one expansion each, so progress on any feature keeps being followed
while the heuristic is flat. Inside a cell it takes the position reached with the fewest
*unadvised* pushes (pushes the advisors did not propose, see ``file_children``), then the
smallest bound.

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
"""Blocked doorways (or room links) counted per position (more are filed with the last)."""
MAX_OUT = 8
"""Out-of-plan boxes counted per position (more are filed with the last)."""
ROOM_LINKS = 1
"""Mode bit (``FS_MODE``): the third feature counts obstructed room links, not doorway boxes."""
OUT_OF_PLAN = 2
"""Mode bit (``FS_MODE``): a fourth feature, the boxes the packing plan is about to shut in."""
EXPLORER = 4
"""Mode bit (``FS_MODE``): the explorer advisor (the push that opens most squares to the
player)."""
NEVER = -2
"""cell_root of a cell that never held a node (-1: held some, empty now)."""
(FS_ACTIVE, FS_CURSOR, FS_CELLS_VISITED, FS_GOAL, FS_HEAP_EVERY, FS_TURN, FS_MODE,
 FS_STAMP) = range(8)
N_COUNTERS = 8


class FeatureSpace(NamedTuple):
    """The arrays of a feature space (numba takes it as a tuple)."""

    key: np.ndarray        # int64[node]: unadvised pushes << KEY_SHIFT | bound
    first: np.ndarray      # int32[node]: first child in the cell's pairing heap
    sibling: np.ndarray    # int32[node]: next sibling in the pairing heap
    packed: np.ndarray     # int16[node]: boxes on goals filled in the packing order
    regions: np.ndarray    # int16[node]: areas of free squares
    blocked: np.ndarray    # int16[node]: boxes off goal on the board's doorways (or, with
                           # ROOM_LINKS, room links holding a box off goal)
    out: np.ndarray        # int16[node]: out-of-plan boxes (0 unless OUT_OF_PLAN)
    reach: np.ndarray      # int16[node]: squares the player can walk to (0 unless EXPLORER)
    cell_root: np.ndarray  # int32[cell]: best node of the cell, -1 empty, NEVER unused
    active: np.ndarray     # int32[cell]: the cells that ever held a node, in order
    doorway: np.ndarray    # bool[square]: squares whose loss splits the floor
    pack_depth: np.ndarray  # int32[square]: a goal's place in the packing order, deepest high
    link: np.ndarray       # int32[square]: the room link (tunnel, doorway) of a square, -1 none
    link_seen: np.ndarray  # int64[link]: scratch, stamped with FS_STAMP
    wall: np.ndarray       # bool[square]: scratch of ``out_of_plan``
    comp: np.ndarray       # int32[square]: scratch of ``out_of_plan`` (area of each square)
    comp_goal: np.ndarray  # bool[square]: scratch (area holds an empty goal)
    comp_size: np.ndarray  # int32[square]: scratch (squares of each area)
    area_fed: np.ndarray   # bool[square]: scratch (goal area touching the main area)
    stack: np.ndarray      # int32[square]: scratch
    seen: np.ndarray       # int64[square]: scratch of the explorer, stamped with FS_STAMP
    counters: np.ndarray   # int64[N_COUNTERS]


N_NODE_ARRAYS = 8
"""The first eight arrays are per node and grow with the node arrays."""


def feature_space(n_boxes: int, capacity: int,
                  board_features: tuple[np.ndarray, np.ndarray] | None = None,
                  mode: int = 0, link: np.ndarray | None = None) -> FeatureSpace:
    """An empty feature space for ``capacity`` nodes; ``board_features`` are the board's
    doorways (``doorways``) and packing depths (``packing.packing_depth``); ``mode`` the
    optional features (ROOM_LINKS, OUT_OF_PLAN), ``link`` the room links (``room_links``,
    needed with ROOM_LINKS)."""
    if board_features is None:
        board_features = (np.zeros(1, dtype=np.bool_), np.zeros(1, dtype=np.int32))
    n = board_features[0].shape[0]
    if link is None:
        link = np.full(n, -1, dtype=np.int32)
    n_cells = (n_boxes + 1) * MAX_REGIONS * MAX_BLOCKED * (MAX_OUT if mode & OUT_OF_PLAN else 1)
    counters = np.zeros(N_COUNTERS, dtype=np.int64)
    counters[FS_MODE] = mode
    return FeatureSpace(
        np.zeros(capacity, dtype=np.int64), np.full(capacity, -1, dtype=np.int32),
        np.full(capacity, -1, dtype=np.int32), np.zeros(capacity, dtype=np.int16),
        np.zeros(capacity, dtype=np.int16), np.zeros(capacity, dtype=np.int16),
        np.zeros(capacity, dtype=np.int16), np.zeros(capacity, dtype=np.int16),
        np.full(n_cells, NEVER, dtype=np.int32), np.zeros(n_cells, dtype=np.int32),
        board_features[0], board_features[1], link,
        np.zeros(max(1, int(link.max()) + 1), dtype=np.int64), np.zeros(n, dtype=np.bool_),
        np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.int32),
        np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int64),
        counters)


def room_links(neighbours: np.ndarray, doorway: np.ndarray) -> np.ndarray:
    """int32[n]: the links between rooms (after FESS's room connectivity). The doorways
    (articulation squares, ``doorways``) cut the floor into *rooms*: the areas of the other
    squares, counted as rooms when they have at least two squares. A *link* is a connected
    run of doorway squares (a tunnel, or a doorway) that touches two rooms or more; a square
    gets its link's number, -1 off the links (dead-end corridors are no link)."""
    n = neighbours.shape[0]
    room = np.full(n, -1, dtype=np.int64)
    sizes: list[int] = []
    for s0 in range(n):
        if doorway[s0] or room[s0] >= 0:
            continue
        r = len(sizes)
        room[s0] = r
        stack, size = [s0], 0
        while stack:
            s = stack.pop()
            size += 1
            for d in range(4):
                t = int(neighbours[s, d])
                if t >= 0 and not doorway[t] and room[t] < 0:
                    room[t] = r
                    stack.append(t)
        sizes.append(size)
    link = np.full(n, -1, dtype=np.int32)
    run = np.full(n, -1, dtype=np.int64)
    n_links = 0
    for s0 in range(n):
        if not doorway[s0] or run[s0] >= 0:
            continue
        run[s0] = s0
        members, stack, touched = [], [s0], set()
        while stack:
            s = stack.pop()
            members.append(s)
            for d in range(4):
                t = int(neighbours[s, d])
                if t < 0:
                    continue
                if doorway[t]:
                    if run[t] < 0:
                        run[t] = s0
                        stack.append(t)
                elif sizes[room[t]] >= 2:
                    touched.add(int(room[t]))
        if len(touched) >= 2:
            link[members] = n_links
            n_links += 1
    return link


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
def meld(a: int, b: int, key: np.ndarray, first: np.ndarray, sibling: np.ndarray) -> int:
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
def pop_root(root: int, key: np.ndarray, first: np.ndarray, sibling: np.ndarray) -> int:
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
            m = meld(a, b, key, first, sibling)
        sibling[m] = paired
        paired = m
    out = -1
    while paired >= 0:
        following = sibling[paired]
        sibling[paired] = -1
        out = meld(out, paired, key, first, sibling)
        paired = following
    return out


@njit(cache=True)
def cell_of(packed: int, regions: int, blocked: int, out: int = 0, out_on: bool = False) -> int:
    cell = ((packed * MAX_REGIONS + min(regions, MAX_REGIONS - 1)) * MAX_BLOCKED
            + min(blocked, MAX_BLOCKED - 1))
    if out_on:
        cell = cell * MAX_OUT + min(out, MAX_OUT - 1)
    return cell


@njit(cache=True)
def file_node(node: int, unadvised: int, h: int, fs: FeatureSpace) -> None:
    """Open ``node`` in the cell of its features (already in the per-node arrays)."""
    fs.key[node] = (np.int64(unadvised) << KEY_SHIFT) | min(h, MAX_KEY_H)
    fs.first[node] = -1
    fs.sibling[node] = -1
    cell = cell_of(fs.packed[node], fs.regions[node], fs.blocked[node], fs.out[node],
                   (fs.counters[FS_MODE] & OUT_OF_PLAN) != 0)
    root = fs.cell_root[cell]
    if root == NEVER:
        fs.active[fs.counters[FS_ACTIVE]] = cell
        fs.counters[FS_ACTIVE] += 1
        root = -1
    fs.cell_root[cell] = meld(root, node, fs.key, fs.first, fs.sibling)


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
            fs.cell_root[cell] = pop_root(root, fs.key, fs.first, fs.sibling)
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
def out_of_plan(boxes: np.ndarray, occupied: np.ndarray, neighbours: np.ndarray,
                is_goal: np.ndarray, goal_squares: np.ndarray, goal_area: np.ndarray,
                deepest_empty: np.ndarray, fs: FeatureSpace) -> int:
    """Boxes the packing plan is about to shut in (after FESS's out-of-plan feature): with
    the boxes on goals and the goals the plan fills next (in each goal area, its deepest
    empty goals by ``fs.pack_depth``) made walls, the boxes off goal left in an area of free
    squares, not the largest (the main area), that no goal is left for: it holds no empty
    goal, and touches no next goal of a goal area that the main area does not touch (a goal
    area the main area touches is filled from there, so what lies behind it is shut in).
    ``occupied`` shows the position, ``deepest_empty`` its deepest empty goal per goal area
    (as ``misordered_goals`` leaves it)."""
    n = neighbours.shape[0]
    wall, comp, comp_goal, comp_size, stack = (fs.wall, fs.comp, fs.comp_goal, fs.comp_size,
                                               fs.stack)
    for s in range(n):
        wall[s] = False
        comp[s] = -1
    for g in goal_squares:
        if occupied[g] or fs.pack_depth[g] == deepest_empty[goal_area[g]]:
            wall[g] = True
    n_comps = 0
    main = -1
    for s0 in range(n):
        if wall[s0] or comp[s0] >= 0:
            continue
        comp[s0] = n_comps
        comp_goal[n_comps] = False
        size = 0
        top = 1
        stack[0] = s0
        while top > 0:
            top -= 1
            s = stack[top]
            size += 1
            if is_goal[s]:
                comp_goal[n_comps] = True
            for d in range(4):
                t = neighbours[s, d]
                if t >= 0 and not wall[t] and comp[t] < 0:
                    comp[t] = n_comps
                    stack[top] = t
                    top += 1
        comp_size[n_comps] = size
        if main < 0 or size > comp_size[main]:
            main = n_comps
        n_comps += 1
    fed = fs.area_fed
    for g in goal_squares:
        fed[goal_area[g]] = False
    for g in goal_squares:
        for d in range(4):
            t = neighbours[g, d]
            if t >= 0 and not wall[t] and comp[t] == main:
                fed[goal_area[g]] = True
    for g in goal_squares:
        if wall[g] and not occupied[g] and not fed[goal_area[g]]:
            for d in range(4):
                t = neighbours[g, d]
                if t >= 0 and not wall[t]:
                    comp_goal[comp[t]] = True
    count = 0
    for b in boxes:
        if not is_goal[b] and comp[b] != main and not comp_goal[comp[b]]:
            count += 1
    return count


@njit(cache=True)
def player_reach(player: int, occupied: np.ndarray, neighbours: np.ndarray,
                 fs: FeatureSpace) -> int:
    """Squares the player can walk to from ``player`` (``occupied``: the boxes)."""
    stamp = fs.counters[FS_STAMP]
    seen, stack = fs.seen, fs.stack
    seen[player] = stamp
    stack[0] = player
    top = 1
    count = 0
    while top > 0:
        top -= 1
        s = stack[top]
        count += 1
        for d in range(4):
            t = neighbours[s, d]
            if t >= 0 and not occupied[t] and seen[t] != stamp:
                seen[t] = stamp
                stack[top] = t
                top += 1
    return count


@njit(cache=True)
def file_children(parent: int, first: int, end: int, node_boxes: np.ndarray,
                  node_player: np.ndarray, node_h: np.ndarray, occupied: np.ndarray,
                  neighbours: np.ndarray,
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
    out = fs.out
    mode = fs.counters[FS_MODE]
    links_on = (mode & ROOM_LINKS) != 0
    out_on = (mode & OUT_OF_PLAN) != 0
    explore_on = (mode & EXPLORER) != 0
    reach = fs.reach
    best_reach = -1
    nb = node_boxes.shape[1]
    best_pack = -1
    best_area = -1
    best_door = -1
    best_out = -1
    best_h = -1
    for c in range(first, end):
        on_goal = 0
        in_doorways = 0
        fs.counters[FS_STAMP] += 1
        stamp = fs.counters[FS_STAMP]
        for k in range(nb):
            b = node_boxes[c, k]
            occupied[b] = True
            if is_goal[b]:
                on_goal += 1
            elif links_on:
                lk = fs.link[b]
                if lk >= 0 and fs.link_seen[lk] != stamp:
                    fs.link_seen[lk] = stamp
                    in_doorways += 1
            elif fs.doorway[b]:
                in_doorways += 1
        blocked[c] = in_doorways
        if not regions_known:
            region_stamp += 1
            regions[c] = count_regions(neighbours, occupied, region_mark, region_stamp, queue)
        packed[c] = on_goal - misordered_goals(node_boxes[c], -1, -1, occupied, goal_squares,
                                               goal_area, fs.pack_depth, deepest_empty)
        out[c] = 0
        if out_on:
            out[c] = out_of_plan(node_boxes[c], occupied, neighbours, is_goal, goal_squares,
                                 goal_area, deepest_empty, fs)
        if explore_on:
            reach[c] = player_reach(node_player[c], occupied, neighbours, fs)
        for k in range(nb):
            occupied[node_boxes[c, k]] = False
        if node_h[c] == 0:
            fs.counters[FS_GOAL] = c + 1
        if parent == first:
            continue
        # The advisors, each for one push that improves on the parent: packing (packs most),
        # connectivity (fewest areas), doorways or room links (fewest blocked), out of plan
        # (fewest, when that feature is on), bound (lowest h); ties go to the lower h.
        best_pack = _advise(-packed[c], -packed[parent], c, best_pack,
                            -packed[best_pack] if best_pack >= 0 else 0, node_h)
        best_area = _advise(regions[c], regions[parent], c, best_area,
                            regions[best_area] if best_area >= 0 else 0, node_h)
        best_door = _advise(blocked[c], blocked[parent], c, best_door,
                            blocked[best_door] if best_door >= 0 else 0, node_h)
        if explore_on:
            best_reach = _advise(-reach[c], -reach[parent], c, best_reach,
                                 -reach[best_reach] if best_reach >= 0 else 0, node_h)
        if out_on:
            best_out = _advise(out[c], out[parent], c, best_out,
                               out[best_out] if best_out >= 0 else 0, node_h)
        best_h = _advise(node_h[c], node_h[parent], c, best_h,
                         node_h[best_h] if best_h >= 0 else 0, node_h)
    base = 0 if parent == first else unadvised_pushes(parent, fs)
    for c in range(first, end):
        advised = (parent == first or c == best_pack or c == best_area or c == best_door
                   or c == best_out or c == best_reach or c == best_h or c == hot_pick)
        file_node(c, base if advised else base + 1, node_h[c], fs)
    return region_stamp


def grown_feature_space(fs: FeatureSpace, capacity: int, n_nodes: int) -> FeatureSpace:
    """The feature space with per-node arrays for ``capacity`` nodes (the first ``n_nodes``
    kept)."""
    return FeatureSpace(*(tuple(grown_array(a, capacity, n_nodes) for a in fs[:N_NODE_ARRAYS])
                          + fs[N_NODE_ARRAYS:]))
