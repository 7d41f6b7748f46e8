"""What a person waiting on `robocell sokoban solve` sees: a note when the search must be
compiled first, and a live line (expanded states, bound, elapsed) on long searches."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from robocell.sokoban.solver import SearchProgress, search_compiled

REPORT_AFTER_S = 1.0
"""A search is "long" once it has run this long: shorter ones finish without a live line."""
REDRAW_EVERY_S = 0.25


def announce_compiling(stream: TextIO | None = None) -> bool:
    """Say so on ``stream`` (default stderr) when the first solve must compile the search;
    returns whether it said so."""
    if search_compiled():
        return False
    print("sokoban: compiling the search for this installation (once: about 20 s on an "
          "idle machine; later solves start at once)...", file=stream or sys.stderr,
          flush=True)
    return True


class SearchReport:
    """A ``solve(on_progress=...)`` callback: before the first chunk, the note when the
    search must be compiled; then one line redrawn in place, on a terminal only (a pipe or a
    file gets nothing), cleared at the end."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.enabled = bool(getattr(stream, "isatty", lambda: False)())
        self.drawn = False
        self.started = False
        self._last = 0.0

    def __enter__(self) -> SearchReport:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def __call__(self, progress: SearchProgress) -> None:
        if not self.started:
            self.started = True
            announce_compiling(self.stream)
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
