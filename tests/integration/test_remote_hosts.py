"""Real service processes on "another host" (another host name, a CURVE key): one solver
serving two cells -- a plain broker and one reached over its CURVE endpoint with a key allowed
as service:solver -- each answered on its own broker, and a broker killed and started again
served again without a restart of the solver; the firmware simulator serving a cell."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support.bus import (
    N_PORTS,
    recv_topic,
    robocell_cmd,
    robocell_env,
    stop_process,
    wait_for_broker,
    wait_registered,
    wait_subscribed,
)

from robocell.common.bus import CommandClient, Endpoints, Subscriber
from robocell.common.config import free_port_blocks
from robocell.common.cube import apply_to_facelets, parse_moves, random_facelets
from robocell.common.facelets import is_solved_any_orientation

pytestmark = pytest.mark.slow  # real solver processes warming up their workers

COMPUTE_HOST = "compute-1"
READY_TIMEOUT_S = 240.0
"""Bound on the solver's start (its workers map the tables and warm up) on a loaded machine."""


def generate(key_dir: Path, name: str, env: dict, broker_pub: Path | None = None) -> Path:
    args = ["keys", "generate", name, "--dir", str(key_dir)]
    if broker_pub:
        args += ["--broker-pub", str(broker_pub)]
    done = subprocess.run(robocell_cmd(*args), env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return key_dir / f"{name}.key"


def start_broker(base: str, *remote: str) -> subprocess.Popen:
    proc = subprocess.Popen(robocell_cmd("broker", "--stats-period", "0.2", *remote),
                            env=robocell_env(base), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for_broker(Endpoints.from_base(base), proc=proc)
    except BaseException:
        stop_process(proc)
        raise
    return proc


def solve_on(base: str, seed: int) -> dict:
    client = CommandClient("cell", Endpoints.from_base(base))
    try:
        facelets = random_facelets(2, seed)
        plan = client.call("solver", "solve", {"facelets": facelets, "publish": True},
                           timeout=60)
        turned = apply_to_facelets(facelets, parse_moves(plan["face_turns"]))
        assert is_solved_any_orientation(turned)  # (the robot's cube turns whole)
        return plan
    finally:
        client.close()


@pytest.fixture
def two_cells(tmp_path: Path):
    """Cell A: a plain broker. Cell B: a broker whose CURVE endpoint allows 'compute' as
    service:solver. One `robocell solver --broker A --broker B` (host name compute-1)."""
    # one free block cut in three: ports picked one by one before any is bound could overlap
    cell_a, cell_b, remote_b = (f"tcp://127.0.0.1:{port}"
                                for port in free_port_blocks(N_PORTS, N_PORTS, 1))
    env = robocell_env(cell_a)
    generate(tmp_path, "broker", env)
    compute = generate(tmp_path, "compute", env, tmp_path / "broker.pub")
    remote_args = ("--remote", remote_b, "--curve-key", str(tmp_path / "broker.key"),
                   "--allow", f"{tmp_path / 'compute.pub'}:service:solver")
    brokers: dict[str, subprocess.Popen] = {}
    solver: subprocess.Popen | None = None
    try:
        brokers["a"] = start_broker(cell_a)
        brokers["b"] = start_broker(cell_b, *remote_args)
        solver_env = {**robocell_env(cell_a), "ROBOCELL_HOST_NAME": COMPUTE_HOST}
        solver = subprocess.Popen(
            robocell_cmd("solver", "--workers", "1", "--profile", "soltvvo-2x2",
                         "--broker", cell_a, "--curve-key", "",
                         "--broker", remote_b, "--curve-key", str(compute)),
            env=solver_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for base in (cell_a, cell_b):
            wait_registered(Endpoints.from_base(base), "solver", ["solve"], READY_TIMEOUT_S)
        yield {"a": cell_a, "b": cell_b, "brokers": brokers, "remote_args": remote_args,
               "solver": solver}
    finally:
        if solver is not None:
            stop_process(solver)
        for proc in brokers.values():
            stop_process(proc)


def test_one_solver_serves_two_cells_each_on_its_own_broker(two_cells) -> None:
    watch_a = Subscriber(["solver.plan"], Endpoints.from_base(two_cells["a"]))
    watch_b = Subscriber(["solver.plan"], Endpoints.from_base(two_cells["b"]))
    try:
        wait_subscribed(watch_a, "solver.plan")
        wait_subscribed(watch_b, "solver.plan")
        plan_a = solve_on(two_cells["a"], 1)
        got = recv_topic(watch_a, "solver.plan")
        assert got is not None and got.payload["plan_id"] == plan_a["plan_id"]
        plan_b = solve_on(two_cells["b"], 2)
        got = recv_topic(watch_b, "solver.plan")
        assert got is not None and got.payload["plan_id"] == plan_b["plan_id"]
        # each plan went to the cell that asked, never to the other
        for watch, other in ((watch_a, plan_b), (watch_b, plan_a)):
            end = time.monotonic() + 1.0
            while (left := end - time.monotonic()) > 0:
                env = watch.recv(left)
                assert env is None or env.payload["plan_id"] != other["plan_id"]
        listed = subprocess.run(robocell_cmd("bus", "list", "--json", "--wait", "1.5"),
                                env=robocell_env(two_cells["b"]), capture_output=True,
                                text=True, timeout=60)
        assert listed.returncode == 0, listed.stderr
        shown = json.loads(listed.stdout)
        (instance,) = shown["instances"]["solver"]
        assert instance["host"] == COMPUTE_HOST and instance["key"] == "compute"
        assert instance["pid"] == two_cells["solver"].pid
        assert shown["services"]["solver"]["host"] == COMPUTE_HOST
        health = subprocess.run(robocell_cmd("health", "solver"),
                                env=robocell_env(two_cells["a"]), capture_output=True,
                                text=True, timeout=60)
        assert health.returncode == 0 and f"on {COMPUTE_HOST}" in health.stdout
    finally:
        watch_a.close()
        watch_b.close()


def test_a_broker_killed_and_started_again_is_served_again(two_cells) -> None:
    """SIGKILL cell B's broker, start it again on the same ports: the solver (not
    restarted) makes its CURVE link again, says HELLO and answers; cell A never noticed."""
    solve_on(two_cells["b"], 3)
    old = two_cells["brokers"]["b"]
    os.kill(old.pid, signal.SIGKILL)
    old.wait(10)
    stop_process(old)
    assert solve_on(two_cells["a"], 4)["plan_id"]  # the other cell is served meanwhile
    two_cells["brokers"]["b"] = start_broker(two_cells["b"], *two_cells["remote_args"])
    wait_registered(Endpoints.from_base(two_cells["b"]), "solver", ["solve"], 30)
    assert solve_on(two_cells["b"], 5)["plan_id"]
    assert two_cells["solver"].poll() is None


def test_the_firmware_simulator_serves_a_cell_from_another_host(tmp_path: Path) -> None:
    """`robocell firmware-sim --publish-twin --broker REMOTE --curve-key K` (a key allowed
    as service:firmware-sim): its twin reaches the cell's subscribers, its `twin` command
    the cell's callers, and it is listed with its key."""
    cell, remote = (f"tcp://127.0.0.1:{port}" for port in free_port_blocks(N_PORTS, 1))
    env = robocell_env(cell)
    generate(tmp_path, "broker", env)
    rig = generate(tmp_path, "rig", env, tmp_path / "broker.pub")
    broker = start_broker(cell, "--remote", remote, "--curve-key", str(tmp_path / "broker.key"),
                          "--allow", f"{tmp_path / 'rig.pub'}:service:firmware-sim")
    local = Endpoints.from_base(cell)
    watch = Subscriber(["sim.twin_state"], local)
    sim = subprocess.Popen(
        robocell_cmd("firmware-sim", "--profile", "soltvvo-2x2", "--port", "0",
                     "--publish-twin", "--broker", remote, "--curve-key", str(rig)),
        env={**env, "ROBOCELL_HOST_NAME": "rig-1"}, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    client = CommandClient("cell", local)
    try:
        wait_registered(local, "firmware-sim", ["twin"], 60)
        twin = client.call("firmware-sim", "twin", timeout=10)
        assert twin["facelets"]
        state = recv_topic(watch, "sim.twin_state", 20)
        assert state is not None and state.source == "firmware-sim"
        listed = subprocess.run(robocell_cmd("bus", "list", "--json", "--wait", "1.5"),
                                env=env, capture_output=True, text=True, timeout=60)
        (instance,) = json.loads(listed.stdout)["instances"]["firmware-sim"]
        assert instance == {**instance, "host": "rig-1", "key": "rig", "pid": sim.pid}
    finally:
        client.close()
        watch.close()
        stop_process(sim)
        stop_process(broker)
