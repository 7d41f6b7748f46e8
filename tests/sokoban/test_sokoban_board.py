"""Board precomputation and deadlocks: dead squares, side-aware push costs, freeze, bound."""

from __future__ import annotations

import numpy as np
import pytest

from robocell.sokoban.board import (
    UNREACHABLE,
    build_board,
    joined_around,
    region_after_move,
    region_scan,
)
from robocell.sokoban.bounds import (
    matching_lower_bound,
    matching_scratch,
    matching_update,
    reachable_sides,
)
from robocell.sokoban.box_moves import block_scratch, edge_blocks
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


CORRIDOR = """\
#########
#@ $    #
### #####
  #.#
  ###"""


def told(box, target, region_min, neighbours, occupied, mark, blocks=None):
    """``region_after_move`` on a region marked 1, by the ring test or by ``blocks``."""
    use_blocks = blocks is not None
    if blocks is None:
        blocks = np.zeros(4 * len(occupied), dtype=np.int64)
    return region_after_move(box, target, region_min, neighbours, occupied, mark, 1, blocks,
                             use_blocks)


def test_region_after_move_is_told_without_a_walk_only_when_nothing_is_cut():
    board = board_of(CORRIDOR)
    n = board.n_squares
    occupied = np.zeros(n, dtype=np.bool_)
    box = board.square(1, 3)
    occupied[box] = True
    mark = np.zeros(n, dtype=np.int32)
    queue = np.zeros(n, dtype=np.int32)
    region_min = region_scan(board.start_player, board.neighbours, occupied, mark, 1, None, queue)
    assert region_min == board.square(1, 1)
    # A corridor square blocked cuts the corridor: its free neighbours are not joined.
    assert not joined_around(board.square(1, 5), board.neighbours, occupied)
    # The box moved onto row 1, column 2 (in the player's region): its old square joins the
    # region to the squares beyond it, so the region must be walked.
    moved = occupied.copy()
    moved[box] = False
    moved[board.square(1, 2)] = True
    assert told(box, board.square(1, 2), region_min, board.neighbours, moved, mark) == -1
    # Pushed right into the corridor's far part (not in the region): a walk too.
    moved = occupied.copy()
    moved[box] = False
    moved[board.square(1, 5)] = True
    assert told(box, board.square(1, 5), region_min, board.neighbours, moved, mark) == -1
    # A box in an open room: moving it one square leaves one region, told at once.
    room = board_of(ROOM)
    rn = room.n_squares
    occupied = np.zeros(rn, dtype=np.bool_)
    box = room.square(2, 3)
    occupied[box] = True
    mark = np.zeros(rn, dtype=np.int32)
    region_min = region_scan(room.start_player, room.neighbours, occupied, mark, 1, None,
                             np.zeros(rn, dtype=np.int32))
    target = room.square(2, 4)
    occupied[box] = False
    occupied[target] = True
    assert joined_around(target, room.neighbours, occupied)
    assert told(box, target, region_min, room.neighbours, occupied, mark) == region_min


def test_region_after_move_agrees_with_a_walk_on_random_positions(xsokoban):
    rng = np.random.default_rng(7)
    n_told = 0
    told_by_blocks = 0
    for level in load_levels(xsokoban)[:30]:
        board = build_board(level)
        neighbours = board.neighbours
        n = board.n_squares
        queue = np.zeros(n, dtype=np.int32)
        for _ in range(200):
            boxes = rng.choice(n, size=int(rng.integers(1, max(2, n // 4))), replace=False)
            occupied = np.zeros(n, dtype=np.bool_)
            occupied[boxes] = True
            free = np.flatnonzero(~occupied)
            mark = np.zeros(n, dtype=np.int32)
            region_min = region_scan(int(rng.choice(free)), neighbours, occupied, mark, 1, None,
                                     queue)
            box = int(rng.choice(boxes))
            target = int(rng.choice(free))
            if not any(neighbours[box, d] >= 0 and mark[neighbours[box, d]] == 1
                       for d in range(4)):
                continue  # the player could not have pushed it
            occupied[box] = False
            occupied[target] = True
            got = told(box, target, region_min, neighbours, occupied, mark)
            # With the biconnected blocks of the board with the box's square free (how box
            # moves call it): exact where the ring of eight is only sufficient.
            occupied[target] = False
            scratch = block_scratch(n)
            edge_blocks(box, neighbours, occupied, scratch)
            occupied[target] = True
            by_blocks = told(box, target, region_min, neighbours, occupied, mark, scratch[2])
            if got >= 0:
                n_told += 1
                assert by_blocks == got
            if by_blocks >= 0:
                told_by_blocks += 1
                for pusher in neighbours[target]:
                    if pusher >= 0 and not occupied[pusher] and mark[pusher] == 1:
                        # The player beside the box after the move, on a square of the old
                        # region: its walk finds the region told.
                        assert region_scan(int(pusher), neighbours, occupied,
                                           np.zeros(n, dtype=np.int32), 1, None,
                                           queue) == by_blocks
    assert n_told > 500
    assert told_by_blocks > n_told
