"""Push graph: dead-state removal, distances consistent with arcs, labels, exports, limits."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from robocell.sokoban.board import build_board
from robocell.sokoban.graph import NO_DISTANCE, GraphTooLarge, build_graph
from robocell.sokoban.level import load_level, parse_levels
from robocell.sokoban.lurd import replay

GRAPH_LEVELS = (1, 2, 3, 5, 9, 17, pytest.param(36, marks=pytest.mark.slow))


@pytest.mark.parametrize("number", GRAPH_LEVELS)
def test_distances_and_dead_states_are_consistent(microban, number):
    graph = build_graph(build_board(load_level(microban, number)))
    dist = graph.distance_to_goal
    src, dst = graph.arc_src, graph.arc_dst
    live = dist != NO_DISTANCE
    assert live[0] and (dist[graph.is_goal_state] == 0).all()
    # No arc leads from a dead state into a live one (else it would not be dead).
    assert not (~live[src] & live[dst]).any()
    # Along every arc into a live state the distance drops by at most one...
    both = live[src] & live[dst]
    assert (dist[src[both]] <= dist[dst[both]] + 1).all()
    # ...and every live non-goal state has an arc that drops it by exactly one.
    best = np.full(graph.n_states, np.iinfo(np.int32).max)
    np.minimum.at(best, src[both], dist[dst[both]])
    inner = live & ~graph.is_goal_state
    assert (best[inner] == dist[inner] - 1).all()
    # Forward distances are breadth-first: every arc raises them by at most one.
    fwd = graph.distance_from_start
    assert (fwd[dst] <= fwd[src] + 1).all() and (fwd >= 0).all()
    summary = graph.summary()
    assert summary["states"] == summary["live_states"] + summary["dead_states"]
    assert summary["diameter"] >= summary["max_distance_to_goal"] >= summary["solution_pushes"]


def test_arc_labels_replay_to_the_target_state(microban):
    graph = build_graph(build_board(load_level(microban, 3)))
    board = graph.board
    for arc in graph.live_arcs()[:200]:
        s, t = int(graph.arc_src[arc]), int(graph.arc_dst[arc])
        (start,) = parse_levels(board.render(graph.boxes[s], int(graph.player[s])))
        label = graph.arc_label(arc)
        assert label[-1].isupper() and label[:-1].islower() or len(label) == 1
        end = replay(start, label)
        assert end.legal and end.pushes == 1
        (after,) = parse_levels(end.final)
        assert after.boxes == parse_levels(board.render(graph.boxes[t], 0))[0].boxes


def test_shortest_path_through_the_graph_solves_the_level(microban):
    level = load_level(microban, 2)
    graph = build_graph(build_board(level))
    path = graph.shortest_solution()
    assert len(path) == graph.solution_length == 3
    assert graph.distance_to_goal[graph.arc_dst[path[-1]]] == 0


def test_exports_are_well_formed_and_limited(microban):
    graph = build_graph(build_board(load_level(microban, 2)))
    live = int(graph.live.sum())
    data = json.loads(graph.to_json())
    assert len(data["states"]) == live and len(data["arcs"]) == len(graph.live_arcs())
    assert all(a["moves"][-1] in "UDLR" for a in data["arcs"])
    root = ET.fromstring(graph.to_graphml())
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    assert len(root.findall(".//g:node", ns)) == live
    assert len(root.findall(".//g:edge", ns)) == len(graph.live_arcs())
    dot = graph.to_dot()
    assert dot.startswith("digraph") and dot.count("->") == len(graph.live_arcs())
    with pytest.raises(GraphTooLarge, match="export limit of 3"):
        graph.to_json(limit=3)


def test_state_limit_gives_a_clear_error(microban):
    with pytest.raises(GraphTooLarge, match="limit 100"):
        build_graph(build_board(load_level(microban, 36)), max_states=100)
