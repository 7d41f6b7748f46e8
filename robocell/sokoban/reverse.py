"""Backward search: pull the boxes from the goals back to their start squares.

Pulling is the exact reverse of pushing (see ``generator``), so a sequence of pulls from a
solved position (every box on a goal, the player in any free region) to the start position
(every box on its start square, the player's region holding the start square), read
backwards, is a solution. The backward search is weighted A* over pull positions: the player
is normalised to the smallest square of its region, a pull costs 1, and the bound is the
minimum-cost matching of boxes to start squares, each box costed with its lone-box pull
distance (``pull_costs``). Levels whose goal area is the hard part are easy this way round:
the boxes leave a packed goal area in the order that is forced, and the search's difficulty
moves to the start area instead. A square from which no lone box can be pulled to any start
square is dead for the backward search. The search shares nothing with the forward one but
the matching (``bounds``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import njit

from robocell.sokoban.board import (
    N_DIRS,
    N_SIDE_MASKS,
    UNREACHABLE,
    Board,
    count_regions,
    region_scan,
)
from robocell.sokoban.bounds import (
    INFEASIBLE,
    matching_lower_bound,
    matching_scratch,
    matching_update,
)
from robocell.sokoban.graph import goal_roots
from robocell.sokoban.nodes import pushed_box_set
from robocell.sokoban.reverse_cells import H_BITS, MAX_REGIONS, file_children, next_cell
from robocell.sokoban.reverse_moves import (
    M_DIR,
    M_RUN,
    M_TARGET,
    pull_chain,
    pull_reach,
    pull_scratch,
)

REV_RUNNING = 0
REV_SOLVED = 1
REV_EXHAUSTED = 2
REV_FULL = 3

# counters
C_NODES = 0
C_HEAP = 1
C_EXPANDED = 2
C_GOAL = 3
C_GENERATED = 4
C_CURSOR = 5
C_TURN = 6
N_COUNTERS = 7

INITIAL_CAPACITY = 1 << 18
CHUNK = 5_000


@njit(cache=True)
def pull_distances(target: int, neighbours: np.ndarray) -> np.ndarray:
    """Fewest pulls that bring a lone box from each square to ``target``: the pushes from
    ``target`` to that square (breadth-first search by pushes: the box moves from x to x+d
    with the player behind it on x-d)."""
    n = neighbours.shape[0]
    dist = np.full(n, UNREACHABLE, dtype=np.int32)
    queue = np.empty(n, dtype=np.int32)
    dist[target] = 0
    queue[0] = target
    head = 0
    tail = 1
    while head < tail:
        x = queue[head]
        head += 1
        for d in range(N_DIRS):
            behind = neighbours[x, d ^ 1]
            y = neighbours[x, d]
            if behind < 0 or y < 0 or dist[y] != UNREACHABLE:
                continue
            dist[y] = dist[x] + 1
            queue[tail] = y
            tail += 1
    return dist


def pull_costs(board: Board) -> np.ndarray:
    """int32[n_boxes, n_squares, 16]: pulls from a square to each start square (the side
    mask index is there for ``bounds``' matching and ignored: every mask has the same cost)."""
    starts = board.start_boxes
    cost = np.empty((len(starts), board.n_squares, N_SIDE_MASKS), dtype=np.int32)
    for t, square in enumerate(starts):
        cost[t] = pull_distances(int(square), board.neighbours)[:, None]
    return cost


@dataclass
class ReverseNodes:
    boxes: np.ndarray     # int16[N, n_boxes], sorted
    player: np.ndarray    # int16[N]: smallest square of the player's region
    box_key: np.ndarray   # uint64[N]: Zobrist key of the boxes alone
    parent: np.ndarray    # int32[N]
    pull: np.ndarray      # int32[N]: square the box was pulled to * 4 + direction
    g: np.ndarray         # int32[N]
    h: np.ndarray         # int32[N]
    cell: np.ndarray      # int32[N]: boxes on start squares * MAX_REGIONS + free areas
    ph_child: np.ndarray  # int32[N]: pairing heap of the node's cell: first child
    ph_next: np.ndarray   # int32[N]: next sibling
    ckey: np.ndarray      # int64[N]: unadvised pulls << H_BITS | h
    closed: np.ndarray    # uint8[N]: expanded


NODE_FIELDS = ("boxes", "player", "box_key", "parent", "pull", "g", "h", "cell", "ph_child",
               "ph_next", "ckey", "closed")


def reverse_nodes(n_boxes: int, capacity: int) -> ReverseNodes:
    i32 = [np.zeros(capacity, np.int32) for _ in range(4)]
    return ReverseNodes(np.zeros((capacity, n_boxes), np.int16), np.zeros(capacity, np.int16),
                        np.zeros(capacity, np.uint64), *i32, np.zeros(capacity, np.int32),
                        np.full(capacity, -1, np.int32), np.full(capacity, -1, np.int32),
                        np.zeros(capacity, np.int64), np.zeros(capacity, np.uint8))


@njit(cache=True)
def _key(box_key: np.uint64, player: int, zobrist_player: np.ndarray) -> np.uint64:
    return box_key ^ zobrist_player[player]


@njit(cache=True)
def _find(table: np.ndarray, key: np.uint64, boxes_row: np.ndarray, player: int,
          node_boxes: np.ndarray, node_player: np.ndarray, box_key: np.ndarray,
          zobrist_player: np.ndarray) -> int:
    """Slot of the position in the open-addressing table: the slot holding it (value node+1)
    or the empty slot where it goes (value 0)."""
    mask = table.shape[0] - 1
    slot = np.int64(key & np.uint64(mask))
    while True:
        v = table[slot]
        if v == 0:
            return slot
        k = v - 1
        if node_player[k] == player and _key(box_key[k], node_player[k], zobrist_player) == key:
            same = True
            for i in range(boxes_row.shape[0]):
                if node_boxes[k, i] != boxes_row[i]:
                    same = False
                    break
            if same:
                return slot
        slot = (slot + 1) & mask


@njit(cache=True)
def _heap_push(keys: np.ndarray, vals: np.ndarray, size: int, key: np.int64, val: int) -> int:
    i = size
    while i > 0:
        up = (i - 1) >> 1
        if keys[up] <= key:
            break
        keys[i] = keys[up]
        vals[i] = vals[up]
        i = up
    keys[i] = key
    vals[i] = val
    return size + 1


@njit(cache=True)
def _heap_pop(keys: np.ndarray, vals: np.ndarray, size: int) -> int:
    top = vals[0]
    size -= 1
    key = keys[size]
    val = vals[size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and keys[c + 1] < keys[c]:
            c += 1
        if keys[c] >= key:
            break
        keys[i] = keys[c]
        vals[i] = vals[c]
        i = c
    if size > 0:
        keys[i] = key
        vals[i] = val
    return top


@njit(cache=True)
def rebuild_table(table: np.ndarray, n_nodes: int, node_boxes: np.ndarray,
                  node_player: np.ndarray, box_key: np.ndarray,
                  zobrist_player: np.ndarray) -> None:
    table[:] = 0
    for k in range(n_nodes):
        key = _key(box_key[k], node_player[k], zobrist_player)
        slot = _find(table, key, node_boxes[k], node_player[k], node_boxes, node_player,
                     box_key, zobrist_player)
        table[slot] = k + 1


@njit(cache=True)
def _next_node(weight: int, every: int, g: np.ndarray, h: np.ndarray, heap_keys: np.ndarray,
               heap_vals: np.ndarray, cells: tuple, counters: np.ndarray) -> int:
    """The next position to expand (``reverse_chunk``): from the cells in turn, or the
    heap's best; -1 for a heap entry left behind (its position since reached on a shorter
    path, or expanded from its cell)."""
    _, ph_child, ph_next, ckey, closed, cell_root = cells
    k = -1
    if every >= 0 and (every == 0 or counters[C_TURN] % every != 0):
        k = next_cell(cell_root, counters, C_CURSOR, ckey, ph_child, ph_next, closed)
    counters[C_TURN] += 1
    if k >= 0:
        return k
    size = counters[C_HEAP]
    top = heap_keys[0]
    k = _heap_pop(heap_keys, heap_vals, size)
    counters[C_HEAP] = size - 1
    if top >> H_BITS != np.int64(g[k]) + np.int64(weight) * np.int64(h[k]):
        return -1
    if every >= 0 and closed[k]:
        return -1
    return k


@njit(cache=True)
def _pull_child(k: int, i: int, b: int, p: int, q: int, d: int, run: int, stamp: int,
                n_kids: int, neighbours: np.ndarray, occupied: np.ndarray, mark: np.ndarray,
                seen: np.ndarray, queue: np.ndarray, cost: np.ndarray, rows: np.ndarray,
                masks: np.ndarray, base: tuple, scratch: tuple, child: np.ndarray,
                is_start: np.ndarray, start_player: int, zobrist_box: np.ndarray,
                zobrist_player: np.ndarray, weight: int, every: int, node_boxes: np.ndarray,
                node_player: np.ndarray, box_key: np.ndarray, parent: np.ndarray,
                pull: np.ndarray, g: np.ndarray, h: np.ndarray, table: np.ndarray,
                heap_keys: np.ndarray, heap_vals: np.ndarray, cells: tuple,
                kid: np.ndarray, counters: np.ndarray) -> int:
    """The child of ``k`` whose box ``i`` is pulled from ``b`` to ``p`` (``run`` pulls, the
    last in direction ``d``, the player ending on ``q``): stored (or its shorter path kept)
    and pushed on the heap, and listed in ``kid`` (node, free areas, boxes on start squares)
    for its cell. Returns the new count of listed children, or -1 when the child is the
    goal (``counters[C_GOAL]``)."""
    cell, _, _, _, closed, _ = cells
    pushed_box_set(node_boxes[k], i, p, child)
    occupied[b] = False
    occupied[p] = True
    low = region_scan(q, neighbours, occupied, mark, stamp, None, queue)
    at_start = mark[start_player] == stamp
    counters[C_GENERATED] += 1
    ckey_box = box_key[k] ^ zobrist_box[b] ^ zobrist_box[p]
    key = _key(ckey_box, low, zobrist_player)
    slot = _find(table, key, child, low, node_boxes, node_player, box_key, zobrist_player)
    # The bound and the free areas only for a new position (a known one has them stored),
    # as the forward search does.
    found = table[slot] != 0
    regions = h_child = c = 0
    if found:
        c = table[slot] - 1
        h_child, regions = h[c], cell[c] % MAX_REGIONS
    elif every >= 0:
        regions = count_regions(neighbours, occupied, seen, stamp, queue)
    occupied[p] = False
    occupied[b] = True
    if found:
        if weight > 1 or g[c] <= g[k] + run:
            return n_kids  # weighted A* keeps the first path (no reopening)
    else:
        rows[i] = p
        h_child = matching_update(rows, masks, masks, i, cost, base, scratch)
        rows[i] = b
        if h_child >= INFEASIBLE:
            return n_kids
        c = counters[C_NODES]
        counters[C_NODES] = c + 1
        table[slot] = c + 1
        node_boxes[c, :] = child
        node_player[c], box_key[c], closed[c] = low, ckey_box, 0
    parent[c] = k
    pull[c] = p * N_DIRS + d
    g[c] = g[k] + run
    h[c] = h_child
    if h_child == 0 and at_start and weight > 1:
        counters[C_GOAL] = c
        return -1
    f = np.int64(g[c]) + np.int64(weight) * np.int64(h_child)
    counters[C_HEAP] = _heap_push(heap_keys, heap_vals, counters[C_HEAP],
                                  (f << H_BITS) | np.int64(h_child), c)
    kid[0, n_kids] = c
    kid[1, n_kids] = regions
    kid[2, n_kids] = (cell[k] // MAX_REGIONS - is_start[b]) + is_start[p]
    return n_kids + 1


@njit(cache=True)
def reverse_chunk(neighbours: np.ndarray, dead: np.ndarray, cost: np.ndarray,
                  is_start: np.ndarray, start_player: int, zobrist_box: np.ndarray,
                  zobrist_player: np.ndarray, weight: int, every: int, box_moves: bool,
                  node_boxes: np.ndarray, node_player: np.ndarray, box_key: np.ndarray,
                  parent: np.ndarray, pull: np.ndarray, g: np.ndarray, h: np.ndarray,
                  table: np.ndarray, heap_keys: np.ndarray, heap_vals: np.ndarray,
                  cells: tuple, counters: np.ndarray, budget: int) -> int:
    """Up to ``budget`` expansions of the backward search; the state lives in the arrays.
    ``every`` < 0: weighted A* alone; else the feature cells (``cells``: per node its cell,
    pairing-heap links, key and closed flag; each cell's root) take the expansions but every
    ``every``-th (0: none), which comes from the weighted A* heap. ``box_moves``: every arc
    pulls one box as far as it goes (``reverse_moves.pull_reach``), not one square."""
    cell, ph_child, ph_next, ckey, closed, cell_root = cells
    n_sq = neighbours.shape[0]
    nb = node_boxes.shape[1]
    capacity = node_boxes.shape[0]
    occupied = np.zeros(n_sq, dtype=np.bool_)
    marks = np.zeros((3, n_sq), dtype=np.int32)
    mark, reach, seen = marks[0], marks[1], marks[2]
    queue = np.empty(n_sq, dtype=np.int32)
    masks = np.zeros(nb, dtype=np.int64)
    base = matching_scratch(nb)
    scratch = matching_scratch(nb)
    rows, child = np.empty(nb, dtype=np.int16), np.empty(nb, dtype=np.int16)
    max_kids = nb * N_DIRS * (n_sq if box_moves else 1)
    kid = np.empty((3, max_kids), dtype=np.int64)  # children: node, free areas, starts
    moves, move_seen, blocks = pull_scratch(n_sq if box_moves else 1)
    move_stamp = 0
    stamp = 0
    for _ in range(budget):
        size = counters[C_HEAP]
        if size == 0:
            return REV_EXHAUSTED
        if counters[C_NODES] + max_kids >= capacity or size + max_kids >= heap_keys.shape[0]:
            return REV_FULL
        k = _next_node(weight, every, g, h, heap_keys, heap_vals, cells, counters)
        if k < 0:
            continue
        closed[k] = 1
        counters[C_EXPANDED] += 1
        for i in range(nb):
            occupied[node_boxes[k, i]] = True
            rows[i] = node_boxes[k, i]
        stamp += 1
        region = stamp
        region_scan(node_player[k], neighbours, occupied, reach, region, None, queue)
        if h[k] == 0 and reach[start_player] == region:
            # Weight 1 tests the goal here, when it is popped, so the solution is optimal.
            counters[C_GOAL] = k
            return REV_SOLVED
        matching_lower_bound(rows, masks, cost, base)
        n_kids = 0
        for i in range(nb):
            b = node_boxes[k, i]
            n_moves = 0
            if box_moves:
                n_moves, move_stamp = pull_reach(b, neighbours, occupied, reach, region, dead,
                                                 moves, move_seen, move_stamp, blocks)
            for j in range(n_moves if box_moves else N_DIRS):
                if box_moves:
                    p, d, run = moves[M_TARGET, j], moves[M_DIR, j], moves[M_RUN, j]
                else:
                    p, d, run = neighbours[b, j], j, 1
                    if p < 0 or reach[p] != region or dead[p]:
                        continue
                q = neighbours[p, d]
                if q < 0 or occupied[q]:
                    continue
                stamp += 1
                n_kids = _pull_child(k, i, b, p, q, d, run, stamp, n_kids, neighbours,
                                     occupied, mark, seen, queue, cost, rows, masks, base,
                                     scratch, child, is_start, start_player, zobrist_box,
                                     zobrist_player, weight, every, node_boxes, node_player,
                                     box_key, parent, pull, g, h, table, heap_keys,
                                     heap_vals, cells, kid, counters)
                if n_kids < 0:
                    return REV_SOLVED
        for i in range(nb):
            occupied[node_boxes[k, i]] = False
        if every >= 0:
            file_children(k, kid[0], kid[1], kid[2], n_kids, h, cell, ph_child, ph_next, ckey,
                          cell_root)
    return REV_RUNNING


@dataclass
class ReverseResult:
    status: str            # "solved", "timeout", "exhausted", "memory"
    pushes: list[int]      # the solution as push codes (box square * 4 + direction)
    expanded: int
    stored: int
    seconds: float
    lower_bound: int       # the matching bound of the solved position (pulls to the start)


def _grow(nodes: ReverseNodes, n_nodes: int) -> ReverseNodes:
    capacity = nodes.boxes.shape[0] * 2
    grown = reverse_nodes(nodes.boxes.shape[1], capacity)
    for name in NODE_FIELDS:
        getattr(grown, name)[:n_nodes] = getattr(nodes, name)[:n_nodes]
    return grown


def solve_reverse(board: Board, weight: int = 10, timeout: float | None = None,
                  max_nodes: int = 24_000_000,
                  on_progress: Callable[[int, int, float], None] | None = None,
                  every: int = -1, box_moves: bool = False) -> ReverseResult:
    """Backward weighted A* from the solved positions to the start (see the module);
    ``every`` >= 0 adds the feature cells (``reverse_chunk``); ``box_moves``: an arc pulls
    one box as far as it goes (``reverse_moves``); ``on_progress(expanded, stored,
    seconds)`` is called before every chunk of expansions."""
    started = time.monotonic()
    nb = board.n_boxes
    cost = pull_costs(board)
    dead = cost.min(axis=0)[:, 0] >= UNREACHABLE
    nodes = reverse_nodes(nb, INITIAL_CAPACITY)
    table = np.zeros(2 * INITIAL_CAPACITY, dtype=np.int64)
    heap_keys = np.zeros(2 * INITIAL_CAPACITY, dtype=np.int64)
    heap_vals = np.zeros(2 * INITIAL_CAPACITY, dtype=np.int32)
    counters = np.zeros(N_COUNTERS, dtype=np.int64)
    roots, players = goal_roots(board)
    goals = np.sort(board.goal_squares.astype(np.int16))
    scratch = matching_scratch(nb)
    h0 = int(matching_lower_bound(goals, np.zeros(nb, np.int64), cost, scratch))
    occupied = np.zeros(board.n_squares, dtype=np.bool_)
    occupied[goals] = True
    mark = np.zeros(board.n_squares, dtype=np.int32)
    queue = np.empty(board.n_squares, dtype=np.int32)
    key0 = np.uint64(0)
    for s in goals:
        key0 ^= board.zobrist_box[s]
    is_start = np.zeros(board.n_squares, dtype=np.int64)
    is_start[board.start_boxes] = 1
    cell0 = (int(is_start[goals].sum()) * MAX_REGIONS
             + min(count_regions(board.neighbours, occupied, mark, -1, queue), MAX_REGIONS - 1))
    cell_root = np.full((nb + 1) * MAX_REGIONS, -1, dtype=np.int32)
    if h0 < INFEASIBLE:
        for r, player in enumerate(players):
            low = region_scan(int(player), board.neighbours, occupied, mark, r + 1, None, queue)
            c = int(counters[C_NODES])
            nodes.boxes[c] = goals
            nodes.player[c] = low
            nodes.box_key[c] = key0
            nodes.parent[c] = -1
            nodes.pull[c] = -1
            nodes.h[c] = h0
            nodes.cell[c] = cell0
            nodes.ckey[c] = h0
            slot = _find(table, key0 ^ board.zobrist_player[low], goals, low,
                         nodes.boxes, nodes.player, nodes.box_key, board.zobrist_player)
            table[slot] = c + 1
            counters[C_NODES] = c + 1
            counters[C_HEAP] = _heap_push(heap_keys, heap_vals, int(counters[C_HEAP]),
                                          np.int64(weight * h0) << H_BITS | h0, c)
    status = REV_RUNNING if h0 < INFEASIBLE else REV_EXHAUSTED
    timed_out = False
    while status in (REV_RUNNING, REV_FULL):
        if timeout is not None and time.monotonic() - started > timeout:
            timed_out = True
            break
        if status == REV_FULL:
            n_nodes = int(counters[C_NODES])
            if 2 * nodes.boxes.shape[0] > max_nodes:
                break
            nodes = _grow(nodes, n_nodes)
            capacity = nodes.boxes.shape[0]
            table = np.zeros(2 * capacity, dtype=np.int64)
            rebuild_table(table, n_nodes, nodes.boxes, nodes.player, nodes.box_key,
                          board.zobrist_player)
            size = int(counters[C_HEAP])
            keys = np.zeros(max(2 * capacity, 2 * size), dtype=np.int64)
            vals = np.zeros(keys.shape[0], dtype=np.int32)
            keys[:size] = heap_keys[:size]
            vals[:size] = heap_vals[:size]
            heap_keys, heap_vals = keys, vals
        if on_progress is not None:
            on_progress(int(counters[C_EXPANDED]), int(counters[C_NODES]),
                        time.monotonic() - started)
        cells = (nodes.cell, nodes.ph_child, nodes.ph_next, nodes.ckey, nodes.closed,
                 cell_root)
        status = reverse_chunk(board.neighbours, dead, cost, is_start, board.start_player,
                               board.zobrist_box, board.zobrist_player, weight, every,
                               box_moves, nodes.boxes, nodes.player, nodes.box_key,
                               nodes.parent, nodes.pull, nodes.g, nodes.h, table, heap_keys,
                               heap_vals, cells, counters, CHUNK)
    seconds = time.monotonic() - started
    pushes: list[int] = []
    if status == REV_SOLVED:
        node = int(counters[C_GOAL])
        while nodes.parent[node] >= 0:
            up = int(nodes.parent[node])
            if box_moves:
                pushes += pull_chain(board, dead, nodes.boxes[up], int(nodes.player[up]),
                                     nodes.boxes[node], int(nodes.pull[node]))
            else:
                p, d = divmod(int(nodes.pull[node]), N_DIRS)
                pushes.append(p * N_DIRS + (d ^ 1))
            node = up
        text = "solved"
    elif status == REV_EXHAUSTED:
        text = "exhausted"
    elif timed_out:
        text = "timeout"
    else:
        text = "memory"
    return ReverseResult(text, pushes, int(counters[C_EXPANDED]), int(counters[C_NODES]),
                         seconds, min(h0, INFEASIBLE))
