"""The dashboard's Sokoban state-space view in real headless Chromium, against a real broker
and monitor: the level published on `solver.sokoban_result` is drawn by the explorer."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from robocell.common.bus import Publisher
from robocell.services.monitor.sokoban_graph import SokobanGraphError, SokobanGraphs
from robocell.sokoban.board import build_board
from robocell.sokoban.graph import build_graph
from robocell.sokoban.level import load_level

TWENTY_THREE = Path(__file__).parents[1] / "sokoban" / "levels" / "twenty-three.xsb"
UI_TIMEOUT_MS = 30000


@pytest.fixture(scope="module")
def solver(cell):
    pub = Publisher("solver", cell.endpoints)
    assert pub.wait_linked(5.0), "the test publisher did not link to the broker"
    yield pub
    pub.close()


def get_json(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.slow
def test_graphs_are_built_once_per_level_and_refused_with_a_reason():
    level = load_level(TWENTY_THREE, 1).xsb()
    graphs = SokobanGraphs()
    first = graphs.data_for(level)
    assert first["summary"]["states"] == 23 and graphs.data_for(level) is first
    for text, status, says in ((None, 404, "no Sokoban level solved yet"),
                               ("#####\n#@$ #\n#####", 422, "cannot be read"),
                               (level, 413, "too large to draw")):
        with pytest.raises(SokobanGraphError, match=says) as caught:
            (SokobanGraphs(max_states=10) if status == 413 else graphs).data_for(text)
        assert caught.value.status == status


def open_room(side: int, n_boxes: int) -> str:
    """An open square room with boxes and goals in two rows: its push graph is far too large
    to build (the kind of level that froze the dashboard)."""
    rows = ["#" * (side + 2)]
    for r in range(side):
        row = [" "] * side
        if r == 1:
            row[1:1 + n_boxes] = ["$"] * n_boxes
        if r == side - 2:
            row[1:1 + n_boxes] = ["."] * n_boxes
        if r == side // 2:
            row[side // 2] = "@"
        rows.append("#" + "".join(row) + "#")
    rows.append("#" * (side + 2))
    return "\n".join(rows)


def test_a_graph_too_large_is_refused_within_its_bound_once_and_never_stops_the_server():
    """One GET of a huge open level froze the dashboard for minutes and a second GET built it
    all again: the build is bounded in time, runs apart from the server's threads, and its
    outcome, a refusal too, is kept for the level."""
    level = open_room(24, 12)
    graphs = SokobanGraphs(build_seconds=3.0)
    outcome: list[BaseException] = []

    def build() -> None:
        try:
            graphs.data_for(level)
        except SokobanGraphError as exc:
            outcome.append(exc)

    started = time.monotonic()
    builder = threading.Thread(target=build)
    builder.start()
    # the thread serving other requests keeps running while the graph is built
    longest_pause = 0.0
    while builder.is_alive():
        before = time.monotonic()
        time.sleep(0.01)
        longest_pause = max(longest_pause, time.monotonic() - before)
    spent = time.monotonic() - started
    assert longest_pause < 0.5, f"the server's threads stood still for {longest_pause:.2f} s"
    assert spent < 3.0 + 20.0
    assert len(outcome) == 1 and outcome[0].status == 413
    assert "3 s" in outcome[0].message and "too large" in outcome[0].message
    again = time.monotonic()
    with pytest.raises(SokobanGraphError) as caught:
        graphs.data_for(level)
    assert time.monotonic() - again < 0.2 and caught.value.message == outcome[0].message
    assert graphs.builds == 1


def test_before_any_level_the_graph_endpoint_says_what_to_do(cell, page):
    status, body = get_json(cell.url + "/api/sokoban/graph")
    assert status == 404 and "no Sokoban level solved yet" in body["error"]
    page.goto(cell.url + "/")
    page.wait_for_selector("#conn[data-state=live]", timeout=UI_TIMEOUT_MS)
    assert "no Sokoban level solved yet" in page.inner_text("#sokoban-status")
    assert page.js_errors == []


def test_the_level_last_solved_is_drawn_with_its_counts_and_boards(cell, page, solver):
    level = load_level(TWENTY_THREE, 1)
    graph = build_graph(build_board(level))
    page.goto(cell.url + "/")
    page.wait_for_selector("#conn[data-state=live]", timeout=UI_TIMEOUT_MS)
    solver.publish("solver.sokoban_result", {
        "level": level.xsb(), "status": "solved", "solved": True, "lurd": "x", "pushes": 5,
        "moves": 17, "metric": "pushes", "optimal": True})
    page.wait_for_selector("#sokoban-explorer[data-ready=true]", timeout=UI_TIMEOUT_MS)
    assert "5 pushes" in page.inner_text("#sokoban-meta")
    cells = dict(page.eval_on_selector_all(
        "#sokoban-explorer [data-role=summary] tr",
        "rows => rows.map(r => [r.dataset.key, r.querySelector('td').textContent])"))
    for key, value in graph.summary().items():
        assert cells[key] == str(value), key
    explorer = "document.getElementById('sokoban-explorer').explorer"
    assert page.evaluate(f"{explorer}.view.model.data.solution.states.length") == 6
    page.check("#sokoban-explorer [data-role=show-dead]")
    for local in (3, 11, 20):
        page.locator("#sokoban-explorer [data-role=graph]").scroll_into_view_if_needed()
        spot = page.evaluate(f"s => {explorer}.screenPosition(s)", local)
        page.mouse.click(spot["x"], spot["y"])
        state = page.evaluate(f"s => {explorer}.view.model.data.states.id[s]", local)
        board = page.wait_for_selector(
            f"#sokoban-explorer [data-role=board][data-state='{state}']", timeout=UI_TIMEOUT_MS)
        player = int(board.get_attribute("data-player"))
        assert player in {int(graph.arc_push[a]) // 4
                          for a in range(len(graph.arc_src)) if graph.arc_dst[a] == state}
        assert board.get_attribute("data-xsb") == graph.board.render(graph.boxes[state],
                                                                     player)
    status, body = get_json(cell.url + "/api/sokoban/graph")
    assert status == 200 and body["summary"]["states"] == 23
    assert page.js_errors == []


def test_the_monitor_process_never_imports_the_sokoban_search():
    """The graph is built in a child process: the monitor itself (on a small robot host too)
    holds no numba or its compiler (~150 MB of RSS, measured in bench/results/two_hosts.txt)."""
    code = ("import sys, robocell.services.monitor.service, robocell.services.monitor.cli; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout

