"""Sokoban solver: A* over compact states in flat numpy arrays, push- or move-optimal.

A state is the sorted box squares plus one player square: in the push metric the smallest
square the player can reach without pushing (one state per player region), in the move metric
the player's exact square. Arcs are single pushes. The search keeps every node in preallocated
arrays (boxes, player, Zobrist hash, cost, bound, parent, push) with an open-addressing
transposition table and a binary heap of (f, g, node); it runs in compiled chunks so that the
caller can enforce a deadline and grow the arrays. Pruning: dead squares, freeze deadlocks,
an infeasible matching, and PI-corrals (push metric). The bound is the minimum-cost matching
of boxes to goals over push distances that know which sides of each box the player can reach.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

import numpy as np
from numba import njit

from robocell.sokoban.board import DIR_CHARS, FROZEN_MASK, N_DIRS, NO_SQUARE, Board, floor_region
from robocell.sokoban.bounds import (
    INFEASIBLE,
    matching_lower_bound,
    matching_scratch,
    matching_update,
    reachable_sides,
)
from robocell.sokoban.corrals import (
    CORRAL_DEEP_MAX_BOXES,
    CORRAL_DEEP_NODES,
    CORRAL_MAX_BOXES,
    CORRAL_SEARCH_NODES,
    NO_CORRAL,
    corral_cache,
    corral_work,
    dead_corral,
    pi_corral,
)
from robocell.sokoban.deadlocks import (
    MAX_MASK_GOALS,
    freeze_deadlock_after_push,
    frozen_cache,
    frozen_goals_dead,
    is_frozen,
)
from robocell.sokoban.features import (
    FS_ACTIVE,
    FS_GOAL,
    FS_HEAP_EVERY,
    FS_TURN,
    N_NODE_ARRAYS,
    FeatureSpace,
    doorways,
    feature_space,
    file_node,
    next_node,
    unadvised_pushes,
)
from robocell.sokoban.packing import packing_depth
from robocell.sokoban.patterns import (
    PC_PATTERNS,
    learn_dead_corral,
    pattern_match,
    pattern_table,
)
from robocell.sokoban.rooms import (
    MACRO_SHIFT,
    NO_MACRO,
    NO_ROOM,
    GoalRooms,
    goal_rooms,
    no_rooms,
)

METRIC_PUSHES = "pushes"
METRIC_MOVES = "moves"
MOVE_SCALE = 1 << 12
"""Move metric cost of a push = walk*MOVE_SCALE + MOVE_SCALE + 1: fewest moves, then pushes."""

STATUS_RUNNING, STATUS_SOLVED, STATUS_NO_SOLUTION, STATUS_FULL = 0, 1, 2, 3
(ST_NODES, ST_HEAP, ST_EXPANDED, ST_GENERATED, ST_GOAL, ST_DEADLOCKS, ST_DUPLICATES,
 ST_CORRAL_CUTS, ST_CORRAL_TOKEN, ST_CORRAL_DEAD, ST_CORRAL_SEARCHES, ST_CORRAL_CHILD,
 ST_CORRAL_CHECKS, ST_PATTERN_CUTS, ST_FROZEN_GOALS) = range(15)
N_STATS = 15
EMPTY_SLOT = -1
NO_PUSH = -1
CHUNK_EXPANSIONS = 20_000
INITIAL_CAPACITY = 1 << 15
DEFAULT_MAX_NODES = 40_000_000
FAST_WEIGHT = 2
"""Weight of the bound in the fast (non-optimal) mode: f = g + FAST_WEIGHT*h."""
FEATURE_HEAP_EVERY = 3
"""Feature search: every this many expansions the best position by f = g + weight*h is taken
instead of the next cell's (0: cells only)."""
ROOM_GOAL_DEPTH = 1 << 20
"""Packing-feature depth of a goal-room goal (see ``feature_depth``)."""
MAX_TUNNEL_RUN = 1 << 10
TUNNEL_FLAG = 1 << 30
"""Push code of a tunnel run: TUNNEL_FLAG | run << MACRO_SHIFT | (square*4 + direction)."""
BOX_MOVE_FLAG = 1 << 29
"""Push code of a box move: BOX_MOVE_FLAG | from square << MACRO_SHIFT | (the square the box
ends on)*4 + direction of the last push."""
REGION_PENALTY = 4
"""Fast push mode: pushes added to h per extra area of free squares (boxes cutting the board
into pieces the player cannot walk between tend to block the rest of the solution)."""
GOAL_ORDER_PENALTY = 2
"""Fast mode: pushes added to h per box filling a goal before a deeper one of its room."""


@njit("int64(int64, int16[:, ::1], boolean[::1], int32[::1], int64, int32[::1], int32[::1])",
      cache=True)
def region_scan(start: int, neighbours: np.ndarray, occupied: np.ndarray, mark: np.ndarray,
                stamp: int, walk: np.ndarray, queue: np.ndarray) -> int:
    """Breadth-first walk from ``start`` over free squares: marks every reachable square with
    ``stamp``, stores walking distances in ``walk``, and returns the smallest reachable square
    (the normalised player position of the region)."""
    head = 0
    tail = 1
    queue[0] = start
    mark[start] = stamp
    walk[start] = 0
    smallest = start
    while head < tail:
        s = queue[head]
        head += 1
        if s < smallest:
            smallest = s
        for d in range(4):
            t = neighbours[s, d]
            if t >= 0 and mark[t] != stamp and not occupied[t]:
                mark[t] = stamp
                walk[t] = walk[s] + 1
                queue[tail] = t
                tail += 1
    return smallest


@njit(cache=True)
def block_scratch(n_squares: int) -> tuple:
    """Scratch of ``edge_blocks``: discovery and low numbers per square, the block of every
    (square, direction) edge, the DFS frames, the edge stack, and two running counters (time,
    block id: they only grow, so numbers left by earlier calls never match new ones)."""
    return (np.zeros(n_squares, dtype=np.int64), np.zeros(n_squares, dtype=np.int64),
            np.zeros(4 * n_squares, dtype=np.int64), np.zeros((n_squares + 1, 3), dtype=np.int64),
            np.zeros(4 * n_squares, dtype=np.int64), np.zeros(2, dtype=np.int64))


@njit(cache=True)
def edge_blocks(root: int, neighbours: np.ndarray, occupied: np.ndarray,
                scratch: tuple) -> None:
    """Label the edges of the free squares' graph around ``root`` with their biconnected
    blocks (Tarjan's low-link numbering, on an explicit stack): scratch[2][4*s + d] is the
    block of the edge from s in direction d. Two free neighbours of a square s are joined
    by a walk that avoids s exactly when their edges to s share a block, so a box on s
    leaves the player the sides whose edges share the player's block."""
    disc, low, block, frames, edges, counters = scratch
    base = counters[0]
    t = base + 1
    disc[root] = t
    low[root] = t
    top = 0
    frames[0, 0] = root
    frames[0, 1] = 0
    frames[0, 2] = -1
    n_edges = 0
    while top >= 0:
        v = frames[top, 0]
        k = frames[top, 1]
        if k < 4:
            frames[top, 1] = k + 1
            w = neighbours[v, k]
            if w < 0 or occupied[w] or (frames[top, 2] >= 0 and k == (frames[top, 2] ^ 1)):
                continue
            if disc[w] <= base:
                edges[n_edges] = v * 4 + k
                n_edges += 1
                t += 1
                disc[w] = t
                low[w] = t
                top += 1
                frames[top, 0] = w
                frames[top, 1] = 0
                frames[top, 2] = k
            elif disc[w] < disc[v]:
                edges[n_edges] = v * 4 + k
                n_edges += 1
                if disc[w] < low[v]:
                    low[v] = disc[w]
        else:
            top -= 1
            if top < 0:
                break
            u = frames[top, 0]
            if low[v] < low[u]:
                low[u] = low[v]
            if low[v] >= disc[u]:
                # u separates v's subtree: the edges stacked since u -> v form one block.
                counters[1] += 1
                last = u * 4 + frames[top + 1, 2]
                while True:
                    n_edges -= 1
                    e = edges[n_edges]
                    x = e // 4
                    d = e % 4
                    block[e] = counters[1]
                    block[neighbours[x, d] * 4 + (d ^ 1)] = counters[1]
                    if e == last:
                        break
    counters[0] = t


