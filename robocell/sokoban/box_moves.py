"""Box moves: every place one box can be pushed to with the other boxes left where they are.

A box move is one arc of the fast search (``solve(box_moves=True)``): the box goes, by as
many pushes as it takes, to any square and side it can reach. The places come from a
breadth-first search over (box square, direction of the last push); after each push the
player stands next to the box, and the sides it can walk to are read from the biconnected
blocks of the free squares (Tarjan's low-link numbering, ``edge_blocks``), one labelling per
box instead of a flood fill per state.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.sokoban.corrals import NO_CORRAL
from robocell.sokoban.rooms import NO_ROOM


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
