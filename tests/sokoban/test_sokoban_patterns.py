"""Learned deadlock patterns and bipartite deadlocks: what they call dead is dead."""

from __future__ import annotations

import numpy as np
import pytest

from robocell.sokoban.board import Board, build_board
from robocell.sokoban.bounds import (
    INFEASIBLE,
    matching_lower_bound,
    matching_scratch,
    reachable_sides,
)
from robocell.sokoban.graph import GraphTooLarge, build_graph
from robocell.sokoban.level import load_levels, parse_levels
from robocell.sokoban.lurd import replay
from robocell.sokoban.patterns import (
    PC_PATTERNS,
    WORD_BITS,
    pattern_add,
    pattern_match,
    pattern_table,
)
from robocell.sokoban.solver import solve

GRAPH_MAX_STATES = 50_000
LEVELS_SEARCHED = 80
FAST_WEIGHT_FOR_LEARNING = 100
SEARCH_TIMEOUT_S = 10.0

# Two boxes against the bottom wall can each reach only the goal in the pocket below:
# each alone is fine, together they are dead (a bipartite deadlock, no box frozen).
POCKET_LEVEL = """#######
#.    #
# $@$ #
#     #
###.###
  ###
"""


def _bound(board: Board, boxes: list[int], player: int) -> int:
    sorted_boxes = np.array(sorted(boxes), dtype=np.int16)
    masks = np.zeros(len(boxes), dtype=np.int64)
    reachable_sides(sorted_boxes, player, board.neighbours, board.region_with_box, masks)
    return matching_lower_bound(sorted_boxes, masks, board.push_cost,
                                matching_scratch(len(boxes)))


def test_matching_bound_is_infinite_for_a_bipartite_deadlock():
    (level,) = parse_levels(POCKET_LEVEL)
    board = build_board(level)

    def sq(row: int, col: int) -> int:
        return int(board.index_grid[row, col])

    assert not board.dead[sq(3, 2)] and not board.dead[sq(3, 4)]
    assert _bound(board, [sq(3, 2), sq(2, 4)], sq(2, 3)) < INFEASIBLE
    assert _bound(board, [sq(3, 2), sq(3, 4)], sq(2, 3)) == INFEASIBLE
    (start_dead,) = parse_levels(POCKET_LEVEL.replace("# $@$ #\n#     #",
                                                      "#  @  #\n# $ $ #"))
    result = solve(build_board(start_dead))
    assert result.status == "no solution" and result.expanded == 0


def test_pattern_matches_only_when_completed_with_the_player_in_its_region():
    (level,) = parse_levels(POCKET_LEVEL)
    board = build_board(level)
    n = board.n_squares
    table = pattern_table(n, capacity=4)
    a, b, c = 3, 7, 11
    region = np.zeros(n, dtype=np.int64)
    region[[0, 1, 2]] = 5
    assert pattern_add(table, np.array([a, b], dtype=np.int16), 2, region, 5)
    occupied = np.zeros(n, dtype=np.bool_)
    occupied[[a, c]] = True
    assert pattern_match(table, b, c, occupied, 1)        # c -> b completes {a, b}
    assert not pattern_match(table, b, c, occupied, 4)    # player outside the region
    assert not pattern_match(table, b, a, occupied, 1)    # a moved away: a is missing
    assert not pattern_match(table, c, a, occupied, 1)    # nothing filed under c


def _pattern_states(table: tuple, boxes: np.ndarray, player: np.ndarray) -> np.ndarray:
    """Which graph states hold some pattern of the table (all its boxes, player in region)."""
    pat_boxes, pat_n, pat_region = table[:3]
    hit = np.zeros(boxes.shape[0], dtype=bool)
    word = player // WORD_BITS
    shift = (player % WORD_BITS).astype(np.uint64)
    for p in range(int(table[-1][PC_PATTERNS])):
        holds = ((pat_region[p, word] >> shift) & np.uint64(1)).astype(bool)
        for s in pat_boxes[p, : pat_n[p]]:
            holds &= (boxes == s).any(axis=1)
        hit |= holds
    return hit


@pytest.mark.slow
def test_learned_patterns_are_dead_in_the_exhaustive_graph(microban):
    """Patterns learned while solving (optimal and greedy) the first Microban levels: no
    reachable state that holds one is live in the complete push graph."""
    checked = matched = 0
    for level in load_levels(microban)[:LEVELS_SEARCHED]:
        board = build_board(level)
        try:
            graph = build_graph(board, max_states=GRAPH_MAX_STATES)
        except GraphTooLarge:
            continue
        table = pattern_table(board.n_squares)
        optimal = solve(board, timeout=SEARCH_TIMEOUT_S, patterns=table)
        assert optimal.solved and optimal.pushes == graph.solution_length, level.index
        greedy = solve(board, weight=FAST_WEIGHT_FOR_LEARNING, timeout=SEARCH_TIMEOUT_S,
                       macros=False, patterns=table)
        assert greedy.solved and replay(level, greedy.lurd).solved, level.index
        if table[-1][PC_PATTERNS] == 0:
            continue
        hit = _pattern_states(table, graph.boxes, graph.player.astype(np.int64))
        assert not (hit & graph.live).any(), level.index
        checked += 1
        matched += int(hit.sum())
    assert checked >= 50 and matched > 0
