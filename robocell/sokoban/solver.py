"""Sokoban solver: push- or move-optimal A* (or its fast weighted modes) on a level, to LURD.

The driver of the search: it sets up the board's arrays, the goal rooms, the pruning tables
and the node store, runs the compiled search (``search.search_chunk``) in chunks until it is
solved, proven unsolvable, out of time or out of memory (growing the node arrays between
chunks), and turns the solution's push codes into LURD (``solution``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from robocell.sokoban.arcs import MOVE_SCALE
from robocell.sokoban.board import UNREACHABLE, Board
from robocell.sokoban.bounds import INFEASIBLE
from robocell.sokoban.corrals import (
    CORRAL_DEEP_MAX_BOXES,
    CORRAL_DEEP_NODES,
    CORRAL_MAX_BOXES,
    CORRAL_SEARCH_NODES,
    corral_cache,
)
from robocell.sokoban.deadlocks import MAX_MASK_GOALS, frozen_cache, is_frozen
from robocell.sokoban.features import (
    EXPLORER,
    FS_ACTIVE,
    FS_HEAP_EVERY,
    OUT_OF_PLAN,
    ROOM_LINKS,
    FeatureSpace,
    doorways,
    feature_space,
    grown_feature_space,
)
from robocell.sokoban.features import (
    room_links as find_room_links,
)
from robocell.sokoban.nodes import grown_store, node_store
from robocell.sokoban.packing import packing_depth, packing_layers
from robocell.sokoban.patterns import PC_PATTERNS, pattern_table
from robocell.sokoban.reverse import solve_reverse
from robocell.sokoban.rooms import NO_ROOM, GoalRooms, goal_rooms, no_rooms
from robocell.sokoban.search import add_root, search_chunk
from robocell.sokoban.search_state import (
    N_STATS,
    ST_CORRAL_CHECKS,
    ST_CORRAL_CHILD,
    ST_CORRAL_CUTS,
    ST_CORRAL_DEAD,
    ST_CORRAL_SEARCHES,
    ST_DEADLOCKS,
    ST_EXPANDED,
    ST_FROZEN_GOALS,
    ST_GENERATED,
    ST_GOAL,
    ST_HEAP,
    ST_NODES,
    ST_PATTERN_CUTS,
    STATUS_FULL,
    STATUS_NO_SOLUTION,
    STATUS_RUNNING,
    STATUS_SOLVED,
    Pruning,
    Settings,
    search_board,
    search_rooms,
)
from robocell.sokoban.solution import expand_box_moves, expand_macros, pushes_to_lurd

METRIC_PUSHES = "pushes"
METRIC_MOVES = "moves"
CHUNK_EXPANSIONS = 20_000
INITIAL_CAPACITY = 1 << 15
DEFAULT_MAX_NODES = 40_000_000
FAST_WEIGHT = 2
"""Weight of the bound in the fast (non-optimal) mode: f = g + FAST_WEIGHT*h."""
FEATURE_HEAP_EVERY = 3
"""Feature search: every this many expansions the best position by f = g + weight*h is taken
instead of the next cell's (0: cells only)."""
ROOM_GOAL_DEPTH = 1 << 20
"""Packing-feature depth of a goal-room goal (see ``feature_depth``)."""
REGION_PENALTY = 4
"""Fast push mode: pushes added to h per extra area of free squares (boxes cutting the board
into pieces the player cannot walk between tend to block the rest of the solution)."""
GOAL_ORDER_PENALTY = 2
"""Fast mode: pushes added to h per box filling a goal before a deeper one of its room."""


def feature_depth(board: Board, rooms: GoalRooms, layers: bool = False) -> np.ndarray:
    """The goal order of the feature search's packing feature: a box on a goal is packed
    unless a deeper goal of its goal area (from the area's entrance) is empty; goals of a
    goal room are filled by macros in the room's own order, so a box there is always packed
    (its goals are given a depth nothing outside the room reaches). With ``layers`` a goal's
    depth is its layer of the board's packing order (``packing.packing_layers``) instead of
    its depth from its goal area's entrance."""
    depth = packing_layers(board) if layers else board.goal_depth.copy()
    depth[(rooms.room_of != NO_ROOM) & board.is_goal] = ROOM_GOAL_DEPTH
    return depth


