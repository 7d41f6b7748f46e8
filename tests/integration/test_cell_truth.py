"""The cell tells the truth: a cycle is solved only on the twin's word after its last motion,
every cycle is in the cycle log, and `robocell cycle` shows its own cycle and no other.

Each test runs the simulated cell of docker-compose.yml as real processes on a real bus.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import time
from pathlib import Path

from support.cell import bus_address

from robocell.common.bus import Endpoints, Node
from robocell.services.cell.history import HISTORY_ENV, CycleLog
from robocell.tools.cycle import CycleFollower

from .test_cell import run_one_cycle, twin_solved


def test_a_twin_scrambled_during_execution_fails_verification(launch_cell):
    """Two good cycles leave solved twin states behind; a third whose twin is scrambled
    while the plan runs must not be reported solved on that old evidence."""
    with launch_cell("soltvvo-2x2", speed=10.0) as cell:
        with Node("test-truth", Endpoints.resolve(bus_address(cell)), track_peers=False) as node:
            for seed in (31, 32):
                assert run_one_cycle(node, seed)["ok"]
            progress: queue.Queue = queue.Queue()
            node.subscribe("actuator.progress", progress.put)
            follower = CycleFollower(node)
            node.call("cell", "scramble", {"seed": 33}, timeout=30.0)
            cycle_id = node.call("cell", "start", {}, timeout=30.0)["cycle_id"]
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                env = progress.get(timeout=60)
                if env.payload["state"] == "running":
                    break
            node.call("cell", "scramble", {"seed": 34}, timeout=30.0)  # a hand on the cube
            result = follower.follow(cycle_id, 120.0, show=False)
            assert not twin_solved(node)
            assert not result["ok"], result
            assert result["failed_stage"] == "verifying"
            assert "not solved" in result["error"]
            # and the cell goes on: the next cycle reads the scrambled cube and solves it
            assert run_one_cycle(node, 35)["ok"]
            assert twin_solved(node)


def robocell(env: dict[str, str], *args: str, timeout: float = 60.0
             ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robocell", *args], env=env, text=True,
                          capture_output=True, timeout=timeout)


def test_every_cycle_is_in_the_history_and_cycle_shows_only_its_own_events(launch_cell):
    with launch_cell("soltvvo-2x2") as cell:
        env = {**os.environ, "ROBOCELL_BUS": bus_address(cell),
               HISTORY_ENV: cell.env[HISTORY_ENV]}
        with Node("test-history", Endpoints.resolve(bus_address(cell)),
                  track_peers=False) as node:
            first = run_one_cycle(node, 41)
            node.call("cell", "scramble", {"seed": 42}, timeout=30.0)
        shown = robocell(env, "cycle", "--timeout", "120")
        assert shown.returncode == 0, shown.stderr
        # the previous cycle's latched cube and plan are not this cycle's
        reads = [line for line in shown.stdout.splitlines() if "cube read:" in line]
        plans = [line for line in shown.stdout.splitlines() if "plan:" in line]
        assert len(reads) == 1 and len(plans) == 1, shown.stdout
        assert "plan: 0 primitives" not in shown.stdout
        listed = robocell(env, "history", "--json")
        assert listed.returncode == 0, listed.stderr
        history = json.loads(listed.stdout)
        ids = [c["cycle_id"] for c in history["cycles"]]
        assert first["cycle_id"] in ids and len(ids) == 2
        assert history["summary"]["solved"] == 2 and history["summary"]["success_rate"] == 1.0
        second = history["cycles"][1]
        assert second["facelets"] in reads[0]
        assert second["plan"]["primitives"] and set(second["stages"]) >= {
            "scanning", "solving", "executing", "verifying"}
        table = robocell(env, "history")
        assert "success rate 100.0%" in table.stdout and "executing" in table.stdout


def test_cycle_fails_within_seconds_when_the_cell_goes_away(launch_cell):
    with launch_cell("soltvvo-2x2", speed=2.0) as cell:
        env = {**os.environ, "ROBOCELL_BUS": bus_address(cell)}
        cycle = subprocess.Popen([sys.executable, "-m", "robocell", "cycle"], env=env,
                                 text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            for line in cycle.stdout:  # the command follows the cycle
                if "stage: scanning" in line:
                    break
            cell.children["cell"].process.kill()
            killed = time.monotonic()
            _, err = cycle.communicate(timeout=30)
            took = time.monotonic() - killed
        finally:
            if cycle.poll() is None:
                cycle.kill()
                cycle.communicate()
        assert cycle.returncode != 0
        assert "the cell service went away" in err and "scanning" in err, err
        assert took < 15.0, took  # within seconds (about three missed beats), not at 120 s


def test_a_result_finished_while_the_broker_is_down_is_published_when_it_returns(launch_cell):
    from support.faults import FaultyCell

    from robocell.services.cell.cycle import BROKER_GRACE_S

    with launch_cell("soltvvo-2x2", speed=10.0) as cell:
        faulty = FaultyCell(cell, seed=5)
        try:
            cycle_id = faulty.start()
            faulty.wait_stage(cycle_id, "scanning")
            faulty.kill("broker")
            # the cycle gives the broker up while it is away: its result is in the cycle log
            log = CycleLog(Path(cell.env[HISTORY_ENV]), readonly=True)
            try:
                deadline = time.monotonic() + BROKER_GRACE_S + 60
                while [c.result for c in log.cycles() if c.cycle_id == cycle_id] != ["failed"]:
                    assert time.monotonic() < deadline, "the cycle did not give the broker up"
                    time.sleep(0.2)
            finally:
                log.close()
            faulty.restart("broker")
            result = faulty.follower.follow(cycle_id, 60.0, show=False)
            assert not result["ok"] and result["failed_stage"] == "scanning", result
            assert "broker went away" in result["error"]
            history = faulty.node.call("cell", "history", {"limit": 1}, timeout=30.0)
            assert [c["cycle_id"] for c in history["cycles"]] == [cycle_id]
            deadline = time.monotonic() + 30
            while not history["cycles"][0]["published"] and time.monotonic() < deadline:
                time.sleep(0.5)
                history = faulty.node.call("cell", "history", {"limit": 1}, timeout=30.0)
            assert history["cycles"][0]["published"]
            assert faulty.cycle(scramble_seed=6)[0]["ok"]
        finally:
            faulty.close()


def test_cycle_says_the_broker_was_lost_not_the_cell_when_the_broker_dies(launch_cell):
    """With the broker killed mid-cycle every heartbeat stops at once, the cell's among them;
    the cell itself goes on. `robocell cycle` must name the broker and say how to learn how
    the cycle ended, not that the cell went away."""
    with launch_cell("soltvvo-2x2", speed=2.0) as cell:
        env = {**os.environ, "ROBOCELL_BUS": bus_address(cell)}
        cycle = subprocess.Popen([sys.executable, "-m", "robocell", "cycle"], env=env,
                                 text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            for line in cycle.stdout:
                if "stage: scanning" in line:
                    break
            cell.children["broker"].process.kill()
            _, err = cycle.communicate(timeout=30)
        finally:
            if cycle.poll() is None:
                cycle.kill()
                cycle.communicate()
        assert cycle.returncode == 2, err
        assert "the cell service went away" not in err, err
        assert "lost the broker" in err and "robocell history" in err, err
        assert cell.children["cell"].process.poll() is None  # the cell is still there
