"""The arcs out of a position the compiled search expands (``search.expand``), and the
children they make.

An arc is a single push, a tunnel run (``tunnels``: a push into a one-wide tunnel carried on
to its end), a goal-room macro (a box on a room's entrance taken to the room's next goal) or a
box move (``box_moves``: one box pushed as far as it goes). The arc under way is the record
``work.push[0]`` (`search_work.PUSH`); its child is refused on a freeze deadlock, a learned
pattern, a dead corral or frozen goals, taken as a cheaper path to a position already stored,
or stored and opened with its bound (matching plus the fast modes' penalties). Every function
here is inlined into ``search.search_chunk``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.sokoban.board import (
    FROZEN_MASK,
    N_DIRS,
    count_regions,
    region_after_move,
    region_scan,
)
from robocell.sokoban.bounds import (
    INFEASIBLE,
    matching_lower_bound,
    matching_update,
    reachable_sides,
)
from robocell.sokoban.box_moves import box_reach
from robocell.sokoban.corrals import (
    NO_CORRAL,
    dead_corral,
    label_corrals,
    push_touches_corral,
)
from robocell.sokoban.deadlocks import freeze_deadlock_after_push, frozen_goals_dead, is_frozen
from robocell.sokoban.features import FeatureSpace
from robocell.sokoban.nodes import (
    BOX_MOVE_FLAG,
    EMPTY_SLOT,
    TUNNEL_FLAG,
    Nodes,
    heap_push,
    open_node,
    pushed_box_set,
    reopen_node,
    table_find,
)
from robocell.sokoban.packing import misordered_goals
from robocell.sokoban.patterns import learn_dead_corral, pattern_match
from robocell.sokoban.rooms import MACRO_SHIFT, NO_MACRO, NO_ROOM
from robocell.sokoban.search_state import (
    ST_CORRAL_CHECKS,
    ST_CORRAL_CHILD,
    ST_CORRAL_SEARCHES,
    ST_DEADLOCKS,
    ST_DUPLICATES,
    ST_FROZEN_GOALS,
    ST_GENERATED,
    ST_PATTERN_CUTS,
    Pruning,
    SearchBoard,
    SearchRooms,
    Settings,
)
from robocell.sokoban.search_work import SearchWork

MOVE_SCALE = 1 << 12
"""Move metric cost of a push = walk*MOVE_SCALE + MOVE_SCALE + 1: fewest moves, then pushes."""
MAX_TUNNEL_RUN = 1 << 10


@njit(cache=True, inline="always")
def room_macro(board: SearchBoard, rooms: SearchRooms, settings: Settings, nodes: Nodes,
               fs: FeatureSpace, work: SearchWork, stats: np.ndarray, i: int) -> None:
    """Goal rooms: box ``i``, on a room's entrance, goes to the room's next goal in the packing
    order as one macro arc, if the player can reach the square the macro starts from."""
    at = work.expansion[0]
    boxes = nodes.boxes[at.node]
    b = boxes[i]
    r = rooms.entrance_room[b]
    e = rooms.entrance_slot[b]
    k = 0
    for j in range(rooms.size[r]):
        if work.occupied[rooms.order[r, j]]:
            k += 1
    if (k >= rooms.size[r] or rooms.n_pushes[e, k] == NO_MACRO
            or work.mark[rooms.outside[e, k]] != at.stamp):
        return
    goal_sq = rooms.order[r, k]
    work.occupied[b] = False
    work.occupied[goal_sq] = True
    at.child_stamp += 1
    child_player = region_scan(rooms.final_player[e, k], board.neighbours, work.occupied,
                               work.child_mark, at.child_stamp, work.child_walk, work.queue)
    extra_h = 0
    if settings.region_penalty > 0 or settings.features:
        at.region_stamp += 1
        n_regions = count_regions(board.neighbours, work.occupied, work.region_mark,
                                  at.region_stamp, work.queue)
        extra_h = settings.region_penalty * (n_regions - 1)
        if settings.features:
            # The connectivity feature of the node about to be stored.
            fs.regions[at.n_nodes] = n_regions
    work.occupied[goal_sq] = False
    work.occupied[b] = True
    stats[ST_GENERATED] += 1
    pushed_box_set(boxes, i, goal_sq, work.child)
    child_key = (at.key ^ board.zobrist_box[b] ^ board.zobrist_box[goal_sq]
                 ^ board.zobrist_player[at.player] ^ board.zobrist_player[child_player])
    at.n_nodes, at.heap_size = store_child(
        at.node, work.child, child_player, child_key, at.g + rooms.n_pushes[e, k],
        (rooms.first[e] + k + 1) << MACRO_SHIFT, extra_h, at.n_nodes, at.heap_size, board,
        settings, nodes, work.masks, work.scratch, stats)


@njit(cache=True, inline="always")
def push_candidates(board: SearchBoard, rooms: SearchRooms, settings: Settings,
                    work: SearchWork) -> int:
    """The arcs of box ``push.box`` to look at, in ``work.cand_*``: with box moves every place
    it can reach (``box_moves.box_reach``), else its four pushes, to be checked."""
    at = work.expansion[0]
    if settings.box_moves:
        n_cand, at.seen_stamp = box_reach(
            work.push[0].box, board.neighbours, work.occupied, work.mark, at.stamp, board.dead,
            rooms.room_of, at.corral, work.corral_label, work.seen, at.seen_stamp, work.blocks,
            work.states, work.cand_target, work.cand_dir, work.cand_run)
        return n_cand
    for d in range(N_DIRS):
        work.cand_dir[d] = d
        work.cand_run[d] = 0
    return N_DIRS


@njit(cache=True, inline="always")
def push_arc(board: SearchBoard, rooms: SearchRooms, settings: Settings, work: SearchWork,
             c: int) -> bool:
    """Arc ``c`` of box ``push.box`` into ``push``; False when it cannot be made (the player
    cannot reach the box's side, the square ahead is taken, dead, in a room or outside the
    PI-corral). A single push into a tunnel runs on to its end (``tunnels``)."""
    at = work.expansion[0]
    push = work.push[0]
    neighbours = board.neighbours
    b = push.box
    d = work.cand_dir[c]
    push.direction = d
    push.behind = neighbours[b, d ^ 1]
    if work.cand_run[c] > 0:
        # A box move: cand_run[c] pushes, the last one in direction d.
        push.target = work.cand_target[c]
        push.pusher = neighbours[push.target, d ^ 1]
        push.run = work.cand_run[c]
        if push.run == 1:
            push.code = b * N_DIRS + d
        else:
            push.code = BOX_MOVE_FLAG | (b << MACRO_SHIFT) | (push.target * N_DIRS + d)
        return True
    if push.behind < 0 or work.mark[push.behind] != at.stamp:
        return False
    target = neighbours[b, d]
    if (target < 0 or work.occupied[target] or board.dead[target]
            or rooms.room_of[target] != NO_ROOM):
        return False
    if at.corral != NO_CORRAL and work.corral_label[target] != at.corral:
        return False
    push.target, push.pusher, push.run, push.code = target, b, 1, -1
    if settings.tunnels:
        tunnel_run(board, rooms, work)
    return True


@njit(cache=True, inline="always")
def tunnel_run(board: SearchBoard, rooms: SearchRooms, work: SearchWork) -> None:
    """A box pushed along a one-wide tunnel (walls on both sides of the box and of the player)
    keeps going while the square ahead is free."""
    push = work.push[0]
    neighbours = board.neighbours
    d = push.direction
    side = 2 if d < 2 else 0
    target, pusher = push.target, push.pusher
    while (not board.is_goal[target] and neighbours[target, side] < 0
           and neighbours[target, side + 1] < 0 and neighbours[pusher, side] < 0
           and neighbours[pusher, side + 1] < 0):
        ahead = neighbours[target, d]
        if (ahead < 0 or work.occupied[ahead] or board.dead[ahead]
                or rooms.room_of[ahead] != NO_ROOM or push.run >= MAX_TUNNEL_RUN):
            break
        pusher = target
        target = ahead
        push.run += 1
    push.target, push.pusher = target, pusher


@njit(cache=True, inline="always")
def push_child(board: SearchBoard, settings: Settings, pruning: Pruning, nodes: Nodes,
               fs: FeatureSpace, work: SearchWork, stats: np.ndarray) -> None:
    """The child the arc in ``push`` makes: refused on a freeze deadlock, taken as a cheaper
    path to a known position, refused on a pattern, a dead corral or frozen goals, else
    stored and opened with its bound."""
    at = work.expansion[0]
    push = work.push[0]
    stats[ST_GENERATED] += 1
    if not child_position(board, settings, work):
        stats[ST_DEADLOCKS] += 1
        return
    pushed_box_set(nodes.boxes[at.node], push.index, push.target, work.child)
    child_key = (at.key ^ board.zobrist_box[push.box] ^ board.zobrist_box[push.target]
                 ^ board.zobrist_player[at.player] ^ board.zobrist_player[push.player])
    child_g = at.g + push.cost
    if push.code < 0:
        push.code = push.box * N_DIRS + push.direction
        if push.run > 1:
            push.code |= TUNNEL_FLAG | (push.run << MACRO_SHIFT)
    found = table_find(nodes.table, child_key, push.player, work.child, nodes.hash,
                       nodes.player, nodes.boxes)
    if found != EMPTY_SLOT:
        if child_g < nodes.g[found] and not nodes.closed[found]:
            nodes.g[found] = child_g
            nodes.parent[found] = at.node
            nodes.push[found] = push.code
            at.heap_size = heap_push(nodes.heap_f, nodes.heap_g, nodes.heap_node, at.heap_size,
                                     child_g + settings.weight * nodes.h[found], child_g, found)
        else:
            stats[ST_DUPLICATES] += 1
        return
    if settings.use_corrals and child_corral_dead(board, pruning, work, stats):
        return
    frozen_key = child_sides(board, nodes, work)
    if frozen_key != 0 and pruning.frozen_keys.shape[0] > 0 and frozen_goals_dead(
            work.rows, work.frozen_row, frozen_key, board.neighbours, board.goal_squares,
            pruning.frozen_keys, pruning.frozen_reach, pruning.frozen_taken, work.wall,
            work.frozen_queue, work.frozen_label, work.frozen_dist, work.box_goals, work.owner,
            work.came_from):
        stats[ST_FROZEN_GOALS] += 1  # the boxes frozen on goals leave the others no way
        return
    h = child_bound(board, settings, fs, work)
    if h < 0:
        stats[ST_DEADLOCKS] += 1
        return
    at.heap_size = open_node(nodes, at.n_nodes, at.heap_size, at.node, work.child, push.player,
                             child_key, child_g, h, push.code, settings.weight)
    at.n_nodes += 1


@njit(cache=True, inline="always")
def after_push(work: SearchWork, moved: bool) -> None:
    """Show the position after the push in ``work.occupied`` (``moved``), or before it again
    (a box move may end where it started)."""
    push = work.push[0]
    if moved:
        work.occupied[push.box] = False
        work.occupied[push.target] = True
    else:
        work.occupied[push.target] = False
        work.occupied[push.box] = True


@njit(cache=True, inline="always")
def child_position(board: SearchBoard, settings: Settings, work: SearchWork) -> bool:
    """The child's player square and the arc's cost (``push.player``, ``push.cost``); False
    when the pushed box, or one next to it, is frozen off a goal."""
    at = work.expansion[0]
    push = work.push[0]
    after_push(work, True)
    if freeze_deadlock_after_push(push.target, board.neighbours, work.occupied, board.dead,
                                  board.is_goal, work.fixed, work.frames):
        after_push(work, False)
        return False
    if settings.exact_player:
        push.player = push.box
        push.cost = (work.walk[push.behind] + 1) * MOVE_SCALE + 1
    else:
        at.child_stamp += 1
        # Most arcs leave the region as it was, the box's square added and its target taken
        # out: then no walk (and no ``child_mark``: the push changed no corral either).
        push.player = region_after_move(push.box, push.target, at.player, board.neighbours,
                                        work.occupied, work.mark, at.stamp, work.blocks[2],
                                        settings.box_moves)
        push.scanned = push.player < 0
        if push.scanned:
            push.player = region_scan(push.pusher, board.neighbours, work.occupied,
                                      work.child_mark, at.child_stamp, work.child_walk,
                                      work.queue)
        push.cost = push.run
    after_push(work, False)
    return True


@njit(cache=True, inline="always")
def child_corral_dead(board: SearchBoard, pruning: Pruning, work: SearchWork,
                      stats: np.ndarray) -> bool:
    """Corrals, for a child: a learned pattern in it, or, when the push closed a corral or
    changed one, a dead corral at the pushed box; then it never enters the table or the open
    list."""
    at = work.expansion[0]
    push = work.push[0]
    if pattern_match(pruning.patterns, push.target, push.box, work.occupied, push.player):
        stats[ST_PATTERN_CUTS] += 1
        return True
    # A region told without a walk (``push.scanned`` 0) is the old one with the box's square
    # added and its target taken out: no corral made or changed.
    if not push.scanned or not push_touches_corral(push.target, push.box, board.neighbours,
                                                   work.mark, at.stamp, work.child_mark,
                                                   at.child_stamp):
        return False
    after_push(work, True)
    # Only the corrals' labels are wanted here, not the PI-corral among them.
    label_corrals(board.neighbours, work.occupied, work.child_mark, at.child_stamp,
                  work.child_label, work.queue)
    stats[ST_CORRAL_CHECKS] += 1
    child_dead, searches, learned = dead_corral(
        push.player, board.neighbours, work.occupied, work.child_mark, at.child_stamp,
        work.child_label, board.dead, board.is_goal, board.zobrist_box, board.zobrist_player,
        pruning.corral_keys, pruning.corral_dead, work.corral_search, work.queue, work.fixed,
        work.frames, push.target)
    after_push(work, False)
    stats[ST_CORRAL_SEARCHES] += searches
    if learned > 0:
        learn_dead_corral(pruning.patterns, work.corral_search, learned, push.player,
                          board.neighbours, work.queue)
    if child_dead:
        stats[ST_CORRAL_CHILD] += 1
    return child_dead


@njit(cache=True, inline="always")
def child_sides(board: SearchBoard, nodes: Nodes, work: SearchWork) -> np.uint64:
    """The child's boxes in the expanded position's order (``work.rows``) and the sides of
    each the player can reach (``work.masks``): a box frozen on a goal keeps that goal (its
    row in ``work.frozen_row``). Returns the Zobrist key of the frozen boxes (0: none)."""
    at = work.expansion[0]
    push = work.push[0]
    boxes = nodes.boxes[at.node]
    rows = work.rows
    for k in range(boxes.shape[0]):
        rows[k] = boxes[k]
    rows[push.index] = push.target
    reachable_sides(rows, push.player, board.neighbours, board.region_with_box, work.masks)
    after_push(work, True)
    frozen_key = np.uint64(0)
    for k in range(rows.shape[0]):
        work.frozen_row[k] = False
        if board.is_goal[rows[k]] and is_frozen(rows[k], board.neighbours, work.occupied,
                                                board.dead, work.fixed, work.frames):
            work.masks[k] = FROZEN_MASK
            work.frozen_row[k] = True
            frozen_key ^= board.zobrist_box[rows[k]]
    after_push(work, False)
    return frozen_key


@njit(cache=True, inline="always")
def child_bound(board: SearchBoard, settings: Settings, fs: FeatureSpace,
                work: SearchWork) -> int:
    """The child's h: its matching, updated from the expanded position's, in cost units, with
    the fast modes' penalties (misordered goals, extra free areas); -1 when no matching
    exists (a deadlock). With the feature search, its connectivity feature is filed too."""
    at = work.expansion[0]
    push = work.push[0]
    lb = matching_update(work.rows, work.masks, work.base_masks, push.index, board.push_cost,
                         work.base, work.scratch)
    if lb >= INFEASIBLE:
        return -1
    h = lb * settings.h_scale
    # No penalty on a solved position (all boxes on goals): h == 0 is the goal test, and a
    # free area cut off by the last box must not hide the solution.
    if settings.order_penalty > 0 and lb > 0:
        h += settings.order_penalty * misordered_goals(
            work.child, push.box, push.target, work.occupied, board.goal_squares,
            board.goal_area, board.goal_depth, work.deepest_empty)
    if (settings.region_penalty > 0 and lb > 0) or settings.features:
        if settings.features and not push.scanned:
            # The region was told without a walk (``region_after_move``): the box's square
            # joined the player's area only and its target cut nothing off, so the free areas
            # are the expanded position's (filed with it).
            n_regions = fs.regions[at.node]
        else:
            after_push(work, True)
            at.region_stamp += 1
            n_regions = count_regions(board.neighbours, work.occupied, work.region_mark,
                                      at.region_stamp, work.queue)
            after_push(work, False)
        if settings.region_penalty > 0 and lb > 0:
            h += settings.region_penalty * (n_regions - 1)
        if settings.features:
            fs.regions[at.n_nodes] = n_regions
    return h


@njit(cache=True)
def store_child(node: int, child: np.ndarray, child_player: int, child_key: np.uint64,
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
