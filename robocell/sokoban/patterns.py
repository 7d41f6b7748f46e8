"""Deadlock patterns learned during a search: box sets proven dead by a corral deadlock search.

A corral deadlock search that finds no way to put a set S of boxes on goals, with every
other box taken off the board and the player in region R (of the board holding only S), has
proven more than that one position dead: every position that holds all of S and has its player
somewhere in R is dead too (restricted to the pushes of S, a solution of such a position
would solve the smaller problem, since fewer boxes only free the player's walks). So each
such result is kept as a pattern: its box squares and R as a bitset over squares, filed under
each of its box squares. A push to square t is then checked only against the patterns filed
under t (the ones it can complete), which costs a few array reads per pattern.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.sokoban.board import region_scan
from robocell.sokoban.corrals import CORRAL_DEEP_MAX_BOXES

MAX_PATTERNS = 1 << 16
"""Patterns kept per search; later ones are dropped (the table only ever prunes)."""
WORD_BITS = 64
NO_ENTRY = -1
(PC_PATTERNS, PC_ENTRIES) = range(2)


def pattern_table(n_squares: int, capacity: int = MAX_PATTERNS) -> tuple:
    """An empty pattern table for a board of ``n_squares``: box lists, box counts, region
    bitsets, and per square a linked list of the patterns holding a box there."""
    words = (n_squares + WORD_BITS - 1) // WORD_BITS
    return (np.full((capacity, CORRAL_DEEP_MAX_BOXES), -1, dtype=np.int16),
            np.zeros(capacity, dtype=np.int8),
            np.zeros((capacity, words), dtype=np.uint64),
            np.full(n_squares, NO_ENTRY, dtype=np.int32),
            np.zeros(capacity * CORRAL_DEEP_MAX_BOXES, dtype=np.int32),
            np.full(capacity * CORRAL_DEEP_MAX_BOXES, NO_ENTRY, dtype=np.int32),
            np.zeros(2, dtype=np.int64))


@njit(cache=True)
def pattern_add(table: tuple, boxes: np.ndarray, n_boxes: int, region_mark: np.ndarray,
                stamp: int) -> bool:
    """File a dead box set ``boxes[:n_boxes]`` with its player region (the squares where
    ``region_mark == stamp``). Returns False when the table is full."""
    pat_boxes, pat_n, pat_region, head, entry_pattern, entry_next, counts = table
    p = counts[PC_PATTERNS]
    if p >= pat_boxes.shape[0] or n_boxes > pat_boxes.shape[1]:
        return False
    counts[PC_PATTERNS] = p + 1
    pat_n[p] = n_boxes
    for w in range(pat_region.shape[1]):
        pat_region[p, w] = 0
    for s in range(region_mark.shape[0]):
        if region_mark[s] == stamp:
            pat_region[p, s // WORD_BITS] |= np.uint64(1) << np.uint64(s % WORD_BITS)
    for k in range(n_boxes):
        s = boxes[k]
        pat_boxes[p, k] = s
        e = counts[PC_ENTRIES]
        counts[PC_ENTRIES] = e + 1
        entry_pattern[e] = p
        entry_next[e] = head[s]
        head[s] = e
    return True


@njit(cache=True)
def pattern_match(table: tuple, target: int, origin: int, occupied: np.ndarray,
                  player: int) -> bool:
    """Does the position after pushing the box on ``origin`` to ``target`` (``occupied``
    shows the position before the push) hold a learned pattern that has a box on ``target``,
    with the player (any square of its region, e.g. the normalised one) in its region?"""
    pat_boxes, pat_n, pat_region, head, entry_pattern, entry_next, counts = table
    bit = np.uint64(1) << np.uint64(player % WORD_BITS)
    word = player // WORD_BITS
    e = head[target]
    while e != NO_ENTRY:
        p = entry_pattern[e]
        e = entry_next[e]
        if pat_region[p, word] & bit == 0:
            continue
        whole = True
        for k in range(pat_n[p]):
            s = pat_boxes[p, k]
            if s != target and (s == origin or not occupied[s]):
                whole = False
                break
        if whole:
            return True
    return False


@njit(cache=True)
def learn_dead_corral(table: tuple, work: tuple, n_sub: int, player: int,
                      neighbours: np.ndarray, queue: np.ndarray) -> bool:
    """File the box set a corral deadlock search just proved dead (``work[0][:n_sub]`` of
    ``corrals.dead_corral``'s scratch) with the player's region on the board holding only
    those boxes. Returns False when the table is full."""
    sub_boxes, sub_occupied, sub_mark, _, counter = work[:5]
    counter[0] += 2 * work[6].shape[0] + 2  # a stamp no search has used
    for k in range(n_sub):
        sub_occupied[sub_boxes[k]] = True
    region_scan(player, neighbours, sub_occupied, sub_mark, counter[0], None, queue)
    for k in range(n_sub):
        sub_occupied[sub_boxes[k]] = False
    return pattern_add(table, sub_boxes, n_sub, sub_mark, counter[0])
