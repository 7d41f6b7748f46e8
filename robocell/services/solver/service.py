"""`robocell solver`: the solver as a bus service, answering from a pool of worker processes.

Pattern: a request/reply *worker pool*. The bus adapter (one `Node`) answers the `solve`
command; each solve runs in one of
``--workers`` processes. The tables are built (if needed) once by this process before the
workers start; every worker then memory-maps the same files read-only, so they share one
copy in the page cache. A request that finds every worker busy and the queue full is
answered ``busy`` at once; a request whose caller stopped waiting is dropped before it
starts (cancellation), and a 3x3 search never runs past the caller's deadline.

One pool may serve several cells: one `Node` per broker (``robocell solver --broker A
--broker B``), every node serving the same commands from the same workers and tables; a
request is answered, and its plan published, on the broker it came from.

A 3x3 search is shared by the workers idle when it starts: each searches its share of the
six search directions (3 axes x cube and inverse) for the whole budget, and the cheapest plan
of the n wins. The search budget is the search's wall time, the time the robot waits for its
plan (what a profile's ``search_budget_ms`` trades against the robot's own time), and every
idle core searches all of it.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from robocell.common.bus import Busy, CommandFailed
from robocell.common.bus.payloads import Plan
from robocell.common.facelets import size_of
from robocell.common.malloc import freeze_startup_objects
from robocell.common.profile import ProfileError, load_profile
from robocell.common.tables import LoadingLimit
from robocell.services.solver.planning import (
    DEFAULT_TIMEOUT_S,
    merge_outcomes,
    plan_message,
    split_jobs,
)
from robocell.services.solver.pool import PoolBusy, PoolTimeout, SolverPool, WorkerDied
from robocell.services.solver.worker import (
    SOKOBAN_DEFAULT_TIMEOUT_S,
    solve_sokoban_in_worker,
)

MIN_BUDGET_S = 0.005
QUEUE_PER_WORKER = 4
"""Requests waiting per worker before new ones are refused as busy."""


# --- the bus adapter ----------------------------------------------------------------------

class SolverService:
    """Bus adapter around a pool of solver processes (`robocell.services.solver.pool`)."""

    def __init__(self, node: Any, workers: int, profiles: dict[int, str],
                 default_timeout: float | None = None, split: bool = True,
                 warm: tuple[str, ...] | None = None,
                 table_limit: LoadingLimit | None = None) -> None:
        self.nodes: list[Any] = list(node) if isinstance(node, (list, tuple)) else [node]
        """one Node per broker served (a cell each)"""
        self.node = self.nodes[0]
        self.workers = workers
        self.profiles = profiles
        self.default_timeout = default_timeout
        self.split = split
        self.served = 0
        self.refused = 0
        self._lock = threading.Lock()
        self.pool = SolverPool(workers, warm or tuple(dict.fromkeys(profiles.values())),
                               queue_limit=workers * (1 + QUEUE_PER_WORKER),
                               table_limit=table_limit)

    def start(self) -> None:
        self.pool.start()  # every worker warm before we say ready
        concurrency = self.workers * (1 + QUEUE_PER_WORKER)
        for node in self.nodes:  # each answers, and publishes, on its own broker
            node.serve("solve", lambda args, ctx, node=node: self.on_solve(args, ctx, node),
                       concurrency=concurrency)
            node.serve("sokoban", lambda args, ctx, node=node: self.on_sokoban(args, ctx, node),
                       concurrency=concurrency)
        freeze_startup_objects()
        self._set_state("ready", workers=self.workers, queued=0, served=0, refused=0)

    def _set_state(self, state: str, **health: Any) -> None:
        """The service's state on every broker it serves (one pool: one state)."""
        for node in self.nodes:
            node.set_state(state, **health)

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
        self._set_state("busy", queued=self.pool.in_flight + 1)
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
            self._set_state("ready" if queued == 0 else "busy", queued=queued,
                            served=self.served, refused=self.refused)

    def _budget_for(self, profile: str | None, requested_ms: float | None) -> float:
        """Search budget in seconds: the request's, else the service's --timeout, else the
        robot profile's ``search_budget_ms``, else `DEFAULT_TIMEOUT_S`."""
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
        return self.profiles.get(size_of(facelets) or 3)

    def on_solve(self, args: dict[str, Any], ctx: Any, node: Any = None) -> Plan:
        """A cube's plan; published (``publish``) on ``node``'s broker, the one asking."""
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
        plan = plan_message(outcome["plan"], uuid.uuid4().hex[:12], args.get("scan_id"),
                            (time.perf_counter() - started) * 1e3)
        if args.get("publish"):
            (node or self.node).publish("solver.plan", plan)
        return plan

    def on_sokoban(self, args: dict[str, Any], ctx: Any, node: Any = None) -> dict[str, Any]:
        """Solve a Sokoban level on the pool (push- or move-optimal, or the fast mode); the
        result published on ``node``'s broker, the one asking."""
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
        result = outcome["result"]
        (node or self.node).publish("solver.sokoban_result", {
            "level": args["level"], "status": result["status"], "solved": result["solved"],
            "lurd": result["lurd"] or "", "pushes": result["pushes"], "moves": result["moves"],
            "metric": result["metric"], "optimal": result["optimal"]})
        return {**result, "service_ms": round((time.perf_counter() - started) * 1e3, 3)}
