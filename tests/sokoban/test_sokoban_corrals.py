"""Corral deadlock search: every position it calls dead is dead in the exhaustive graph."""

from __future__ import annotations

import numpy as np
import pytest

from robocell.sokoban.board import Board, build_board, region_scan
from robocell.sokoban.corrals import (
    CORRAL_DEEP_MAX_BOXES,
    CORRAL_DEEP_NODES,
    CORRAL_MAX_BOXES,
    CORRAL_SEARCH_NODES,
    NO_CORRAL,
    corral_cache,
    corral_work,
    dead_corral,
    label_corrals,
    pi_corral,
)
from robocell.sokoban.graph import GraphTooLarge, build_graph
from robocell.sokoban.level import load_levels
from robocell.sokoban.lurd import replay
from robocell.sokoban.solver import solve

GRAPH_MAX_STATES = 20_000
LEVELS_CHECKED = 40


def _position_has_dead_corral(board: Board, boxes: np.ndarray, player: int,
                              cache: tuple[np.ndarray, np.ndarray],
                              limits: tuple[int, int] = (CORRAL_SEARCH_NODES, CORRAL_MAX_BOXES)
                              ) -> bool:
    n = board.n_squares
    occupied = np.zeros(n, dtype=np.bool_)
    occupied[boxes] = True
    mark = np.zeros(n, dtype=np.int32)
    queue = np.zeros(n, dtype=np.int32)
    region_scan(player, board.neighbours, occupied, mark, 1, np.zeros(n, dtype=np.int32), queue)
    label = np.zeros(n, dtype=np.int32)
    pi_corral(board.neighbours, occupied, mark, 1, board.is_goal, label,
              np.full(n, -1, dtype=np.int64), 0, queue)
    if (label == NO_CORRAL).all():
        return False
    dead, _, _ = dead_corral(player, board.neighbours, occupied, mark, 1, label, board.dead,
                             board.is_goal, board.zobrist_box, board.zobrist_player, *cache,
                             corral_work(n, board.n_boxes, *limits), queue,
                             np.zeros(n, dtype=np.bool_),
                             np.zeros((n + 1, 3), dtype=np.int64))
    return bool(dead)


@pytest.mark.parametrize("limits", [(CORRAL_SEARCH_NODES, CORRAL_MAX_BOXES),
                                    (CORRAL_DEEP_NODES, CORRAL_DEEP_MAX_BOXES)])
@pytest.mark.slow
def test_corral_deadlocks_are_dead_in_the_exhaustive_graph(microban, limits):
    """Over every reachable position of small Microban levels: no live position is called
    dead, and the search does find dead ones (else it would prove nothing) - with the
    default limits and the deep search's."""
    found_dead = 0
    for level in load_levels(microban)[:LEVELS_CHECKED]:
        board = build_board(level)
        try:
            graph = build_graph(board, max_states=GRAPH_MAX_STATES)
        except GraphTooLarge:
            continue
        cache = corral_cache(12)
        live = graph.live
        for state in range(graph.n_states):
            if _position_has_dead_corral(board, graph.boxes[state], int(graph.player[state]),
                                         cache, limits):
                assert not live[state], (level.index, board.render(graph.boxes[state],
                                                                   int(graph.player[state])))
                found_dead += 1
    assert found_dead > 0


FAST_TIMEOUT_S = 30.0


def test_corral_deadlocks_let_the_fast_mode_solve_xsokoban_5(xsokoban):
    """XSokoban 5 (12 boxes): without corral deadlock search the fast mode wandered through
    1.7 million positions in 60 s; with it the level falls within seconds. Most dead corrals
    are caught when the push that closes them is generated, so they never enter the table."""
    level = load_levels(xsokoban)[4]
    result = solve(build_board(level), weight=100, timeout=FAST_TIMEOUT_S)
    assert result.solved and result.corral_child_deadlocks > 0
    assert result.corral_child_deadlocks > result.corral_deadlocks
    assert result.corral_child_checks < result.generated
    assert replay(level, result.lurd).solved


@pytest.mark.slow
def test_the_deep_corral_search_solves_xsokoban_24(xsokoban):
    """XSokoban 24: the default schedule, with the default corral limits, leaves it unsolved at
    60 s; with the deep limits (4 096 states, 12 boxes) this stage solves it in about 6 s."""
    level = load_levels(xsokoban)[23]
    result = solve(build_board(level), weight=2, features=True, packing=True, box_moves=True,
                   heap_every=0, deep_corrals=True, timeout=90)
    assert result.solved and replay(level, result.lurd).solved
    assert result.corral_deadlocks + result.corral_child_deadlocks > 0


def test_label_corrals_numbers_the_corrals_as_pi_corral_does(xsokoban):
    rng = np.random.default_rng(3)
    for level in load_levels(xsokoban)[:20]:
        board = build_board(level)
        n = board.n_squares
        for _ in range(50):
            occupied = np.zeros(n, dtype=np.bool_)
            occupied[rng.choice(n, size=int(rng.integers(1, max(2, n // 3))), replace=False)] = True
            free = np.flatnonzero(~occupied)
            mark = np.zeros(n, dtype=np.int32)
            queue = np.zeros(n, dtype=np.int32)
            region_scan(int(rng.choice(free)), board.neighbours, occupied, mark, 1, None, queue)
            expected = np.zeros(n, dtype=np.int32)
            pi_corral(board.neighbours, occupied, mark, 1, board.is_goal, expected,
                      np.full(n, -1, dtype=np.int64), 0, queue)
            got = np.zeros(n, dtype=np.int32)
            label_corrals(board.neighbours, occupied, mark, 1, got, queue)
            assert (got == expected).all()
