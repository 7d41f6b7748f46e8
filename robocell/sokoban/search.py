"""The compiled A* search over compact Sokoban states, run in chunks of expansions.

A state is the sorted box squares plus one player square: in the push metric the smallest
square the player can reach without pushing (one state per player region), in the move metric
the player's exact square. Arcs are single pushes (or, in the fast modes, tunnel runs,
goal-room macros and box moves). Every node lives in the preallocated arrays of ``nodes``;
a chunk expands at most a budget of nodes so that the caller can enforce a deadline and grow
the arrays. Pruning: dead squares, freeze deadlocks, an infeasible matching, PI-corrals and
corral deadlock searches with learned patterns (push metric), frozen goals. The bound is the
minimum-cost matching of boxes to goals over push distances that know which sides of each
box the player can reach, updated per child from the expanded position's matching.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.sokoban.arcs import push_arc, push_candidates, push_child, room_macro
from robocell.sokoban.board import FROZEN_MASK, region_scan
from robocell.sokoban.bounds import (
    INFEASIBLE,
    matching_lower_bound,
    matching_scratch,
    reachable_sides,
)
from robocell.sokoban.corrals import (
    NO_CORRAL,
    dead_corral,
    pi_corral,
)
from robocell.sokoban.deadlocks import is_frozen
from robocell.sokoban.features import (
    FS_ACTIVE,
    FS_GOAL,
    FS_HEAP_EVERY,
    FS_TURN,
    FeatureSpace,
    file_children,
    next_node,
)
from robocell.sokoban.hotspots import hotspot_advice
from robocell.sokoban.nodes import (
    NO_PUSH,
    Nodes,
    heap_pop,
    heap_push,
    table_insert,
)
from robocell.sokoban.patterns import learn_dead_corral
from robocell.sokoban.rooms import NO_ROOM
from robocell.sokoban.search_state import (
    ST_CORRAL_CUTS,
    ST_CORRAL_DEAD,
    ST_CORRAL_SEARCHES,
    ST_CORRAL_TOKEN,
    ST_EXPANDED,
    ST_GOAL,
    ST_HEAP,
    ST_NODES,
    STATUS_FULL,
    STATUS_NO_SOLUTION,
    STATUS_RUNNING,
    STATUS_SOLVED,
    Pruning,
    SearchBoard,
    SearchRooms,
    Settings,
)
from robocell.sokoban.search_work import SearchWork, search_work

NONE_LEFT = -2
"""`next_expansion`: no open position is left."""


@njit(cache=True)
def add_root(board: SearchBoard, boxes: np.ndarray, player: int, exact_player: bool,
             h_scale: int, nodes: Nodes, stats: np.ndarray) -> int:
    """Store the start state as node 0 and open it; returns its bound (INFEASIBLE if dead)."""
    neighbours = board.neighbours
    n = neighbours.shape[0]
    occupied = np.zeros(n, dtype=np.bool_)
    for b in boxes:
        occupied[b] = True
    norm = region_scan(player, neighbours, occupied, np.zeros(n, dtype=np.int32), 1, None,
                       np.zeros(n, dtype=np.int32))
    start = player if exact_player else norm
    key = board.zobrist_player[start]
    for b in boxes:
        key ^= board.zobrist_box[b]
    masks = np.zeros(boxes.shape[0], dtype=np.int64)
    reachable_sides(boxes, start, neighbours, board.region_with_box, masks)
    lb = matching_lower_bound(boxes, masks, board.push_cost, matching_scratch(boxes.shape[0]))
    nodes.boxes[0, :] = boxes
    nodes.player[0] = start
    nodes.hash[0] = key
    nodes.g[0] = 0
    nodes.h[0] = lb * h_scale
    nodes.parent[0] = -1
    nodes.push[0] = NO_PUSH
    nodes.closed[0] = 0
    table_insert(nodes.table, key, 0)
    stats[ST_NODES] = 1
    if lb < INFEASIBLE:
        stats[ST_HEAP] = heap_push(nodes.heap_f, nodes.heap_g, nodes.heap_node, 0,
                                   lb * h_scale, 0, 0)
    return lb


@njit(cache=True)
def search_chunk(board: SearchBoard, rooms: SearchRooms, settings: Settings, pruning: Pruning,
                 nodes: Nodes, fs: FeatureSpace, budget: int, stats: np.ndarray) -> int:
    """Run A* (f = g + weight*h) for at most ``budget`` expansions; returns a status.

    With ``order_penalty`` > 0 (fast mode only: it makes h inadmissible) each box on a goal
    that still has an empty deeper goal in its goal area adds that penalty to h, which steers
    the search to fill goal rooms from the back.

    Goal rooms (``rooms`` not all NO_ROOM; fast mode only): no box is pushed into or inside a
    room; a box on a room's entrance goes to the room's next goal in the packing order as one
    macro arc of ``rooms.n_pushes`` pushes, when the player can reach the square the macro
    starts from. ``tunnels`` (fast push mode) makes a push into a one-wide tunnel one arc that
    carries the box to the tunnel's end (at most MAX_TUNNEL_RUN squares, stopping on a goal or
    before anything in the way).

    With corrals on, every corral of an expanded position that holds a box off goal gets a
    corral deadlock search (its boxes and barrier alone, see ``corrals``), cached in
    ``pruning.corral_keys``/``corral_dead``; a dead corral closes the position without
    expanding it. A child whose push closed a corral or went into one gets the same check for
    the corrals at the pushed box when it is generated, so most dead children never enter the
    table.

    With ``features`` (the feature search, see ``features``) every new node is also filed in
    the cell of its features (``features.file_children``), and the positions to expand come
    from the cells in turn, every ``heap_every``-th one (``fs.counters``) from the heap instead.

    With ``box_moves`` (fast push mode) an arc is a box move: one box pushed, by as many
    pushes as it takes, to any place it can reach with the others left where they are
    (``box_moves.box_reach``); the player's side after the last push tells the places apart.

    STATUS_FULL means the node arrays need room for one more expansion (nothing is lost:
    grow them, rebuild the table, call again). Weight 1 gives optimal solutions.

    The chunk's scratch is allocated here; the loop (`expand_chunk`) allocates nothing.
    """
    work = search_work(board.neighbours.shape[0], nodes.boxes.shape[1],
                       board.goal_squares.shape[0], settings.corral_nodes,
                       settings.corral_boxes, pruning.frozen_keys.shape[0] > 0)
    return expand_chunk(board, rooms, settings, pruning, nodes, fs, work, budget, stats)


# Compiled without numba's reference counting (``_nrt=False``): it creates no arrays, and each
# helper inlined into it reads the arrays of the grouped tuples afresh (``work.mark``), which
# with counting cost an increment and a decrement each time, about three times the search's
# time (XSokoban 1-6).
@njit(cache=True, _nrt=False)
def expand_chunk(board: SearchBoard, rooms: SearchRooms, settings: Settings, pruning: Pruning,
                 nodes: Nodes, fs: FeatureSpace, work: SearchWork, budget: int,
                 stats: np.ndarray) -> int:
    """`search_chunk`'s loop: at most ``budget`` expansions, each feature a function of its
    own, all inlined into this one compiled loop (called, each would be passed every array of
    the grouped tuples field by field: the search ran about twice as slow so, XSokoban 6,
    weight 2)."""
    n_squares = board.neighbours.shape[0]
    nb = nodes.boxes.shape[1]
    at = work.expansion[0]
    at.n_nodes = stats[ST_NODES]
    at.heap_size = stats[ST_HEAP]
    capacity = nodes.boxes.shape[0]
    heap_capacity = nodes.heap_f.shape[0]
    max_children = 4 * nb * (n_squares if settings.box_moves else 1) + nb + 1
    status = STATUS_RUNNING
    expanded = 0
    while expanded < budget:
        if at.n_nodes + max_children >= capacity or at.heap_size + max_children >= heap_capacity:
            status = STATUS_FULL
            break
        node = next_expansion(board, settings, nodes, fs, work)
        if node == NONE_LEFT:
            status = STATUS_NO_SOLUTION
            break
        if node < 0:
            continue  # closed, or reached more cheaply since it was opened
        if nodes.h[node] == 0:
            stats[ST_GOAL] = node
            status = STATUS_SOLVED
            break
        nodes.closed[node] = 1
        expanded += 1
        if expand(board, rooms, settings, pruning, nodes, fs, work, stats, node):
            status = STATUS_SOLVED
            break
    stats[ST_NODES] = at.n_nodes
    stats[ST_HEAP] = at.heap_size
    stats[ST_EXPANDED] += expanded
    return status


@njit(cache=True, inline="always")
def next_expansion(board: SearchBoard, settings: Settings, nodes: Nodes, fs: FeatureSpace,
                   work: SearchWork) -> int:
    """The position to expand next (its cost so far in ``at.g``): from the feature search's
    cells in turn, or from the heap; -1 for a heap entry gone stale, NONE_LEFT when neither
    holds an open position."""
    at = work.expansion[0]
    node = -1
    if settings.features:
        counters = fs.counters
        if counters[FS_ACTIVE] == 0:
            at.region_stamp = file_children(
                0, 0, 1, nodes.boxes, nodes.player, nodes.h, work.occupied, board.neighbours,
                board.is_goal, board.goal_squares, board.goal_area, work.deepest_empty,
                work.region_mark, at.region_stamp, work.queue, fs, False)
        every = counters[FS_HEAP_EVERY]
        counters[FS_TURN] += 1
        if every == 0 or counters[FS_TURN] % every != 0 or at.heap_size == 0:
            node = next_node(fs)
            if node < 0 and (every == 0 or at.heap_size == 0):
                return NONE_LEFT
    if node >= 0:
        at.g = nodes.g[node]
        return -1 if nodes.closed[node] else node
    if at.heap_size == 0:
        return NONE_LEFT
    at.heap_size = heap_pop(nodes.heap_f, nodes.heap_g, nodes.heap_node, at.heap_size)
    node = nodes.heap_node[at.heap_size]
    at.g = nodes.heap_g[at.heap_size]
    if nodes.closed[node] or at.g != nodes.g[node]:
        return -1
    return node


@njit(cache=True, inline="always")
def occupy(occupied: np.ndarray, boxes: np.ndarray, value: bool) -> None:
    for k in range(boxes.shape[0]):
        occupied[boxes[k]] = value


@njit(cache=True, inline="always")
def expand(board: SearchBoard, rooms: SearchRooms, settings: Settings, pruning: Pruning,
           nodes: Nodes, fs: FeatureSpace, work: SearchWork, stats: np.ndarray,
           node: int) -> bool:
    """Generate the children of ``node`` (its goal-room macros, then every box's arcs) and
    store the new ones; True when the feature search finds one solved."""
    at = work.expansion[0]
    at.node = node
    first_child = at.n_nodes
    boxes = nodes.boxes[node]
    at.key = nodes.hash[node]
    at.player = nodes.player[node]
    occupy(work.occupied, boxes, True)
    at.stamp += 1
    region_scan(at.player, board.neighbours, work.occupied, work.mark, at.stamp, work.walk,
                work.queue)
    at.corral = NO_CORRAL
    if settings.use_corrals and expansion_corral_dead(board, pruning, work, stats):
        stats[ST_CORRAL_DEAD] += 1
        occupy(work.occupied, boxes, False)
        return False
    parent_matching(board, work, boxes)
    push = work.push[0]
    for i in range(boxes.shape[0]):
        b = boxes[i]
        if rooms.room_of[b] != NO_ROOM:
            continue
        if rooms.entrance_room[b] != NO_ROOM:
            room_macro(board, rooms, settings, nodes, fs, work, stats, i)
        push.index, push.box = i, b
        for c in range(push_candidates(board, rooms, settings, work)):
            if push_arc(board, rooms, settings, work, c):
                push_child(board, settings, pruning, nodes, fs, work, stats)
    occupy(work.occupied, boxes, False)
    if not settings.features:
        return False
    # Children go to the cells of their features (and stay on the heap only when the heap
    # takes turns with the cells).
    if fs.counters[FS_HEAP_EVERY] == 0:
        at.heap_size = 0
    hot_pick = -1
    if settings.hotspots:
        hot_pick = hotspot_advice(node, first_child, at.n_nodes, nodes.boxes, nodes.h,
                                  board.neighbours, board.is_goal, work.hot_dist, work.queue,
                                  work.hot_via, work.hot_base, work.hot_path)
    at.region_stamp = file_children(
        node, first_child, at.n_nodes, nodes.boxes, nodes.player, nodes.h, work.occupied,
        board.neighbours, board.is_goal, board.goal_squares, board.goal_area,
        work.deepest_empty, work.region_mark, at.region_stamp, work.queue, fs, True, hot_pick)
    if fs.counters[FS_GOAL] > 0:
        stats[ST_GOAL] = fs.counters[FS_GOAL] - 1
        return True
    return False


@njit(cache=True, inline="always")
def expansion_corral_dead(board: SearchBoard, pruning: Pruning, work: SearchWork,
                          stats: np.ndarray) -> bool:
    """Corrals (PI-corral pruning, corral deadlock searches, learned patterns): the expanded
    position's PI-corral, whose pushes alone are taken (``at.corral``), and whether a corral
    of it is dead."""
    at = work.expansion[0]
    n_squares = board.neighbours.shape[0]
    at.corral = pi_corral(board.neighbours, work.occupied, work.mark, at.stamp, board.is_goal,
                          work.corral_label, work.box_seen, stats[ST_CORRAL_TOKEN], work.queue)
    stats[ST_CORRAL_TOKEN] += n_squares
    if at.corral != NO_CORRAL:
        stats[ST_CORRAL_CUTS] += 1
    is_dead, searches, learned = dead_corral(
        at.player, board.neighbours, work.occupied, work.mark, at.stamp, work.corral_label,
        board.dead, board.is_goal, board.zobrist_box, board.zobrist_player,
        pruning.corral_keys, pruning.corral_dead, work.corral_search, work.queue, work.fixed,
        work.frames)
    stats[ST_CORRAL_SEARCHES] += searches
    if learned > 0:
        learn_dead_corral(pruning.patterns, work.corral_search, learned, at.player,
                          board.neighbours, work.queue)
    return is_dead


@njit(cache=True, inline="always")
def parent_matching(board: SearchBoard, work: SearchWork, boxes: np.ndarray) -> None:
    """The expanded position's matching, which each child's bound updates (rows in its
    order); a box frozen on a goal keeps that goal."""
    at = work.expansion[0]
    reachable_sides(boxes, at.player, board.neighbours, board.region_with_box, work.base_masks)
    for k in range(boxes.shape[0]):
        if board.is_goal[boxes[k]] and is_frozen(boxes[k], board.neighbours, work.occupied,
                                                 board.dead, work.fixed, work.frames):
            work.base_masks[k] = FROZEN_MASK
    matching_lower_bound(boxes, work.base_masks, board.push_cost, work.base)
