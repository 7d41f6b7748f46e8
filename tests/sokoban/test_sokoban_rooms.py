"""Goal rooms: entrances and packing orders found by retrograde analysis; macro solutions."""

from __future__ import annotations

import pytest

from robocell.sokoban.board import N_DIRS, build_board
from robocell.sokoban.level import load_level, parse_levels
from robocell.sokoban.lurd import replay
from robocell.sokoban.rooms import NO_ROOM, goal_rooms
from robocell.sokoban.solver import solve

ROOM_LEVEL = """\
########
#.. $  #
###  $ #
  #@   #
  ######
"""


def _replay_macros(board, rooms) -> None:
    """Carry one box after the other into each room by a macro from one of its entrance
    squares, checking every push is legal (the box moves onto a free square of the room)."""
    for r in range(rooms.n_rooms):
        entrances = [s for s in range(board.n_squares) if rooms.entrance_room[s] == r]
        placed: set[int] = set()
        for k in range(int(rooms.size[r])):
            usable = [s for s in entrances if rooms.n_pushes[rooms.entrance_slot[s], k] >= 0]
            assert usable, f"room {r} step {k}: no entrance has a macro"
            box = usable[0]
            slot = rooms.entrance_slot[box]
            for code in rooms.macros[int(rooms.first[slot]) + k]:
                square, d = divmod(code, N_DIRS)
                assert square == box
                target = int(board.neighbours[square, d])
                assert target >= 0 and target not in placed and rooms.room_of[target] == r
                box = target
            assert box == int(rooms.order[r, k]) and board.is_goal[box]
            placed.add(box)
        assert len(placed) == int(rooms.size[r])


def test_small_room_has_its_entrance_and_a_back_to_front_order():
    (level,) = parse_levels(ROOM_LEVEL)
    board = build_board(level)
    rooms = goal_rooms(board)
    assert rooms.n_rooms == 1
    goals = {int(g) for g in board.goal_squares}
    assert {int(s) for s in range(board.n_squares) if rooms.room_of[s] == 0} >= goals
    _replay_macros(board, rooms)
    # The far goal must be filled before the goal next to the entrance.
    assert list(rooms.order[0, :rooms.size[0]]) == [board.square(1, 1), board.square(1, 2)]
    assert rooms.entrance_room[board.square(1, 3)] == 0
    result = solve(board, weight=100, timeout=10)
    assert result.solved and replay(level, result.lurd).solved


def test_goals_in_the_open_get_no_macros():
    (level,) = parse_levels("########\n#@ $ . #\n#  $ . #\n#      #\n########")
    rooms = goal_rooms(build_board(level))
    assert rooms.n_rooms == 0 and (rooms.room_of == NO_ROOM).all()


def test_two_wide_doorway_is_an_entrance():
    (level,) = parse_levels("#######\n#@ $ .#\n#  $ .#\n#######")
    board = build_board(level)
    rooms = goal_rooms(board)
    assert rooms.n_rooms == 1
    assert {int(s) for s in range(board.n_squares) if rooms.entrance_room[s] == 0} == {
        board.square(1, 4), board.square(2, 4)}
    _replay_macros(board, rooms)
    result = solve(board, weight=100, timeout=10)
    assert result.solved and replay(level, result.lurd).solved


@pytest.mark.parametrize("number", (1, 2, 3, 6))
def test_xsokoban_rooms_replay_and_fast_mode_solves(xsokoban, number):
    level = load_level(xsokoban, number)
    board = build_board(level)
    rooms = goal_rooms(board)
    assert rooms.n_rooms >= 1
    _replay_macros(board, rooms)
    result = solve(board, weight=100, timeout=60)
    assert result.solved and not result.optimal
    check = replay(level, result.lurd)
    assert check.solved and check.pushes == result.pushes


def test_macros_are_refused_in_optimal_mode(xsokoban):
    with pytest.raises(ValueError, match="macros"):
        solve(build_board(load_level(xsokoban, 1)), weight=1, macros=True)
