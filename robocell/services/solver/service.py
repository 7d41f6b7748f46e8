"""`robocell solver`: the solver as a bus service, answering from a pool of worker processes.

Pattern: a request/reply *worker pool*. The bus adapter (one `Node`) answers the `solve`
command and, in automatic mode, every new `vision.cube_state`; each solve runs in one of
``--workers`` processes. The tables are built (if needed) once by this process before the
workers start; every worker then memory-maps the same files read-only, so they share one
copy in the page cache. A request that finds every worker busy and the queue full is
answered ``busy`` at once; a request whose caller stopped waiting is dropped before it
starts (cancellation), and a 3x3 search never runs past the caller's deadline.

A 3x3 search is shared by the workers idle when it starts: each searches its share of the
six search directions (3 axes x cube and inverse) for budget/n, and the cheapest plan of the
n wins. The search budget is an amount of search (worker-seconds), so a plan is as good as
one worker searching the whole budget, in 1/n of the time.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
import uuid
from typing import Any

from robocell.errors import CommandError

DEFAULT_TIMEOUT_S = 0.1
"""3x3 search budget per request when neither the request nor the robot profile
(``search_budget_ms``) sets one; always bounded by the caller's deadline."""
MIN_BUDGET_S = 0.005
QUEUE_PER_WORKER = 4
"""Requests waiting per worker before new ones are refused as busy."""
AUTO_DEADLINE_S = 30.0
"""Automatic mode: longest wait for a plan for a new cube state."""
CUBE3_STICKERS = 54

PUZZLE_NAMES = {2: "2x2x2", 3: "3x3x3"}


# --- the worker side (runs in the pool's processes) --------------------------------------

def _warm_worker(profiles: tuple[str, ...]) -> None:
    """Worker initialiser: map the tables and compile the search once, before any request."""
    from robocell.common.facelets import solved
    from robocell.common.heap import freeze_startup_objects
    from robocell.common.profile import load_profile
    from robocell.services.solver.api import solve

    for name in profiles:
        profile = load_profile(name)
        for size in (2, 3):
            if profile.fits(size):
                solve(solved(size), name, timeout=0.01)
    freeze_startup_objects()


def solve_in_worker(facelets: str, profile: str | None, max_length: int | None,
                    timeout: float | None, part: tuple[int, int] = (0, 1),
                    search_until: float | None = None) -> dict[str, Any]:
    """Plan in a worker (``part``: its share of a split 3x3 search, which ends its search
    by ``search_until``, a time.monotonic() shared by the host's processes, so that a share
    that started late does not hold up the others); errors come back as data (exceptions
    with extra fields do not cross process boundaries intact)."""
    from robocell.common.profile import ProfileError
    from robocell.common.validation import CubeStateError
    from robocell.services.solver.api import solve

    started = time.monotonic()
    if search_until is not None and timeout is not None:
        timeout = max(0.0, min(timeout, search_until - started))
    try:
        plan = solve(facelets, profile, max_length=max_length, timeout=timeout, part=part)
    except CubeStateError as exc:
        return {"error": exc.to_dict()}
    except (ProfileError, ValueError) as exc:
        return {"error": {"code": "invalid_request", "message": str(exc), "stickers": []}}
    return {"plan": plan.to_dict(), "span": (started, time.monotonic())}


SOKOBAN_DEFAULT_TIMEOUT_S = 10.0
"""Search budget of a Sokoban solve when the request gives none."""


def solve_sokoban_in_worker(level_text: str, metric: str, timeout: float,
                            fast: bool) -> dict[str, Any]:
    """Solve one Sokoban level (XSB text) in a worker; the solution is replayed before it is
    returned. Errors come back as data."""
    from robocell.sokoban.board import build_board
    from robocell.sokoban.level import LevelError, parse_levels
    from robocell.sokoban.lurd import replay
    from robocell.sokoban.schedule import default_schedule, solve_scheduled
    from robocell.sokoban.solver import solve

    try:
        levels = parse_levels(level_text)
        if len(levels) != 1:
            raise LevelError(f"expected one level in the request, found {len(levels)}; send "
                             "the levels one at a time")
        level = levels[0]
        if fast:
            # optimal A* for a moment, then the non-optimal searches (robocell.sokoban.schedule)
            result, spent = solve_scheduled(level, default_schedule(metric, timeout), metric)
            result.seconds = spent
        else:
            result = solve(build_board(level), metric=metric, timeout=timeout)
    except (LevelError, ValueError) as exc:
        return {"error": {"code": "invalid_level", "message": str(exc), "stickers": []}}
    if result.solved and not replay(level, result.lurd).solved:
        return {"error": {"code": "internal", "stickers": [],
                          "message": "the solution found does not replay; please report"}}
    return {"result": {
        "status": result.status, "solved": result.solved, "lurd": result.lurd,
        "pushes": result.pushes, "moves": result.moves, "metric": result.metric,
        "optimal": bool(result.optimal and result.solved), "expanded": result.expanded,
        "solve_ms": round(1000 * result.seconds, 3), "lower_bound": result.lower_bound}}