@dataclass(frozen=True)
class SearchProgress:
    """Where a running search stands, after each chunk of expansions."""

    expanded: int
    stored: int
    bound: int | None
    """Optimal searches: no solution is shorter (in the metric); None in the fast modes."""
    seconds: float


ProgressCallback = Callable[[SearchProgress], None]


@dataclass
class SolveResult:
    """Outcome of one solve: status, LURD solution and search statistics."""

    status: str              # "solved", "no solution", "timeout", "memory", "exhausted"
    metric: str
    lurd: str = ""
    pushes: int = 0
    moves: int = 0
    optimal: bool = False    # solution proven optimal in the metric (or unsolvability proven)
    expanded: int = 0
    generated: int = 0
    stored: int = 0
    deadlocks: int = 0
    seconds: float = 0.0
    lower_bound: int = 0
    corral_cuts: int = 0
    corral_deadlocks: int = 0  # positions closed by a corral deadlock search
    corral_searches: int = 0
    corral_child_deadlocks: int = 0  # children dropped by a corral deadlock search
    corral_child_checks: int = 0     # children whose corrals were checked when generated
    pattern_cuts: int = 0            # children dropped by a learned deadlock pattern
    frozen_goal_cuts: int = 0        # children whose frozen goals leave goals unfillable
    patterns: int = 0                # deadlock patterns learned
    cells: int = 0                   # feature search: cells that held a position
    most_packed: int = 0             # feature search: most boxes packed in one position
    dead_start: str = ""             # why the start position is dead (unsolvable at once)
    stage: str = ""                  # the schedule stage that gave this result (schedule.py)

    @property
    def solved(self) -> bool:
        return self.status == "solved"