@njit(cache=True)
def box_reach(b: int, neighbours: np.ndarray, occupied: np.ndarray, mark: np.ndarray,
              stamp: int, dead: np.ndarray, room_of: np.ndarray, corral: int,
              corral_label: np.ndarray, seen: np.ndarray, seen_stamp: int,
              blocks: tuple, states: np.ndarray,
              out_target: np.ndarray, out_dir: np.ndarray, out_run: np.ndarray
              ) -> tuple[int, int]:
    """Every place the box on ``b`` can be pushed to with the other boxes left where they
    are (a box move): breadth-first over (box square, direction of the last push), the player
    starting in the region stamped ``stamp`` in ``mark``. Writes each reached state once, with
    its fewest pushes, to ``out_target``/``out_dir``/``out_run`` and returns (how many, the
    new ``seen`` stamp). A box is never pushed onto a dead square or into a goal room; with a
    PI-corral (``corral`` != NO_CORRAL) the first push must stay in it. After a push the
    player stands next to the box, and the sides it can walk to come from the biconnected
    blocks of the free squares (``edge_blocks``, ``blocks`` its scratch), one labelling per
    box instead of a flood fill per state."""
    seen_stamp += 1
    head = 0
    tail = 0
    for d in range(4):
        behind = neighbours[b, d ^ 1]
        target = neighbours[b, d]
        if (behind < 0 or mark[behind] != stamp or target < 0 or occupied[target]
                or dead[target] or room_of[target] != NO_ROOM):
            continue
        if corral != NO_CORRAL and corral_label[target] != corral:
            continue
        seen[target * 4 + d] = seen_stamp
        states[tail, 0] = target
        states[tail, 1] = d
        states[tail, 2] = 1
        tail += 1
    if tail == 0:
        return 0, seen_stamp
    occupied[b] = False
    edge_blocks(b, neighbours, occupied, blocks)
    block = blocks[2]
    while head < tail:
        s = states[head, 0]
        d = states[head, 1]
        run = states[head, 2]
        out_target[head] = s
        out_dir[head] = d
        out_run[head] = run
        head += 1
        # The player stands behind the box (on the square it came from).
        player_block = block[s * 4 + (d ^ 1)]
        for d2 in range(4):
            behind = neighbours[s, d2 ^ 1]
            target = neighbours[s, d2]
            if (behind < 0 or occupied[behind] or block[s * 4 + (d2 ^ 1)] != player_block
                    or target < 0 or occupied[target]
                    or dead[target] or room_of[target] != NO_ROOM
                    or seen[target * 4 + d2] == seen_stamp):
                continue
            seen[target * 4 + d2] = seen_stamp
            states[tail, 0] = target
            states[tail, 1] = d2
            states[tail, 2] = run + 1
            tail += 1
    occupied[b] = True
    return tail, seen_stamp


@njit("int64(int32[::1], uint64, int64, int16[::1], uint64[::1], int16[::1], int16[:, ::1])",
      cache=True)
def table_find(table: np.ndarray, key: np.uint64, player: int, boxes: np.ndarray,
               node_hash: np.ndarray, node_player: np.ndarray, node_boxes: np.ndarray) -> int:
    """Node holding this state, or EMPTY_SLOT - linear probing on the Zobrist key."""
    mask = table.shape[0] - 1
    slot = np.int64(key & np.uint64(mask))
    nb = boxes.shape[0]
    while True:
        node = table[slot]
        if node == EMPTY_SLOT:
            return EMPTY_SLOT
        if node_hash[node] == key and node_player[node] == player:
            same = True
            for k in range(nb):
                if node_boxes[node, k] != boxes[k]:
                    same = False
                    break
            if same:
                return node
        slot = (slot + 1) & mask


@njit(cache=True)
def pushed_box_set(boxes: np.ndarray, i: int, target: int, child: np.ndarray) -> None:
    """``child`` := the sorted box squares ``boxes`` with box ``i`` moved to ``target``
    (one insertion step keeps the set sorted, so equal sets compare equal)."""
    nb = boxes.shape[0]
    for k in range(nb):
        child[k] = boxes[k]
    child[i] = target
    j = i
    while j > 0 and child[j - 1] > child[j]:
        child[j - 1], child[j] = child[j], child[j - 1]
        j -= 1
    while j < nb - 1 and child[j + 1] < child[j]:
        child[j + 1], child[j] = child[j], child[j + 1]
        j += 1


@njit("void(int32[::1], uint64, int64)", cache=True)
def table_insert(table: np.ndarray, key: np.uint64, node: int) -> None:
    mask = table.shape[0] - 1
    slot = np.int64(key & np.uint64(mask))
    while table[slot] != EMPTY_SLOT:
        slot = (slot + 1) & mask
    table[slot] = node


@njit(cache=True)
def rebuild_table(table: np.ndarray, node_hash: np.ndarray, n_nodes: int) -> None:
    table[:] = EMPTY_SLOT
    for node in range(n_nodes):
        table_insert(table, node_hash[node], node)


@njit(cache=True)
def _heap_less(heap_f: np.ndarray, heap_g: np.ndarray, i: int, j: int) -> bool:
    return heap_f[i] < heap_f[j] or (heap_f[i] == heap_f[j] and heap_g[i] > heap_g[j])


@njit(cache=True)
def _heap_swap(heap_f: np.ndarray, heap_g: np.ndarray, heap_node: np.ndarray,
               i: int, j: int) -> None:
    heap_f[i], heap_f[j] = heap_f[j], heap_f[i]
    heap_g[i], heap_g[j] = heap_g[j], heap_g[i]
    heap_node[i], heap_node[j] = heap_node[j], heap_node[i]


@njit(cache=True)
def heap_push(heap_f: np.ndarray, heap_g: np.ndarray, heap_node: np.ndarray, size: int,
              f: int, g: int, node: int) -> int:
    """Add an entry; returns the new size. Order: smallest f, then largest g."""
    i = size
    heap_f[i] = f
    heap_g[i] = g
    heap_node[i] = node
    while i > 0:
        parent = (i - 1) >> 1
        if _heap_less(heap_f, heap_g, i, parent):
            _heap_swap(heap_f, heap_g, heap_node, i, parent)
            i = parent
        else:
            break
    return size + 1


@njit(cache=True)
def heap_pop(heap_f: np.ndarray, heap_g: np.ndarray, heap_node: np.ndarray, size: int) -> int:
    """Remove the top entry (moved to index ``size - 1``); returns the new size."""
    last = size - 1
    _heap_swap(heap_f, heap_g, heap_node, 0, last)
    i = 0
    while True:
        left = 2 * i + 1
        if left >= last:
            break
        best = left
        if left + 1 < last and _heap_less(heap_f, heap_g, left + 1, left):
            best = left + 1
        if _heap_less(heap_f, heap_g, best, i):
            _heap_swap(heap_f, heap_g, heap_node, best, i)
            i = best
        else:
            break
    return last


