"""The compiled search's scratch for one chunk of expansions: the arrays it marks and fills
while it expands a position, and two records, the expansion under way and the push under way.

`search_work` allocates it at the start of a chunk (``search.search_chunk``); the search's
helpers take it as one named tuple and read ``work.mark`` or ``at.stamp`` instead of taking
forty arrays and counters as parameters of their own. The records are rows of one-row
structured arrays (``work.expansion[0]``): numba reads and writes their fields in place.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from robocell.sokoban.bounds import matching_scratch
from robocell.sokoban.box_moves import block_scratch
from robocell.sokoban.corrals import corral_work

EXPANSION = np.dtype([
    ("n_nodes", np.int64),  # nodes stored so far
    ("heap_size", np.int64),  # entries on the open heap
    ("stamp", np.int64),  # marks the expanded position's player region in ``mark``
    ("child_stamp", np.int64),  # marks a child's player region in ``child_mark``
    ("region_stamp", np.int64),  # marks of ``count_regions`` in ``region_mark``
    ("seen_stamp", np.int64),  # marks of ``box_moves.box_reach`` in ``seen``
    ("node", np.int64),  # the position being expanded
    ("g", np.int64),  # its cost so far
    ("key", np.uint64),  # its Zobrist key
    ("player", np.int64),  # its player square
    ("corral", np.int64),  # the PI-corral whose pushes alone are taken (NO_CORRAL: all)
])
"""The expansion under way, and the counters that run on from one expansion to the next."""

PUSH = np.dtype([
    ("index", np.int64),  # the pushed box's place in the expanded position's sorted boxes
    ("box", np.int64),  # the square it is pushed from
    ("direction", np.int64),  # of the last push
    ("behind", np.int64),  # the square the player pushes from (the first push)
    ("target", np.int64),  # the square the box ends on
    ("pusher", np.int64),  # the square the player stands on for the last push
    ("run", np.int64),  # pushes in the arc
    ("code", np.int64),  # push code of the arc (-1: a push or tunnel run, coded on storing)
    ("player", np.int64),  # the child's player square
    ("cost", np.int64),  # the arc's cost in the metric
    ("scanned", np.int64),  # 1: ``child_mark == child_stamp`` marks the child's player region
])
"""The arc from the expanded position to one child."""


class SearchWork(NamedTuple):
    """Scratch of one chunk (see the module docstring); ``occupied`` is all False between
    expansions."""

    occupied: np.ndarray  # bool[n]: the boxes of the position being looked at
    fixed: np.ndarray  # bool[n]: the freeze test's boxes taken as walls
    frames: np.ndarray  # int64[n + 1, 3]: the freeze test's stack
    mark: np.ndarray  # int32[n]: the expanded position's player region (== stamp)
    child_mark: np.ndarray  # int32[n]: a child's player region (== child_stamp)
    walk: np.ndarray  # int32[n]: walking distances in the expanded position
    child_walk: np.ndarray  # int32[n]: in a child
    queue: np.ndarray  # int32[n]: breadth-first queue
    child: np.ndarray  # int16[boxes]: a child's sorted boxes
    scratch: np.ndarray  # a child's matching
    base: np.ndarray  # the expanded position's matching, which each child's updates
    masks: np.ndarray  # int64[boxes]: a child's reachable sides per box
    base_masks: np.ndarray  # int64[boxes]: the expanded position's
    rows: np.ndarray  # int16[boxes]: a child's boxes in the expanded position's order
    corral_label: np.ndarray  # int32[n]: corrals of the expanded position
    child_label: np.ndarray  # int32[n]: corrals of a child
    box_seen: np.ndarray  # int64[n]: scratch of ``corrals.pi_corral``
    deepest_empty: np.ndarray  # int32[goals + 1]: scratch of ``packing.misordered_goals``
    region_mark: np.ndarray  # int64[n]: scratch of ``count_regions``
    corral_search: tuple  # scratch of ``corrals.dead_corral``
    seen: np.ndarray  # int32[4n]: scratch of ``box_moves.box_reach``
    blocks: tuple  # scratch of ``box_moves.edge_blocks``
    states: np.ndarray  # int32[4n, 3]: scratch of ``box_moves.box_reach``
    cand_target: np.ndarray  # int32[4n]: a box's arcs: the square it ends on,
    cand_dir: np.ndarray  # int32[4n]: the direction of the last push,
    cand_run: np.ndarray  # int32[4n]: the pushes (0: a single push still to be checked)
    wall: np.ndarray  # bool[n]: scratch of ``deadlocks.frozen_goals_dead``
    frozen_queue: np.ndarray  # int32[4n]: likewise
    frozen_dist: np.ndarray  # int32[n, 4]: likewise
    frozen_label: np.ndarray  # int16[n, n] (or [1, 1] with the check off): likewise
    frozen_row: np.ndarray  # bool[boxes]: which of a child's boxes are frozen on goals
    box_goals: np.ndarray  # int64[boxes]: scratch of ``deadlocks.frozen_goals_dead``
    owner: np.ndarray  # int32[goals]: likewise
    came_from: np.ndarray  # int32[goals]: likewise
    hot_dist: np.ndarray  # int32[n]: scratch of ``hotspots.hotspot_advice``
    hot_base: np.ndarray  # int32[boxes]: likewise
    hot_via: np.ndarray  # int32[n]: likewise
    hot_path: np.ndarray  # bool[boxes, n]: likewise
    expansion: np.ndarray  # `EXPANSION` [1]
    push: np.ndarray  # `PUSH` [1]


@njit(cache=True)
def search_work(n_squares: int, n_boxes: int, n_goals: int, corral_nodes: int,
                corral_boxes: int, frozen_goals: bool) -> SearchWork:
    """Zeroed scratch of a chunk on a board of ``n_squares`` with ``n_boxes`` boxes on
    ``n_goals`` goals (the corral search's limits; whether the frozen-goal check is on)."""
    n = n_squares
    frozen_label = np.zeros((n, n) if frozen_goals else (1, 1), dtype=np.int16)
    return SearchWork(
        np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_),
        np.zeros((n + 1, 3), dtype=np.int64), np.zeros(n, dtype=np.int32),
        np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int32),
        np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int32),
        np.zeros(n_boxes, dtype=np.int16), matching_scratch(n_boxes),
        matching_scratch(n_boxes), np.zeros(n_boxes, dtype=np.int64),
        np.zeros(n_boxes, dtype=np.int64), np.zeros(n_boxes, dtype=np.int16),
        np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int32),
        np.full(n, -1, dtype=np.int64), np.zeros(n_goals + 1, dtype=np.int32),
        np.zeros(n, dtype=np.int64), corral_work(n, n_boxes, corral_nodes, corral_boxes),
        np.zeros(4 * n, dtype=np.int32), block_scratch(n),
        np.zeros((4 * n, 3), dtype=np.int32), np.zeros(4 * n, dtype=np.int32),
        np.zeros(4 * n, dtype=np.int32), np.zeros(4 * n, dtype=np.int32),
        np.zeros(n, dtype=np.bool_), np.zeros(4 * n, dtype=np.int32),
        np.zeros((n, 4), dtype=np.int32),
        frozen_label,
        np.zeros(n_boxes, dtype=np.bool_), np.zeros(n_boxes, dtype=np.int64),
        np.zeros(n_goals, dtype=np.int32), np.zeros(n_goals, dtype=np.int32),
        np.zeros(n, dtype=np.int32), np.zeros(n_boxes, dtype=np.int32),
        np.zeros(n, dtype=np.int32), np.zeros((n_boxes, n), dtype=np.bool_),
        np.zeros(1, dtype=EXPANSION), np.zeros(1, dtype=PUSH))
