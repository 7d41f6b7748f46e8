"""The explorer page in real headless Chromium (Debian's, driven by Playwright): it loads on
its own with no error, shows the CLI's counts, the solver's optimal path, and the board of the
state clicked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from robocell.cli import main
from robocell.sokoban.board import build_board
from robocell.sokoban.graph import build_graph
from robocell.sokoban.level import load_level
from robocell.sokoban.lurd import replay
from robocell.sokoban.solver import solve

TWENTY_THREE = Path(__file__).with_name("levels") / "twenty-three.xsb"
UI_TIMEOUT_MS = 15000


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1300, "height": 850})  # type: ignore
    page = context.new_page()
    page.js_errors = []
    page.requests = []
    page.on("pageerror", lambda exc: page.js_errors.append(str(exc)))
    page.on("console", lambda msg: page.js_errors.append(msg.text)
            if msg.type == "error" else None)
    page.on("request", lambda request: page.requests.append(request.url))
    yield page
    context.close()


@pytest.fixture(params=["microban-1", "twenty-three"])
def level_file(request) -> tuple[Path, int]:
    if request.param == "microban-1":
        return request.getfixturevalue("microban"), 1
    return TWENTY_THREE, 1


def write_page(capsys, tmp_path: Path, file: Path, number: int, *extra: str
               ) -> tuple[Path, dict]:
    """`sokoban graph --json --html`: the page and the summary the CLI printed."""
    out = tmp_path / "explorer.html"
    assert main(["sokoban", "graph", str(file), "--level", str(number), "--json",
                 "--html", str(out), *extra]) == 0
    return out, json.loads(capsys.readouterr().out.splitlines()[0])


def open_page(page, path: Path) -> None:
    page.goto(path.as_uri())
    page.wait_for_selector("#explorer[data-ready=true]", timeout=UI_TIMEOUT_MS)


def summary_cells(page) -> dict[str, str]:
    return dict(page.eval_on_selector_all(
        "[data-role=summary] tr", "rows => rows.map(r => [r.dataset.key, "
                                  "r.querySelector('td').textContent])"))


def click_state(page, local: int) -> None:
    spot = page.evaluate("s => window.sokobanExplorer.screenPosition(s)", local)
    page.mouse.click(spot["x"], spot["y"])


def hover_state(page, local: int) -> None:
    spot = page.evaluate("s => window.sokobanExplorer.screenPosition(s)", local)
    page.mouse.move(spot["x"], spot["y"])


def standing_squares(graph, state: int) -> set[int]:
    """Where the player can stand in a state as reached: the start square in the start, else
    the square a push into it left the player on (where the pushed box stood)."""
    squares = {int(graph.arc_push[a]) // 4 for a in np.flatnonzero(graph.arc_dst == state)}
    return squares | ({graph.board.start_player} if state == 0 else set())


def test_the_board_shows_the_player_where_it_stands(page, tmp_path, capsys, microban):
    """Not on the smallest square of its region (the top-left corner of the room)."""
    graph = build_graph(build_board(load_level(microban, 1)))
    path, _ = write_page(capsys, tmp_path, microban, 1)
    open_page(page, path)
    board = graph.board
    assert int(page.get_attribute("[data-role=board]", "data-player")) == board.start_player
    assert board.start_player != int(graph.player[0])
    assert page.get_attribute("[data-role=board]", "data-xsb") == board.level.xsb().rstrip()
    steps = page.evaluate("window.sokobanExplorer.view.model.data.solution.steps")
    lurd = ""
    for step in steps:
        page.keyboard.press("ArrowRight")
        lurd += step
        after = replay(board.level, lurd)
        assert page.get_attribute("[data-role=board]", "data-xsb") == after.final.rstrip()
    # an out-arc taken from the list: the player stands where the pushed box stood
    page.keyboard.press("Home")
    page.click("[data-role=out-arcs] li[data-state] >> nth=0")
    moves = page.inner_text("[data-role=state] h3")
    player = int(page.get_attribute("[data-role=board]", "data-player"))
    first = next(a for a in range(len(graph.arc_src)) if graph.arc_src[a] == 0)
    assert player == int(graph.arc_push[first]) // 4, moves
    assert page.js_errors == []


def test_the_summary_says_which_solution_its_moves_are_of(page, tmp_path, capsys, microban):
    """`solve` prints a push-optimal solution; the explorer draws the push-optimal one with
    the fewest moves, and its summary says so."""
    path, _ = write_page(capsys, tmp_path, microban, 1)
    open_page(page, path)
    label = page.inner_text("[data-role=summary] tr[data-key=solution_moves] th")
    assert "push-optimal" in label and "fewest moves" in label
    lurd = page.evaluate("window.sokobanExplorer.view.model.data.solution.lurd")
    assert summary_cells(page)["solution_moves"] == str(len(lurd))
    assert page.js_errors == []


def test_page_loads_alone_with_the_cli_counts_and_the_solvers_optimal_path(
        page, tmp_path, capsys, level_file):
    file, number = level_file
    path, printed = write_page(capsys, tmp_path, file, number)
    open_page(page, path)
    cells = summary_cells(page)
    for key, value in printed.items():
        assert cells[key] == ("n/a" if value is None else str(value)), key
    level = load_level(file, number)
    solved = solve(build_board(level))
    assert solved.optimal and solved.solved
    path_states = page.evaluate("window.sokobanExplorer.view.model.data.solution.states")
    assert len(path_states) - 1 == solved.pushes == int(cells["solution_pushes"])
    assert int(cells["solution_moves"]) <= solved.moves
    distances = page.evaluate("p => p.map(s => window.sokobanExplorer.view.model.data.states"
                              ".distance[s])", path_states)
    assert distances == list(range(solved.pushes, -1, -1))
    highlighted = page.evaluate("""() => { const m = window.sokobanExplorer.view.model;
        return [...Array(m.n).keys()].filter(s => m.has(s, 'solution')); }""")
    assert sorted(highlighted) == sorted(path_states)
    # stepping to the end with the keyboard shows a solved board
    for _ in range(solved.pushes):
        page.keyboard.press("ArrowRight")
    assert page.inner_text("[data-role=step-text]").startswith(
        f"push {solved.pushes} of {solved.pushes}")
    final = page.get_attribute("[data-role=board]", "data-xsb")
    assert "$" not in final and "." not in final.replace("+", "")
    steps = page.evaluate("window.sokobanExplorer.view.model.data.solution.steps")
    assert replay(level, "".join(steps)).solved
    assert all(u.startswith("file:") or u.startswith("data:") for u in page.requests), \
        page.requests
    assert page.js_errors == []


def test_a_click_on_a_state_shows_its_board_and_arcs(page, tmp_path, capsys, level_file):
    file, number = level_file
    graph = build_graph(build_board(load_level(file, number)))
    path, _ = write_page(capsys, tmp_path, file, number)
    open_page(page, path)
    page.check("[data-role=show-dead]")
    ids = page.evaluate("window.sokobanExplorer.view.model.data.states.id")
    chosen = range(len(ids)) if len(ids) <= 30 else range(1, len(ids), 9)
    for local in chosen:
        state = ids[local]
        stands = standing_squares(graph, state)
        hover_state(page, local)
        hovered = page.wait_for_selector(f"[data-role=hover-board][data-state='{state}']",
                                         timeout=UI_TIMEOUT_MS)
        player = int(hovered.get_attribute("data-player"))
        assert player in stands
        assert hovered.get_attribute("data-xsb") == graph.board.render(graph.boxes[state],
                                                                       player)
        click_state(page, local)
        page.wait_for_selector(f"[data-role=board][data-state='{state}']",
                               timeout=UI_TIMEOUT_MS)
        player = int(page.get_attribute("[data-role=board]", "data-player"))
        assert player in stands
        assert page.get_attribute("[data-role=board]", "data-xsb") == \
            graph.board.render(graph.boxes[state], player)
        assert page.eval_on_selector_all("[data-role=board] rect.box:not(.fixed)",
                                         "b => b.length") == graph.board.n_boxes
        assert int(page.get_attribute("[data-role=distance]", "data-distance")) == \
            int(graph.distance_to_goal[state])
        shown = page.eval_on_selector_all("[data-role=out-arcs] li[data-state]",
                                          "ls => ls.map(l => l.textContent)")
        expected = [graph.arc_label(a) for a in range(len(graph.arc_src))
                    if graph.arc_src[a] == state]
        assert sorted(text.split(" ")[0] for text in shown) == sorted(expected)
        n_in = int((graph.arc_dst == state).sum())
        assert f"In-arcs ({n_in})" in page.inner_text("[data-role=in-arcs] h4")
    assert page.js_errors == []


def test_best_push_buttons_and_the_two_layouts(page, tmp_path, capsys, microban):
    graph = build_graph(build_board(load_level(microban, 1)))
    path, _ = write_page(capsys, tmp_path, microban, 1)
    open_page(page, path)
    # a live state off the solution path: the best push lowers its distance by one
    ids = page.evaluate("window.sokobanExplorer.view.model.data.states.id")
    solution = set(page.evaluate("window.sokobanExplorer.view.model.data.solution.states"))
    off = next(s for s in range(len(ids)) if s not in solution and graph.live[ids[s]]
               and graph.distance_to_goal[ids[s]] > 0)
    click_state(page, off)
    before = int(graph.distance_to_goal[ids[off]])
    page.click("[data-role=best-push]")
    page.wait_for_selector(f"[data-role=distance][data-distance='{before - 1}']",
                           timeout=UI_TIMEOUT_MS)
    page.click("[data-role=step-last]")
    page.wait_for_selector("[data-role=distance][data-distance='0']", timeout=UI_TIMEOUT_MS)
    page.click("[data-role=step-first]")
    page.wait_for_selector("[data-role=board][data-state='0']", timeout=UI_TIMEOUT_MS)
    page.click("[data-role=step-next]")
    assert page.inner_text("[data-role=step-text]").startswith("push 1 of 8")
    shaped = page.evaluate("Array.from(window.sokobanExplorer.view.pos.x)")
    assert page.get_attribute("#explorer", "data-layout") == "force"
    page.click("[data-role=layout-layers]")
    page.wait_for_selector("#explorer[data-layout=layers][data-layout-done=true]",
                           timeout=UI_TIMEOUT_MS)
    layered = page.evaluate("Array.from(window.sokobanExplorer.view.pos.x)")
    assert layered != shaped
    click_state(page, 0)
    page.wait_for_selector("[data-role=board][data-state='0']", timeout=UI_TIMEOUT_MS)
    page.click("[data-role=layout-force]")
    assert page.evaluate("Array.from(window.sokobanExplorer.view.pos.x)") == shaped
    assert page.js_errors == []


def test_a_graph_above_the_limit_says_so_and_draws_the_reduced_view(
        page, tmp_path, capsys, microban):
    path, printed = write_page(capsys, tmp_path, microban, 1, "--max-drawn", "11")
    open_page(page, path)
    notice = page.inner_text("[data-role=notice]")
    assert "56 states" in notice and "within" in notice
    assert summary_cells(page)["states"] == str(printed["states"]) == "56"
    drawn = page.evaluate("window.sokobanExplorer.view.model.n")
    assert drawn <= 11
    assert page.evaluate("window.sokobanExplorer.view.model.data.solution.states.length") == 9
    assert page.js_errors == []
