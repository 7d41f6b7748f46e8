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

from robocell.sokoban.board import FROZEN_MASK, N_DIRS, count_regions, region_scan
from robocell.sokoban.bounds import (
    INFEASIBLE,
    matching_lower_bound,
    matching_scratch,
    matching_update,
    reachable_sides,
)
from robocell.sokoban.box_moves import block_scratch, box_reach
from robocell.sokoban.corrals import (
    NO_CORRAL,
    corral_work,
    dead_corral,
    pi_corral,
    push_touches_corral,
)
from robocell.sokoban.deadlocks import freeze_deadlock_after_push, frozen_goals_dead, is_frozen
from robocell.sokoban.features import (
    FS_ACTIVE,
    FS_GOAL,
    FS_HEAP_EVERY,
    FS_TURN,
    FeatureSpace,
    file_children,
    next_node,
)
from robocell.sokoban.nodes import (
    BOX_MOVE_FLAG,
    EMPTY_SLOT,
    NO_PUSH,
    TUNNEL_FLAG,
    Nodes,
    heap_pop,
    heap_push,
    open_node,
    pushed_box_set,
    reopen_node,
    table_find,
    table_insert,
)
from robocell.sokoban.packing import misordered_goals
from robocell.sokoban.patterns import learn_dead_corral, pattern_match
from robocell.sokoban.rooms import MACRO_SHIFT, NO_MACRO, NO_ROOM
from robocell.sokoban.search_state import (
    ST_CORRAL_CHECKS,
    ST_CORRAL_CHILD,
    ST_CORRAL_CUTS,
    ST_CORRAL_DEAD,
    ST_CORRAL_SEARCHES,
    ST_CORRAL_TOKEN,
    ST_DEADLOCKS,
    ST_DUPLICATES,
    ST_EXPANDED,
    ST_FROZEN_GOALS,
    ST_GENERATED,
    ST_GOAL,
    ST_HEAP,
    ST_NODES,
    ST_PATTERN_CUTS,
    STATUS_FULL,
    STATUS_NO_SOLUTION,
    STATUS_RUNNING,
    STATUS_SOLVED,
    Pruning,
    SearchBoard,
    SearchRooms,
    Settings,
)

MOVE_SCALE = 1 << 12
"""Move metric cost of a push = walk*MOVE_SCALE + MOVE_SCALE + 1: fewest moves, then pushes."""
MAX_TUNNEL_RUN = 1 << 10


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


# long-function: one compiled loop over expansions and their children; cut into functions
# that take the grouped arrays, the search ran about twice as slow (XSokoban 6, weight 2)
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
    """
    (neighbours, is_goal, dead, region_with_box, push_cost, zobrist_box, zobrist_player,
     goal_squares, goal_area, goal_depth) = board
    (node_boxes, node_player, node_hash, node_g, node_h, node_parent, node_push, node_closed,
     table, heap_f, heap_g, heap_node) = nodes
    (room_of, entrance_room, entrance_slot, room_order, room_size, room_outside, room_final,
     room_pushes, room_first) = rooms
    (exact_player, use_corrals, weight, h_scale, order_penalty, tunnels, region_penalty, fess,
     box_moves, corral_nodes, corral_boxes) = settings
    cache_keys, cache_dead, patterns, frozen_keys, frozen_reach, frozen_taken = pruning
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
                region_stamp = file_children(0, 0, 1, node_boxes, node_h, occupied,
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
                        (room_first[e] + k + 1) << MACRO_SHIFT, extra_h, n_nodes, heap_size,
                        board, settings, nodes, masks, scratch, stats)
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
                if use_corrals and push_touches_corral(target, b, neighbours, mark, stamp,
                                                       child_mark, child_stamp):
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
                    h += order_penalty * misordered_goals(child, b, target, occupied,
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
                heap_size = open_node(nodes, n_nodes, heap_size, node, child, child_player,
                                      child_key, child_g, h, code, weight)
                n_nodes += 1
        for k in range(nb):
            occupied[boxes[k]] = False
        if fess:
            # Children go to the cells of their features (and stay on the heap only when
            # the heap takes turns with the cells).
            if fs.counters[FS_HEAP_EVERY] == 0:
                heap_size = 0
            region_stamp = file_children(node, first_child, n_nodes, node_boxes, node_h,
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


@njit(cache=True)
def _store_child(node: int, child: np.ndarray, child_player: int, child_key: np.uint64,
                 child_g: int, push_code: int, extra_h: int, n_nodes: int, heap_size: int,
                 board: SearchBoard, settings: Settings, nodes: Nodes, masks: np.ndarray,
                 scratch: np.ndarray, stats: np.ndarray) -> tuple[int, int]:
    """Look a child state up; store and open it if new (its bound from scratch, plus
    ``extra_h``), or reopen it on a cheaper path. Returns the new node count and heap size."""
    found = table_find(nodes.table, child_key, child_player, child, nodes.hash, nodes.player,
                       nodes.boxes)
    if found != EMPTY_SLOT:
        reopened = reopen_node(nodes, found, heap_size, node, child_g, push_code,
                               settings.weight)
        if reopened < 0:
            stats[ST_DUPLICATES] += 1
            return n_nodes, heap_size
        return n_nodes, reopened
    reachable_sides(child, child_player, board.neighbours, board.region_with_box, masks)
    lb = matching_lower_bound(child, masks, board.push_cost, scratch)
    if lb >= INFEASIBLE:
        stats[ST_DEADLOCKS] += 1
        return n_nodes, heap_size
    # The penalties never apply to a solved position: h == 0 is the goal test.
    h = lb * settings.h_scale + extra_h if lb > 0 else 0
    heap_size = open_node(nodes, n_nodes, heap_size, node, child, child_player, child_key,
                          child_g, h, push_code, settings.weight)
    return n_nodes + 1, heap_size