# --- the pure core: one plan from a split search, and its bus payload -------------------

def split_jobs(facelets: str, profile: str | None, budget: float, workers: int) -> list[tuple]:
    """The pool jobs of one solve on ``workers`` idle workers: a 3x3 search split into that
    many shares of budget/n each; anything else (a 2x2 is a table look-up) as one job."""
    if len(facelets) != CUBE3_STICKERS or workers < 2:
        return [(solve_in_worker, facelets, profile, None, budget)]
    share = budget / workers
    until = time.monotonic() + share
    return [(solve_in_worker, facelets, profile, None, share, (k, workers), until)
            for k in range(workers)]


def merge_outcomes(outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    """One worker outcome from the shares of a split search: the cheapest plan (fewest
    moves on a tie), with the shares' statistics added up. An error wins (every share
    validated the same cube, so they agree)."""
    for outcome in outcomes:
        if "error" in outcome:
            return outcome
    if len(outcomes) == 1:
        return outcomes[0]
    plans = [outcome["plan"] for outcome in outcomes]
    best = min(plans, key=lambda p: (p["cost"], p["length"]))
    stats = dict(best["stats"])
    for key in ("candidates", "nodes"):
        if all(key in p["stats"] for p in plans):
            stats[key] = sum(p["stats"][key] for p in plans)
    if all("shortest_length" in p["stats"] for p in plans):
        shortest = min(plans, key=lambda p: (p["stats"]["shortest_length"],
                                             p["stats"]["shortest_cost"]))
        stats["shortest_length"] = shortest["stats"]["shortest_length"]
        stats["shortest_cost"] = shortest["stats"]["shortest_cost"]
    stats["workers"] = len(plans)
    # the solve of a split search lasts from its first share's start to its last one's end
    # (a time.monotonic() span: one clock for the host's processes)
    spans = [outcome["span"] for outcome in outcomes]
    solve_ms = 1000 * (max(end for _, end in spans) - min(start for start, _ in spans))
    # optimal only if every share searched its directions to the end
    return {"plan": {**best, "stats": stats, "solve_ms": round(solve_ms, 4),
                     "optimal": all(p["optimal"] for p in plans)}}


def plan_payload(plan: dict[str, Any], plan_id: str, scan_id: str | None,
                 service_ms: float) -> dict[str, Any]:
    """The `solver.plan` message for a plan dict (see `Plan.to_dict`)."""
    size = 2 if len(plan["facelets"]) == 24 else 3
    payload = {
        "plan_id": plan_id,
        "puzzle": PUZZLE_NAMES[size],
        "profile": plan["profile"],
        "facelets": plan["facelets"],
        "primitives": list(plan["primitives"]),
        "face_turns": plan["moves"].split() if plan["moves"] else [],
        "predicted_ms": float(plan["cost_ms"]),
        "search": {
            "solve_ms": plan["solve_ms"], "service_ms": round(service_ms, 3),
            "length": plan["length"], "cost_units": plan["cost"],
            "optimal": plan["optimal"], **plan.get("stats", {}),
        },
    }
    if scan_id is not None:
        payload["scan_id"] = scan_id
    return payload


# --- the bus adapter ----------------------------------------------------------------------

class SolverService:
    """Bus adapter around a pool of solver processes (`robocell.services.solver.pool`)."""

    def __init__(self, node: Any, workers: int, profiles: dict[int, str], auto: bool,
                 default_timeout: float | None = None, split: bool = True) -> None:
        from robocell.services.solver.pool import SolverPool

        self.node = node
        self.workers = workers
        self.profiles = profiles
        self.auto = auto
        self.default_timeout = default_timeout
        self.split = split
        self.served = 0
        self.refused = 0
        self._lock = threading.Lock()
        self.pool = SolverPool(workers, tuple(dict.fromkeys(profiles.values())),
                               queue_limit=workers * (1 + QUEUE_PER_WORKER))

    def start(self) -> None:
        self.pool.start()  # every worker warm before we say ready
        self.node.serve("solve", self.on_solve, concurrency=self.workers * (1 + QUEUE_PER_WORKER))
        self.node.serve("sokoban", self.on_sokoban,
                        concurrency=self.workers * (1 + QUEUE_PER_WORKER))
        if self.auto:
            self.node.subscribe("vision.cube_state", self.on_cube_state)
        from robocell.common.heap import freeze_startup_objects

        freeze_startup_objects()
        self.node.set_state("ready", workers=self.workers, queued=0, served=0, refused=0)

    def stop(self) -> None:
        self.pool.close()

    def _run(self, job: tuple, deadline: float) -> dict[str, Any]:
        """Run a job (function, *arguments) on one worker of the pool."""
        return self._run_split(lambda n: [job], deadline, max_parts=1)[0]

    def _plan(self, facelets: str, profile: str | None, budget: float,
              deadline: float) -> dict[str, Any]:
        """A cube's plan (or error) from the workers idle now, the search split over them."""
        outcomes = self._run_split(lambda n: split_jobs(facelets, profile, budget, n),
                                   deadline, None if self.split else 1)
        return merge_outcomes(outcomes)

    def _run_split(self, jobs_for: Any, deadline: float,
                   max_parts: int | None = None) -> list[Any]:
        """Run one request's jobs on the pool (`SolverPool.solve_split`); pool failures
        become the bus's explicit errors."""
        from robocell.common.bus import Busy, CommandFailed
        from robocell.services.solver.pool import PoolBusy, PoolTimeout, WorkerDied

        self.node.set_state("busy", queued=self.pool.in_flight + 1)
        try:
            return self.pool.solve_split(jobs_for, deadline, max_parts)
        except PoolBusy as exc:
            with self._lock:
                self.refused += 1
            raise Busy(f"solver: {exc}; retry later") from None
        except PoolTimeout as exc:
            raise CommandFailed("timeout", f"solver: {exc}; give a longer timeout") from None
        except WorkerDied as exc:
            raise CommandFailed("failed", f"solver: {exc}; retry") from None
        finally:
            with self._lock:
                self.served += 1
            queued = self.pool.in_flight
            self.node.set_state("ready" if queued == 0 else "busy", queued=queued,
                                served=self.served, refused=self.refused)

    def _budget_for(self, profile: str | None, requested_ms: float | None) -> float:
        """Search budget in seconds: the request's, else the service's --timeout, else the
        robot profile's ``search_budget_ms``, else `DEFAULT_TIMEOUT_S`."""
        from robocell.common.profile import ProfileError, load_profile

        if requested_ms is not None:
            return float(requested_ms) / 1000.0
        if self.default_timeout is not None:
            return self.default_timeout
        try:
            chosen = load_profile(profile) if profile else None
        except ProfileError:
            chosen = None  # the worker reports the bad profile with its reason
        if chosen is not None and chosen.search_budget_s is not None:
            return chosen.search_budget_s
        return DEFAULT_TIMEOUT_S

    def _profile_for(self, facelets: str, requested: str | None) -> str | None:
        if requested:
            return requested
        return self.profiles.get(2 if len(facelets) == 24 else 3)

    def on_solve(self, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        from robocell.common.bus import CommandFailed

        started = time.perf_counter()
        facelets = args["facelets"]
        profile = self._profile_for(facelets, args.get("profile"))
        remaining = ctx.remaining()
        # leave a margin for the reply's way back; never search past the caller's deadline
        budget = max(MIN_BUDGET_S, min(self._budget_for(profile, args.get("budget_ms")),
                                       remaining * 0.8 - 0.01))
        outcome = self._plan(facelets, profile, budget, time.monotonic() + ctx.remaining())
        if "error" in outcome:
            err = outcome["error"]
            raise CommandFailed("invalid_arguments",
                                f"{err['message']} [{err['code']}]")
        plan_id = uuid.uuid4().hex[:12]
        payload = plan_payload(outcome["plan"], plan_id, args.get("scan_id"),
                               (time.perf_counter() - started) * 1e3)
        if args.get("publish"):
            self.node.publish("solver.plan", payload)
        return payload

    def on_sokoban(self, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        """Solve a Sokoban level on the pool (push- or move-optimal, or the fast mode)."""
        from robocell.common.bus import CommandFailed

        started = time.perf_counter()
        # leave a margin for the reply's way back; never search past the caller's deadline
        budget = min(float(args.get("timeout_s", SOKOBAN_DEFAULT_TIMEOUT_S)),
                     ctx.remaining() * 0.8 - 0.05)
        if budget <= 0:
            raise CommandFailed("timeout", "solver: the deadline leaves no time to search; "
                                "give a longer timeout")
        job = (solve_sokoban_in_worker, args["level"], args.get("metric", "pushes"), budget,
               bool(args.get("fast", False)))
        outcome = self._run(job, time.monotonic() + ctx.remaining())
        if "error" in outcome:
            err = outcome["error"]
            raise CommandFailed("invalid_arguments", f"{err['message']} [{err['code']}]")
        return {**outcome["result"],
                "service_ms": round((time.perf_counter() - started) * 1e3, 3)}

    def on_cube_state(self, env: Any) -> None:
        """Automatic mode: answer each new cube state with a plan (off the I/O thread)."""
        threading.Thread(target=self._auto_solve, args=(env.payload,), daemon=True).start()

    def _auto_solve(self, state: dict[str, Any]) -> None:
        from robocell.common.bus import CommandFailed

        facelets = state["facelets"]
        started = time.perf_counter()
        profile = self._profile_for(facelets, None)
        try:
            outcome = self._plan(facelets, profile, self._budget_for(profile, None),
                                 time.monotonic() + AUTO_DEADLINE_S)
        except CommandFailed as exc:
            self._report(exc.code, str(exc), state)
            return
        if "error" in outcome:
            err = outcome["error"]
            self._report(err["code"], err["message"], state, stickers=err["stickers"])
            return
        payload = plan_payload(outcome["plan"], uuid.uuid4().hex[:12], state.get("scan_id"),
                               (time.perf_counter() - started) * 1e3)
        self.node.publish("solver.plan", payload)

    def _report(self, code: str, message: str, state: dict[str, Any],
                stickers: list[int] | None = None) -> None:
        self.node.publish("errors", {
            "service": "solver", "stage": "solve", "code": code, "message": message,
            "action": "rescan the cube" if stickers is not None else "retry",
            "detail": {"scan_id": state.get("scan_id", ""), "stickers": stickers or []},
        })


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "solver", help="run the solver service on the bus",
        description="Serve `solve` commands from a pool of worker processes sharing the "
                    "memory-mapped tables; with --auto also answer every new cube state "
                    "with a plan on solver.plan.")
    p.add_argument("--workers", type=int,
                   default=int(os.environ.get("ROBOCELL_SOLVER_WORKERS", "2")),
                   help="worker processes (default $ROBOCELL_SOLVER_WORKERS or 2)")
    p.add_argument("--profile", default=os.environ.get("ROBOCELL_PROFILE"),
                   help="the cell's robot profile (default $ROBOCELL_PROFILE); used for "
                        "cubes of its size, htm for the other size")
    p.add_argument("--auto", action="store_true",
                   default=os.environ.get("ROBOCELL_SOLVER_AUTO", "") not in ("", "0"),
                   help="plan for every new vision.cube_state (default $ROBOCELL_SOLVER_AUTO)")
    p.add_argument("--timeout", type=float, default=None,
                   help="3x3 search budget per request in seconds (bounded by its deadline; "
                        "default: the robot profile's search_budget_ms, else "
                        f"{DEFAULT_TIMEOUT_S})")
    p.add_argument("--split", action=argparse.BooleanOptionalAction,
                   default=os.environ.get("ROBOCELL_SOLVER_SPLIT", "1") not in ("", "0"),
                   help="share a 3x3 search among the workers idle when it arrives (default "
                        "$ROBOCELL_SOLVER_SPLIT or on; --no-split: one worker per request)")
    p.add_argument("--broker", help="broker base address tcp://HOST:PORT (default $ROBOCELL_BUS)")
    p.set_defaults(func=cmd_solver)


def cmd_solver(args: argparse.Namespace) -> int:
    from robocell.common.bus import Endpoints, Node
    from robocell.common.profile import ProfileError, load_profile

    profiles = {2: "htm", 3: "htm"}
    if args.profile:
        try:
            profile = load_profile(args.profile)
        except ProfileError as exc:
            raise CommandError(str(exc)) from None
        for size in (2, 3):
            if profile.fits(size):
                profiles[size] = args.profile
    # build missing tables once, here, before the workers map them
    from robocell.common import tables
    from robocell.services.solver.tables_cli import all_groups

    for name in dict.fromkeys(profiles.values()):
        for group in all_groups(name):
            tables.load(group)
    with Node("solver", Endpoints.resolve(args.broker)) as node:
        service = SolverService(node, args.workers, profiles, args.auto, args.timeout,
                                args.split)
        try:
            service.start()
            node.wait()
        finally:
            service.stop()
    return 0