@njit(cache=True)
def add_root(boxes: np.ndarray, player: int, exact_player: bool, neighbours: np.ndarray,
             region_with_box: np.ndarray, push_cost: np.ndarray, zobrist_box: np.ndarray,
             zobrist_player: np.ndarray,
             node_boxes: np.ndarray, node_player: np.ndarray, node_hash: np.ndarray,
             node_g: np.ndarray, node_h: np.ndarray, node_parent: np.ndarray,
             node_push: np.ndarray, node_closed: np.ndarray, table: np.ndarray,
             heap_f: np.ndarray, heap_g: np.ndarray, heap_node: np.ndarray,
             h_scale: int, stats: np.ndarray) -> int:
    """Store the start state as node 0 and open it; returns its bound (INFEASIBLE if dead)."""
    n = neighbours.shape[0]
    occupied = np.zeros(n, dtype=np.bool_)
    for b in boxes:
        occupied[b] = True
    mark = np.zeros(n, dtype=np.int32)
    walk = np.zeros(n, dtype=np.int32)
    queue = np.zeros(n, dtype=np.int32)
    norm = region_scan(player, neighbours, occupied, mark, 1, walk, queue)
    start = player if exact_player else norm
    key = zobrist_player[start]
    for b in boxes:
        key ^= zobrist_box[b]
    masks = np.zeros(boxes.shape[0], dtype=np.int64)
    reachable_sides(boxes, start, neighbours, region_with_box, masks)
    lb = matching_lower_bound(boxes, masks, push_cost, matching_scratch(boxes.shape[0]))
    node_boxes[0, :] = boxes
    node_player[0] = start
    node_hash[0] = key
    node_g[0] = 0
    node_h[0] = lb * h_scale
    node_parent[0] = -1
    node_push[0] = NO_PUSH
    node_closed[0] = 0
    table_insert(table, key, 0)
    stats[ST_NODES] = 1
    if lb < INFEASIBLE:
        stats[ST_HEAP] = heap_push(heap_f, heap_g, heap_node, 0, lb * h_scale, 0, 0)
    return lb


@njit(cache=True)
def count_regions(neighbours: np.ndarray, occupied: np.ndarray, mark: np.ndarray, stamp: int,
                  queue: np.ndarray) -> int:
    """Connected areas of free squares (the player's possible regions); ``mark`` is scratch
    stamped with ``stamp``."""
    n = neighbours.shape[0]
    regions = 0
    for s0 in range(n):
        if occupied[s0] or mark[s0] == stamp:
            continue
        regions += 1
        mark[s0] = stamp
        queue[0] = s0
        head = 0
        tail = 1
        while head < tail:
            s = queue[head]
            head += 1
            for d in range(4):
                t = neighbours[s, d]
                if t >= 0 and not occupied[t] and mark[t] != stamp:
                    mark[t] = stamp
                    queue[tail] = t
                    tail += 1
    return regions


@njit(cache=True)
def _misordered_goals(child: np.ndarray, moved_from: int, moved_to: int, occupied: np.ndarray,
                      goal_squares: np.ndarray, goal_area: np.ndarray, goal_depth: np.ndarray,
                      deepest_empty: np.ndarray) -> int:
    """Boxes on goals that still have an empty deeper goal in their goal area (``occupied``
    shows the parent position; the push moved_from -> moved_to is applied on the fly)."""
    deepest_empty[:] = 0
    for gsq in goal_squares:
        full = occupied[gsq]
        if gsq == moved_from:
            full = False
        elif gsq == moved_to:
            full = True
        if not full and goal_depth[gsq] > deepest_empty[goal_area[gsq]]:
            deepest_empty[goal_area[gsq]] = goal_depth[gsq]
    count = 0
    for box in child:
        if goal_area[box] >= 0 and goal_depth[box] < deepest_empty[goal_area[box]]:
            count += 1
    return count


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
def _file_children(parent: int, first: int, end: int, node_boxes: np.ndarray,
                   node_h: np.ndarray, occupied: np.ndarray, neighbours: np.ndarray,
                   is_goal: np.ndarray, goal_squares: np.ndarray, goal_area: np.ndarray,
                   deepest_empty: np.ndarray, region_mark: np.ndarray,
                   region_stamp: int, queue: np.ndarray, fs: FeatureSpace,
                   regions_known: bool) -> int:
    """Feature search: compute the features of the new nodes ``first..end-1`` (children of
    ``parent``, or the start node when ``parent == first``), let the advisors pick their
    pushes, and file every node in its cell. ``occupied`` must be all False; returns the
    region stamp. A solved child is reported in the counters (FS_GOAL). With
    ``regions_known`` the areas were counted when the children were made (``fs.regions``)."""
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
        packed[c] = on_goal - _misordered_goals(node_boxes[c], -1, -1, occupied, goal_squares,
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
                   or c == best_h)
        file_node(c, base if advised else base + 1, node_h[c], fs)
    return region_stamp


@njit(cache=True)
def _store_child(node: int, child: np.ndarray, child_player: int, child_key: np.uint64,
                 child_g: int, push_code: int, neighbours: np.ndarray,
                 region_with_box: np.ndarray, push_cost: np.ndarray, masks: np.ndarray,
                 scratch: np.ndarray, node_boxes: np.ndarray, node_player: np.ndarray,
                 node_hash: np.ndarray, node_g: np.ndarray, node_h: np.ndarray,
                 node_parent: np.ndarray, node_push: np.ndarray, node_closed: np.ndarray,
                 table: np.ndarray, heap_f: np.ndarray, heap_g: np.ndarray,
                 heap_node: np.ndarray, weight: int, h_scale: int, extra_h: int,
                 n_nodes: int, heap_size: int, stats: np.ndarray) -> tuple[int, int]:
    """Look a child state up; store and open it if new, or reopen it on a cheaper path.
    Returns the new node count and heap size."""
    found = table_find(table, child_key, child_player, child, node_hash, node_player,
                       node_boxes)
    if found != EMPTY_SLOT:
        if child_g < node_g[found] and not node_closed[found]:
            node_g[found] = child_g
            node_parent[found] = node
            node_push[found] = push_code
            heap_size = heap_push(heap_f, heap_g, heap_node, heap_size,
                                  child_g + weight * node_h[found], child_g, found)
        else:
            stats[ST_DUPLICATES] += 1
        return n_nodes, heap_size
    reachable_sides(child, child_player, neighbours, region_with_box, masks)
    lb = matching_lower_bound(child, masks, push_cost, scratch)
    if lb >= INFEASIBLE:
        stats[ST_DEADLOCKS] += 1
        return n_nodes, heap_size
    # The penalties never apply to a solved position: h == 0 is the goal test.
    h = lb * h_scale + extra_h if lb > 0 else 0
    heap_size = _open_node(n_nodes, node, child, child_player, child_key, child_g, h,
                           push_code, node_boxes, node_player, node_hash, node_g, node_h,
                           node_parent, node_push, node_closed, table, heap_f, heap_g,
                           heap_node, weight, heap_size)
    return n_nodes + 1, heap_size


