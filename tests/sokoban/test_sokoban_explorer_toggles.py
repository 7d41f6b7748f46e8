"""The explorer's toggles in real headless Chromium, each on a level whose answer is known by
hand (tests/sokoban/levels/marks.xsb, twenty-three.xsb): strongly connected components
coloured, bottlenecks marked, corridors drawn as one arc, the dead region shaded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from robocell.cli import main
from robocell.sokoban.board import build_board
from robocell.sokoban.graph import build_graph
from robocell.sokoban.level import load_level

LEVELS = Path(__file__).with_name("levels")
MARKS = LEVELS / "marks.xsb"
TWENTY_THREE = LEVELS / "twenty-three.xsb"
CORRIDOR, TWO_WAYS, ROOM = 1, 2, 3
UI_TIMEOUT_MS = 15000
EXPLORER = "window.sokobanExplorer"


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1300, "height": 850})  # type: ignore
    page = context.new_page()
    page.js_errors = []
    page.on("pageerror", lambda exc: page.js_errors.append(str(exc)))
    yield page
    context.close()


def open_level(page, tmp_path: Path, file: Path, number: int) -> None:
    out = tmp_path / f"level-{number}.html"
    assert main(["sokoban", "graph", str(file), "--level", str(number), "--html",
                 str(out)]) == 0
    page.goto(out.as_uri())
    page.wait_for_selector("#explorer[data-ready=true]", timeout=UI_TIMEOUT_MS)


def toggle(page, name: str) -> None:
    page.click(f"[data-role=toggle-{name}]")


def counts(page) -> dict:
    return page.evaluate(f"{EXPLORER}.counts()")


def colour(page, state: int) -> str:
    return page.evaluate(f"s => {EXPLORER}.stateStyle(s).color", state)


def test_corridors_compressed_draw_the_one_way_corridor_as_one_arc(page, tmp_path):
    open_level(page, tmp_path, MARKS, CORRIDOR)
    assert counts(page) == {"states": 4, "arcs": 3, "mass": 0}
    toggle(page, "corridors")
    assert counts(page) == {"states": 2, "arcs": 1, "mass": 0}
    run = page.evaluate(f"{EXPLORER}.arcStyle(3)")
    assert not run["hidden"] and run["type"] == "thick"
    toggle(page, "corridors")
    assert counts(page) == {"states": 4, "arcs": 3, "mass": 0}
    # selecting a state inside a corridor draws the corridor again
    toggle(page, "corridors")
    page.evaluate(f"{EXPLORER}.select(1)")
    assert counts(page)["states"] == 4
    assert page.js_errors == []


def test_bottlenecks_mark_the_corridor_and_nothing_where_either_order_works(page, tmp_path):
    open_level(page, tmp_path, MARKS, CORRIDOR)
    neck = page.evaluate("SokobanExplorer.COLOURS.bottleneck")
    assert neck not in {colour(page, s) for s in range(4)}
    toggle(page, "bottlenecks")
    page.evaluate(f"{EXPLORER}.select(-1)")  # the selected state's arcs are drawn as such
    assert [colour(page, s) == neck for s in range(4)] == [False, True, True, False]
    arcs = [page.evaluate(f"a => {EXPLORER}.arcStyle(a)", a) for a in range(3)]
    assert all(a["color"] == neck and a["size"] > 1 for a in arcs)
    assert "2 bottleneck states, 3 bottleneck pushes" in page.inner_text("[data-role=drawn]")
    page.goto("about:blank")
    open_level(page, tmp_path, MARKS, TWO_WAYS)
    toggle(page, "bottlenecks")
    assert neck not in {colour(page, s) for s in range(4)}
    assert "0 bottleneck states, 0 bottleneck pushes" in page.inner_text("[data-role=drawn]")
    assert page.js_errors == []


def test_components_coloured_pair_the_states_found_by_hand(page, tmp_path):
    graph = build_graph(build_board(load_level(MARKS, ROOM)))
    open_level(page, tmp_path, MARKS, ROOM)
    page.check("[data-role=show-dead]")
    toggle(page, "scc")
    palette = page.evaluate("SokobanExplorer.SCC_COLOURS")
    grey = page.evaluate("SokobanExplorer.COLOURS.other")

    def boxes_on(row: int, *columns: int) -> list[int]:
        squares = {graph.board.square(row, c) for c in columns}
        return [s for s in range(graph.n_states) if int(graph.boxes[s][0]) in squares]

    top, bottom = boxes_on(1, 2, 3), boxes_on(3, 2, 3)
    assert len(top) == len(bottom) == 2
    for pair in (top, bottom):
        assert colour(page, pair[0]) == colour(page, pair[1]) in palette
    assert colour(page, top[0]) != colour(page, bottom[0])
    for corner in boxes_on(1, 1, 4) + boxes_on(3, 1, 4):
        assert colour(page, corner) == grey
    toggle(page, "scc")
    assert colour(page, top[0]) not in palette
    assert page.js_errors == []


def test_the_dead_region_is_a_shaded_mass_without_arcs(page, tmp_path):
    """Twenty-three: 12 live states and 17 live arcs, 11 dead states."""
    open_level(page, tmp_path, TWENTY_THREE, 1)
    mass = page.evaluate("SokobanExplorer.COLOURS.deadMass")
    assert counts(page) == {"states": 12, "arcs": 17, "mass": 11}
    dead = [s for s in range(23) if page.evaluate(
        f"s => {EXPLORER}.view.model.data.states.distance[s]", s) < 0]
    assert len(dead) == 11 and all(colour(page, s) == mass for s in dead)
    toggle(page, "deadMass")
    assert counts(page) == {"states": 12, "arcs": 17, "mass": 0}
    page.check("[data-role=show-dead]")
    assert counts(page) == {"states": 23, "arcs": 30, "mass": 0}
    assert mass not in {colour(page, s) for s in dead}
    assert page.js_errors == []
