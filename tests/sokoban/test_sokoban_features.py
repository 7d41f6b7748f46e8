"""The feature space: cells visited in turn, each giving up its best node (pairing heaps)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robocell.sokoban.board import build_board, count_regions
from robocell.sokoban.features import (
    EXPLORER,
    FS_ACTIVE,
    KEY_SHIFT,
    MAX_BLOCKED,
    MAX_KEY_H,
    MAX_REGIONS,
    OUT_OF_PLAN,
    ROOM_LINKS,
    cell_of,
    doorways,
    feature_space,
    file_children,
    file_node,
    next_node,
    room_links,
    unadvised_pushes,
)
from robocell.sokoban.level import parse_levels

ROOMS = """\
#########
#  #    #
# $   $ #
#  ## $ #
#.## #..#
#@ ######
####
"""


def _file(fs, node, packed, regions, unadvised, h, blocked=0):
    fs.packed[node] = packed
    fs.regions[node] = regions
    fs.blocked[node] = blocked
    file_node(node, unadvised, h, fs)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 40)),
                min_size=1, max_size=200), st.integers(0, 2**32 - 1))
def test_one_cell_gives_up_its_nodes_in_key_order(entries, seed):
    """Filed and taken in a random interleaving, a single cell always gives up the smallest
    key it holds: the pairing heap is a correct priority queue."""
    fs = feature_space(4, len(entries))
    rng = random.Random(seed)
    held: dict[int, int] = {}
    order = list(range(len(entries)))
    taken = 0
    while order or held:
        if order and (not held or rng.random() < 0.6):
            node = order.pop(0)
            _, unadvised, h = entries[node]
            _file(fs, node, 2, 1, unadvised, h)
            held[node] = (unadvised << KEY_SHIFT) | h
        else:
            node = next_node(fs)
            assert node in held
            assert held[node] == min(held.values())
            assert unadvised_pushes(node, fs) == entries[node][1]
            del held[node]
            taken += 1
    assert taken == len(entries)
    assert next_node(fs) == -1


def test_cells_take_turns():
    """Each cell that holds nodes gives up one per round, in the order the cells first
    appeared, whatever the keys in the other cells."""
    fs = feature_space(3, 16)
    # cell A (packed 0, 1 area): keys 0, 1, 2; cell B (packed 2, 1 area): keys 50, 60;
    # cell C (packed 1, 3 areas): key 7
    for node, (packed, regions, h) in enumerate([(0, 1, 0), (2, 1, 60), (0, 1, 2), (1, 3, 7),
                                                 (0, 1, 1), (2, 1, 50)]):
        _file(fs, node, packed, regions, 0, h)
    assert fs.counters[FS_ACTIVE] == 3
    assert [next_node(fs) for _ in range(7)] == [0, 5, 3, 4, 1, 2, -1]


def test_cell_index_and_key_bounds():
    assert cell_of(0, 1, 0) == MAX_BLOCKED
    assert cell_of(2, 5, 3) == (2 * MAX_REGIONS + 5) * MAX_BLOCKED + 3
    # many areas or blocked doorways share the last column
    assert cell_of(1, 500, 99) == (2 * MAX_REGIONS - 1) * MAX_BLOCKED + MAX_BLOCKED - 1
    fs = feature_space(2, 2)
    _file(fs, 0, 0, 1, 3, 10**12)  # a huge bound is capped, the unadvised count survives
    assert unadvised_pushes(0, fs) == 3
    assert fs.key[0] & MAX_KEY_H == MAX_KEY_H
    assert fs.key.dtype == np.int64


@pytest.mark.slow
def test_doorways_are_the_squares_that_split_the_floor():
    """Checked against the definition: a square is a doorway exactly when taking it away
    leaves more areas of floor than before."""
    level = parse_levels(ROOMS)[0]
    board = build_board(level)
    door = doorways(board.neighbours)
    free = np.zeros(board.n_squares, dtype=np.bool_)
    mark = np.zeros(board.n_squares, dtype=np.int32)
    queue = np.zeros(board.n_squares, dtype=np.int32)
    base = count_regions(board.neighbours, free, mark, 1, queue)
    for s in range(board.n_squares):
        free[s] = True
        split = count_regions(board.neighbours, free, mark, 2 + s, queue) > base
        free[s] = False
        assert door[s] == split, board.name(s)
    # the corridor between the rooms is all doorway, the rooms' insides none
    assert 3 <= door.sum() <= 8


# Two rooms joined by a tunnel (row 2, columns 3-7) holding two boxes, and a dead-end
# corridor below the right room (column 9, rows 3-6) holding the third.
TUNNEL = """\
###########
#.  ###   #
#.@ $$    #
#.  ###   #
######### #
        #$#
        # #
        ###