@njit(cache=True)
def _open_node(n_nodes: int, parent: int, child: np.ndarray, child_player: int,
               child_key: np.uint64, child_g: int, h: int, push_code: int,
               node_boxes: np.ndarray, node_player: np.ndarray, node_hash: np.ndarray,
               node_g: np.ndarray, node_h: np.ndarray, node_parent: np.ndarray,
               node_push: np.ndarray, node_closed: np.ndarray, table: np.ndarray,
               heap_f: np.ndarray, heap_g: np.ndarray, heap_node: np.ndarray, weight: int,
               heap_size: int) -> int:
    """Store a new state as node ``n_nodes`` and open it; returns the new heap size."""
    for k in range(child.shape[0]):
        node_boxes[n_nodes, k] = child[k]
    node_player[n_nodes] = child_player
    node_hash[n_nodes] = child_key
    node_g[n_nodes] = child_g
    node_h[n_nodes] = h
    node_parent[n_nodes] = parent
    node_push[n_nodes] = push_code
    node_closed[n_nodes] = 0
    table_insert(table, child_key, n_nodes)
    return heap_push(heap_f, heap_g, heap_node, heap_size, child_g + weight * h, child_g,
                     n_nodes)


@njit(cache=True)
def _push_touches_corral(target: int, origin: int, neighbours: np.ndarray,
                         occupied: np.ndarray, mark: np.ndarray, stamp: int,
                         child_mark: np.ndarray, child_stamp: int) -> bool:
    """Can the push of the box on ``origin`` to ``target`` have made or changed a corral?
    True when the box went into a corral (``target`` was outside the player's region
    ``mark == stamp``) or when a free square next to ``target`` lies outside the child's region
    (``child_mark == child_stamp``): squares cut off by the push, or a corral the box now
    fences. Otherwise the child's corrals are the parent's, minus any the push opened.
    ``occupied`` shows the parent position."""
    if mark[target] != stamp:
        return True
    for d in range(4):
        t = neighbours[target, d]
        if t >= 0 and mark[t] == stamp and t != origin and child_mark[t] != child_stamp:
            return True
    return False


