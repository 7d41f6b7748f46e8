"""Board precomputation and deadlocks: dead squares, side-aware push costs, freeze, bound."""

from __future__ import annotations

import numpy as np
import pytest

from robocell.sokoban.board import UNREACHABLE, build_board
from robocell.sokoban.bounds import (
    matching_lower_bound,
    matching_scratch,
    matching_update,
    reachable_sides,
)
from robocell.sokoban.deadlocks import freeze_deadlock_after_push
from robocell.sokoban.level import load_levels, parse_levels
from robocell.sokoban.solver import solve

ROOM = """\
#######
#@    #
#  $  #
#    .#
#######"""


def board_of(text: str):
    return build_board(parse_levels(text)[0])


def test_corners_and_walls_without_goals_are_dead():
    board = board_of(ROOM)
    dead = {board.name(s) for s in np.flatnonzero(board.dead)}
    assert {"row 2, column 2", "row 2, column 6", "row 4, column 2"} <= dead
    assert "row 4, column 6" not in dead          # the goal itself
    assert "row 4, column 3" not in dead          # along the goal's wall
    assert "row 2, column 4" in dead              # top wall, no goal on it
    goal = int(board.goal_squares[0])
    assert board.push_distance[0, goal] == 0
    assert board.push_distance[0, board.square(2, 3)] == 3   # one down, two right


def test_push_cost_knows_which_sides_the_player_can_reach():
    # The box sits in front of a one-square pocket: it could go down only if the player
    # were in the pocket, which it can never enter while the box is there.
    text = """\
#####
## ##
# $ #
#   #
# . #
##@##
#####"""
    board = board_of(text)
    box = board.square(2, 2)
    assert board.push_distance[0, box] == 2        # lone box, player anywhere: 2 pushes
    masks = np.zeros(1, dtype=np.int64)
    boxes = np.array([box], dtype=np.int16)
    reachable_sides(boxes, board.square(5, 2), board.neighbours, board.region_with_box, masks)
    assert masks[0] & 1 == 0                       # the pocket above is out of reach
    bound = matching_lower_bound(boxes, masks, board.push_cost, matching_scratch(1))
    assert bound >= UNREACHABLE                    # so the box can never reach the goal
    assert solve(board).status == "no solution"


@pytest.mark.slow
def test_freeze_deadlock_of_a_block_against_a_wall():
    board = board_of("""\
######
#@   #
#    #
#..$$#
######""")
    occupied = np.zeros(board.n_squares, dtype=np.bool_)
    for r, c in ((2, 2), (2, 3)):
        occupied[board.square(r, c)] = True
    fixed = np.zeros(board.n_squares, dtype=np.bool_)
    stack = np.zeros((board.n_squares + 1, 3), dtype=np.int64)
    # Two boxes side by side in the open are not frozen (each can still move up or down).
    assert not freeze_deadlock_after_push(board.square(2, 2), board.neighbours, occupied,
                                          board.dead, board.is_goal, fixed, stack)
    # A 2x2 block of boxes off goal is frozen.
    for r, c in ((1, 2), (1, 3)):
        occupied[board.square(r, c)] = True
    assert freeze_deadlock_after_push(board.square(1, 2), board.neighbours, occupied,
                                      board.dead, board.is_goal, fixed, stack)
    assert not fixed.any()
    # A box against the right wall with dead squares above and below is frozen too.
    occupied[:] = False
    occupied[board.square(2, 4)] = True
    assert freeze_deadlock_after_push(board.square(2, 4), board.neighbours, occupied,
                                      board.dead, board.is_goal, fixed, stack)


def test_bound_is_admissible_at_the_start(microban):
    from robocell.sokoban.level import load_levels

    for level in load_levels(microban)[:40]:
        result = solve(build_board(level), timeout=30)
        assert result.solved and result.lower_bound <= result.pushes


def test_the_matching_updated_for_moved_boxes_equals_the_full_matching(xsokoban):
    # Random positions of XSokoban 1-20: one box moved to a random live square and some side
    # masks changed; the incremental update must give exactly the full matching's bound.
    rng = np.random.default_rng(7)
    compared = 0
    for level in load_levels(xsokoban)[:20]:
        board = build_board(level)
        n = board.n_boxes
        live = np.flatnonzero(~board.dead)
        base, scratch, check = (matching_scratch(n) for _ in range(3))
        for _ in range(60):
            boxes = rng.choice(live, n, replace=False).astype(np.int16)
            base_masks = rng.integers(0, 16, n).astype(np.int64)
            matching_lower_bound(boxes, base_masks, board.push_cost, base)
            moved = int(rng.integers(n))
            free = np.setdiff1d(live, boxes)
            boxes[moved] = free[rng.integers(len(free))]
            masks = base_masks.copy()
            for k in rng.choice(n, int(rng.integers(0, 3)), replace=False):
                masks[k] = rng.integers(0, 16)
            full = matching_lower_bound(boxes, masks, board.push_cost, check)
            assert matching_update(boxes, masks, base_masks, moved, board.push_cost, base,
                                   scratch) == full
            compared += full < UNREACHABLE
    assert compared > 150   # feasible ones (many random positions have no matching)
