"""The solver's worker processes: warm up once, then answer jobs (plain data in, plain data out).

Each worker of `robocell.services.solver.pool.SolverPool` runs `worker_main`: it maps the
tables and compiles the search (`warm_worker`), then loops over jobs sent on its pipe. A job
is ``(function, *arguments)`` with a module-level function of this module: `solve_in_worker`
(one cube, or one share of a split 3x3 search) or `solve_sokoban_in_worker`. Errors come back
as data, since exceptions with extra fields do not cross process boundaries intact.
"""

from __future__ import annotations

import time
from multiprocessing.connection import Connection
from typing import Any

from robocell.common import tables
from robocell.common.facelets import solved
from robocell.common.lifetime import follow_parent
from robocell.common.malloc import freeze_startup_objects
from robocell.common.profile import ProfileError, load_profile
from robocell.common.validation import CubeStateError
from robocell.services.solver.api import solve
from robocell.services.solver.cube3.robot_time.cost_tables import touch_loaded
from robocell.sokoban.board import build_board
from robocell.sokoban.level import LevelError, parse_levels
from robocell.sokoban.lurd import replay
from robocell.sokoban.schedule import LaneError, default_lanes, solve_lanes, usable_lanes
from robocell.sokoban.solver import solve as solve_sokoban

SOKOBAN_DEFAULT_TIMEOUT_S = 10.0
"""Search budget of a Sokoban solve when the request gives none."""


def worker_main(conn: Connection, profiles: tuple[str, ...], parent_pid: int,
                table_limit: tables.LoadingLimit | None = None) -> None:
    """Worker process body: warm up, say so, then answer jobs until told to stop (None). A
    job is ``(function, *arguments)``: a module-level function returning plain data. The
    worker ends with its parent (``parent_pid``, the solver), even in the middle of a warm-up
    or a search, when it does not read its pipe. With ``table_limit`` (a table budget) it
    maps no other table group."""
    follow_parent(parent_pid)
    if table_limit is not None:
        tables.limit_loading(table_limit.groups, table_limit.reason)
    warm_worker(profiles)
    conn.send("ready")
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if job is None:
            return
        function, *arguments = job
        conn.send(function(*arguments))


def warm_profiles(profile: str | None) -> tuple[str, ...]:
    """The profiles a solver's workers warm up for a cell of robot ``profile``: that one
    alone, else the plain metric htm (a request for another is served, cold, when it comes)."""
    return (profile or "htm",)


def warm_worker(profiles: tuple[str, ...]) -> None:
    """Worker initialiser: map the tables and compile the search once, before any request."""
    for name in profiles:
        profile = load_profile(name)
        for size in (2, 3):
            if profile.fits(size):
                solve(solved(size), name, timeout=0.01)
    touch_loaded()
    freeze_startup_objects()


def solve_in_worker(facelets: str, profile: str | None, max_length: int | None,
                    timeout: float | None, part: tuple[int, int] = (0, 1),
                    search_until: float | None = None) -> dict[str, Any]:
    """Plan in a worker (``part``: its share of a split 3x3 search, which ends its search
    by ``search_until``, a time.monotonic() shared by the host's processes, so that a share
    that started late does not hold up the others): ``{"plan": Solution.to_dict(), "span":
    (start, end)}`` or ``{"error": {code, message, stickers}}``."""
    started = time.monotonic()
    if search_until is not None and timeout is not None:
        timeout = max(0.0, min(timeout, search_until - started))
    try:
        plan = solve(facelets, profile, max_length=max_length, timeout=timeout, part=part)
    except CubeStateError as exc:
        return {"error": exc.to_dict()}
    except (ProfileError, ValueError) as exc:
        return {"error": {"code": "invalid_request", "message": str(exc), "stickers": []}}
    except tables.TableError as exc:
        return {"error": {"code": "tables", "message": str(exc), "stickers": []}}
    return {"plan": plan.to_dict(), "span": (started, time.monotonic())}


def solve_sokoban_in_worker(level_text: str, metric: str, timeout: float,
                            fast: bool) -> dict[str, Any]:
    """Solve one Sokoban level (XSB text) in a worker; the solution is replayed before it is
    returned. Errors come back as data."""

    try:
        levels = parse_levels(level_text)
        if len(levels) != 1:
            raise LevelError(f"expected one level in the request, found {len(levels)}; send "
                             "the levels one at a time")
        level = levels[0]
        if fast:
            # optimal A* for a moment, then the non-optimal searches (robocell.sokoban.schedule),
            # in lanes at the same time when this process may use more than one CPU
            lanes = default_lanes(metric, timeout, usable_lanes())
            result, spent = solve_lanes(level, lanes, metric)
            result.seconds = spent
        else:
            result = solve_sokoban(build_board(level), metric=metric, timeout=timeout)
    except (LevelError, ValueError) as exc:
        return {"error": {"code": "invalid_level", "message": str(exc), "stickers": []}}
    except LaneError as exc:
        return {"error": {"code": "internal", "message": str(exc), "stickers": []}}
    if result.solved and not replay(level, result.lurd).solved:
        return {"error": {"code": "internal", "stickers": [],
                          "message": "the solution found does not replay; please report"}}
    return {"result": {
        "status": result.status, "solved": result.solved, "lurd": result.lurd,
        "pushes": result.pushes, "moves": result.moves, "metric": result.metric,
        "optimal": bool(result.optimal and result.solved), "expanded": result.expanded,
        "solve_ms": round(1000 * result.seconds, 3), "lower_bound": result.lower_bound,
        "stage": result.stage}}
