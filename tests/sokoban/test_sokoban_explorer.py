"""The explorer's data and page without a browser: marks, components, the reduced view, the
self-contained page, and `sokoban explore` serving it on loopback."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
from support.monitor import REPO_ROOT

from robocell.cli import main
from robocell.sokoban.board import build_board
from robocell.sokoban.explorer import PageServer, json_for_script, render_page
from robocell.sokoban.graph import build_graph, csr
from robocell.sokoban.graph_view import (
    FLAG_DEAD_END,
    FLAG_LARGEST_SCC,
    FLAG_SOLUTION,
    FLAG_TAIL,
    strongly_connected,
    view_data,
)
from robocell.sokoban.level import load_level
from robocell.sokoban.lurd import replay

TWENTY_THREE = Path(__file__).with_name("levels") / "twenty-three.xsb"


def graph_of(path: Path, number: int = 1):
    return build_graph(build_board(load_level(path, number)))


def reachable_sets(n: int, src: np.ndarray, dst: np.ndarray) -> list[set[int]]:
    out = [[] for _ in range(n)]
    for s, t in zip(src.tolist(), dst.tolist(), strict=True):
        out[s].append(t)
    sets = []
    for s0 in range(n):
        seen, stack = {s0}, [s0]
        while stack:
            for t in out[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        sets.append(seen)
    return sets


def test_the_twenty_three_state_level_has_twenty_three_states():
    summary = graph_of(TWENTY_THREE).summary()
    assert (summary["states"], summary["live_states"], summary["solution_pushes"]) == (23, 12, 5)


def test_components_are_exactly_the_mutually_reachable_states(microban):
    graph = graph_of(microban, 3)
    n = graph.n_states
    offsets, targets = csr(n, graph.arc_src, graph.arc_dst)
    component = strongly_connected(n, offsets, targets)
    reach = reachable_sets(n, graph.arc_src, graph.arc_dst)
    for s in range(0, n, 7):
        same = {t for t in range(n) if component[t] == component[s]}
        assert same == {t for t in reach[s] if s in reach[t]}


def test_dead_ends_allow_no_push_and_tails_run_into_them():
    graph = graph_of(TWENTY_THREE)
    data = view_data(graph)
    flags = np.array(data["states"]["flags"])
    out_degree = np.bincount(graph.arc_src, minlength=graph.n_states)
    dead_end = (flags & FLAG_DEAD_END) != 0
    assert dead_end.any()
    assert (out_degree[dead_end] == 0).all() and not graph.is_goal_state[dead_end].any()
    for s in np.flatnonzero(flags & FLAG_TAIL):
        (arc,) = np.flatnonzero(graph.arc_src == s)
        assert flags[graph.arc_dst[arc]] & (FLAG_TAIL | FLAG_DEAD_END)
    assert not graph.live[dead_end | ((flags & FLAG_TAIL) != 0)].any()


def test_view_data_holds_the_whole_small_graph_and_an_optimal_path(microban):
    level = load_level(microban, 1)
    graph = build_graph(build_board(level))
    data = view_data(graph)
    assert data["reduced"] is None
    assert len(data["states"]["id"]) == graph.n_states
    assert len(data["arcs"]["source"]) == len(graph.arc_src)
    path = data["solution"]["states"]
    dist = data["states"]["distance"]
    assert [dist[s] for s in path] == list(range(8, -1, -1))
    assert all(data["states"]["flags"][s] & FLAG_SOLUTION for s in path)
    result = replay(level, data["solution"]["lurd"])
    assert result.solved and result.pushes == 8
    assert data["summary"]["solution_moves"] == result.moves
    assert "".join(data["solution"]["steps"]) == data["solution"]["lurd"]
    scc = sum(1 for f in data["states"]["flags"] if f & FLAG_LARGEST_SCC)
    assert scc == data["summary"]["largest_live_scc"] > 1


def test_the_solution_drawn_has_the_fewest_moves_of_the_push_optimal_paths(microban):
    # Microban 6: the move-optimal solution (107 moves) is also push-optimal (29 pushes), so
    # no push-optimal path has fewer moves; the push-optimal solver's own answer has 147.
    level = load_level(microban, 6)
    data = view_data(build_graph(build_board(level)))
    result = replay(level, data["solution"]["lurd"])
    assert result.solved and (result.pushes, result.moves) == (29, 107)
    assert (data["summary"]["solution_pushes"], data["summary"]["solution_moves"]) == (29, 107)


def test_above_the_drawing_limit_the_view_keeps_the_states_near_the_solution(microban):
    graph = graph_of(microban, 1)
    live_only = view_data(graph, max_drawn=20)
    assert live_only["reduced"]["rule"] == "live"
    assert sorted(live_only["states"]["id"]) == np.flatnonzero(graph.live).tolist()
    near = view_data(graph, max_drawn=11)
    reduced = near["reduced"]
    assert reduced["rule"] == "near_solution" and reduced["shown"] <= 11
    assert f"within {reduced['k']} push" in reduced["message"] and "56 states" in reduced["message"]
    ids = near["states"]["id"]
    assert ids[0] == 0 and len(near["solution"]["states"]) == 9
    shown = set(ids)
    assert all(graph.live[s] for s in ids)
    assert all(near["states"]["id"][s] in shown for s in near["solution"]["states"])
    # the summary still describes the whole graph
    assert near["summary"]["states"] == 56


def test_the_page_is_self_contained_and_its_data_cannot_close_the_script(microban):
    assert "</" not in json_for_script({"title": "</script><script>alert(1)</script>"})
    page = render_page(view_data(graph_of(microban, 1)))
    assert not re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)=\"?(https?:)?//", page)
    assert "<script src" not in page and "@import" not in page
    data = re.search(r'<script id="graph-data" type="application/json">(.*?)</script>', page,
                     re.S).group(1)
    assert json.loads(data)["summary"]["states"] == 56


def test_graph_html_writes_the_page_and_refuses_a_silly_limit(tmp_path, capsys):
    out = tmp_path / "g.html"
    assert main(["sokoban", "graph", str(TWENTY_THREE), "--html", str(out)]) == 0
    assert f"wrote {out} (23 states, 30 arcs drawn)" in capsys.readouterr().out
    assert out.stat().st_size > 1000
    assert main(["sokoban", "graph", str(TWENTY_THREE), "--html", str(out),
                 "--max-drawn", "0"]) == 2
    assert "--max-drawn must be at least 1" in capsys.readouterr().err


def test_explore_serves_the_page_on_loopback_without_a_browser(tmp_path):
    log = tmp_path / "explore.log"
    with open(log, "wb") as handle:
        proc = subprocess.Popen([sys.executable, "-m", "robocell", "sokoban", "explore",
                                 str(TWENTY_THREE), "--no-browser"], stdout=handle,
                                stderr=subprocess.STDOUT, cwd=REPO_ROOT)
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"explorer on (http://127\.0\.0\.1:\d+/)",
                                      log.read_text())):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        url = found.group(1)
        with urllib.request.urlopen(url, timeout=10) as response:
            page = response.read().decode()
        assert 'id="graph-data"' in page and "twenty-three" in page
        assert "23 states" in log.read_text()
        try:
            urllib.request.urlopen(url + "other", timeout=10)
            raise AssertionError("a second path was served")
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
    finally:
        proc.terminate()
        proc.wait(10)


def get_with_host(url: str, host: str) -> tuple[int, str]:
    """GET / from the server at ``url`` with the Host header set to ``host``."""
    address = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=10)
    try:
        connection.request("GET", "/", headers={"Host": host})
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def test_the_explore_server_refuses_a_host_it_does_not_serve():
    """A page on another name that resolves to loopback (DNS rebinding) gets nothing."""
    server = PageServer("<!DOCTYPE html><p>the graph</p>")
    server.start()
    try:
        port = server.httpd.server_address[1]
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost"):
            status, body = get_with_host(server.url, host)
            assert (status, "the graph" in body) == (200, True), host
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}",
                     ""):
            status, body = get_with_host(server.url, host)
            assert status == 421, host
            assert "the graph" not in body and "127.0.0.1" in body
    finally:
        server.stop()
