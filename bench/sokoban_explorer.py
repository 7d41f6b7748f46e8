"""The Sokoban state-space explorer: screenshots for the docs and the page's load time.

Writes the page (``sokoban graph --html``) of a small Microban level and of one with a few
thousand states, and takes their screenshots in Debian's Chromium (headless). Then measures
how long the page of a ~20 000-state graph takes to become usable: from navigation to the
first frame drawn after the layout (median of ``--runs``), drawn whole and in the reduced
view the default limit gives, beside the time to build the graph and the page in Python.

    python bench/sokoban_explorer.py [--out-dir docs] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

from robocell.common.paths import shared_data_dir
from robocell.sokoban.board import build_board
from robocell.sokoban.explorer import render_page
from robocell.sokoban.graph import build_graph
from robocell.sokoban.graph_view import MAX_DRAWN_STATES, view_data
from robocell.sokoban.level import load_level

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1280, "height": 760}
SMALL_LEVEL = 1          # Microban 1: 56 states (15 live)
LARGE_LEVEL = 6          # Microban 6: 2 818 states (296 live)
LOAD_LEVEL = 62          # Microban 62: 20 201 states (305 live), 79 456 arcs
UI_TIMEOUT_MS = 120_000
MAX_PNG_BYTES = 200_000
"""Screenshots in docs/ stay small: colours are coarsened until the PNG fits."""
FIRST_FRAME_JS = """() => new Promise(resolve => requestAnimationFrame(
    () => requestAnimationFrame(() => resolve(performance.now()))))"""


def build_page(file: Path, number: int, max_drawn: int) -> tuple[str, dict, float]:
    started = time.perf_counter()
    graph = build_graph(build_board(load_level(file, number)))
    data = view_data(graph, max_drawn=max_drawn)
    page = render_page(data)
    return page, data, time.perf_counter() - started


def screenshot(browser, path: Path, out: Path, show_dead: bool) -> int:
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(path.as_uri())
    page.wait_for_selector("#explorer[data-ready=true]", timeout=UI_TIMEOUT_MS)
    if show_dead:
        page.check("[data-role=show-dead]")
    page.click("[data-role=step-next]")
    page.click("[data-role=step-next]")
    page.evaluate(FIRST_FRAME_JS)
    page.screenshot(path=str(out))
    page.close()
    shrink_png(out)
    return out.stat().st_size


def shrink_png(path: Path) -> None:
    """Coarser colour steps (antialiased lines make many shades) until the file is small."""
    image = cv2.imread(str(path))
    for step in (1, 8, 16, 24, 32):
        coarse = np.clip((image // step) * step + step // 2, 0, 255).astype(np.uint8) \
            if step > 1 else image
        cv2.imwrite(str(path), coarse, [cv2.IMWRITE_PNG_COMPRESSION, 9])
        if path.stat().st_size <= MAX_PNG_BYTES:
            return


def load_time_ms(browser, path: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        page = browser.new_page(viewport=VIEWPORT)
        errors: list[str] = []
        page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
        page.goto(path.as_uri(), timeout=UI_TIMEOUT_MS)
        page.wait_for_selector("#explorer[data-ready=true]", timeout=UI_TIMEOUT_MS)
        times.append(page.evaluate(FIRST_FRAME_JS))
        if errors:
            raise RuntimeError(f"the page of {path.name} raised: {errors}")
        page.close()
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path,
                        default=shared_data_dir() / "sokoban" / "microban.txt")
    parser.add_argument("--out-dir", type=Path,
                        default=Path(__file__).resolve().parents[1] / "docs")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not args.collection.exists():
        print(f"{args.collection} is missing: the Microban collection lives in ../shared/data "
              "(or set ROBOCELL_DATA)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for number, name, dead in ((SMALL_LEVEL, "sokoban-explorer-small.png", True),
                                       (LARGE_LEVEL, "sokoban-explorer-large.png", True)):
                page, data, _ = build_page(args.collection, number, MAX_DRAWN_STATES)
                path = Path(tmp) / f"level-{number}.html"
                path.write_text(page, encoding="utf-8")
                size = screenshot(browser, path, args.out_dir / name, dead)
                print(f"Microban {number}: {data['summary']['states']} states -> "
                      f"{args.out_dir / name} ({size / 1024:.0f} KB)")
            print(f"\nload time of the page, Microban {LOAD_LEVEL} (median of {args.runs}; "
                  "navigation to the first frame after the layout)")
            print(f"{'view':<34}{'drawn':>8}{'arcs':>8}{'page':>9}{'python':>9}{'browser':>10}")
            for label, limit in (("whole graph (--max-drawn 25000)", 25_000),
                                 (f"default view (limit {MAX_DRAWN_STATES})", MAX_DRAWN_STATES)):
                page, data, built_s = build_page(args.collection, LOAD_LEVEL, limit)
                path = Path(tmp) / f"load-{limit}.html"
                path.write_text(page, encoding="utf-8")
                load_ms = load_time_ms(browser, path, args.runs)
                print(f"{label:<34}{len(data['states']['id']):>8}"
                      f"{len(data['arcs']['source']):>8}{len(page) / 1e6:>7.2f}MB"
                      f"{built_s:>8.2f}s{load_ms / 1000:>9.2f}s")
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