@njit(cache=True)
def search_chunk(neighbours: np.ndarray, is_goal: np.ndarray, dead: np.ndarray,
                 region_with_box: np.ndarray, push_cost: np.ndarray, zobrist_box: np.ndarray,
                 zobrist_player: np.ndarray, node_boxes: np.ndarray, node_player: np.ndarray,
                 node_hash: np.ndarray, node_g: np.ndarray, node_h: np.ndarray,
                 node_parent: np.ndarray, node_push: np.ndarray, node_closed: np.ndarray,
                 table: np.ndarray, heap_f: np.ndarray, heap_g: np.ndarray,
                 heap_node: np.ndarray, exact_player: bool, use_corrals: bool, weight: int,
                 h_scale: int, goal_squares: np.ndarray, goal_area: np.ndarray,
                 goal_depth: np.ndarray, order_penalty: int, room_of: np.ndarray,
                 entrance_room: np.ndarray, entrance_slot: np.ndarray,
                 room_order: np.ndarray, room_size: np.ndarray,
                 room_outside: np.ndarray, room_final: np.ndarray, room_pushes: np.ndarray,
                 room_first: np.ndarray, tunnels: bool, region_penalty: int, budget: int,
                 cache_keys: np.ndarray, cache_dead: np.ndarray, patterns: tuple,
                 fess: bool, fs: FeatureSpace, box_moves: bool, frozen_keys: np.ndarray,
                 frozen_reach: np.ndarray, frozen_taken: np.ndarray, corral_nodes: int,
                 corral_boxes: int,
                 stats: np.ndarray) -> int:
    """Run A* (f = g + weight*h) for at most ``budget`` expansions; returns a status.

    With ``order_penalty`` > 0 (fast mode only: it makes h inadmissible) each box on a goal
    that still has an empty deeper goal in its goal area adds that penalty to h, which steers
    the search to fill goal rooms from the back.

    Goal rooms (``room_of``/``entrance_room`` not all NO_ROOM; fast mode only): no box is
    pushed into or inside a room; a box on a room's entrance goes to the room's next goal in
    the packing order as one macro arc of ``room_pushes`` pushes, when the player can reach
    the square the macro starts from. ``tunnels`` (fast push mode) makes a push into a
    one-wide tunnel one arc that carries the box to the tunnel's end (at most
    MAX_TUNNEL_RUN squares, stopping on a goal or before anything in the way).

    With corrals on, every corral of an expanded position that holds a box off goal gets a
    corral deadlock search (its boxes and barrier alone, see ``corrals``), cached in
    ``cache_keys``/``cache_dead``; a dead corral closes the position without expanding it.
    A child whose push closed a corral or went into one gets the same check for the corrals
    at the pushed box when it is generated, so most dead children never enter the table.

    With ``fess`` (the feature search, see ``features``) every new node is also filed in the
    cell of its features (``_file_children``), and the positions to expand come from the cells
    in turn, every ``heap_every``-th one (``fs.counters``) from the heap instead.

    With ``box_moves`` (fast push mode) an arc is a box move: one box pushed, by as many
    pushes as it takes, to any place it can reach with the others left where they are
    (``box_reach``); the player's side after the last push tells the places apart.

    STATUS_FULL means the node arrays need room for one more expansion (nothing is lost:
    grow them, rebuild the table, call again). Weight 1 gives optimal solutions.
    """
    n_squares = neighbours.shape[0]
    nb = node_boxes.shape[1]
    capacity = node_boxes.shape[0]
    heap_capacity = heap_f.shape[0]
    occupied = np.zeros(n_squares, dtype=np.bool_)
    fixed = np.zeros(n_squares, dtype=np.bool_)
    frames = np.zeros((n_squares + 1, 3), dtype=np.int64)
    mark = np.zeros(n_squares, dtype=np.int32)
    child_mark = np.zeros(n_squares, dtype=np.int32)
    walk = np.zeros(n_squares, dtype=np.int32)
    child_walk = np.zeros(n_squares, dtype=np.int32)
    queue = np.zeros(n_squares, dtype=np.int32)
    child = np.zeros(nb, dtype=np.int16)
    scratch = matching_scratch(nb)
    base = matching_scratch(nb)
    masks = np.zeros(nb, dtype=np.int64)
    base_masks = np.zeros(nb, dtype=np.int64)
    rows = np.zeros(nb, dtype=np.int16)
    corral_label = np.zeros(n_squares, dtype=np.int32)
    child_label = np.zeros(n_squares, dtype=np.int32)
    box_seen = np.full(n_squares, -1, dtype=np.int64)
    deepest_empty = np.zeros(goal_squares.shape[0] + 1, dtype=np.int32)
    region_mark = np.zeros(n_squares, dtype=np.int64)
    region_stamp = 0
    work = corral_work(n_squares, nb, corral_nodes, corral_boxes)
    seen = np.zeros(4 * n_squares, dtype=np.int32)
    blocks = block_scratch(n_squares)
    states = np.zeros((4 * n_squares, 3), dtype=np.int32)
    cand_target = np.zeros(4 * n_squares, dtype=np.int32)
    cand_dir = np.zeros(4 * n_squares, dtype=np.int32)
    cand_run = np.zeros(4 * n_squares, dtype=np.int32)
    wall = np.zeros(n_squares, dtype=np.bool_)
    frozen_queue = np.zeros(4 * n_squares, dtype=np.int32)
    frozen_dist = np.zeros((n_squares, 4), dtype=np.int32)
    frozen_label = np.zeros((n_squares, n_squares) if frozen_keys.shape[0] > 0 else (1, 1),
                            dtype=np.int16)
    frozen_row = np.zeros(nb, dtype=np.bool_)
    box_goals = np.zeros(nb, dtype=np.int64)
    owner = np.zeros(goal_squares.shape[0], dtype=np.int32)
    came_from = np.zeros(goal_squares.shape[0], dtype=np.int32)
    seen_stamp = 0
    max_children = 4 * nb * (n_squares if box_moves else 1) + nb + 1
    n_nodes = stats[ST_NODES]
    heap_size = stats[ST_HEAP]
    stamp = 0
    child_stamp = 0
    status = STATUS_RUNNING
    expanded = 0
    while expanded < budget:
        if n_nodes + max_children >= capacity or heap_size + max_children >= heap_capacity:
            status = STATUS_FULL
            break
        node = -1
        if fess:
            counters = fs.counters
            if counters[FS_ACTIVE] == 0:
                region_stamp = _file_children(0, 0, 1, node_boxes, node_h, occupied,
                                              neighbours, is_goal, goal_squares, goal_area,
                                              deepest_empty, region_mark,
                                              region_stamp, queue, fs, False)
            every = counters[FS_HEAP_EVERY]
            counters[FS_TURN] += 1
            if every == 0 or counters[FS_TURN] % every != 0 or heap_size == 0:
                node = next_node(fs)
                if node < 0 and (every == 0 or heap_size == 0):
                    status = STATUS_NO_SOLUTION
                    break
        if node >= 0:
            g = node_g[node]
            if node_closed[node]:
                continue
        else:
            if heap_size == 0:
                status = STATUS_NO_SOLUTION
                break
            heap_size = heap_pop(heap_f, heap_g, heap_node, heap_size)
            node = heap_node[heap_size]
            g = heap_g[heap_size]
            if node_closed[node] or g != node_g[node]:
                continue
        if node_h[node] == 0:
            stats[ST_GOAL] = node
            status = STATUS_SOLVED
            break
        node_closed[node] = 1
        expanded += 1
        first_child = n_nodes
        boxes = node_boxes[node]
        key = node_hash[node]
        player = node_player[node]
        for k in range(nb):
            occupied[boxes[k]] = True
        stamp += 1
        region_scan(player, neighbours, occupied, mark, stamp, walk, queue)
        corral = NO_CORRAL
        if use_corrals:
            corral = pi_corral(neighbours, occupied, mark, stamp, is_goal, corral_label,
                               box_seen, stats[ST_CORRAL_TOKEN], queue)
            stats[ST_CORRAL_TOKEN] += n_squares
            if corral != NO_CORRAL:
                stats[ST_CORRAL_CUTS] += 1
            is_dead, searches, learned = dead_corral(
                player, neighbours, occupied, mark, stamp, corral_label, dead, is_goal,
                zobrist_box, zobrist_player, cache_keys, cache_dead, work, queue, fixed,
                frames)
            stats[ST_CORRAL_SEARCHES] += searches
            if learned > 0:
                learn_dead_corral(patterns, work, learned, player, neighbours, queue)
            if is_dead:
                stats[ST_CORRAL_DEAD] += 1
                for k in range(nb):
                    occupied[boxes[k]] = False
                continue
        # The parent's matching, which each child's bound updates (rows in the parent's order).
        reachable_sides(boxes, player, neighbours, region_with_box, base_masks)
        for k in range(nb):
            if is_goal[boxes[k]] and is_frozen(boxes[k], neighbours, occupied, dead, fixed,
                                               frames):
                base_masks[k] = FROZEN_MASK
        matching_lower_bound(boxes, base_masks, push_cost, base)
        for i in range(nb):
            b = boxes[i]
            if room_of[b] != NO_ROOM:
                continue
            r = entrance_room[b]
            if r != NO_ROOM:
                e = entrance_slot[b]
                k = 0
                for j in range(room_size[r]):
                    if occupied[room_order[r, j]]:
                        k += 1
                if (k < room_size[r] and room_pushes[e, k] != NO_MACRO
                        and mark[room_outside[e, k]] == stamp):
                    goal_sq = room_order[r, k]
                    occupied[b] = False
                    occupied[goal_sq] = True
                    child_stamp += 1
                    child_player = region_scan(room_final[e, k], neighbours, occupied,
                                               child_mark, child_stamp, child_walk, queue)
                    extra_h = 0
                    if region_penalty > 0 or fess:
                        region_stamp += 1
                        n_regions = count_regions(neighbours, occupied, region_mark,
                                                  region_stamp, queue)
                        extra_h = region_penalty * (n_regions - 1)
                        if fess:
                            # The connectivity feature of the node about to be stored.
                            fs.regions[n_nodes] = n_regions
                    occupied[goal_sq] = False
                    occupied[b] = True
                    stats[ST_GENERATED] += 1
                    pushed_box_set(boxes, i, goal_sq, child)
                    child_key = (key ^ zobrist_box[b] ^ zobrist_box[goal_sq]
                                 ^ zobrist_player[player] ^ zobrist_player[child_player])
                    n_nodes, heap_size = _store_child(
                        node, child, child_player, child_key, g + room_pushes[e, k],
                        (room_first[e] + k + 1) << MACRO_SHIFT, neighbours, region_with_box,
                        push_cost, masks, scratch, node_boxes, node_player, node_hash, node_g,
                        node_h, node_parent, node_push, node_closed, table, heap_f, heap_g,
                        heap_node, weight, h_scale, extra_h, n_nodes, heap_size, stats)
            if box_moves:
                n_cand, seen_stamp = box_reach(
                    b, neighbours, occupied, mark, stamp, dead, room_of, corral, corral_label,
                    seen, seen_stamp, blocks, states, cand_target, cand_dir, cand_run)
            else:
                n_cand = N_DIRS
                for d in range(N_DIRS):
                    cand_dir[d] = d
                    cand_run[d] = 0
            for c in range(n_cand):
                d = cand_dir[c]
                behind = neighbours[b, d ^ 1]
                if cand_run[c] > 0:
                    # A box move: cand_run[c] pushes, the last one in direction d.
                    target = cand_target[c]
                    pusher = neighbours[target, d ^ 1]
                    run = cand_run[c]
                    if run == 1:
                        code = b * N_DIRS + d
                    else:
                        code = BOX_MOVE_FLAG | (b << MACRO_SHIFT) | (target * N_DIRS + d)
                else:
                    if behind < 0 or mark[behind] != stamp:
                        continue
                    target = neighbours[b, d]
                    if (target < 0 or occupied[target] or dead[target]
                            or room_of[target] != NO_ROOM):
                        continue
                    if corral != NO_CORRAL and corral_label[target] != corral:
                        continue
                    pusher = b
                    run = 1
                    code = -1
                if code < 0 and tunnels:
                    # A box pushed along a one-wide tunnel (walls on both sides of the box
                    # and of the player) keeps going while the square ahead is free.
                    side = 2 if d < 2 else 0
                    while (not is_goal[target] and neighbours[target, side] < 0
                           and neighbours[target, side + 1] < 0 and neighbours[pusher, side] < 0
                           and neighbours[pusher, side + 1] < 0):
                        ahead = neighbours[target, d]
                        if (ahead < 0 or occupied[ahead] or dead[ahead]
                                or room_of[ahead] != NO_ROOM or run >= MAX_TUNNEL_RUN):
                            break
                        pusher = target
                        target = ahead
                        run += 1
                stats[ST_GENERATED] += 1
                occupied[b] = False
                occupied[target] = True
                if freeze_deadlock_after_push(target, neighbours, occupied, dead, is_goal,
                                              fixed, frames):
                    occupied[target] = False
                    occupied[b] = True
                    stats[ST_DEADLOCKS] += 1
                    continue
                if exact_player:
                    child_player = b
                    cost = (walk[behind] + 1) * MOVE_SCALE + 1
                else:
                    child_stamp += 1
                    child_player = region_scan(pusher, neighbours, occupied, child_mark,
                                               child_stamp, child_walk, queue)
                    cost = run
                occupied[target] = False
                occupied[b] = True
                pushed_box_set(boxes, i, target, child)
                child_key = (key ^ zobrist_box[b] ^ zobrist_box[target]
                             ^ zobrist_player[player] ^ zobrist_player[child_player])
                child_g = g + cost
                if code < 0:
                    code = b * N_DIRS + d
                    if run > 1:
                        code |= TUNNEL_FLAG | (run << MACRO_SHIFT)
                found = table_find(table, child_key, child_player, child, node_hash,
                                   node_player, node_boxes)
                if found != EMPTY_SLOT:
                    if child_g < node_g[found] and not node_closed[found]:
                        node_g[found] = child_g
                        node_parent[found] = node
                        node_push[found] = code
                        heap_size = heap_push(heap_f, heap_g, heap_node, heap_size,
                                              child_g + weight * node_h[found], child_g, found)
                    else:
                        stats[ST_DUPLICATES] += 1
                    continue
                if use_corrals and pattern_match(patterns, target, b, occupied, child_player):
                    stats[ST_PATTERN_CUTS] += 1
                    continue
                if use_corrals and _push_touches_corral(target, b, neighbours, occupied, mark,
                                                        stamp, child_mark, child_stamp):
                    # The push closed a corral or changed one: if some corral of the child is
                    # dead, the child never enters the table or the open list.
                    occupied[b] = False
                    occupied[target] = True
                    pi_corral(neighbours, occupied, child_mark, child_stamp, is_goal,
                              child_label, box_seen, stats[ST_CORRAL_TOKEN], queue)
                    stats[ST_CORRAL_TOKEN] += n_squares
                    stats[ST_CORRAL_CHECKS] += 1
                    child_dead, searches, learned = dead_corral(
                        child_player, neighbours, occupied, child_mark, child_stamp,
                        child_label, dead, is_goal, zobrist_box, zobrist_player, cache_keys,
                        cache_dead, work, queue, fixed, frames, target)
                    occupied[target] = False
                    occupied[b] = True
                    stats[ST_CORRAL_SEARCHES] += searches
                    if learned > 0:
                        learn_dead_corral(patterns, work, learned, child_player, neighbours,
                                          queue)
                    if child_dead:
                        stats[ST_CORRAL_CHILD] += 1
                        continue
                for k in range(nb):
                    rows[k] = boxes[k]
                rows[i] = target
                reachable_sides(rows, child_player, neighbours, region_with_box, masks)
                # A box frozen on a goal keeps that goal: the others must match the rest.
                occupied[b] = False
                occupied[target] = True
                frozen_key = np.uint64(0)
                for k in range(nb):
                    frozen_row[k] = False
                    if is_goal[rows[k]] and is_frozen(rows[k], neighbours, occupied, dead,
                                                      fixed, frames):
                        masks[k] = FROZEN_MASK
                        frozen_row[k] = True
                        frozen_key ^= zobrist_box[rows[k]]
                occupied[target] = False
                occupied[b] = True
                if (frozen_key != 0 and frozen_keys.shape[0] > 0
                        and frozen_goals_dead(rows, frozen_row, frozen_key, neighbours,
                                              goal_squares, frozen_keys, frozen_reach,
                                              frozen_taken, wall, frozen_queue, frozen_label,
                                              frozen_dist, box_goals, owner, came_from)):
                    stats[ST_FROZEN_GOALS] += 1
                    continue
                lb = matching_update(rows, masks, base_masks, i, push_cost, base, scratch)
                if lb >= INFEASIBLE:
                    stats[ST_DEADLOCKS] += 1
                    continue
                h = lb * h_scale
                # No penalty on a solved position (all boxes on goals): h == 0 is the goal
                # test, and a free area cut off by the last box must not hide the solution.
                if order_penalty > 0 and lb > 0:
                    h += order_penalty * _misordered_goals(child, b, target, occupied,
                                                           goal_squares, goal_area, goal_depth,
                                                           deepest_empty)
                if (region_penalty > 0 and lb > 0) or fess:
                    occupied[b] = False
                    occupied[target] = True
                    region_stamp += 1
                    n_regions = count_regions(neighbours, occupied, region_mark, region_stamp,
                                              queue)
                    occupied[target] = False
                    occupied[b] = True
                    if region_penalty > 0 and lb > 0:
                        h += region_penalty * (n_regions - 1)
                    if fess:
                        fs.regions[n_nodes] = n_regions
                heap_size = _open_node(n_nodes, node, child, child_player, child_key,
                                       child_g, h, code, node_boxes, node_player, node_hash,
                                       node_g, node_h, node_parent, node_push, node_closed,
                                       table, heap_f, heap_g, heap_node, weight, heap_size)
                n_nodes += 1
        for k in range(nb):
            occupied[boxes[k]] = False
        if fess:
            # Children go to the cells of their features (and stay on the heap only when
            # the heap takes turns with the cells).
            if fs.counters[FS_HEAP_EVERY] == 0:
                heap_size = 0
            region_stamp = _file_children(node, first_child, n_nodes, node_boxes, node_h,
                                          occupied, neighbours, is_goal, goal_squares,
                                          goal_area, deepest_empty, region_mark,
                                          region_stamp, queue, fs, True)
            if fs.counters[FS_GOAL] > 0:
                stats[ST_GOAL] = fs.counters[FS_GOAL] - 1
                status = STATUS_SOLVED
                break
    stats[ST_NODES] = n_nodes
    stats[ST_HEAP] = heap_size
    stats[ST_EXPANDED] += expanded
    return status