def solve(board: Board, metric: str = METRIC_PUSHES, timeout: float | None = None,
          weight: int = 1, max_nodes: int = DEFAULT_MAX_NODES,
          corrals: bool = True, macros: bool | None = None,
          patterns: tuple | None = None, packing: bool = False,
          features: bool = False, heap_every: int = FEATURE_HEAP_EVERY,
          box_moves: bool = False, frozen_goals: bool = True,
          deep_corrals: bool = False, hotspots: bool = False,
          room_links: bool = False, out_of_plan: bool = False, explorer: bool = False,
          pack_layers: bool = False, backward: bool = False,
          on_progress: ProgressCallback | None = None) -> SolveResult:
    """Solve a level. ``weight`` 1 is optimal A*; a larger weight is the fast mode
    (weighted A*, f = g + weight*h: quicker, solutions not proven optimal). ``macros``
    (default: on in the fast push mode) fills goal rooms by macro arcs (see ``rooms``);
    it gives up optimality, so it is refused with weight 1. ``patterns`` is the deadlock
    pattern table (``patterns.pattern_table``) to learn into and match from; default: a new
    empty one. ``packing`` (fast modes only) takes the goal order of the misordered-goal
    penalty from the packing order (``packing.packing_depth``) instead of each goal's depth in
    its goal area, and applies that penalty on levels with goal rooms too. ``features``
    (fast push mode only) adds the feature space (``features``): cells of positions with the
    same packing, connectivity and blocked doorways, visited in turn, taking turns with the
    weighted A* heap: every ``heap_every``-th expansion comes from the heap (0: none).
    ``box_moves`` (fast push mode only) makes every arc a box move: one box pushed to any
    place it can reach (``box_moves.box_reach``), which takes far fewer expansions on big levels.
    ``frozen_goals`` (default on) drops positions whose boxes frozen on goals leave the other
    goals unfillable (``deadlocks.frozen_goals_dead``). ``deep_corrals`` raises the corral
    deadlock search's limits (CORRAL_DEEP_NODES states, CORRAL_DEEP_MAX_BOXES boxes).
    ``hotspots`` adds the feature search's hotspot advisor (``hotspots.hotspot_advice``).
    ``room_links`` makes the feature search's third feature the room links holding a box
    (``features.room_links``) instead of the boxes on doorways; ``out_of_plan`` adds a fourth
    feature and its advisor, the boxes the packing plan is about to shut in
    (``features.out_of_plan``); ``explorer`` adds the explorer advisor (the push that opens
    most squares to the player, ``features.player_reach``).
    ``pack_layers`` orders the feature search's packing feature by the layers of the
    board's packing order (``packing.packing_layers``) instead of the depth in each goal area.
    ``backward`` (push metric) runs the backward search by pulls instead (``reverse``;
    ``weight``, ``features`` with ``heap_every`` for its cells and ``box_moves``, only).
    ``on_progress`` is called before every chunk of expansions (a few times a second), the
    first time before the first (which compiles the search if it is not cached)."""
    if metric not in (METRIC_PUSHES, METRIC_MOVES):
        raise ValueError(f"metric must be {METRIC_PUSHES!r} or {METRIC_MOVES!r}, not {metric!r}")
    started = time.monotonic()
    frozen = frozen_start_reason(board)
    if frozen:
        return SolveResult(status="no solution", metric=metric, optimal=True,
                           seconds=time.monotonic() - started, dead_start=frozen)
    if backward:
        return _solve_backward(board, metric, weight, timeout, max_nodes, on_progress,
                               heap_every if features else -1, box_moves)
    exact = metric == METRIC_MOVES
    h_scale = MOVE_SCALE + 1 if exact else 1
    if macros is None:
        macros = weight > 1 and not exact
    _check_fast_modes(weight, exact, macros, features, box_moves, packing)
    rooms = goal_rooms(board) if macros else no_rooms(board.n_squares)
    goal_depth = packing_depth(board) if packing else board.goal_depth
    order_penalty = (GOAL_ORDER_PENALTY * h_scale
                     if weight > 1 and (rooms.n_rooms == 0 or packing) else 0)
    corral_nodes, corral_boxes = ((CORRAL_DEEP_NODES, CORRAL_DEEP_MAX_BOXES) if deep_corrals
                                  else (CORRAL_SEARCH_NODES, CORRAL_MAX_BOXES))
    settings = Settings(exact_player=exact, use_corrals=corrals and not exact, weight=weight,
                        h_scale=h_scale, order_penalty=order_penalty, tunnels=macros,
                        region_penalty=REGION_PENALTY if macros else 0, features=features,
                        box_moves=box_moves, corral_nodes=corral_nodes,
                        corral_boxes=corral_boxes, hotspots=hotspots and features)
    nodes = node_store(board.n_boxes, INITIAL_CAPACITY)
    # The feature space's per-node arrays are as long as the node arrays when in use.
    fs = _feature_space(board, rooms, features, room_links, out_of_plan, explorer, pack_layers)
    if heap_every < 0:
        raise ValueError(f"heap_every must be 0 (cells only) or more, not {heap_every}")
    fs.counters[FS_HEAP_EVERY] = heap_every
    if patterns is None:
        patterns = pattern_table(board.n_squares)
    pruning = Pruning(*corral_cache(), patterns, *_frozen_goal_cache(board, frozen_goals))
    stats = np.zeros(N_STATS, dtype=np.int64)
    arrays = search_board(board, goal_depth)
    lb = add_root(arrays, board.start_boxes, board.start_player, exact, h_scale, nodes, stats)
    result = SolveResult(status="running", metric=metric, lower_bound=int(min(lb, INFEASIBLE)))
    status = STATUS_NO_SOLUTION if lb >= INFEASIBLE else STATUS_RUNNING
    timed_out = False
    # A box move expansion stores tens of children: smaller chunks keep to the deadline.
    chunk = CHUNK_EXPANSIONS // 10 if box_moves else CHUNK_EXPANSIONS
    room_arrays = search_rooms(rooms)
    while status == STATUS_RUNNING or status == STATUS_FULL:
        if timeout is not None and time.monotonic() - started > timeout:
            timed_out = True
            break
        if status == STATUS_FULL:
            capacity = nodes.boxes.shape[0]
            if capacity * 2 > max_nodes:
                break
            n_nodes = int(stats[ST_NODES])
            nodes = grown_store(nodes, n_nodes, int(stats[ST_HEAP]))
            if features:
                fs = grown_feature_space(fs, 2 * capacity, n_nodes)
        if on_progress is not None:
            on_progress(_progress(nodes, stats, weight, exact, time.monotonic() - started))
        status = search_chunk(arrays, room_arrays, settings, pruning, nodes, fs, chunk, stats)
    result.seconds = time.monotonic() - started
    _fill_counts(result, stats, patterns, fs if features else None)
    if status == STATUS_SOLVED:
        result.lurd = _solution_lurd(board, nodes, stats, rooms)
        result.pushes = sum(1 for ch in result.lurd if ch.isupper())
        result.moves = len(result.lurd)
        result.status = "solved"
        result.optimal = weight == 1
    elif status == STATUS_NO_SOLUTION and macros:
        # Macros and the room rule cut arcs: an exhausted search proves nothing.
        result.status = "exhausted"
    elif status == STATUS_NO_SOLUTION:
        result.status = "no solution"
        result.optimal = True
        if lb >= INFEASIBLE:
            result.dead_start = dead_start_reason(board)
    elif timed_out:
        result.status = "timeout"
    else:
        result.status = "memory"
    return result


