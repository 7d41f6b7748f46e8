"""Hotspots: which box stands in another's way, and the push the hotspot advisor proposes."""

from __future__ import annotations

import numpy as np
import pytest

from robocell.sokoban.board import NO_SQUARE, UNREACHABLE, build_board
from robocell.sokoban.hotspots import base_pushes, hotspot_advice, lone_pushes, obstructed
from robocell.sokoban.level import load_level, parse_levels
from robocell.sokoban.lurd import replay
from robocell.sokoban.schedule import Stage, parse_schedule, solve_scheduled

# A one-wide corridor: the box in column 6 (1-based) stands between the one in column 4 and
# both goals; the other way round nothing is in the way.
CORRIDOR = """\
##########
#@ $ $ ..#
##########
"""


def _corridor():
    board = build_board(parse_levels(CORRIDOR)[0])
    n = board.n_squares
    return board, np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(n, np.int32)


def test_lone_pushes_count_pushes_to_the_nearest_goal_around_one_obstacle():
    board, dist, queue, via = _corridor()
    left, right = board.square(1, 3), board.square(1, 5)
    args = (board.neighbours, board.is_goal, dist, queue, via)
    assert lone_pushes(left, NO_SQUARE, *args) == 4
    assert lone_pushes(left, right, *args) == UNREACHABLE
    assert lone_pushes(right, left, *args) == 2
    # Past the first goal the obstacle leaves the box the nearer one: no longer in the way.
    assert lone_pushes(left, board.square(1, 8), *args) == 4


def test_the_shortest_path_marks_the_box_squares_and_the_pushers_squares():
    board, dist, queue, via = _corridor()
    on_path = np.zeros(board.n_squares, np.bool_)
    assert base_pushes(board.square(1, 3), board.neighbours, board.is_goal, dist, queue, via,
                       on_path) == 4
    assert sorted(np.flatnonzero(on_path)) == [board.square(1, c) for c in range(2, 8)]


def test_the_box_in_front_obstructs_the_one_behind_it_only():
    board, dist, queue, via = _corridor()
    boxes = np.array([board.square(1, 3), board.square(1, 5)], np.int16)
    on_path = np.zeros((2, board.n_squares), np.bool_)
    base = np.array([base_pushes(int(b), board.neighbours, board.is_goal, dist, queue, via,
                                 on_path[k]) for k, b in enumerate(boxes)], np.int32)
    assert list(base) == [4, 2]
    args = (board.neighbours, board.is_goal, dist, queue, via)
    assert obstructed(int(boxes[1]), 1, boxes, base, on_path, *args) == 1
    assert obstructed(int(boxes[0]), 0, boxes, base, on_path, *args) == 0


def test_the_advisor_proposes_moving_the_hotspot_out_of_the_way():
    """Children: the front box to the first goal (still in the way), to the far goal (out of
    the way), and the back box one square on (the hotspot stays)."""
    board, dist, queue, via = _corridor()
    s = board.square
    node_boxes = np.array([[s(1, 3), s(1, 5)], [s(1, 3), s(1, 7)], [s(1, 3), s(1, 8)],
                           [s(1, 4), s(1, 5)]], np.int16)
    node_h = np.array([6, 5, 6, 5], np.int32)
    scratch = (via, np.zeros(2, np.int32), np.zeros((2, board.n_squares), np.bool_))
    pick = hotspot_advice(0, 1, 4, node_boxes, node_h, board.neighbours, board.is_goal, dist,
                          queue, *scratch)
    assert pick == 2
    # With the front box already out of the way there is no hotspot and no advice.
    node_boxes[0] = [s(1, 3), s(1, 8)]
    assert hotspot_advice(0, 1, 2, node_boxes, node_h, board.neighbours, board.is_goal, dist,
                          queue, *scratch) == -1


def test_the_hotspot_flag_needs_the_feature_search():
    assert parse_schedule("2fomh/0:5") == [Stage(2, 5.0, packing=True, features=True,
                                                 heap_every=0, box_moves=True, hotspots=True)]
    assert str(parse_schedule("2fomh/0:5")[0]) == "2fomh/0:5"
    with pytest.raises(ValueError, match="needs f"):
        parse_schedule("2h:5")


def test_a_feature_search_with_the_hotspot_advisor_solves_and_replays(xsokoban):
    level = load_level(xsokoban, 1)
    result, _ = solve_scheduled(level, parse_schedule("2fomh/0:60"))
    assert result.solved
    assert replay(level, result.lurd).solved