def feature_depth(board: Board, rooms: GoalRooms) -> np.ndarray:
    """The goal order of the feature search's packing feature: a box on a goal is packed
    unless a deeper goal of its goal area (from the area's entrance) is empty; goals of a
    goal room are filled by macros in the room's own order, so a box there is always packed
    (its goals are given a depth nothing outside the room reaches)."""
    depth = board.goal_depth.copy()
    depth[(rooms.room_of != NO_ROOM) & board.is_goal] = ROOM_GOAL_DEPTH
    return depth


@dataclass
class SolveResult:
    """Outcome of one solve: status, LURD solution and search statistics."""

    status: str              # "solved", "no solution", "timeout", "memory", "exhausted"
    metric: str
    lurd: str = ""
    pushes: int = 0
    moves: int = 0
    optimal: bool = False    # solution proven optimal in the metric (or unsolvability proven)
    expanded: int = 0
    generated: int = 0
    stored: int = 0
    deadlocks: int = 0
    seconds: float = 0.0
    lower_bound: int = 0
    corral_cuts: int = 0
    corral_deadlocks: int = 0  # positions closed by a corral deadlock search
    corral_searches: int = 0
    corral_child_deadlocks: int = 0  # children dropped by a corral deadlock search
    corral_child_checks: int = 0     # children whose corrals were checked when generated
    pattern_cuts: int = 0            # children dropped by a learned deadlock pattern
    frozen_goal_cuts: int = 0        # children whose frozen goals leave goals unfillable
    patterns: int = 0                # deadlock patterns learned
    cells: int = 0                   # feature search: cells that held a position
    most_packed: int = 0             # feature search: most boxes packed in one position

    @property
    def solved(self) -> bool:
        return self.status == "solved"


