"""`robocell solver`: the solver as a bus service, answering from a pool of worker processes.

Pattern: a request/reply *worker pool*. The bus adapter (one `Node`) answers the `solve`
command; each solve runs in one of
``--workers`` processes. The tables are built (if needed) once by this process before the
workers start; every worker then memory-maps the same files read-only, so they share one
copy in the page cache. A request that finds every worker busy and the queue full is
answered ``busy`` at once; a request whose caller stopped waiting is dropped before it
starts (cancellation), and a 3x3 search never runs past the caller's deadline.

A 3x3 search is shared by the workers idle when it starts: each searches its share of the
six search directions (3 axes x cube and inverse) for the whole budget, and the cheapest plan
of the n wins. The search budget is the search's wall time, the time the robot waits for its
plan (what a profile's ``search_budget_ms`` trades against the robot's own time), and every
idle core searches all of it.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
import uuid
from typing import Any

from robocell.common import tables
from robocell.common.bus import Busy, CommandFailed, Endpoints, Node
from robocell.common.bus.messages import Plan
from robocell.common.facelets import size_of
from robocell.common.malloc import freeze_startup_objects
from robocell.common.profile import ProfileError, load_profile
from robocell.errors import CommandError
from robocell.services.solver.pool import PoolBusy, PoolTimeout, SolverPool, WorkerDied
from robocell.services.solver.tables_cli import all_groups
from robocell.services.solver.worker import (
    SOKOBAN_DEFAULT_TIMEOUT_S,
    solve_in_worker,
    solve_sokoban_in_worker,
)

DEFAULT_TIMEOUT_S = 0.1
"""3x3 search budget per request when neither the request nor the robot profile
(``search_budget_ms``) sets one; always bounded by the caller's deadline."""
MIN_BUDGET_S = 0.005
QUEUE_PER_WORKER = 4
"""Requests waiting per worker before new ones are refused as busy."""


# --- the pure core: one plan from a split search, and its bus message --------------------

def split_jobs(facelets: str, profile: str | None, budget: float, workers: int) -> list[tuple]:
    """The pool jobs of one solve on ``workers`` idle workers: a 3x3 search split into that
    many shares of its directions, each searching the whole budget, until one moment (the
    budget is the search's wall time, the time the robot waits: every idle core searches all
    of it); anything else (a 2x2 is a table look-up) as one job."""
    if size_of(facelets) != 3 or workers < 2:
        return [(solve_in_worker, facelets, profile, None, budget)]
    until = time.monotonic() + budget
    return [(solve_in_worker, facelets, profile, None, budget, (k, workers), until)
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


def plan_message(solution: dict[str, Any], plan_id: str, scan_id: str | None,
                 service_ms: float) -> Plan:
    """The `solver.plan` message for a worker's solution (see `Solution.to_dict`)."""
    return Plan(
        plan_id=plan_id, scan_id=scan_id, puzzle=solution["puzzle"],
        profile=solution["profile"], facelets=solution["facelets"],
        primitives=list(solution["primitives"]),
        face_turns=solution["moves"].split() if solution["moves"] else [],
        predicted_ms=float(solution["cost_ms"]),
        search={"solve_ms": solution["solve_ms"], "service_ms": round(service_ms, 3),
                "length": solution["length"], "cost_units": solution["cost"],
                "optimal": solution["optimal"], **solution.get("stats", {})},
    )


# --- the bus adapter ----------------------------------------------------------------------

class SolverService:
    """Bus adapter around a pool of solver processes (`robocell.services.solver.pool`)."""

    def __init__(self, node: Any, workers: int, profiles: dict[int, str],
                 default_timeout: float | None = None, split: bool = True) -> None:
        self.node = node
        self.workers = workers
        self.profiles = profiles
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

    def on_solve(self, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
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
        payload = plan_message(outcome["plan"], plan_id, args.get("scan_id"),
                               (time.perf_counter() - started) * 1e3).to_payload()
        if args.get("publish"):
            self.node.publish("solver.plan", payload)
        return payload

    def on_sokoban(self, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        """Solve a Sokoban level on the pool (push- or move-optimal, or the fast mode)."""
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
        self.node.publish("solver.sokoban_result", {
            "level": args["level"], "status": result["status"], "solved": result["solved"],
            "lurd": result["lurd"] or "", "pushes": result["pushes"], "moves": result["moves"],
            "metric": result["metric"], "optimal": result["optimal"]})
        return {**result, "service_ms": round((time.perf_counter() - started) * 1e3, 3)}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "solver", help="run the solver service on the bus",
        description="Serve `solve` commands from a pool of worker processes sharing the "
                    "memory-mapped tables (the cell asks for each plan).")
    p.add_argument("--workers", type=int,
                   default=int(os.environ.get("ROBOCELL_SOLVER_WORKERS", "2")),
                   help="worker processes (default $ROBOCELL_SOLVER_WORKERS or 2)")
    p.add_argument("--profile", default=os.environ.get("ROBOCELL_PROFILE"),
                   help="the cell's robot profile (default $ROBOCELL_PROFILE); used for "
                        "cubes of its size, htm for the other size")
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
    for name in dict.fromkeys(profiles.values()):
        for group in all_groups(name):
            tables.load(group)
    with Node("solver", Endpoints.resolve(args.broker)) as node:
        service = SolverService(node, args.workers, profiles, args.timeout, args.split)
        try:
            service.start()
            node.wait()
        finally:
            service.stop()
    return 0