def _solution_lurd(board: Board, nodes: object, stats: np.ndarray, rooms: GoalRooms) -> str:
    """The LURD of the solution ending at the goal node (macros and box moves expanded)."""
    pushes = []
    node = int(stats[ST_GOAL])
    while nodes.parent[node] >= 0 and node != 0:  # type: ignore[attr-defined]
        pushes.append(int(nodes.push[node]))  # type: ignore[attr-defined]
        node = int(nodes.parent[node])  # type: ignore[attr-defined]
    pushes.reverse()
    pushes = expand_box_moves(board, expand_macros(pushes, rooms, board.neighbours))
    return pushes_to_lurd(board, pushes)


def _solve_backward(board: Board, metric: str, weight: int, timeout: float | None,
                    max_nodes: int, on_progress: ProgressCallback | None,
                    every: int, box_moves: bool) -> SolveResult:
    """``solve`` by the backward search (``reverse.solve_reverse``; ``box_moves``: an arc
    pulls one box as far as it goes, ``reverse_moves``). It cuts only what can
    never be pulled back to the start (dead squares, an infeasible matching), so running out
    of positions proves there is no solution; weight 1 is push-optimal."""
    if metric != METRIC_PUSHES:
        raise ValueError(f"the backward search counts pushes only: metric {metric!r} needs "
                         "the forward search (leave out backward, or the schedule's flag b)")
    progress = None
    if on_progress is not None:
        def progress(expanded: int, stored: int, seconds: float) -> None:
            on_progress(SearchProgress(expanded, stored, None, seconds))
    found = solve_reverse(board, weight, timeout, max_nodes, progress, every, box_moves)
    result = SolveResult(status=found.status, metric=metric, seconds=found.seconds,
                         expanded=found.expanded, stored=found.stored,
                         lower_bound=found.lower_bound)
    if found.status == "solved":
        result.lurd = pushes_to_lurd(board, found.pushes)
        result.pushes = len(found.pushes)
        result.moves = len(result.lurd)
        result.optimal = weight == 1
    elif found.status == "exhausted":
        result.status = "no solution"
        result.optimal = True
    return result


def _check_fast_modes(weight: int, exact: bool, macros: bool, features: bool,
                      box_moves: bool, packing: bool) -> None:
    """ValueError when a fast mode is asked of optimal A* or of the move metric."""
    if macros and (weight == 1 or exact):
        raise ValueError("goal-room macros need the fast push mode (weight > 1, pushes)")
    if features and (weight == 1 or exact):
        raise ValueError("the feature search is a fast push mode (weight > 1, pushes)")
    if box_moves and (weight == 1 or exact):
        raise ValueError("box moves are a fast push mode (weight > 1, pushes)")
    if packing and weight == 1:
        raise ValueError("the packing-order penalty needs a fast mode (weight > 1)")


def _feature_space(board: Board, rooms: GoalRooms, features: bool, room_links: bool,
                   out_of_plan: bool, explorer: bool, pack_layers: bool) -> FeatureSpace:
    """The search's feature space: empty (one node) without the feature search, else with
    the board's doorways, packing depths and the modes asked for."""
    if not features:
        return feature_space(board.n_boxes, 1, None, 0, None)
    door = doorways(board.neighbours)
    mode = ((ROOM_LINKS if room_links else 0) | (OUT_OF_PLAN if out_of_plan else 0)
            | (EXPLORER if explorer else 0))
    return feature_space(board.n_boxes, INITIAL_CAPACITY,
                         (door, feature_depth(board, rooms, pack_layers)), mode,
                         find_room_links(board.neighbours, door) if mode & ROOM_LINKS else None)