"""

# A goal column (column 4, rows 4-5) entered from the room above, with a pocket behind it
# (rows 5-7) that holds a box; POCKET_GOAL moves the room's goal into the pocket.
POCKET = """\
#########
#@     .#
#  $ $  #
#### ####
   #.###
   #.  #
   # $ #
   #   #
   #####
"""
POCKET_GOAL = POCKET.replace(".#\n#  $", " #\n#  $").replace("# $ #", "# $.#")


def _start_features(text, room_links_on=False, out_of_plan_on=False, explorer_on=False):
    """(packed, regions, blocked, out, reach) of a level's start position as the feature
    search files it."""
    board = build_board(parse_levels(text)[0])
    n = board.n_squares
    door = doorways(board.neighbours)
    mode = ((ROOM_LINKS if room_links_on else 0) | (OUT_OF_PLAN if out_of_plan_on else 0)
            | (EXPLORER if explorer_on else 0))
    fs = feature_space(board.n_boxes, 1, (door, board.goal_depth.astype(np.int32)), mode,
                       room_links(board.neighbours, door))
    node_boxes = board.start_boxes.astype(np.int16).reshape(1, -1)
    file_children(0, 0, 1, node_boxes, np.full(1, board.start_player, dtype=np.int16),
                  np.ones(1, dtype=np.int64),
                  np.zeros(n, dtype=np.bool_), board.neighbours, board.is_goal,
                  board.goal_squares, board.goal_area,
                  np.zeros(len(board.goal_squares) + 1, dtype=np.int32),
                  np.zeros(n, dtype=np.int64), 0, np.zeros(n, dtype=np.int32), fs, False)
    return (int(fs.packed[0]), int(fs.regions[0]), int(fs.blocked[0]), int(fs.out[0]),
            int(fs.reach[0]))


def test_room_links_are_tunnels_between_rooms():
    """The tunnel is one link (five doorway squares, the ends included: each cuts the tunnel
    off its room); the dead-end corridor is no link, it leads to no room of two squares."""
    board = build_board(parse_levels(TUNNEL)[0])
    link = room_links(board.neighbours, doorways(board.neighbours))
    tunnel = [board.square(2, c) for c in range(3, 8)]
    assert sorted(np.flatnonzero(link >= 0).tolist()) == sorted(tunnel)
    assert set(link[tunnel].tolist()) == {0}


def test_start_features_known_by_hand():
    """TUNNEL: no box packed; the two tunnel boxes cut the floor into the left room, the right
    room with the corridor's top, and the corridor's last square (3 areas); three boxes on
    doorways, but only one room link obstructed; nothing out of plan (the boxes are not
    walls, so every box is in the main area); the player walks the left room's 9 squares."""
    assert _start_features(TUNNEL) == (0, 3, 3, 0, 0)
    assert _start_features(TUNNEL, room_links_on=True, out_of_plan_on=True,
                           explorer_on=True) == (0, 3, 1, 0, 9)


def test_out_of_plan_box_behind_the_goals():
    """POCKET: the goal column is filled from the room above, so the box in the pocket behind
    it is out of plan; with a goal of its own in the pocket it is not."""
    assert _start_features(POCKET, out_of_plan_on=True)[3] == 1
    assert _start_features(POCKET)[3] == 0
    assert _start_features(POCKET_GOAL, out_of_plan_on=True)[3] == 0


def test_the_room_link_out_of_plan_and_explorer_flags_need_the_feature_search():
    from robocell.sokoban.schedule import Stage, parse_schedule
    assert parse_schedule("2fomrue/0:5") == [Stage(2, 5.0, packing=True, features=True,
                                                   heap_every=0, box_moves=True,
                                                   room_links=True, out_of_plan=True,
                                                   explorer=True)]
    assert str(parse_schedule("2fomrue/0:5")[0]) == "2fomrue/0:5"
    for bad in ("2r:5", "2ou:5", "3e:5"):
        with pytest.raises(ValueError, match="needs f"):
            parse_schedule(bad)


@pytest.mark.slow
def test_a_feature_search_with_the_new_features_and_explorer_solves_and_replays():
    from robocell.sokoban.lurd import replay
    from robocell.sokoban.solver import solve
    level = parse_levels("#########\n#@   $ .#\n#  $ $  #\n#### ####\n   #.###\n"
                         "   #.#\n   ###\n")[0]
    result = solve(build_board(level), weight=2, features=True, box_moves=True, packing=True,
                   heap_every=0, room_links=True, out_of_plan=True, explorer=True)
    assert result.solved
    assert replay(level, result.lurd).solved
