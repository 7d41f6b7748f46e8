"""The search's node store: per-node arrays, a transposition table and a binary open heap.

Every state the A* search stores is one node: its sorted box squares, player square, Zobrist
hash, cost so far (g), bound (h), parent node and the push code of the arc from the parent.
The transposition table is open addressing on the hash (linear probing, 4 slots per node);
the open list is a binary heap of (f, g, node) entries, smallest f first, then largest g.
Nothing is allocated per node: the arrays are preallocated and grown (doubled) between
compiled chunks of the search.

A push code is ``box_square*4 + direction`` for one push; the high bits mark a longer arc:
a goal-room macro (its number << ``rooms.MACRO_SHIFT``), a tunnel run (TUNNEL_FLAG) or a box
move (BOX_MOVE_FLAG).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

EMPTY_SLOT = -1
NO_PUSH = -1
TUNNEL_FLAG = 1 << 30
"""Push code of a tunnel run: TUNNEL_FLAG | run << MACRO_SHIFT | (square*4 + direction)."""
BOX_MOVE_FLAG = 1 << 29
"""Push code of a box move: BOX_MOVE_FLAG | from square << MACRO_SHIFT | (the square the box
ends on)*4 + direction of the last push."""
TABLE_SLOTS_PER_NODE = 4
HEAP_ENTRIES_PER_NODE = 2


class Nodes(NamedTuple):
    """The node arrays of one search (numba takes it as a tuple)."""

    boxes: np.ndarray      # int16[node, box]: sorted box squares
    player: np.ndarray     # int16[node]: normalised (push metric) or exact player square
    hash: np.ndarray       # uint64[node]: Zobrist key of boxes and player
    g: np.ndarray          # int64[node]: cost of the best path found so far
    h: np.ndarray          # int64[node]: bound (with the fast modes' penalties)
    parent: np.ndarray     # int32[node]: parent node, -1 for the start
    push: np.ndarray       # int32[node]: push code of the arc from the parent
    closed: np.ndarray     # uint8[node]: expanded
    table: np.ndarray      # int32[TABLE_SLOTS_PER_NODE * capacity]: node or EMPTY_SLOT
    heap_f: np.ndarray     # int64[HEAP_ENTRIES_PER_NODE * capacity]
    heap_g: np.ndarray     # int64[HEAP_ENTRIES_PER_NODE * capacity]
    heap_node: np.ndarray  # int32[HEAP_ENTRIES_PER_NODE * capacity]


N_PER_NODE = 8
"""The first eight arrays are per node; the table is rebuilt and the heap copied on growth."""


def node_store(n_boxes: int, capacity: int) -> Nodes:
    """Empty node arrays for ``capacity`` nodes."""
    heap = HEAP_ENTRIES_PER_NODE * capacity
    return Nodes(np.zeros((capacity, n_boxes), dtype=np.int16),
                 np.zeros(capacity, dtype=np.int16), np.zeros(capacity, dtype=np.uint64),
                 np.zeros(capacity, dtype=np.int64), np.zeros(capacity, dtype=np.int64),
                 np.zeros(capacity, dtype=np.int32), np.zeros(capacity, dtype=np.int32),
                 np.zeros(capacity, dtype=np.uint8),
                 np.full(TABLE_SLOTS_PER_NODE * capacity, EMPTY_SLOT, dtype=np.int32),
                 np.zeros(heap, dtype=np.int64), np.zeros(heap, dtype=np.int64),
                 np.zeros(heap, dtype=np.int32))


def grown_array(a: np.ndarray, size: int, used: int) -> np.ndarray:
    """A copy of ``a`` with ``size`` rows, the first ``used`` kept, the rest zero."""
    out = np.zeros((size,) + a.shape[1:], dtype=a.dtype)
    out[:used] = a[:used]
    return out


def grown_store(nodes: Nodes, n_nodes: int, heap_size: int) -> Nodes:
    """The node store with twice the capacity: nodes and open entries kept, table rebuilt."""
    new = 2 * nodes.boxes.shape[0]
    per_node = tuple(grown_array(a, new, n_nodes) for a in nodes[:N_PER_NODE])
    heap = tuple(grown_array(a, HEAP_ENTRIES_PER_NODE * new, heap_size)
                 for a in (nodes.heap_f, nodes.heap_g, nodes.heap_node))
    table = np.full(TABLE_SLOTS_PER_NODE * new, EMPTY_SLOT, dtype=np.int32)
    rebuild_table(table, nodes.hash, n_nodes)
    return Nodes(*per_node, table, *heap)


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
def open_node(nodes: Nodes, n_nodes: int, heap_size: int, parent: int, child: np.ndarray,
              child_player: int, child_key: np.uint64, child_g: int, h: int, push_code: int,
              weight: int) -> int:
    """Store a new state as node ``n_nodes`` and open it with f = g + weight*h; returns the
    new heap size."""
    for k in range(child.shape[0]):
        nodes.boxes[n_nodes, k] = child[k]
    nodes.player[n_nodes] = child_player
    nodes.hash[n_nodes] = child_key
    nodes.g[n_nodes] = child_g
    nodes.h[n_nodes] = h
    nodes.parent[n_nodes] = parent
    nodes.push[n_nodes] = push_code
    nodes.closed[n_nodes] = 0
    table_insert(nodes.table, child_key, n_nodes)
    return heap_push(nodes.heap_f, nodes.heap_g, nodes.heap_node, heap_size,
                     child_g + weight * h, child_g, n_nodes)


@njit(cache=True)
def reopen_node(nodes: Nodes, found: int, heap_size: int, parent: int, child_g: int,
                push_code: int, weight: int) -> int:
    """A stored state reached again: when the new path is cheaper and the node is still
    open, take it (new parent, push, g) and open the node again; returns the new heap size,
    or -1 when the path was no better (a duplicate)."""
    if child_g < nodes.g[found] and not nodes.closed[found]:
        nodes.g[found] = child_g
        nodes.parent[found] = parent
        nodes.push[found] = push_code
        return heap_push(nodes.heap_f, nodes.heap_g, nodes.heap_node, heap_size,
                         child_g + weight * nodes.h[found], child_g, found)
    return -1
