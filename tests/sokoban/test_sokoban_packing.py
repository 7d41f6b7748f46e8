"""Packing order: every goal can be filled by a lone box once the goals before it are full."""

from __future__ import annotations

from collections import deque

import pytest

from robocell.sokoban.board import N_DIRS, NO_SQUARE, build_board
from robocell.sokoban.level import load_levels, parse_levels
from robocell.sokoban.lurd import replay
from robocell.sokoban.packing import NOT_A_GOAL, packing_depth, packing_layers, packing_order
from robocell.sokoban.solver import solve

CORRIDOR = """\
#########
#@ $ $..#
#       #
#########
"""


def _lone_box_pushes(board, starts, walls: set[int]) -> set[tuple[int, int]]:
    """Every (box square, player square) a lone box reaches by pushes from ``starts``
    ((box, player) pairs), ``walls`` blocked: a forward search independent of the pull one."""
    seen: set[tuple[int, int]] = set(starts)
    queue = deque(starts)
    while queue:
        box, player = queue.popleft()
        # The player walks round the box to every square of its region.
        region = {player}
        stack = [player]
        while stack:
            q = stack.pop()
            for d in range(N_DIRS):
                t = int(board.neighbours[q, d])
                if t != NO_SQUARE and t != box and t not in walls and t not in region:
                    region.add(t)
                    stack.append(t)
        for d in range(N_DIRS):
            behind = int(board.neighbours[box, d ^ 1])
            target = int(board.neighbours[box, d])
            if behind in region and target != NO_SQUARE and target not in walls:
                if (target, box) not in seen:
                    seen.add((target, box))
                    queue.append((target, box))
    return seen


def _start_reach(board) -> set[int]:
    """Squares some start box reaches, alone on the board."""
    starts = [(int(b), board.start_player) for b in board.start_boxes]
    return {box for box, _ in _lone_box_pushes(board, starts, set())}


def _fillable(board, goal: int, walls: set[int], sources: set[int] | None = None) -> bool:
    """Forward check: can a lone box on some square off the goals (of ``sources``, default
    all) be pushed onto ``goal`` (``walls``: goals already full), the player starting on any
    free square next to it?"""
    starts = []
    for s in range(board.n_squares):
        if board.is_goal[s] or s in walls or (sources is not None and s not in sources):
            continue
        for d in range(N_DIRS):
            p = int(board.neighbours[s, d])
            if p != NO_SQUARE and p not in walls:
                starts.append((s, p))
    return any(box == goal for box, _ in _lone_box_pushes(board, starts, walls))


def test_corridor_fills_the_far_goal_first():
    (level,) = parse_levels(CORRIDOR)
    board = build_board(level)
    far, near = board.square(1, 7), board.square(1, 6)
    assert packing_order(board) == [far, near]
    depth = packing_depth(board)
    assert depth[far] > depth[near] > 0
    assert depth[board.square(1, 1)] == NOT_A_GOAL


POCKET = """\
##########
#    #####
#  $ $ ..#
#@ $ $$..#
#    #.###
##########
"""


def test_pocket_layers_known_by_hand():
    """A 2x2 goal block at the end of a two-wide pocket, and a goal in a one-square dent
    below the pocket's mouth. With every goal full, the block's left column (player pulling
    to the left, two free squares behind) and the dent's goal (pulled up into the pocket)
    come out in the first round; the right column only once the left one is empty. So the
    right column is the deeper layer (2), the left column and the dent layer 1; the strict
    order of ``packing_depth`` gives the four first-round goals four different depths."""
    (level,) = parse_levels(POCKET)
    board = build_board(level)
    layers = packing_layers(board)
    right = [board.square(2, 8), board.square(3, 8)]
    first_round = [board.square(2, 7), board.square(3, 7), board.square(4, 6)]
    assert [int(layers[g]) for g in right] == [2, 2]
    assert [int(layers[g]) for g in first_round] == [1, 1, 1]
    assert layers[board.square(3, 1)] == NOT_A_GOAL
    assert len({int(packing_depth(board)[g]) for g in first_round}) == 3
    result = solve(board, weight=2, features=True, pack_layers=True, timeout=120)
    assert result.solved and replay(level, result.lurd).solved


def test_xsokoban_7_order_is_fillable_step_by_step(xsokoban):
    board = build_board(load_levels(xsokoban)[6])
    order = packing_order(board)
    assert sorted(order) == sorted(int(g) for g in board.goal_squares)
    for k, goal in enumerate(order):
        assert _fillable(board, goal, set(order[:k])), f"step {k}: {board.name(goal)}"
    # The goal right at the left entrance (row 8, column 9) is among the last ones filled,
    # the bottom-right corner among the first.
    assert order.index(board.square(7, 8)) >= len(order) - 4
    assert order.index(board.square(9, 10)) < 3


@pytest.mark.parametrize("index", [*range(1, 31), 50, 96, 105])
def test_microban_orders_are_fillable(microban, index):
    """Each goal in turn is fillable by a box coming from a square a start box can reach.
    An order that let boxes be pulled out to squares no box can be pushed to failed this on
    levels 10 and 50 (and XSokoban 41 and 88, below)."""
    board = build_board(load_levels(microban)[index - 1])
    order = packing_order(board)
    sources = _start_reach(board)
    for k, goal in enumerate(order):
        assert _fillable(board, goal, set(order[:k]), sources), f"step {k}: {board.name(goal)}"


@pytest.mark.parametrize("number", [41, 88])
def test_xsokoban_orders_are_fillable_from_where_the_boxes_are(xsokoban, number):
    board = build_board(load_levels(xsokoban)[number - 1])
    order = packing_order(board)
    sources = _start_reach(board)
    for k, goal in enumerate(order):
        assert _fillable(board, goal, set(order[:k]), sources), f"step {k}: {board.name(goal)}"


def test_packing_needs_a_fast_mode():
    (level,) = parse_levels(CORRIDOR)
    with pytest.raises(ValueError, match="fast mode"):
        solve(build_board(level), weight=1, packing=True)


def test_packing_mode_solution_replays(microban):
    level = load_levels(microban)[9]
    result = solve(build_board(level), weight=100, packing=True, timeout=20)
    assert result.solved and not result.optimal
    assert replay(level, result.lurd).solved


@pytest.mark.slow
def test_packing_layers_solve_xsokoban_37(xsokoban):
    """XSokoban 37, unsolved by the 61/90 schedule: the feature search with packing layers
    taking turns with the weight-2 heap solves it in under a thousand expansions (849 when
    measured); by the depth in the goal area it took about 40 000."""
    level = load_levels(xsokoban)[36]
    result = solve(build_board(level), weight=2, features=True, heap_every=2, box_moves=True,
                   packing=True, pack_layers=True, timeout=120)
    assert result.solved and replay(level, result.lurd).solved
    assert result.expanded < 5_000
