"""What a person waiting on `robocell sokoban solve` sees: the compile of the search said while
it lasts (before the solve's clock starts), and a live line (expanded states, bound, elapsed)
on long searches."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, TextIO

from robocell.common.progress import Ticker
from robocell.sokoban.solver import SearchProgress, search_compiled
from robocell.sokoban.warm_up import warm_up

REPORT_AFTER_S = 1.0
"""A search is "long" once it has run this long: shorter ones finish without a live line."""
REDRAW_EVERY_S = 0.25
COMPILE_EXPECTED_S = 20.0
"""What compiling the search takes on an idle machine of two cores, about."""
LOAD_QUIET_S = 2.0
"""Loading the compiled search from numba's cache is said only if it lasts longer than this."""


def prepare_search(metric: str, option_sets: Iterable[dict[str, Any]],
                   stream: TextIO | None = None) -> None:
    """Compile (or load from numba's cache) every kernel the solves to come will call, one
    warm-up per set of ``solve`` options, before their clock starts. A compile (the first run
    after an install) is said on ``stream`` (default stderr) at once, then every few seconds,
    and the time it took at the end; a cache load only if it lasts."""
    compiled = search_compiled()
    label = ("sokoban: loading the compiled search" if compiled else
             "sokoban: compiling the search: board analysis, deadlock tables, the A* kernel "
             "(first run only)")
    with Ticker(label, None if compiled else COMPILE_EXPECTED_S,
                after_s=LOAD_QUIET_S if compiled else 0.0, stream=stream):
        for options in option_sets:
            warm_up(metric, **options)


class SearchReport:
    """A ``solve(on_progress=...)`` callback: one line redrawn in place, on a terminal only (a
    pipe or a file gets nothing), cleared at the end."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.enabled = bool(getattr(stream, "isatty", lambda: False)())
        self.drawn = False
        self._last = 0.0

    def __enter__(self) -> SearchReport:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def __call__(self, progress: SearchProgress) -> None:
        if not self.enabled or progress.seconds < REPORT_AFTER_S:
            return
        now = time.monotonic()
        if now - self._last < REDRAW_EVERY_S:
            return
        self._last = now
        self.stream.write("\r\033[K" + progress_line(progress))
        self.stream.flush()
        self.drawn = True


def progress_line(progress: SearchProgress) -> str:
    """``searching: 1,234,567 states expanded, 2,345,678 stored, bound 97, 12.3 s``."""
    bound = "" if progress.bound is None else f", bound {progress.bound}"
    return (f"searching: {progress.expanded:,} states expanded, {progress.stored:,} stored"
            f"{bound}, {progress.seconds:.1f} s")
