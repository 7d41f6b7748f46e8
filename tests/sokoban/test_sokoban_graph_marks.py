"""What the explorer marks on a push graph: bottleneck states and pushes, corridors, strongly
connected components by size, and the layout, on levels whose answers are known by hand
(tests/sokoban/levels/marks.xsb) and checked against brute force on Microban."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robocell.sokoban.board import build_board
from robocell.sokoban.graph import build_graph, csr
from robocell.sokoban.graph_marks import bottlenecks, component_ranks, corridors
from robocell.sokoban.graph_view import strongly_connected
from robocell.sokoban.layout import MAX_ASPECT, cached_layout, compute_layout
from robocell.sokoban.level import load_level

MARKS = Path(__file__).with_name("levels") / "marks.xsb"
CORRIDOR, TWO_WAYS, ROOM = 1, 2, 3


def graph_of(path: Path, number: int):
    return build_graph(build_board(load_level(path, number)))


def state_with_box_on(graph, row: int, column: int) -> list[int]:
    """The states whose boxes include the square at (row, column), 0-based."""
    square = graph.board.square(row, column)
    return [s for s in range(graph.n_states) if square in graph.boxes[s]]


def reaches_goal(graph, without: int | None = None, without_arc: int | None = None) -> bool:
    """Whether a goal state can be reached from the start with a state or an arc taken out."""
    if without == 0:
        return False
    seen, stack = {0}, [0]
    while stack:
        s = stack.pop()
        if graph.is_goal_state[s]:
            return True
        for a in np.flatnonzero(graph.arc_src == s):
            t = int(graph.arc_dst[a])
            if a != without_arc and t != without and t not in seen:
                seen.add(t)
                stack.append(t)
    return False


def test_in_a_one_way_corridor_every_state_between_start_and_goal_is_a_bottleneck():
    graph = graph_of(MARKS, CORRIDOR)
    assert graph.n_states == 4 and graph.solution_length == 3
    necks, neck_arcs = bottlenecks(graph.n_states, graph.arc_src, graph.arc_dst,
                                   graph.is_goal_state)
    assert np.flatnonzero(necks).tolist() == [1, 2] and neck_arcs.all()
    keep = graph.is_goal_state.copy()
    keep[0] = True
    inner, runs = corridors(graph.n_states, graph.arc_src, graph.arc_dst, keep)
    assert np.flatnonzero(inner).tolist() == [1, 2]
    assert runs.tolist() == [[0, 3, 3]]


def test_two_boxes_pushed_in_either_order_have_no_bottleneck():
    graph = graph_of(MARKS, TWO_WAYS)
    assert graph.n_states == 4
    necks, neck_arcs = bottlenecks(graph.n_states, graph.arc_src, graph.arc_dst,
                                   graph.is_goal_state)
    assert not necks.any() and not neck_arcs.any()
    keep = graph.is_goal_state.copy()
    keep[0] = True
    _, runs = corridors(graph.n_states, graph.arc_src, graph.arc_dst, keep)
    goal = int(np.flatnonzero(graph.is_goal_state)[0])
    assert sorted(runs.tolist()) == [[0, goal, 2], [0, goal, 2]]


def test_the_rooms_strongly_connected_components_are_the_pairs_found_by_hand():
    graph = graph_of(MARKS, ROOM)
    offsets, targets = csr(graph.n_states, graph.arc_src, graph.arc_dst)
    ranks = component_ranks(strongly_connected(graph.n_states, offsets, targets))
    live = np.flatnonzero(graph.live).tolist()
    # the two live states: the box on (2, 2) and on its goal (2, 3), going back and forth
    assert sorted(live) == sorted(state_with_box_on(graph, 2, 2)
                                  + state_with_box_on(graph, 2, 3))
    assert ranks[live[0]] == ranks[live[1]] >= 0
    for row in (1, 3):
        pair = state_with_box_on(graph, row, 2) + state_with_box_on(graph, row, 3)
        assert len(pair) == 2 and ranks[pair[0]] == ranks[pair[1]] >= 0
    corners = [s for r in (1, 3) for c in (1, 4) for s in state_with_box_on(graph, r, c)]
    assert corners and all(ranks[s] == -1 for s in corners)
    assert sorted(set(ranks.tolist()) - {-1}) == [0, 1, 2]
    # the one push from the start to the goal is the only bottleneck
    necks, neck_arcs = bottlenecks(graph.n_states, graph.arc_src, graph.arc_dst,
                                   graph.is_goal_state)
    assert not necks.any() and neck_arcs.sum() == 1


@pytest.mark.parametrize("number", [1, 3, 9, 14, 21, 23])
def test_bottlenecks_are_the_states_and_pushes_whose_removal_cuts_off_the_goal(microban,
                                                                               number):
    graph = graph_of(microban, number)
    necks, neck_arcs = bottlenecks(graph.n_states, graph.arc_src, graph.arc_dst,
                                   graph.is_goal_state)
    live = np.flatnonzero(graph.live)
    for s in live[1:]:
        if not graph.is_goal_state[s]:
            assert necks[s] == (not reaches_goal(graph, without=int(s))), s
    for a in range(len(graph.arc_src)):
        if graph.live[graph.arc_dst[a]]:
            assert neck_arcs[a] == (not reaches_goal(graph, without_arc=a)), a
    assert not neck_arcs[~graph.live[graph.arc_dst]].any()


def test_a_five_thousand_state_graph_is_laid_out_wider_than_a_sliver(microban, tmp_path):
    """Microban 66 (5 075 states) drew as a thin sliver in the layered drawing."""
    graph = graph_of(microban, 66)
    assert graph.n_states == 5075
    pos = compute_layout(graph.n_states, graph.arc_src, graph.arc_dst)
    width, height = pos.max(axis=0) - pos.min(axis=0)
    assert max(width, height) / min(width, height) <= MAX_ASPECT * 1.5
    # arcs short against the drawing: neighbours are drawn near each other
    lengths = np.hypot(*(pos[graph.arc_src] - pos[graph.arc_dst]).T)
    assert np.median(lengths) < 0.05 * max(width, height)
    # states spread out: few share a spot
    spots = {(round(float(x)), round(float(y))) for x, y in pos}
    assert len(spots) > 0.9 * graph.n_states


def test_the_layout_is_computed_once_and_read_back(microban, tmp_path):
    graph = graph_of(microban, 6)
    states = np.arange(graph.n_states)
    first = cached_layout("level 6", states, graph.arc_src, graph.arc_dst, tmp_path)
    files = list(tmp_path.glob("*.npy"))
    assert len(files) == 1
    np.save(files[0], first + 1.0)  # what is read back is the file, not a new layout
    again = cached_layout("level 6", states, graph.arc_src, graph.arc_dst, tmp_path)
    assert np.array_equal(again, first + 1.0)
    other = cached_layout("level 7", states, graph.arc_src, graph.arc_dst, tmp_path)
    assert np.array_equal(other, first) and len(list(tmp_path.glob("*.npy"))) == 2
