"""The rolling search in the simulated cell, as real processes on a real bus: the rest of a
plan is searched again by the solver service while the actuator executes its first steps, a
cheaper rest replaces the old one in the running plan, and the twin ends solved.

Run at simulation speed 1: the windows the rest is searched in are the robot's real motion
times, as on a real robot. One cell for the module: its tests stop or restart no service."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pytest
from support.cell import Launcher, bus_address

from robocell.common.bus import Endpoints, Node
from robocell.common.facelets import solved
from robocell.common.moves import apply_to_facelets
from robocell.common.profile import load_profile
from robocell.services.cell.rolling import Rolling

from .test_cell import run_one_cycle, twin_solved

SCRAMBLE_PRIMITIVES = 22


@pytest.fixture(scope="module")
def cell(launch_cell) -> Iterator[Launcher]:
    with launch_cell("six-motor", speed=1.0) as cell:
        yield cell


def poor_plan(profile, rng: random.Random) -> tuple[str, list[str]]:
    """A cube scrambled by random primitives, and the plan that undoes them one by one:
    correct, and far dearer than the solver's (a search of its rest finds a cheaper one)."""
    turns = [p for p in profile.primitives if "+" not in p.name]
    scramble = [rng.choice(turns) for _ in range(SCRAMBLE_PRIMITIVES)]
    facelets = apply_to_facelets(solved(3), [m for p in scramble for m in p.moves])
    by_effect = {tuple((m.name, m.quarter_turns) for m in p.moves): p.name
                 for p in profile.primitives}
    undo = [by_effect[tuple((m.name, m.inverse().quarter_turns) for m in reversed(p.moves))]
            for p in reversed(scramble)]
    return facelets, undo


def test_a_running_plans_rest_is_replaced_by_a_cheaper_one_and_the_twin_is_solved(cell):
    profile = load_profile("six-motor")
    facelets, undo = poor_plan(profile, random.Random(5))
    with Node("test-rolling", Endpoints.resolve(bus_address(cell)),
              track_peers=False) as node:
        results: list[dict] = []
        node.subscribe("actuator.result", lambda env: results.append(env.payload)
                       if env.payload["plan_id"] == "rolled-1" else None)  # not an earlier one
        node.call("firmware-sim", "scramble", {"facelets": facelets}, timeout=30.0)
        plan = {"plan_id": "rolled-1", "puzzle": "3x3x3", "profile": "six-motor",
                "facelets": facelets, "primitives": undo, "face_turns": [],
                "predicted_ms": profile.cost_ms(sum(profile.primitive(p).cost
                                                    for p in undo)), "search": {}}
        rolling = Rolling(plan, profile)
        hold = rolling.first_hold()
        assert hold == 1  # every step turns a layer
        node.call("actuator", "execute", {"plan": plan, "hold_at": hold}, timeout=30.0)
        rolling.run(node.call, hold, lambda: not results)
        deadline = time.monotonic() + 60
        while not results and time.monotonic() < deadline:
            time.sleep(0.05)
        result = results[0]
        assert result["ok"], result
        assert rolling.stopped == "" and rolling.searches >= 1
        assert rolling.replaced >= 1 and result["amendments"] == rolling.replaced
        assert result["primitives"] == rolling.primitives
        assert rolling.cost(0) < sum(profile.primitive(p).cost for p in undo)
        assert twin_solved(node)


def test_a_cycle_rolls_its_plan_and_the_log_keeps_what_ran(cell):
    with Node("test-rolling", Endpoints.resolve(bus_address(cell)),
              track_peers=False) as node:
        result = run_one_cycle(node, seed=21)
        assert result["ok"], result
        assert twin_solved(node)
        cycle = node.call("cell", "history", {"limit": 1}, timeout=10.0)["cycles"][-1]
        plan = cycle["plan"]
        rolled = plan["rolling"]
        assert rolled["searches"] >= 1 and rolled["stopped"] == "", rolled
        assert plan.get("amendments", 0) == rolled["replaced"]
        if rolled["replaced"]:
            assert plan["predicted_ms"] < plan["found_predicted_ms"]
