"""The state space of the Sokoban level the solver last solved, for the dashboard's explorer
view: built once per level (the last one kept) from the level text on
`solver.sokoban_result`."""

from __future__ import annotations

import threading
from typing import Any

from robocell.errors import RobocellError
from robocell.sokoban.board import build_board
from robocell.sokoban.graph import GraphTooLarge, build_graph
from robocell.sokoban.graph_view import view_data
from robocell.sokoban.level import LevelError, parse_levels

SERVED_MAX_STATES = 1_000_000
"""Largest push graph the monitor builds; above it the view says so instead."""


class SokobanGraphError(RobocellError):
    """The graph of the level cannot be shown (no level yet, invalid, or too large)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class SokobanGraphs:
    """Explorer data of the last level asked for, built on demand and cached by its text."""

    def __init__(self, max_states: int = SERVED_MAX_STATES) -> None:
        self.max_states = max_states
        self._lock = threading.Lock()
        self._level: str | None = None
        self._data: dict[str, Any] | None = None

    def data_for(self, level_text: str | None) -> dict[str, Any]:
        """The explorer data (``graph_view.view_data``) of a level in XSB text."""
        if not level_text:
            raise SokobanGraphError(404, "no Sokoban level solved yet: ask the solver "
                                         "(`robocell call solver sokoban ...`) and it "
                                         "appears here")
        with self._lock:
            if self._level == level_text and self._data is not None:
                return self._data
            data = self._build(level_text)
            self._level, self._data = level_text, data
            return data

    def _build(self, level_text: str) -> dict[str, Any]:
        # lazy: numba compiles the graph search on import (~1 s); a monitor that never shows

        try:
            levels = parse_levels(level_text)
            if len(levels) != 1:
                raise LevelError(f"expected one level, found {len(levels)}")
            graph = build_graph(build_board(levels[0]), max_states=self.max_states)
        except GraphTooLarge as exc:
            raise SokobanGraphError(413, f"the level last solved is too large to draw: "
                                         f"{exc}") from exc
        except LevelError as exc:
            raise SokobanGraphError(422, f"the level last solved cannot be read: {exc}") \
                from exc
        return view_data(graph)