def search_compiled() -> bool:
    """Whether the compiled search is in numba's cache already: False on the first solve
    after an install (or a change of the search's code), which compiles it first (about
    20 s). True when the cache cannot be inspected (nothing is claimed then)."""
    try:
        index = search_chunk._cache._cache_file._index_path  # numba's cache index file
    except AttributeError:
        return True
    return os.path.exists(index)


def _progress(nodes: object, stats: np.ndarray, weight: int, exact: bool,
              seconds: float) -> SearchProgress:
    """The search's standing: the smallest f in the open heap is a lower bound on the
    solution's length when the search is optimal (weight 1)."""
    bound = None
    if weight == 1 and stats[ST_HEAP] > 0:
        f = int(nodes.heap_f[0])  # type: ignore[attr-defined]
        bound = f // MOVE_SCALE if exact else f
    return SearchProgress(int(stats[ST_EXPANDED]), int(stats[ST_NODES]), bound, seconds)


def dead_start_reason(board: Board) -> str:
    """Why no push from the start can lead to a solution, naming the boxes at fault where the
    bound can name them: a box that can reach no goal (on a dead square or walled off), or
    else boxes that cannot be given a goal each."""
    stuck = [board.name(int(b)) for b in board.start_boxes
             if board.dead[b] or int(board.push_distance[:, b].min(initial=UNREACHABLE))
             >= UNREACHABLE]
    if stuck:
        return (f"box{'es' if len(stuck) > 1 else ''} at {' and '.join(stuck)} can reach no "
                "goal by pushes")
    return ("the boxes cannot each be pushed to a goal of their own: too many of them can "
            "only reach the same few goals from where the player stands")


def frozen_start_reason(board: Board) -> str:
    """Why the start is dead when some of its boxes off goals can never move (blocked on both
    axes by walls, dead squares or each other: a 2x2 block, a box in a corner); empty when
    none is frozen, or when a box is on a dead square (``dead_start_reason`` names that).
    Checked before the search, which would only find that nothing moves."""
    if board.dead[board.start_boxes].any():
        return ""
    n = board.n_squares
    occupied = np.zeros(n, dtype=np.bool_)
    occupied[board.start_boxes] = True
    fixed = np.zeros(n, dtype=np.bool_)
    frames = np.zeros((n + 1, 3), dtype=np.int64)
    stuck = [board.name(int(b)) for b in board.start_boxes
             if not board.is_goal[b]
             and is_frozen(int(b), board.neighbours, occupied, board.dead, fixed, frames)]
    if not stuck:
        return ""
    if len(stuck) == 1:
        return f"box at {stuck[0]} is frozen off goal: no push can bring it to a goal"
    return (f"boxes at {', '.join(stuck[:-1])} and {stuck[-1]} are frozen off goals: they "
            "hold each other, no push can bring them to a goal")


def _frozen_goal_cache(board: Board, on: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The frozen-goal check's cache (``deadlocks.frozen_cache``), or empty arrays when the
    check is off or the level has too many goals for its masks."""
    if on and board.goal_squares.shape[0] <= MAX_MASK_GOALS:
        return frozen_cache(board.n_squares)
    return np.zeros(0, dtype=np.uint64), np.zeros((0, 1), np.int64), np.zeros(0, np.int64)


def _fill_counts(result: SolveResult, stats: np.ndarray, patterns: tuple,
                 fs: FeatureSpace | None) -> None:
    """Copy the search statistics into ``result`` (the feature space's when in use)."""
    result.expanded = int(stats[ST_EXPANDED])
    result.generated = int(stats[ST_GENERATED])
    result.stored = int(stats[ST_NODES])
    result.deadlocks = int(stats[ST_DEADLOCKS])
    result.corral_cuts = int(stats[ST_CORRAL_CUTS])
    result.corral_deadlocks = int(stats[ST_CORRAL_DEAD])
    result.corral_searches = int(stats[ST_CORRAL_SEARCHES])
    result.corral_child_deadlocks = int(stats[ST_CORRAL_CHILD])
    result.corral_child_checks = int(stats[ST_CORRAL_CHECKS])
    result.pattern_cuts = int(stats[ST_PATTERN_CUTS])
    result.frozen_goal_cuts = int(stats[ST_FROZEN_GOALS])
    result.patterns = int(patterns[-1][PC_PATTERNS])
    if fs is not None:
        result.cells = int(fs.counters[FS_ACTIVE])
        result.most_packed = int(fs.packed[:int(stats[ST_NODES])].max())
