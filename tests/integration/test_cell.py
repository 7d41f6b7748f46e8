"""The whole cell in simulation: scan, solve, execute, verify, as real processes on a real bus.

Each test starts the services of docker-compose.yml's `sim` profile (sped up), scrambles the
twin as a person would, runs cycles through `cell.start` and checks the twin's verdict.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from support.cell import bus_address

from robocell.common.bus import Endpoints, Node
from robocell.tools.cycle import follow_cycle


def run_one_cycle(node: Node, seed: int, timeout: float = 120.0) -> dict:
    node.call("cell", "scramble", {"seed": seed}, timeout=30.0)
    started = node.call("cell", "start", {}, timeout=30.0)
    return follow_cycle(node, started["cycle_id"], timeout, show=False)


def twin_solved(node: Node) -> bool:
    from robocell.common.bus import Subscriber

    sub = Subscriber(["sim.twin_state"], node.endpoints)
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            env = sub.recv(timeout=0.5)
            if env is not None and env.topic == "sim.twin_state":
                return bool(env.payload["solved"])
    finally:
        sub.close()
    raise AssertionError("no sim.twin_state received")


def wait_heard_ready(node: Node, service: str, timeout: float = 60.0) -> None:
    """Until ``service`` is ready and has beaten once more: the cell, which hears the same
    heartbeats, has had a beat's time to take it back (a fixed pause instead is outlasted
    on a loaded machine)."""
    deadline = time.monotonic() + timeout

    def ready():
        peer = node.peers().get(service)
        return peer if peer is not None and not peer.stale and peer.state == "ready" else None

    while (peer := ready()) is None:
        assert time.monotonic() < deadline, f"{service} not ready within {timeout} s"
        time.sleep(0.1)
    heard = peer.last_seen
    while (again := ready()) is None or again.last_seen == heard:
        assert time.monotonic() < deadline, f"{service} stopped beating"
        time.sleep(0.1)


@pytest.mark.parametrize("profile", ["soltvvo-2x2", "six-motor"])
def test_full_cycle_solves_the_twin(launch_cell, profile):
    with launch_cell(profile) as cell:
        with Node("test-cycle", Endpoints.resolve(bus_address(cell)), track_peers=False) as node:
            for seed in (11, 12):
                result = run_one_cycle(node, seed)
                assert result["ok"], result
                assert set(result["stages_s"]) >= {"scanning", "solving", "executing",
                                                   "verifying"}
                assert twin_solved(node)


def test_a_killed_service_fails_the_cycle_and_the_cell_recovers(launch_cell):
    with launch_cell("soltvvo-2x2", speed=20.0) as cell:
        with Node("test-kill", Endpoints.resolve(bus_address(cell))) as node:
            first = run_one_cycle(node, 21)
            assert first["ok"], (first.get("failed_stage"), first.get("error"))
            vision = cell.children["vision-sim"]
            node.call("cell", "scramble", {"seed": 22}, timeout=30.0)
            started = node.call("cell", "start", {}, timeout=30.0)
            os.kill(vision.process.pid, signal.SIGKILL)
            vision.process.wait(timeout=10)
            failed = follow_cycle(node, started["cycle_id"], 120.0, show=False)
            assert not failed["ok"]
            assert failed["failed_stage"] == "scanning"
            assert "vision" in failed["error"]
            # restart the service: the cell resynchronises from latched state
            cell.start_service(vision.service)
            wait_heard_ready(node, "vision")
            result = run_one_cycle(node, 23)
            assert result["ok"], result
            assert twin_solved(node)
