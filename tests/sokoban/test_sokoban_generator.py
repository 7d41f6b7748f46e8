"""Generation by pulling: emitted levels are solvable in exactly their stated optimal length."""

from __future__ import annotations

import pytest

from robocell.sokoban.board import build_board
from robocell.sokoban.generator import generate
from robocell.sokoban.graph import build_graph
from robocell.sokoban.level import load_level
from robocell.sokoban.solver import METRIC_MOVES, solve


@pytest.mark.parametrize("number", (1, 3, 5, 20, 42))
def test_generated_levels_have_their_stated_optimal_length(microban, number):
    source = load_level(microban, number)
    result = generate(source, count=2, with_moves=True)
    assert result.complete and result.levels
    assert result.levels[0].pushes == result.max_depth
    for generated in result.levels:
        generated.level.validate()
        board = build_board(generated.level)
        assert board.level.walls == source.walls and board.level.goals == source.goals
        pushes = solve(board, timeout=60)
        assert pushes.solved and pushes.optimal and pushes.pushes == generated.pushes
        assert build_graph(board).solution_length == generated.pushes
        moves = solve(board, metric=METRIC_MOVES, timeout=60)
        assert moves.solved and moves.moves == generated.moves


def test_deepest_generated_level_is_at_least_as_hard_as_the_original(microban):
    source = load_level(microban, 5)
    original = solve(build_board(source)).pushes
    assert generate(source, count=1).levels[0].pushes >= original


def test_state_limit_still_gives_exact_lengths(microban):
    source = load_level(microban, 36)
    result = generate(source, count=1, max_states=2_000)
    assert not result.complete
    level = result.levels[0]
    assert solve(build_board(level.level), timeout=60).pushes == level.pushes
