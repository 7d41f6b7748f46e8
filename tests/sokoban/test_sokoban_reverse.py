"""The backward search (pulls from the solved positions to the start): optimal at weight 1
against exhaustive search, its proofs of no solution, the schedule's flag b."""

from __future__ import annotations

import numpy as np
import pytest

from robocell.sokoban.board import UNREACHABLE, build_board, region_scan
from robocell.sokoban.features import meld, pop_root
from robocell.sokoban.graph import GraphTooLarge, build_graph
from robocell.sokoban.level import load_level, load_levels, parse_levels
from robocell.sokoban.lurd import replay
from robocell.sokoban.reverse import pull_costs, pull_distances
from robocell.sokoban.reverse_moves import (
    M_DIR,
    M_RUN,
    M_TARGET,
    pull_chain,
    pull_reach,
    pull_scratch,
)
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


def _graphed_positions(levels, numbers, rng, count):
    """Random positions of the levels ``numbers`` whose push graph is small enough to build:
    (where, position, board, graph) each."""
    for number in numbers:
        board = build_board(levels[number - 1])
        for boxes, player in _positions(board, rng, count):
            (position,) = parse_levels(board.render(boxes, player))
            here = build_board(position)
            try:
                graph = build_graph(here, max_states=GRAPH_LIMIT)
            except GraphTooLarge:
                continue
            yield f"Microban {number}:\n{position.xsb()}", position, here, graph


@pytest.mark.parametrize("first", [1, 31])
def test_weight_1_is_push_optimal_and_proves_no_solution_against_exhaustive_search(
        microban, first):
    """Random positions of Microban levels, each searched exhaustively (the push graph from
    it): the backward search at weight 1 solves exactly the solvable ones, in the fewest
    pushes, with a solution that replays, and proves the others have none."""
    rng = np.random.default_rng(first)
    levels = load_levels(microban)
    solvable = unsolvable = 0
    for where, position, here, graph in _graphed_positions(levels, range(first, first + 30),
                                                           rng, 6):
        result = solve(here, weight=1, backward=True, timeout=30)
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


def _pulls_by_brute_force(board, boxes, player, box, dead):
    """Every (square, last pull's direction) the box on ``box`` reaches by single pulls, the
    player walking square by square, with the fewest pulls: 0-1 breadth-first search over
    (box square, player square)."""
    others = set(boxes) - {box}
    best = {}
    todo = [(box, player, 0)]
    seen = {(box, player): 0}
    while todo:
        b, q, pulls = todo.pop(0)
        for d in range(4):
            step = int(board.neighbours[q, d])
            if step >= 0 and step != b and step not in others and (b, step) not in seen:
                seen[(b, step)] = pulls
                todo.insert(0, (b, step, pulls))  # a walk costs nothing
            # A pull: the player beside the box steps away from it, the box following.
            beyond = int(board.neighbours[q, d])
            if (int(board.neighbours[b, d]) == q and beyond >= 0 and beyond != b
                    and beyond not in others and not dead[q]):
                if (q, d) not in best:
                    best[(q, d)] = pulls + 1
                if (q, beyond) not in seen:
                    seen[(q, beyond)] = pulls + 1
                    todo.append((q, beyond, pulls + 1))
    return best


def test_pull_reach_finds_every_box_move_with_its_fewest_pulls(microban):
    """Random positions of Microban levels: every place each box can be pulled to, with the
    fewest pulls, as a search over single pulls and single steps finds them; and each box
    move unrolls into single pulls that, pushed forwards, bring the box back."""
    rng = np.random.default_rng(5)
    levels = load_levels(microban)
    checked = 0
    for number in range(1, 61, 3):
        board = build_board(levels[number - 1])
        dead = pull_costs(board).min(axis=0)[:, 0] >= UNREACHABLE
        moves, seen, blocks = pull_scratch(board.n_squares)
        stamp = 0
        for boxes, player in _positions(board, rng, 3):
            occupied = np.zeros(board.n_squares, dtype=np.bool_)
            occupied[boxes] = True
            reach = np.zeros(board.n_squares, dtype=np.int32)
            region_scan(player, board.neighbours, occupied, reach, 1, None,
                        np.empty(board.n_squares, np.int32))
            for box in boxes:
                count, stamp = pull_reach(box, board.neighbours, occupied, reach, 1, dead,
                                          moves, seen, stamp, blocks)
                found = {(int(moves[M_TARGET, j]), int(moves[M_DIR, j])): int(moves[M_RUN, j])
                         for j in range(count)}
                assert count == len(found)
                assert found == _pulls_by_brute_force(board, boxes, player, box, dead), number
                for (square, d), run in found.items():
                    after = np.array(sorted(set(boxes) - {box} | {square}))
                    pushes = pull_chain(board, dead, np.array(boxes), player, after,
                                        square * 4 + d)
                    assert len(pushes) == run
                    # Forwards, the first push starts where the box ended up.
                    assert pushes[0] // 4 == square
                    checked += 1
    assert checked > 300


@pytest.mark.parametrize("first", [1, 61])
def test_box_move_backward_search_solves_exactly_the_solvable_positions(microban, first):
    """With box moves the backward search still cuts only what can never be pulled back, so
    against the exhaustive push graph of random Microban positions it solves the solvable
    ones, with solutions that replay, and proves the others have none."""
    rng = np.random.default_rng(first)
    levels = load_levels(microban)
    solvable = unsolvable = 0
    for where, position, here, graph in _graphed_positions(levels, range(first, first + 20),
                                                           rng, 5):
        result = solve(here, weight=10, backward=True, box_moves=True, timeout=30)
        if graph.solution_length is None:
            assert result.status == "no solution", where
            unsolvable += 1
        else:
            assert result.solved, where
            assert replay(position, result.lurd).solved, where
            assert result.pushes >= graph.solution_length, where
            solvable += 1
    assert solvable >= 10 and unsolvable >= 10, (solvable, unsolvable)


def test_box_move_backward_solutions_replay_on_microban(microban):
    levels = load_levels(microban)
    for number in (1, 40, 100, 150, 155):
        level = levels[number - 1]
        result = solve(build_board(level), weight=10, backward=True, box_moves=True,
                       timeout=30)
        assert result.solved and replay(level, result.lurd).solved, number
        assert result.pushes == sum(ch.isupper() for ch in result.lurd)


def test_box_moves_in_backward_schedules():
    (stage,) = parse_schedule("40bmf/4:5")
    assert stage == Stage(40, 5.0, features=True, heap_every=4, box_moves=True,
                          backward=True)
    assert parse_schedule(str(stage)) == [stage]
    assert stage_options(stage)["box_moves"] and stage_options(stage)["backward"]
    with pytest.raises(ValueError, match="flag b") as err:
        parse_schedule("10bmo:5")
    assert "and m (its box moves)" in str(err.value)


def test_xsokoban_41_solved_backward_with_box_moves(xsokoban):
    """Level 41 was solved by no stage of the lanes before box moves (60 s, both cores);
    backward with box moves and the feature cells (the default lanes' `40bmf/4`) it is."""
    level = load_levels(xsokoban)[40]
    result = solve(build_board(level), weight=40, backward=True, features=True, heap_every=4,
                   box_moves=True, timeout=60)
    assert result.solved and replay(level, result.lurd).solved
    assert result.expanded < 150_000
