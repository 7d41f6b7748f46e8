"""Solver: Microban 1 move-optimal, push-optimality against exhaustive search, fast mode."""

from __future__ import annotations

import pytest

from robocell.sokoban.board import build_board
from robocell.sokoban.graph import GraphTooLarge, build_graph
from robocell.sokoban.level import Level, load_level, load_levels, parse_levels
from robocell.sokoban.lurd import LURD_DELTAS, replay
from robocell.sokoban.rooms import NO_ROOM, goal_rooms
from robocell.sokoban.solver import (
    METRIC_MOVES,
    METRIC_PUSHES,
    ROOM_GOAL_DEPTH,
    feature_depth,
    solve,
)

CROSS_CHECK_MAX_STATES = 300_000
"""Levels whose full push graph has at most this many states are checked against BFS."""
BOXOBAN_CROSS_CHECK_LEVELS = 40
MOVE_CHECK_LEVELS = (1, 2, 3, 4, pytest.param(5, marks=pytest.mark.slow), 9, 17, 21, 30)


def test_microban_1_move_optimal_is_33_moves_8_pushes(microban):
    level = load_level(microban, 1)
    result = solve(build_board(level), metric=METRIC_MOVES)
    assert result.solved and result.optimal
    assert (result.moves, result.pushes) == (33, 8)
    check = replay(level, result.lurd)
    assert check.solved and (check.moves, check.pushes) == (33, 8)


def test_microban_1_push_optimal_is_8_pushes(microban):
    result = solve(build_board(load_level(microban, 1)), metric=METRIC_PUSHES)
    assert result.solved and result.optimal and result.pushes == 8


def _cross_check(levels) -> int:
    checked = 0
    for level in levels:
        board = build_board(level)
        try:
            graph = build_graph(board, max_states=CROSS_CHECK_MAX_STATES)
        except GraphTooLarge:
            continue
        result = solve(board, metric=METRIC_PUSHES, timeout=60)
        assert result.solved and result.optimal, level.index
        assert result.pushes == graph.solution_length, f"level {level.index}"
        assert replay(level, result.lurd).solved
        checked += 1
    return checked


@pytest.mark.slow
def test_push_optimal_matches_exhaustive_breadth_first_search_microban(microban):
    """Every Microban level whose complete push graph has at most CROSS_CHECK_MAX_STATES
    states: the solver's push count must equal the BFS distance from start to a goal state."""
    assert _cross_check(load_levels(microban)) >= 120


@pytest.mark.slow
def test_push_optimal_matches_exhaustive_breadth_first_search_boxoban(boxoban_hard):
    levels = load_levels(boxoban_hard)[:BOXOBAN_CROSS_CHECK_LEVELS]
    assert _cross_check(levels) >= BOXOBAN_CROSS_CHECK_LEVELS // 2


def _bfs_fewest_moves(level: Level) -> tuple[int, int]:
    """Fewest moves (then pushes) by plain BFS over (player, boxes) with single steps."""
    walls, goals = level.walls, frozenset(level.goals)
    start = (level.player, frozenset(level.boxes), 0)
    seen = {start[:2]: 0}
    layer = [start]
    moves = 0
    while layer:
        best = [p for _, b, p in layer if b == goals]
        if best:
            return moves, min(best)
        moves += 1
        nxt: dict[tuple, int] = {}
        for player, boxes, pushes in layer:
            for dr, dc in LURD_DELTAS.values():
                t = (player[0] + dr, player[1] + dc)
                if t in walls:
                    continue
                p2, b2 = pushes, boxes
                if t in boxes:
                    beyond = (t[0] + dr, t[1] + dc)
                    if beyond in walls or beyond in boxes:
                        continue
                    b2 = boxes - {t} | {beyond}
                    p2 += 1
                key = (t, b2)
                if key in seen and seen[key] < moves:
                    continue
                if key not in nxt or nxt[key] > p2:
                    nxt[key] = p2
                seen[key] = moves
        layer = [(p, b, n) for (p, b), n in nxt.items()]
    raise AssertionError("unsolvable")


@pytest.mark.parametrize("number", MOVE_CHECK_LEVELS)
def test_move_optimal_matches_breadth_first_search_over_single_moves(microban, number):
    level = load_level(microban, number)
    result = solve(build_board(level), metric=METRIC_MOVES, timeout=60)
    assert result.solved and result.optimal
    assert (result.moves, result.pushes) == _bfs_fewest_moves(level)


