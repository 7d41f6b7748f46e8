"""Compiling the search before a timed solve, so that numba's compile is never search time.

The search's kernels are compiled by numba on their first call (``cache=True``: once per
installation, then loaded from the cache). A warm-up solves a tiny built-in level with the same
options as the solve to come: every kernel that solve will call is compiled (or loaded) by then,
and the solve's own clock and ``timeout`` measure the search alone.
"""

from __future__ import annotations

import time
from typing import Any

from robocell.sokoban.board import build_board
from robocell.sokoban.level import parse_levels
from robocell.sokoban.solver import solve

WARM_UP_LEVEL = "######\n#    #\n# $$ #\n#.@ .#\n######\n"
"""Two boxes, four pushes: a real search (a few expansions), solved at once when compiled."""


def warm_up(metric: str, **options: Any) -> float:
    """Solve the warm-up level with ``metric`` and ``options`` (those of ``solver.solve``, no
    timeout); returns the seconds it took: the compile, on a first run."""
    started = time.monotonic()
    level = parse_levels(WARM_UP_LEVEL)[0]
    result = solve(build_board(level), metric=metric, **options)
    if not result.solved:  # the level is known solvable in every mode: this is a defect
        raise RuntimeError(f"the warm-up level was not solved ({result.status})")
    return time.monotonic() - started
