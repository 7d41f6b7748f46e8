"""The solver's planning core, apart from the bus: one solve split into pool jobs over the idle
workers (`split_jobs`), their outcomes merged into one plan (`merge_outcomes`), and the plan as
its bus message (`plan_message`)."""

from __future__ import annotations

import time
from typing import Any

from robocell.common.bus.payloads import UNSET, Plan
from robocell.common.facelets import size_of
from robocell.services.solver.worker import (
    solve_in_worker,
)

DEFAULT_TIMEOUT_S = 0.1
"""3x3 search budget per request when neither the request nor the robot profile
(``search_budget_ms``) sets one; always bounded by the caller's deadline."""


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
    """The `solver.plan` message for a worker's solution (see `Solution.to_dict`); without
    a ``scan_id`` the field is absent. Its ``predicted_ms`` is the robot time the profile's
    motion model predicts (``robot_ms``), the model the simulated robot moves by and
    `robocell calibrate` fits: not the declared primitive costs the search priced it by."""
    return Plan(
        plan_id=plan_id, scan_id=UNSET if scan_id is None else scan_id,
        puzzle=solution["puzzle"], profile=solution["profile"], facelets=solution["facelets"],
        primitives=list(solution["primitives"]), face_turns=list(solution["moves"]),
        predicted_ms=float(solution["robot_ms"]),
        search={"solve_ms": solution["solve_ms"], "service_ms": round(service_ms, 3),
                "length": solution["length"], "cost_units": solution["cost"],
                "optimal": solution["optimal"], **solution.get("stats", {})},
    )
