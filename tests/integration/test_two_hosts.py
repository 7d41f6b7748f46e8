"""The robot host and the compute host as two network namespaces: the cell on one, its solver
on the other, joined over the broker's CURVE endpoint (tests/support/netns.py).

The robot host is `robocell up --sim --without solver` with the broker's remote options; each
test starts the solvers it needs on the compute host (`robocell solver --broker ...
--curve-key ...`) and drives the cell from the robot host with the command line tools.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from support.netns import Hosts, namespaces_problem
from support.two_hosts import (
    REMOTE_PORT,
    cycle,
    generate_keys,
    remote_address,
    robocell_cmd,
    robot_env,
    solve_once,
    start_robot_host,
    start_solver,
    stop,
    wait_solver,
)

from robocell.common import tables
from robocell.deploy.launcher import temporary_cell_env

pytestmark = pytest.mark.slow

PROFILE = "soltvvo-2x2"
LOAD_SCRIPT = """
import json, sys, threading, concurrent.futures as cf
from robocell.common.bus import CommandClient, CommandFailed, Endpoints
from robocell.common.cube import random_facelets
n = int(sys.argv[1])
local = threading.local()  # a command client serves one thread at a time
def one(i):
    if not hasattr(local, "client"):
        local.client = CommandClient(f"load-{threading.get_ident()}", Endpoints.resolve(None))
    try:
        local.client.call("solver", "solve", {"facelets": random_facelets(2, 9000 + i)},
                          timeout=30.0)
        return "ok"
    except CommandFailed as exc:
        return f"{exc.code}: {exc}"
with cf.ThreadPoolExecutor(4) as pool:
    answers = list(pool.map(one, range(n)))
print(json.dumps({"ok": answers.count("ok"), "failed": [a for a in answers if a != "ok"]}))
"""


@pytest.fixture(scope="module")
def hosts():
    problem = namespaces_problem()
    if problem is not None:
        pytest.skip(f"two hosts in network namespaces: {problem}")
    made = Hosts.make("robot", "compute")
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    return generate_keys(tmp_path_factory.mktemp("keys"), ("compute", "reader", "stranger"))


@pytest.fixture(scope="module")
def robot(hosts, keys):
    """The robot host's cell (its environment), running for the module."""
    with temporary_cell_env(PROFILE, 50.0) as cell_env:
        env = robot_env(cell_env)
        up = start_robot_host(hosts, keys, env)
        yield env
        stop(up, signal.SIGINT)


def test_without_a_solver_instance_the_cycle_fails_naming_the_solver(hosts, robot):
    result = cycle(hosts, robot, 1)
    assert not result["ok"] and result["failed_stage"] == "solving"
    assert "no solver instance" in result["error"] and "--broker" in result["error"]


def test_a_cycle_solves_through_the_compute_host_and_the_robot_host_maps_no_table(
        hosts, keys, robot):
    solver = start_solver(hosts, keys["compute"], PROFILE)
    try:
        wait_solver(hosts, robot)
        for seed in (2, 3):
            result = cycle(hosts, robot, seed)
            assert result["ok"], result
        root = str(tables.tables_dir().resolve())
        robot_pids = hosts.pids("robot")
        assert len(robot_pids) >= 7  # up, broker, cell, vision, actuator, firmware, monitor...
        for pid in robot_pids:
            assert tables.mapped_groups(pid) == {}, pid
            opened = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
            assert not [path for path in opened if path.startswith(root)], pid
        # the tables are mapped on the compute host
        assert any(tables.mapped_groups(pid) for pid in hosts.pids("compute"))
    finally:
        stop(solver)


def test_the_link_cut_and_restored_the_remote_solver_comes_back_by_itself(hosts, keys, robot):
    solver = start_solver(hosts, keys["compute"], PROFILE)
    try:
        wait_solver(hosts, robot)
        hosts.cut("compute")
        time.sleep(6.0)  # past the heartbeat's staleness: the broker drops the instance
        assert solve_once(hosts, robot).returncode != 0
        hosts.restore("compute")
        assert wait_solver(hosts, robot, timeout=90.0) < 90.0
        assert solver.poll() is None  # the same process, reconnected
        assert cycle(hosts, robot, 4)["ok"]
    finally:
        hosts.restore("compute")
        stop(solver)


def test_two_remote_solvers_one_killed_mid_load_lose_no_cycle_and_run_nothing_twice(
        hosts, keys, robot):
    solvers = [start_solver(hosts, keys["compute"], PROFILE) for _ in range(2)]
    echo = hosts.run("robot", robocell_cmd("bus", "echo", "actuator.result", "--json"),
                     env=robot, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        wait_solver(hosts, robot)
        time.sleep(3.0)  # both instances registered (the second may start later)
        load = hosts.run("robot", [sys.executable, "-c", LOAD_SCRIPT, "200"], env=robot,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        results = [cycle(hosts, robot, 5)]
        stop(solvers[0], signal.SIGKILL)  # mid-load: the load script's requests in flight
        results += [cycle(hosts, robot, seed) for seed in (6, 7)]
        out, err = load.communicate(timeout=300)
        assert [r["ok"] for r in results] == [True] * 3, results
        loaded = json.loads(out.strip().splitlines()[-1])
        assert loaded["failed"] == [] and loaded["ok"] == 200, loaded
    finally:
        for proc in solvers:
            stop(proc)
        echo.send_signal(signal.SIGTERM)
    executed = [json.loads(line) for line in echo.communicate(timeout=30)[0].splitlines()
                if line.startswith("{")]
    plan_ids = [e.get("payload", e).get("plan_id") for e in executed]
    assert len(plan_ids) >= 3 and len(plan_ids) == len(set(plan_ids)), plan_ids


def test_keys_without_the_service_role_never_serve(hosts, keys, robot):
    refused = [start_solver(hosts, keys[name], PROFILE) for name in ("reader", "stranger")]
    try:
        time.sleep(20.0)  # long enough to warm up and try to register
        answer = solve_once(hosts, robot)
        assert answer.returncode == 1 and "unavailable" in answer.stdout + answer.stderr
    finally:
        for proc in refused:
            stop(proc)


def test_one_solver_serves_two_cells(hosts, keys, robot):
    second_port = REMOTE_PORT + 10
    with temporary_cell_env(PROFILE, 50.0) as env:
        env = robot_env(env)
        up = start_robot_host(hosts, keys, env, second_port)
        solver = start_solver(hosts, keys["compute"], PROFILE, remote_address(hosts),
                              remote_address(hosts, second_port))
        try:
            wait_solver(hosts, robot)
            wait_solver(hosts, env)
            assert cycle(hosts, robot, 8)["ok"]
            assert cycle(hosts, env, 9)["ok"]
            assert solver.poll() is None  # one solver process, both cells' instance
        finally:
            stop(solver)
            stop(up, signal.SIGINT)