class _Arena:
    """The growable arrays of one search."""

    def __init__(self, n_boxes: int, capacity: int,
                 board_features: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.capacity = capacity
        # The feature space's per-node arrays are as long as the node arrays when in use.
        features = board_features is not None
        self.fs = feature_space(n_boxes, capacity if features else 1, board_features)
        self.features = features
        self.boxes = np.zeros((capacity, n_boxes), dtype=np.int16)
        self.player = np.zeros(capacity, dtype=np.int16)
        self.hash = np.zeros(capacity, dtype=np.uint64)
        self.g = np.zeros(capacity, dtype=np.int64)
        self.h = np.zeros(capacity, dtype=np.int64)
        self.parent = np.zeros(capacity, dtype=np.int32)
        self.push = np.zeros(capacity, dtype=np.int32)
        self.closed = np.zeros(capacity, dtype=np.uint8)
        self.table = np.full(4 * capacity, EMPTY_SLOT, dtype=np.int32)
        self.heap_f = np.zeros(2 * capacity, dtype=np.int64)
        self.heap_g = np.zeros(2 * capacity, dtype=np.int64)
        self.heap_node = np.zeros(2 * capacity, dtype=np.int32)

    def grow(self, n_nodes: int, heap_size: int) -> None:
        new = self.capacity * 2

        def bigger(a: np.ndarray, size: int, used: int) -> np.ndarray:
            out = np.zeros((size,) + a.shape[1:], dtype=a.dtype)
            out[:used] = a[:used]
            return out

        self.boxes = bigger(self.boxes, new, n_nodes)
        for name in ("player", "hash", "g", "h", "parent", "push", "closed"):
            setattr(self, name, bigger(getattr(self, name), new, n_nodes))
        for name in ("heap_f", "heap_g", "heap_node"):
            setattr(self, name, bigger(getattr(self, name), 2 * new, heap_size))
        if self.features:
            self.fs = FeatureSpace(*(tuple(bigger(a, new, n_nodes)
                                           for a in self.fs[:N_NODE_ARRAYS])
                                     + self.fs[N_NODE_ARRAYS:]))
        self.table = np.full(4 * new, EMPTY_SLOT, dtype=np.int32)
        rebuild_table(self.table, self.hash, n_nodes)
        self.capacity = new

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.boxes, self.player, self.hash, self.g, self.h,
                                      self.parent, self.push, self.closed, self.table,
                                      self.heap_f, self.heap_g, self.heap_node)
                   + self.fs)


def solve(board: Board, metric: str = METRIC_PUSHES, timeout: float | None = None,
          weight: int = 1, max_nodes: int = DEFAULT_MAX_NODES,
          corrals: bool = True, macros: bool | None = None,
          patterns: tuple | None = None, packing: bool = False,
          features: bool = False, heap_every: int = FEATURE_HEAP_EVERY,
          box_moves: bool = False, frozen_goals: bool = True,
          deep_corrals: bool = False) -> SolveResult:
    """Solve a level. ``weight`` 1 is optimal A*; a larger weight is the fast mode
    (weighted A*, f = g + weight*h: quicker, solutions not proven optimal). ``macros``
    (default: on in the fast push mode) fills goal rooms by macro arcs (see ``rooms``);
    it gives up optimality, so it is refused with weight 1. ``patterns`` is the deadlock
    pattern table (``patterns.pattern_table``) to learn into and match from; default: a new
    empty one. ``packing`` (fast modes only) takes the goal order of the misordered-goal
    penalty from the packing order (``packing.packing_depth``) instead of each goal's depth in
    its goal area, and applies that penalty on levels with goal rooms too. ``features``
    (fast push mode only) adds the feature space (``features``): cells of positions with the
    same packing, connectivity and blocked doorways, visited in turn, taking turns with the
    weighted A* heap: every ``heap_every``-th expansion comes from the heap (0: none).
    ``box_moves`` (fast push mode only) makes every arc a box move: one box pushed to any
    place it can reach (``box_reach``), which takes far fewer expansions on big levels.
    ``frozen_goals`` (default on) drops positions whose boxes frozen on goals leave the other
    goals unfillable (``deadlocks.frozen_goals_dead``). ``deep_corrals`` raises the corral
    deadlock search's limits (CORRAL_DEEP_NODES states, CORRAL_DEEP_MAX_BOXES boxes)."""
    if metric not in (METRIC_PUSHES, METRIC_MOVES):
        raise ValueError(f"metric must be {METRIC_PUSHES!r} or {METRIC_MOVES!r}, not {metric!r}")
    started = time.monotonic()
    exact = metric == METRIC_MOVES
    h_scale = MOVE_SCALE + 1 if exact else 1
    if macros is None:
        macros = weight > 1 and not exact
    if macros and (weight == 1 or exact):
        raise ValueError("goal-room macros need the fast push mode (weight > 1, pushes)")
    rooms = goal_rooms(board) if macros else no_rooms(board.n_squares)
    if features and (weight == 1 or exact):
        raise ValueError("the feature search is a fast push mode (weight > 1, pushes)")
    if box_moves and (weight == 1 or exact):
        raise ValueError("box moves are a fast push mode (weight > 1, pushes)")
    if packing and weight == 1:
        raise ValueError("the packing-order penalty needs a fast mode (weight > 1)")
    goal_depth = packing_depth(board) if packing else board.goal_depth
    order_penalty = (GOAL_ORDER_PENALTY * h_scale
                     if weight > 1 and (rooms.n_rooms == 0 or packing) else 0)
    region_penalty = REGION_PENALTY if macros else 0
    arena = _Arena(board.n_boxes, INITIAL_CAPACITY,
                   (doorways(board.neighbours), feature_depth(board, rooms)) if features
                   else None)
    if heap_every < 0:
        raise ValueError(f"heap_every must be 0 (cells only) or more, not {heap_every}")
    arena.fs.counters[FS_HEAP_EVERY] = heap_every
    stats = np.zeros(N_STATS, dtype=np.int64)
    cache_keys, cache_dead = corral_cache()
    corral_nodes, corral_boxes = ((CORRAL_DEEP_NODES, CORRAL_DEEP_MAX_BOXES) if deep_corrals
                                  else (CORRAL_SEARCH_NODES, CORRAL_MAX_BOXES))
    if frozen_goals and board.goal_squares.shape[0] <= MAX_MASK_GOALS:
        frozen_keys, frozen_reach, frozen_taken = frozen_cache(board.n_squares)
    else:
        frozen_keys, frozen_reach, frozen_taken = (
            np.zeros(0, dtype=np.uint64), np.zeros((0, 1), np.int64), np.zeros(0, np.int64))
    if patterns is None:
        patterns = pattern_table(board.n_squares)
    lb = add_root(board.start_boxes, board.start_player, exact, board.neighbours,
                  board.region_with_box, board.push_cost, board.zobrist_box,
                  board.zobrist_player, arena.boxes, arena.player, arena.hash, arena.g,
                  arena.h, arena.parent, arena.push,
                  arena.closed, arena.table, arena.heap_f, arena.heap_g, arena.heap_node,
                  h_scale, stats)
    result = SolveResult(status="running", metric=metric, lower_bound=int(min(lb, INFEASIBLE)))
    status = STATUS_NO_SOLUTION if lb >= INFEASIBLE else STATUS_RUNNING
    timed_out = False
    # A box move expansion stores tens of children: smaller chunks keep to the deadline.
    chunk = CHUNK_EXPANSIONS // 10 if box_moves else CHUNK_EXPANSIONS
    while status == STATUS_RUNNING or status == STATUS_FULL:
        if timeout is not None and time.monotonic() - started > timeout:
            timed_out = True
            break
        if status == STATUS_FULL:
            if arena.capacity * 2 > max_nodes:
                break
            arena.grow(int(stats[ST_NODES]), int(stats[ST_HEAP]))
        status = search_chunk(board.neighbours, board.is_goal, board.dead,
                              board.region_with_box, board.push_cost,
                              board.zobrist_box, board.zobrist_player, arena.boxes,
                              arena.player, arena.hash, arena.g, arena.h, arena.parent,
                              arena.push, arena.closed, arena.table, arena.heap_f,
                              arena.heap_g, arena.heap_node, exact, corrals and not exact,
                              weight, h_scale, board.goal_squares, board.goal_area,
                              goal_depth, order_penalty, rooms.room_of,
                              rooms.entrance_room, rooms.entrance_slot, rooms.order,
                              rooms.size, rooms.outside,
                              rooms.final_player, rooms.n_pushes, rooms.first, macros,
                              region_penalty, chunk, cache_keys, cache_dead,
                              patterns, features, arena.fs, box_moves, frozen_keys,
                              frozen_reach, frozen_taken, corral_nodes, corral_boxes,
                              stats)
    result.seconds = time.monotonic() - started
    result.expanded = int(stats[ST_EXPANDED])
    result.generated = int(stats[ST_GENERATED])
    result.stored = int(stats[ST_NODES])
    result.deadlocks = int(stats[ST_DEADLOCKS])
    result.corral_cuts = int(stats[ST_CORRAL_CUTS])
    result.corral_deadlocks = int(stats[ST_CORRAL_DEAD])
    result.corral_searches = int(stats[ST_CORRAL_SEARCHES])
    result.corral_child_deadlocks = int(stats[ST_CORRAL_CHILD])
    result.corral_child_checks = int(stats[ST_CORRAL_CHECKS])
    result.pattern_cuts = int(stats[ST_PATTERN_CUTS])
    result.frozen_goal_cuts = int(stats[ST_FROZEN_GOALS])
    result.patterns = int(patterns[-1][PC_PATTERNS])
    if features:
        result.cells = int(arena.fs.counters[FS_ACTIVE])
        result.most_packed = int(arena.fs.packed[:int(stats[ST_NODES])].max())
    if status == STATUS_SOLVED:
        pushes = []
        node = int(stats[ST_GOAL])
        while arena.parent[node] >= 0 and node != 0:
            pushes.append(int(arena.push[node]))
            node = int(arena.parent[node])
        pushes.reverse()
        pushes = expand_box_moves(board, expand_macros(pushes, rooms, board.neighbours))
        result.lurd = pushes_to_lurd(board, pushes)
        result.pushes = sum(1 for ch in result.lurd if ch.isupper())
        result.moves = len(result.lurd)
        result.status = "solved"
        result.optimal = weight == 1
    elif status == STATUS_NO_SOLUTION and macros:
        # Macros and the room rule cut arcs: an exhausted search proves nothing.
        result.status = "exhausted"
    elif status == STATUS_NO_SOLUTION:
        result.status = "no solution"
        result.optimal = True
    elif timed_out:
        result.status = "timeout"
    else:
        result.status = "memory"
    return result


