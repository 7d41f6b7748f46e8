"""The backward search (pulls from the solved positions to the start): optimal at weight 1
against exhaustive search, its proofs of no solution, the schedule's flag b."""

from __future__ import annotations

import numpy as np
import pytest

from robocell.sokoban.board import build_board
from robocell.sokoban.features import meld, pop_root
from robocell.sokoban.graph import GraphTooLarge, build_graph
from robocell.sokoban.level import load_level, load_levels, parse_levels
from robocell.sokoban.lurd import replay
from robocell.sokoban.reverse import pull_distances
from robocell.sokoban.schedule import Stage, parse_schedule, solve_scheduled, stage_options
from robocell.sokoban.solver import METRIC_MOVES, solve

GRAPH_LIMIT = 200_000

CORRIDOR = """\
#######
#@ $ .#
#######
"""


def test_pull_distances_are_pushes_from_the_target():
    (level,) = parse_levels(CORRIDOR)
    board = build_board(level)
    target = board.square(1, 3)
    dist = pull_distances(target, board.neighbours)
    # A box pulled to column 3 must come from the right (the player pulls it leftwards
    # and needs a square behind it): from column 4 in one pull; from column 2 only by
    # pulling rightwards, which needs column 4 free for the player and then 5: 1 pull.
    assert dist[board.square(1, 4)] == 1
    assert dist[board.square(1, 2)] == 1
    assert dist[target] == 0
    # Column 5 is the corridor's end: nothing pushed from column 3 reaches it but through 4.
    assert dist[board.square(1, 5)] == 2
    assert dist[board.square(1, 1)] == 2


def _positions(board, rng, count):
    """Random positions of a level: boxes on live squares, the player on a free one."""
    live = [s for s in range(board.n_squares) if not board.dead[s]]
    for _ in range(count):
        boxes = [int(b) for b in rng.choice(live, board.n_boxes, replace=False)]
        free = [s for s in range(board.n_squares) if s not in set(boxes)]
        yield boxes, int(rng.choice(free))


@pytest.mark.parametrize("first", [1, 31])
def test_weight_1_is_push_optimal_and_proves_no_solution_against_exhaustive_search(
        microban, first):
    """Random positions of Microban levels, each searched exhaustively (the push graph from
    it): the backward search at weight 1 solves exactly the solvable ones, in the fewest
    pushes, with a solution that replays, and proves the others have none."""
    rng = np.random.default_rng(first)
    levels = load_levels(microban)
    solvable = unsolvable = 0
    for number in range(first, first + 30):
        board = build_board(levels[number - 1])
        for boxes, player in _positions(board, rng, 6):
            (position,) = parse_levels(board.render(boxes, player))
            here = build_board(position)
            try:
                graph = build_graph(here, max_states=GRAPH_LIMIT)
            except GraphTooLarge:
                continue
            result = solve(here, weight=1, backward=True, timeout=30)
            where = f"Microban {number}:\n{position.xsb()}"
            if graph.solution_length is None:
                assert result.status == "no solution" and result.optimal, where
                unsolvable += 1
            else:
                assert result.solved and result.optimal, where
                assert result.pushes == graph.solution_length, where
                assert replay(position, result.lurd).solved, where
                solvable += 1
    assert solvable >= 20 and unsolvable >= 20, (solvable, unsolvable)


def test_a_weighted_backward_solution_replays(microban):
    level = load_level(microban, 40)
    result = solve(build_board(level), weight=10, backward=True, timeout=30)
    assert result.solved and not result.optimal
    assert replay(level, result.lurd).solved
    assert result.pushes == sum(ch.isupper() for ch in result.lurd)


def test_xsokoban_80_solved_backward(xsokoban):
    """Level 80 packs its boxes into one goal area whose order the forward stages never
    found (60 s, both lanes); backward, the boxes leave it in the only order there is."""
    level = load_levels(xsokoban)[79]
    result = solve(build_board(level), weight=10, backward=True, timeout=60)
    assert result.solved and replay(level, result.lurd).solved
    assert result.expanded < 200_000


def test_the_backward_flag_in_schedules():
    (stage,) = parse_schedule("10b:5")
    assert stage == Stage(10, 5.0, backward=True) and str(stage) == "10b:5"
    assert stage_options(stage)["backward"]
    (cells,) = parse_schedule("10bf/2:5")
    assert cells == Stage(10, 5.0, features=True, heap_every=2, backward=True)
    assert str(cells) == "10fb/2:5"
    for bad in ("10bo:5", "2fomb/0:5", "10pb:3"):
        with pytest.raises(ValueError, match="flag b") as err:
            parse_schedule(bad)
        assert bad in str(err.value)


UNSOLVABLE = """\
#######
#.    #
#@$$  #
# #  .#
#######
"""


def test_a_backward_proof_of_no_solution_ends_the_schedule():
    """No square is dead and no box frozen, yet the exhaustive push graph reaches no solved
    position: the backward search runs out of positions, which proves it, and the next
    stage never runs."""
    (position,) = parse_levels(UNSOLVABLE)
    board = build_board(position)
    assert build_graph(board).solution_length is None
    assert not board.dead[board.start_boxes].any()
    result, _ = solve_scheduled(position, parse_schedule("10b:5,2:30"))
    assert result.status == "no solution" and result.stage == "10b:5"
    assert result.expanded > 10


def test_the_move_metric_is_refused_with_what_to_do(microban):
    board = build_board(load_level(microban, 1))
    with pytest.raises(ValueError, match="backward search counts pushes only"):
        solve(board, metric=METRIC_MOVES, backward=True)


def test_a_cell_pops_its_positions_in_key_order():
    rng = np.random.default_rng(7)
    n = 500
    ckey = rng.integers(0, 1 << 30, size=n).astype(np.int64)
    ph_child = np.full(n, -1, dtype=np.int32)
    ph_next = np.full(n, -1, dtype=np.int32)
    root = -1
    for x in range(n):
        root = meld(root, x, ckey, ph_child, ph_next)
    popped = []
    while root >= 0:
        popped.append(int(ckey[root]))
        root = pop_root(root, ckey, ph_child, ph_next)
    assert popped == sorted(ckey.tolist())


def test_xsokoban_87_solved_backward_with_feature_cells(xsokoban):
    """Level 87 is solved by no forward stage and not by backward weighted A* alone (10 s);
    with the feature cells taking two expansions in three it is."""
    level = load_levels(xsokoban)[86]
    result = solve(build_board(level), weight=10, backward=True, features=True, heap_every=3,
                   timeout=60)
    assert result.solved and replay(level, result.lurd).solved
    assert result.expanded < 400_000
