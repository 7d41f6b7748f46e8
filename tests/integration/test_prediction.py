"""Predictions that come true: on a simulated cell with no physics file the robot moves by its
profile, so every shipped robot's plans are predicted to the percent and none is flagged."""

from __future__ import annotations

import threading
import time

import pytest
from support.cell import bus_address

from robocell.common.bus import Endpoints, Node
from robocell.services.cell.history import prediction_error_pct
from robocell.tools.cycle import follow_cycle

SEEDS = (31, 32)


def logged_cycle(history: list[dict], cycle_id: str, timeout: float = 30.0) -> dict:
    """The cycle as `cell.history` carries it once it is logged (the cell publishes a flag
    on `errors` before it publishes the history)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for payload in reversed(history):
            for cycle in payload["cycles"]:
                if cycle["cycle_id"] == cycle_id and cycle["measured_ms"] is not None:
                    return cycle
        time.sleep(0.05)
    raise AssertionError(f"cycle {cycle_id} not in cell.history with its robot time")


@pytest.mark.parametrize("profile", ["soltvvo-2x2", "six-motor", "tilt-spin"])
def test_a_simulated_robot_without_physics_comes_true_to_2_percent_unflagged(launch_cell,
                                                                            profile):
    with launch_cell(profile, speed=50.0) as cell:
        with Node("test-prediction", Endpoints.resolve(bus_address(cell)),
                  track_peers=False) as node:
            lock = threading.Lock()
            history: list[dict] = []
            flags: list[dict] = []

            def heard(env) -> None:
                with lock:
                    if env.topic == "cell.history":
                        history.append(env.payload)
                    elif env.payload.get("code") == "prediction_off":
                        flags.append(env.payload)

            node.subscribe("cell.history", heard)
            node.subscribe("errors", heard)
            for seed in SEEDS:
                node.call("cell", "scramble", {"seed": seed}, timeout=30.0)
                started = node.call("cell", "start", {}, timeout=30.0)
                result = follow_cycle(node, started["cycle_id"], 120.0, show=False)
                assert result["ok"], result
                cycle = logged_cycle(history, started["cycle_id"])
                error = prediction_error_pct(cycle["predicted_ms"], cycle["measured_ms"])
                assert error is not None and abs(error) < 2.0, (profile, seed, cycle)
            assert flags == []