def walk_path(board: Board, start: int, goal: int, occupied: set[int]) -> str:
    """Shortest walk (lower-case LURD) from ``start`` to ``goal`` around ``occupied``."""
    if start == goal:
        return ""
    came: dict[int, tuple[int, int]] = {start: (-1, -1)}
    queue = deque([start])
    while queue:
        s = queue.popleft()
        for d in range(N_DIRS):
            t = int(board.neighbours[s, d])
            if t == NO_SQUARE or t in came or t in occupied:
                continue
            came[t] = (s, d)
            if t == goal:
                path = []
                while t != start:
                    t, d2 = came[t]
                    path.append(DIR_CHARS[d2])
                return "".join(reversed(path))
            queue.append(t)
    raise ValueError(f"no walk from {board.name(start)} to {board.name(goal)}")


def expand_macros(pushes: list[int], rooms: GoalRooms, neighbours: np.ndarray) -> list[int]:
    """Push codes with every tunnel run and goal-room macro arc replaced by its pushes."""
    out = []
    for code in pushes:
        if code & BOX_MOVE_FLAG:
            out.append(code)  # expanded by expand_box_moves, which follows the boxes
        elif code & TUNNEL_FLAG:
            run = (code & ~TUNNEL_FLAG) >> MACRO_SHIFT
            box, d = divmod(code & ((1 << MACRO_SHIFT) - 1), N_DIRS)
            for _ in range(run):
                out.append(box * N_DIRS + d)
                box = int(neighbours[box, d])
        elif code >> MACRO_SHIFT:
            out.extend(rooms.macros[(code >> MACRO_SHIFT) - 1])
        else:
            out.append(code)
    return out


def expand_box_moves(board: Board, pushes: list[int]) -> list[int]:
    """Push codes with every box move (BOX_MOVE_FLAG) replaced by a fewest-push sequence
    that carries its box to the same square with the player on the same side."""
    boxes = set(int(b) for b in board.start_boxes)
    player = int(board.start_player)
    out: list[int] = []
    nbr = board.neighbours
    for code in pushes:
        if code & BOX_MOVE_FLAG:
            start = (code & ~BOX_MOVE_FLAG) >> MACRO_SHIFT
            boxes.remove(start)
            path = _box_path(board, boxes, player, start,
                             divmod(code & ((1 << MACRO_SHIFT) - 1), N_DIRS))
            out.extend(path)
            box, d = divmod(path[-1], N_DIRS)
            boxes.add(int(nbr[box, d]))
        else:
            box, d = divmod(code, N_DIRS)
            out.append(code)
            boxes.remove(box)
            boxes.add(int(nbr[box, d]))
        player = box
    return out


def _box_path(board: Board, others: set[int], player: int, start: int,
              goal: tuple[int, int]) -> list[int]:
    """Fewest pushes carrying the box on ``start`` to ``goal`` = (square, last direction)."""
    nbr = board.neighbours
    came: dict[tuple[int, int], tuple[int, int] | None] = {}
    frontier: deque[tuple[int, int]] = deque()
    box, at, prev = start, player, None
    while True:
        reach = floor_region(board, at, others | {box})
        for d in range(N_DIRS):
            behind, target = int(nbr[box, d ^ 1]), int(nbr[box, d])
            if (behind in reach and target != NO_SQUARE and target not in others
                    and (target, d) not in came):
                came[(target, d)] = prev
                frontier.append((target, d))
        if goal in came:
            break
        if not frontier:
            raise ValueError(f"box move from {board.name(start)} cannot be replayed")
        prev = frontier.popleft()
        box, at = prev[0], int(nbr[prev[0], prev[1] ^ 1])
    path = []
    state: tuple[int, int] | None = goal
    while state is not None:
        path.append(int(nbr[state[0], state[1] ^ 1]) * N_DIRS + state[1])
        state = came[state]
    return path[::-1]


def pushes_to_lurd(board: Board, pushes: list[int]) -> str:
    """LURD string of a push sequence (each push coded box_square*4 + direction), with the
    shortest walk to the square behind each box."""
    boxes = set(int(b) for b in board.start_boxes)
    player = board.start_player
    out = []
    for code in pushes:
        box, d = divmod(code, N_DIRS)
        behind = int(board.neighbours[box, d ^ 1])
        out.append(walk_path(board, player, behind, boxes))
        out.append(DIR_CHARS[d].upper())
        boxes.remove(box)
        boxes.add(int(board.neighbours[box, d]))
        player = box
    return "".join(out)
