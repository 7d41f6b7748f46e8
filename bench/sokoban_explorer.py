"""The Sokoban state-space explorer: screenshots for the docs, load time and frame time.

For graphs of about 5 000, 20 000 and 100 000+ states (Microban 66, 62 and 36) it writes the
page (``sokoban graph --html``), opens it in Debian's Chromium (headless, WebGL in software:
no GPU here) and measures:

- the load time: from navigation to the first frame drawn (median of ``--runs``), beside the
  time to build the graph, its layout and the page in Python (the layout read from its cache
  after the first run, as the page does on a second visit: both are printed);
- the frame time, by the page's own frame timer (``measureFrames``): the camera moves on
  every animation frame for 120 frames; each render's duration and the time between frames
  (median and 95th percentile), with the dead region as a mass (the default view) and with
  every dead state and its arcs drawn.

It also takes a screenshot of each into ``--out-dir`` (and of Microban 1 and 6, the small
ones the docs show first).

    python bench/sokoban_explorer.py [--out-dir docs] [--runs 3] [--levels 66,62,36]
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
SCREENSHOTS = ((1, "sokoban-explorer-small.png", True), (6, "sokoban-explorer-large.png", False))
MEASURED = (66, 62, 36)
"""Microban 66: 5 075 states; 62: 20 201; 36: 129 128 (all drawn whole by default)."""
FRAMES = 120
UI_TIMEOUT_MS = 300_000
MAX_PNG_BYTES = 250_000
"""Screenshots in docs/ stay small: colours are coarsened until the PNG fits."""
EXPLORER = "window.sokobanExplorer"


def build_page(file: Path, number: int) -> tuple[str, dict, float]:
    started = time.perf_counter()
    graph = build_graph(build_board(load_level(file, number)))
    data = view_data(graph, max_drawn=MAX_DRAWN_STATES)
    page = render_page(data)
    return page, data, time.perf_counter() - started


def shrink_png(path: Path) -> None:
    """Coarser colour steps (antialiased lines make many shades) until the file is small."""
    image = cv2.imread(str(path))
    for step in (1, 8, 16, 24, 32):
        coarse = np.clip((image // step) * step + step // 2, 0, 255).astype(np.uint8) \
            if step > 1 else image
        cv2.imwrite(str(path), coarse, [cv2.IMWRITE_PNG_COMPRESSION, 9])
        if path.stat().st_size <= MAX_PNG_BYTES:
            return


def open_page(browser, path: Path) -> tuple[object, float]:
    """The page loaded and drawn; the time from navigation to its first frame (ms)."""
    page = browser.new_page(viewport=VIEWPORT)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(path.as_uri(), timeout=UI_TIMEOUT_MS)
    page.wait_for_selector("#explorer[data-ready=true]", timeout=UI_TIMEOUT_MS)
    if errors:
        raise RuntimeError(f"the page of {path.name} raised: {errors}")
    return page, float(page.get_attribute("#explorer", "data-load-ms"))


def screenshot(page, out: Path, show_dead: bool) -> int:
    if show_dead:
        page.check("[data-role=show-dead]")
    page.click("[data-role=step-next]")
    page.click("[data-role=step-next]")
    page.wait_for_timeout(300)
    page.screenshot(path=str(out))
    shrink_png(out)
    return out.stat().st_size


def frame_times(page, show_dead: bool) -> dict:
    if show_dead:
        page.check("[data-role=show-dead]")
    page.evaluate(f"{EXPLORER}.fit()")
    return page.evaluate(f"n => {EXPLORER}.measureFrames(n)", FRAMES)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path,
                        default=shared_data_dir() / "sokoban" / "microban.txt")
    parser.add_argument("--out-dir", type=Path,
                        default=Path(__file__).resolve().parents[1] / "docs")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--levels", default=",".join(str(n) for n in MEASURED))
    args = parser.parse_args()
    if not args.collection.exists():
        print(f"{args.collection} is missing: the Microban collection lives in ../shared/data "
              "(or set ROBOCELL_DATA)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright  # only this bench drives a browser

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for number, name, dead in SCREENSHOTS:
                html, data, _ = build_page(args.collection, number)
                path = Path(tmp) / f"level-{number}.html"
                path.write_text(html, encoding="utf-8")
                page, _ = open_page(browser, path)
                size = screenshot(page, args.out_dir / name, dead)
                page.close()
                print(f"Microban {number}: {data['summary']['states']} states -> "
                      f"{args.out_dir / name} ({size / 1024:.0f} KB)")
            print(f"\nMicroban level: states and arcs drawn, page size, Python (graph, layout, "
                  f"page: first run / layout cached), browser load (navigation to the first "
                  f"frame, median of {args.runs}), frame time over {FRAMES} frames of camera "
                  "moves (render and frame interval, median / 95th percentile, ms)")
            for number in (int(n) for n in args.levels.split(",")):
                measure_level(browser, args, number, Path(tmp))
        finally:
            browser.close()
    return 0


def measure_level(browser, args: argparse.Namespace, number: int, tmp: Path) -> None:
    html, data, first_s = build_page(args.collection, number)
    _, _, cached_s = build_page(args.collection, number)
    path = tmp / f"load-{number}.html"
    path.write_text(html, encoding="utf-8")
    loads, frames = [], {}
    for run in range(args.runs):
        page, load_ms = open_page(browser, path)
        loads.append(load_ms)
        if run == 0:
            frames["dead as a mass"] = frame_times(page, show_dead=False)
            frames["every state and arc"] = frame_times(page, show_dead=True)
            page.close()
            page, _ = open_page(browser, path)
            shot = args.out_dir / f"sokoban-explorer-{number}.png"
            screenshot(page, shot, show_dead=False)
        page.close()
    print(f"Microban {number}: {len(data['states']['id']):,} states, "
          f"{len(data['arcs']['source']):,} arcs, page {len(html) / 1e6:.1f} MB, "
          f"Python {first_s:.1f} s / {cached_s:.1f} s, "
          f"load {statistics.median(loads) / 1000:.2f} s "
          f"(runs: {', '.join(f'{t / 1000:.2f}' for t in loads)}); screenshot {shot}")
    for view, stats in frames.items():
        render, interval = stats["render"], stats["interval"]
        print(f"  frames, {view}: render {render['median']:.1f} / {render['p95']:.1f} ms, "
              f"interval {interval['median']:.1f} / {interval['p95']:.1f} ms "
              f"({interval['count']} frames)")


if __name__ == "__main__":
    sys.exit(main())
