"""Box moves for the backward search: every place one box can be pulled to, the others left
where they are.

A box move is one arc of the backward search (``solve_reverse(box_moves=True)``): the box
goes, by as many pulls as it takes, to any square and side it can reach, as the forward
search's box moves push (``box_moves``). The places come from a breadth-first search over
(box square, direction of the last pull); after a pull the player stands one square beyond
the box, and the sides of the box it can walk to are read from the biconnected blocks of the
free squares (``box_moves.edge_blocks``), one labelling per box. The search keeps where each
place was reached from, so a solution's box moves are unrolled into single pulls again
(``pull_chain``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.sokoban.board import N_DIRS, Board, region_scan
from robocell.sokoban.box_moves import block_scratch, edge_blocks

(M_TARGET, M_DIR, M_RUN, M_FROM) = range(4)
"""Rows of a box move table: the box's square, the last pull's direction, the pulls, the
entry it was reached from (-1: the first pull)."""


@njit(cache=True)
def pull_scratch(n_squares: int) -> tuple:
    """Scratch of ``pull_reach``: the move table int64[4, 4n], the seen stamps int64[4n]
    and the biconnected-block scratch."""
    return (np.zeros((4, N_DIRS * n_squares), dtype=np.int64),
            np.zeros(N_DIRS * n_squares, dtype=np.int64), block_scratch(n_squares))


@njit(cache=True)
def _add_place(moves: np.ndarray, seen: np.ndarray, seen_stamp: int, tail: int, p: int,
               d: int, run: int, came_from: int) -> int:
    """Append the place (box on ``p``, last pull ``d``) to ``moves``, marked seen; returns
    the new count."""
    seen[p * N_DIRS + d] = seen_stamp
    moves[M_TARGET, tail], moves[M_DIR, tail] = p, d
    moves[M_RUN, tail], moves[M_FROM, tail] = run, came_from
    return tail + 1


@njit(cache=True)
def pull_reach(b: int, neighbours: np.ndarray, occupied: np.ndarray, reach: np.ndarray,
               region: int, dead: np.ndarray, moves: np.ndarray, seen: np.ndarray,
               seen_stamp: int, blocks: tuple) -> tuple[int, int]:
    """Every place the box on ``b`` can be pulled to with the other boxes left where they
    are, the player starting on the squares stamped ``region`` in ``reach``: breadth-first
    over (box square, direction of the last pull), each reached once with its fewest pulls.
    Fills the first entries of ``moves`` (rows ``M_TARGET``, ``M_DIR``, ``M_RUN``,
    ``M_FROM``) and returns (how many, the new ``seen`` stamp). A box is never pulled onto a
    dead square (``dead``: no start square is reached from it)."""
    seen_stamp += 1
    tail = 0
    for d in range(N_DIRS):
        p = neighbours[b, d]
        if p < 0 or reach[p] != region or dead[p]:
            continue
        q = neighbours[p, d]
        if q < 0 or occupied[q]:
            continue
        tail = _add_place(moves, seen, seen_stamp, tail, p, d, 1, -1)
    if tail == 0:
        return 0, seen_stamp
    occupied[b] = False
    edge_blocks(b, neighbours, occupied, blocks)
    block = blocks[2]
    head = 0
    while head < tail:
        s, d = moves[M_TARGET, head], moves[M_DIR, head]
        # The player stands beyond the box, on the next square in the pull's direction.
        player_block = block[s * N_DIRS + d]
        for d2 in range(N_DIRS):
            p = neighbours[s, d2]
            if (p < 0 or occupied[p] or dead[p] or block[s * N_DIRS + d2] != player_block
                    or seen[p * N_DIRS + d2] == seen_stamp):
                continue
            q = neighbours[p, d2]
            if q < 0 or occupied[q]:
                continue
            tail = _add_place(moves, seen, seen_stamp, tail, p, d2, moves[M_RUN, head] + 1,
                              head)
        head += 1
    occupied[b] = True
    return tail, seen_stamp


def pull_chain(board: Board, dead: np.ndarray, boxes: np.ndarray, player: int,
               moved_to: np.ndarray, last_pull: int) -> list[int]:
    """The single pulls of one box move, as push codes in the forward order (the box square
    before the push * 4 + direction): from the position ``boxes`` (player anywhere in the
    region of ``player``) the box missing from ``moved_to`` is pulled to the square of
    ``moved_to`` that ``boxes`` lacks (or a box around a loop back to its own square), the
    last pull being ``last_pull`` (square * 4 + direction)."""
    before = {int(x) for x in boxes}
    after = {int(x) for x in moved_to}
    s = last_pull // N_DIRS
    # A box may come back to its own square by a loop (the player ends elsewhere).
    (b,) = before - after if before != after else (s,)
    n = board.n_squares
    occupied = np.zeros(n, dtype=np.bool_)
    occupied[list(before)] = True
    reach = np.zeros(n, dtype=np.int32)
    region_scan(player, board.neighbours, occupied, reach, 1, None, np.empty(n, np.int32))
    moves, seen, blocks = pull_scratch(n)
    count, _ = pull_reach(b, board.neighbours, occupied, reach, 1, dead, moves, seen, 0,
                          blocks)
    found = [j for j in range(count) if moves[M_TARGET, j] * N_DIRS + moves[M_DIR, j]
             == last_pull]
    if after - before not in (set(), {s}) or not found:
        raise ValueError(f"box move {b} -> {s} (last pull {last_pull}) is not a box move of "
                         "this position")
    pushes = []
    j = found[0]
    while j >= 0:
        pushes.append(int(moves[M_TARGET, j]) * N_DIRS + (int(moves[M_DIR, j]) ^ 1))
        j = int(moves[M_FROM, j])
    return pushes
