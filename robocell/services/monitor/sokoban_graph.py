"""The state space of the Sokoban level the solver last solved, for the dashboard's explorer
view: built once per level (the last one kept) from the level text on
`solver.sokoban_result`.

Bounds (what one GET of ``/api/sokoban/graph`` can cost the monitor): the graph is built in a
child process, so the server's threads never wait on it, and that process is stopped after
``BUILD_SECONDS`` or above ``SERVED_MAX_STATES`` states; one build runs at a time; its
outcome, a refusal too, is kept for the level, so asking again costs nothing.
"""

from __future__ import annotations

import multiprocessing
import threading
from multiprocessing.connection import Connection
from typing import Any

from robocell.errors import RobocellError

SERVED_MAX_STATES = 400_000
"""Largest push graph the monitor builds; above it the view says so instead."""
BUILD_SECONDS = 60.0
"""Longest a graph build may take; past it the child process is stopped and the view says
so (an open level with many boxes can take hours before reaching the state limit)."""
_SPAWN = multiprocessing.get_context("spawn")
"""A fresh interpreter for each build: no lock or thread of the monitor is inherited."""


class SokobanGraphError(RobocellError):
    """The graph of the level cannot be shown (no level yet, invalid, or too large)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def explorer_data(level_text: str, max_states: int) -> dict[str, Any]:
    """The explorer data (``graph_view.view_data``) of a level in XSB text. The Sokoban
    modules (numba and its compiler: ~130 MB) are imported here, in the build's child
    process, never in the monitor itself."""
    from robocell.sokoban.board import build_board
    from robocell.sokoban.graph import GraphTooLarge, build_graph
    from robocell.sokoban.graph_view import view_data
    from robocell.sokoban.level import LevelError, parse_levels
    try:
        levels = parse_levels(level_text)
        if len(levels) != 1:
            raise LevelError(f"expected one level, found {len(levels)}")
        graph = build_graph(build_board(levels[0]), max_states=max_states)
    except GraphTooLarge as exc:
        raise SokobanGraphError(413, f"the level last solved is too large to draw: "
                                     f"{exc}") from exc
    except LevelError as exc:
        raise SokobanGraphError(422, f"the level last solved cannot be read: {exc}") \
            from exc
    return view_data(graph)


def _build_in_child(level_text: str, max_states: int, out: Connection) -> None:
    """The child process: build the data, send it (or the refusal) back, exit."""
    try:
        out.send(("ok", explorer_data(level_text, max_states)))
    except SokobanGraphError as exc:
        out.send(("refused", exc.status, exc.message))
    finally:
        out.close()


class SokobanGraphs:
    """Explorer data of the last level asked for, built on demand and cached by its text."""

    def __init__(self, max_states: int = SERVED_MAX_STATES,
                 build_seconds: float = BUILD_SECONDS) -> None:
        self.max_states = max_states
        self.build_seconds = build_seconds
        self.builds = 0
        """Graphs built (or tried) so far: each level once."""
        self._lock = threading.Lock()
        self._level: str | None = None
        self._outcome: dict[str, Any] | SokobanGraphError | None = None

    def data_for(self, level_text: str | None) -> dict[str, Any]:
        """The explorer data of a level in XSB text; raises SokobanGraphError with the HTTP
        status and the reason when it cannot be shown."""
        if not level_text:
            raise SokobanGraphError(404, "no Sokoban level solved yet: ask the solver "
                                         "(`robocell call solver sokoban ...`) and it "
                                         "appears here")
        with self._lock:  # one build at a time; a second request waits for its outcome
            if self._level != level_text or self._outcome is None:
                self.builds += 1
                try:
                    self._outcome = self._build(level_text)
                except SokobanGraphError as exc:
                    self._outcome = exc
                self._level = level_text
            outcome = self._outcome
        if isinstance(outcome, SokobanGraphError):
            raise outcome
        return outcome

    def _build(self, level_text: str) -> dict[str, Any]:
        """Build in a child process within ``build_seconds``."""
        receive, send = _SPAWN.Pipe(duplex=False)
        child = _SPAWN.Process(target=_build_in_child, name="sokoban-graph",
                               args=(level_text, self.max_states, send), daemon=True)
        child.start()
        send.close()
        try:
            if not receive.poll(self.build_seconds):
                raise SokobanGraphError(413, f"the level last solved is too large to draw: "
                                             f"its graph took more than "
                                             f"{self.build_seconds:g} s to build (the "
                                             f"dashboard's bound); `robocell sokoban graph` "
                                             f"has no such bound")
            try:
                reply = receive.recv()
            except EOFError:
                raise SokobanGraphError(500, "the graph builder ended without an answer (out "
                                             "of memory?)") from None
        finally:
            receive.close()
            if child.is_alive():
                child.kill()
            child.join(5)
        if reply[0] == "refused":
            raise SokobanGraphError(reply[1], reply[2])
        return reply[1]
