"""Box moves: one box pushed to every place it can reach, against a search over single pushes."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from robocell.sokoban.board import N_DIRS, build_board, floor_region, region_scan
from robocell.sokoban.box_moves import block_scratch, box_reach
from robocell.sokoban.corrals import NO_CORRAL
from robocell.sokoban.level import load_level, load_levels, parse_levels
from robocell.sokoban.lurd import replay
from robocell.sokoban.nodes import BOX_MOVE_FLAG
from robocell.sokoban.rooms import MACRO_SHIFT, NO_ROOM
from robocell.sokoban.schedule import Stage, parse_schedule
from robocell.sokoban.solution import expand_box_moves
from robocell.sokoban.solver import solve


def _reference(board, boxes, player, b):
    """Fewest pushes to each (square, last direction) of box b, by breadth-first search over
    (box square, exact player square) with one push per step."""
    others = set(boxes) - {b}
    best = {}
    frontier = deque([(b, player, 0)])
    done = {(b, player)}
    while frontier:
        box, at, pushes = frontier.popleft()
        reach = floor_region(board, at, others | {box})
        for d in range(N_DIRS):
            behind, target = int(board.neighbours[box, d ^ 1]), int(board.neighbours[box, d])
            if behind not in reach or target < 0 or target in others or board.dead[target]:
                continue
            best.setdefault((target, d), pushes + 1)
            if (target, box) not in done:
                done.add((target, box))
                frontier.append((target, box, pushes + 1))
    return best


_BLOCKS: dict[int, tuple] = {}
"""One block scratch per board size, kept across calls as the search keeps it (numbers
left by earlier labellings must never be taken for new ones)."""


def _box_reach(board, boxes, player, b):
    n = board.n_squares
    occupied = np.zeros(n, np.bool_)
    occupied[list(boxes)] = True
    mark = np.zeros(n, np.int32)
    region_scan(player, board.neighbours, occupied, mark, 1, np.zeros(n, np.int32),
                np.zeros(n, np.int32))
    out = [np.zeros(4 * n, np.int32) for _ in range(3)]
    count, _ = box_reach(b, board.neighbours, occupied, mark, 1, board.dead,
                         np.full(n, NO_ROOM, np.int32), NO_CORRAL, np.zeros(n, np.int32),
                         np.zeros(4 * n, np.int32), 0,
                         _BLOCKS.setdefault(n, block_scratch(n)),
                         np.zeros((4 * n, 3), np.int32), *out)
    assert occupied.sum() == len(boxes)   # the box is put back
    return {(int(out[0][k]), int(out[1][k])): int(out[2][k]) for k in range(count)}


@pytest.mark.slow
def test_box_reach_finds_every_place_with_its_fewest_pushes(microban):
    checked = 0
    for level in load_levels(microban):
        board = build_board(level)
        boxes = [int(b) for b in board.start_boxes]
        for b in boxes:
            want = _reference(board, boxes, board.start_player, b)
            assert _box_reach(board, boxes, board.start_player, b) == want, (level.index, b)
            checked += len(want)
    assert checked > 1500


def test_a_box_move_is_replayed_push_by_push():
    (level,) = parse_levels("#######\n#     #\n# #$# #\n#  @ .#\n#######")
    board = build_board(level)
    box = int(board.start_boxes[0])
    goal = int(board.goal_squares[0])
    # The box goes up, round the pillar's side and down to the goal: last push to the right.
    code = BOX_MOVE_FLAG | (box << MACRO_SHIFT) | (goal * N_DIRS + 3)
    pushes = expand_box_moves(board, [code])
    assert not any(p & BOX_MOVE_FLAG for p in pushes) and len(pushes) > 1
    result = solve(board, weight=2, box_moves=True)
    assert result.solved and replay(level, result.lurd).solved
    assert result.pushes == len([c for c in result.lurd if c.isupper()])


@pytest.mark.parametrize("number", [48, 58])
def test_box_moves_solve_levels_single_pushes_do_not(xsokoban, number):
    # XSokoban 48 and 58: every single-push schedule timed out at 60 s (bench/results); with
    # box moves the feature search needs a few hundred expansions.
    level = load_level(xsokoban, number)
    result = solve(build_board(level), weight=2, features=True, packing=True,
                   box_moves=True, heap_every=2, timeout=120)
    assert result.solved and not result.optimal and replay(level, result.lurd).solved
    assert result.expanded < 20_000


def test_box_moves_are_a_fast_push_mode():
    (level,) = parse_levels("######\n#$@ .#\n#  $.#\n######")
    with pytest.raises(ValueError, match="fast push mode"):
        solve(build_board(level), box_moves=True)
    with pytest.raises(ValueError, match="fast push mode"):
        solve(build_board(level), weight=2, metric="moves", box_moves=True)
    assert parse_schedule("2fom/2:30") == [Stage(2, 30.0, packing=True, features=True,
                                                 heap_every=2, box_moves=True)]
    with pytest.raises(ValueError, match="above 1"):
        parse_schedule("1m:5")


def test_box_reach_on_random_positions(microban, xsokoban):
    """Positions the start does not show (boxes scattered over the live squares, the player
    anywhere free), on Microban and on the first XSokoban levels (larger, with more rooms)."""
    rng = np.random.default_rng(7)
    checked = 0
    levels = load_levels(microban)[::3] + load_levels(xsokoban)[:6]
    for level in levels:
        board = build_board(level)
        live = [s for s in range(board.n_squares) if not board.dead[s]]
        if len(live) <= board.n_boxes:
            continue
        boxes = [int(s) for s in rng.choice(live, board.n_boxes, replace=False)]
        free = [s for s in range(board.n_squares) if s not in set(boxes)]
        player = int(rng.choice(free))
        for b in boxes[:6]:
            want = _reference(board, boxes, player, b)
            assert _box_reach(board, boxes, player, b) == want, (level.index, b)
            checked += len(want)
    assert checked > 1000