def test_fast_mode_solves_with_a_valid_possibly_longer_solution(microban):
    level = load_level(microban, 36)
    fast = solve(build_board(level), weight=5, timeout=60)
    optimal = solve(build_board(level), timeout=60)
    assert fast.solved and not fast.optimal and optimal.optimal
    assert replay(level, fast.lurd).solved
    assert fast.pushes >= optimal.pushes == 59


def test_unsolvable_level_is_proven_unsolvable():
    (level,) = parse_levels("######\n#$@ .#\n#  $.#\n######")   # a box in a corner
    board = build_board(level)
    result = solve(board)
    assert result.status == "no solution" and result.optimal
    assert build_graph(board).solution_length is None
    (level,) = parse_levels("#######\n#@    #\n# $#  #\n#  .$ #\n#.    #\n#######")
    board = build_board(level)
    result = solve(board)
    assert result.solved and result.pushes == build_graph(board).solution_length


def test_timeout_is_reported_not_hidden(xsokoban):
    result = solve(build_board(load_level(xsokoban, 2)), timeout=0.5)
    assert result.status == "timeout" and not result.solved and result.expanded > 0


def test_already_solved_level_needs_no_moves():
    (level,) = parse_levels("#####\n#@* #\n#####")
    result = solve(build_board(level), metric=METRIC_MOVES)
    assert result.solved and result.lurd == "" and result.moves == 0


def test_boxoban_hard_levels_solve_optimally(boxoban_hard):
    for level in load_levels(boxoban_hard)[:20]:
        result = solve(build_board(level), timeout=30)
        assert result.solved and result.optimal and replay(level, result.lurd).solved


def test_fast_mode_sees_the_goal_when_the_last_push_cuts_off_a_free_square():
    # Filling the goal leaves the square behind it a free area of its own: the fast modes'
    # free-area penalty must not keep the solved position from counting as solved.
    (level,) = parse_levels("#######\n#@ $. #\n#######")
    for weight, features in ((2, False), (100, False), (2, True)):
        result = solve(build_board(level), weight=weight, timeout=10, features=features)
        assert result.solved and result.pushes == 1 and replay(level, result.lurd).solved


def test_fast_mode_solves_xsokoban_7_quickly(xsokoban):
    # Before the solved-position fix the greedy search ran past this level's solution for
    # over a million expansions (its last goal leaves a free pocket behind it).
    level = load_level(xsokoban, 7)
    result = solve(build_board(level), weight=100, timeout=30)
    assert result.solved and replay(level, result.lurd).solved
    assert result.expanded < 100_000


@pytest.mark.parametrize("number", [pytest.param(8, marks=pytest.mark.slow), 60])
def test_feature_search_solves_a_level_weighted_a_star_does_not(xsokoban, number):
    # XSokoban 8 and 60: weighted A* (2 or 3) and greedy search time out at 60 s on them; the
    # feature search takes a few seconds.
    level = load_level(xsokoban, number)
    result = solve(build_board(level), weight=2, features=True, packing=True, timeout=120)
    assert result.solved and not result.optimal and replay(level, result.lurd).solved
    assert result.expanded < 1_000_000


@pytest.mark.slow
def test_feature_search_without_macros_solves_microban_153(microban):
    # The goal room's macros cut off every solution of this level (the search with them runs
    # out of positions), and the other modes time out; cells without macros do not.
    level = load_level(microban, 153)
    with_macros = solve(build_board(level), weight=2, features=True, timeout=60)
    assert with_macros.status == "exhausted" and not with_macros.optimal
    result = solve(build_board(level), weight=2, features=True, macros=False, timeout=120)
    assert result.solved and replay(level, result.lurd).solved


def test_feature_search_proves_an_unsolvable_level_unsolvable():
    (level,) = parse_levels("######\n#$@ .#\n#  $.#\n######")   # a box in a corner
    result = solve(build_board(level), weight=2, features=True, macros=False)
    assert result.status == "no solution"
    with pytest.raises(ValueError, match="fast push mode"):
        solve(build_board(level), features=True)


def test_packing_feature_counts_goal_room_boxes_as_packed(xsokoban):
    # Boxes reach a goal room's goals only by its macros, in the room's own order: the
    # packing feature must count them, whatever the depths of the room's goals.
    board = build_board(load_level(xsokoban, 8))
    rooms = goal_rooms(board)
    depth = feature_depth(board, rooms)
    in_room = (rooms.room_of != NO_ROOM) & board.is_goal
    assert in_room.sum() == board.n_boxes  # level 8: all 18 goals are in one room
    assert (depth[in_room] == ROOM_GOAL_DEPTH).all()
    assert (depth[~in_room] == board.goal_depth[~in_room]).all()
