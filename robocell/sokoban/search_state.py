"""What the compiled search runs on: the board's arrays, its settings, its pruning tables.

The search (``search.search_chunk``) takes these groups of arrays as named tuples, which numba
compiles to plain structs of arrays, so it reads ``board.neighbours`` or ``settings.weight``
instead of taking every array as a parameter of its own. The node arrays are ``nodes.Nodes``,
the feature search's ``features.FeatureSpace``. The statistics array (``ST_*``) also carries
the node count and open-heap size from one chunk to the next.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from robocell.sokoban.board import Board
from robocell.sokoban.rooms import GoalRooms

STATUS_RUNNING, STATUS_SOLVED, STATUS_NO_SOLUTION, STATUS_FULL = 0, 1, 2, 3
(ST_NODES, ST_HEAP, ST_EXPANDED, ST_GENERATED, ST_GOAL, ST_DEADLOCKS, ST_DUPLICATES,
 ST_CORRAL_CUTS, ST_CORRAL_TOKEN, ST_CORRAL_DEAD, ST_CORRAL_SEARCHES, ST_CORRAL_CHILD,
 ST_CORRAL_CHECKS, ST_PATTERN_CUTS, ST_FROZEN_GOALS) = range(15)
N_STATS = 15


class SearchBoard(NamedTuple):
    """The board's arrays the search reads (see ``board.Board``)."""

    neighbours: np.ndarray       # int16[n, 4]
    is_goal: np.ndarray          # bool[n]
    dead: np.ndarray             # bool[n]
    region_with_box: np.ndarray  # int8[n, n]
    push_cost: np.ndarray        # int32[n_goals, n, 16]
    zobrist_box: np.ndarray      # uint64[n]
    zobrist_player: np.ndarray   # uint64[n]
    goal_squares: np.ndarray     # int16[n_goals]
    goal_area: np.ndarray        # int32[n]
    goal_depth: np.ndarray       # int32[n]: the goal order of the misordered-goal penalty


def search_board(board: Board, goal_depth: np.ndarray) -> SearchBoard:
    """The search's view of ``board``, with ``goal_depth`` as the goal order."""
    return SearchBoard(board.neighbours, board.is_goal, board.dead, board.region_with_box,
                       board.push_cost, board.zobrist_box, board.zobrist_player,
                       board.goal_squares, board.goal_area, goal_depth)


class SearchRooms(NamedTuple):
    """The goal rooms' arrays (see ``rooms.GoalRooms``: all NO_ROOM when there are none)."""

    room_of: np.ndarray
    entrance_room: np.ndarray
    entrance_slot: np.ndarray
    order: np.ndarray
    size: np.ndarray
    outside: np.ndarray
    final_player: np.ndarray
    n_pushes: np.ndarray
    first: np.ndarray


def search_rooms(rooms: GoalRooms) -> SearchRooms:
    return SearchRooms(rooms.room_of, rooms.entrance_room, rooms.entrance_slot, rooms.order,
                       rooms.size, rooms.outside, rooms.final_player, rooms.n_pushes,
                       rooms.first)


class Settings(NamedTuple):
    """The search mode (see ``search.search_chunk`` and ``solver.solve``)."""

    exact_player: bool   # move metric: the player's exact square is part of the state
    use_corrals: bool    # PI-corral pruning, corral deadlock searches and learned patterns
    weight: int          # f = g + weight*h
    h_scale: int         # cost units per push of the bound
    order_penalty: int   # h added per box filling a goal before a deeper one
    tunnels: bool        # a push into a one-wide tunnel carries the box to its end
    region_penalty: int  # h added per extra area of free squares
    features: bool       # the feature search (``features``)
    box_moves: bool      # every arc is a box move (``box_moves``)
    corral_nodes: int    # states of one corral deadlock search
    corral_boxes: int    # most boxes of a corral searched
    hotspots: bool       # the feature search's hotspot advisor (``hotspots``)


class Pruning(NamedTuple):
    """The tables the pruning learns into and reads: corral outcomes, deadlock patterns,
    frozen-goal sets (empty arrays when the frozen-goal check is off)."""

    corral_keys: np.ndarray
    corral_dead: np.ndarray
    patterns: tuple
    frozen_keys: np.ndarray
    frozen_reach: np.ndarray
    frozen_taken: np.ndarray
