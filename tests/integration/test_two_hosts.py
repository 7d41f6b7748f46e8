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
import threading
import time
from pathlib import Path

import pytest
from support.bus import robocell_cmd
from support.netns import Hosts, namespaces_problem

from robocell.common import tables
from robocell.deploy.launcher import temporary_cell_env

pytestmark = pytest.mark.slow

REMOTE_PORT = 7620
PROFILE = "soltvvo-2x2"
SOLVED_2X2 = "U" * 4 + "R" * 4 + "F" * 4 + "D" * 4 + "L" * 4 + "B" * 4
LOAD_SCRIPT = """
import json, sys, concurrent.futures as cf
from robocell.common.bus import CommandClient, CommandFailed, Endpoints
from robocell.common.cube import random_facelets
n = int(sys.argv[1])
client = CommandClient("load", Endpoints.resolve(None))
def one(i):
    try:
        client.call("solver", "solve", {"facelets": random_facelets(2, 9000 + i)}, timeout=30.0)
        return "ok"
    except CommandFailed as exc:
        return f"{exc.code}: {exc}"
with cf.ThreadPoolExecutor(4) as pool:
    answers = list(pool.map(one, range(n)))
print(json.dumps({"ok": answers.count("ok"), "failed": [a for a in answers if a != "ok"]}))
"""


def generate(key_dir: Path, name: str, broker_pub: Path | None = None) -> Path:
    args = ["keys", "generate", name, "--dir", str(key_dir)]
    if broker_pub is not None:
        args += ["--broker-pub", str(broker_pub)]
    done = subprocess.run(robocell_cmd(*args), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return key_dir / f"{name}.key"


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
    key_dir = tmp_path_factory.mktemp("keys")
    generate(key_dir, "broker")
    made = {name: generate(key_dir, name, key_dir / "broker.pub")
            for name in ("compute", "reader", "stranger")}
    made["dir"] = key_dir
    return made


def start_robot_host(hosts: Hosts, keys: dict, env: dict[str, str],
                     remote_port: int = REMOTE_PORT) -> subprocess.Popen:
    """`robocell up --sim --without solver` on the robot host, once it says the cell is up."""
    key_dir = keys["dir"]
    up = hosts.run("robot", robocell_cmd(
        "up", "--sim", "--without", "solver", "--remote", f"tcp://0.0.0.0:{remote_port}",
        "--curve-key", str(key_dir / "broker.key"),
        "--allow", f"{key_dir / 'compute.pub'}:service:solver",
        "--allow", str(key_dir / "reader.pub")),
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    up_event = threading.Event()

    def pump() -> None:
        for line in up.stdout:
            lines.append(line)
            if "the cell is up" in line:
                up_event.set()

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + 300
    while not up_event.wait(0.5):
        assert up.poll() is None, "".join(lines[-30:])
        assert time.monotonic() < deadline, "".join(lines[-30:])
    return up


@pytest.fixture(scope="module")
def robot(hosts, keys):
    """The robot host's cell (its environment), running for the module."""
    with temporary_cell_env(PROFILE, 50.0) as env:
        env = {k: v for k, v in env.items() if not k.startswith("ROBOCELL_BUS_CURVE")}
        up = start_robot_host(hosts, keys, env)
        yield env
        up.send_signal(signal.SIGINT)
        try:
            up.wait(timeout=30)
        except subprocess.TimeoutExpired:
            up.kill()


def compute_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("ROBOCELL_BUS")}


def start_solver(hosts: Hosts, key: Path, *brokers: str) -> subprocess.Popen:
    """A solver on the compute host serving the cell(s) of ``brokers``."""
    argv = ["solver", "--profile", PROFILE, "--workers", "1", "--curve-key", str(key)]
    for broker in brokers or (f"tcp://{hosts.robot_address_for('compute')}:{REMOTE_PORT}",):
        argv += ["--broker", broker]
    return hosts.run("compute", robocell_cmd(*argv), env=compute_env(),
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def solve_once(hosts: Hosts, env: dict[str, str]) -> subprocess.CompletedProcess:
    return hosts.call("robot", robocell_cmd("bus", "call", "--timeout", "5", "solver", "solve",
                                            json.dumps({"facelets": SOLVED_2X2})), env=env)


def wait_solver(hosts: Hosts, env: dict[str, str], timeout: float = 240.0) -> float:
    """Seconds until the robot host's bus routes a solve to a solver instance."""
    started = time.monotonic()
    while solve_once(hosts, env).returncode != 0:
        assert time.monotonic() - started < timeout, "no solver instance answered"
        time.sleep(0.5)
    return time.monotonic() - started


def cycle(hosts: Hosts, env: dict[str, str], seed: int) -> dict:
    """Scramble the twin and run one cycle from the robot host; its result."""
    scrambled = hosts.call("robot", robocell_cmd("bus", "call", "cell", "scramble",
                                                 json.dumps({"seed": seed})), env=env)
    assert scrambled.returncode == 0, scrambled.stderr
    done = hosts.call("robot", robocell_cmd("cycle", "--json", "--timeout", "120"), env=env,
                      timeout=180)
    return json.loads(done.stdout.strip().splitlines()[-1])


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        proc.wait(timeout=30)


def test_without_a_solver_instance_the_cycle_fails_naming_the_solver(hosts, robot):
    result = cycle(hosts, robot, 1)
    assert not result["ok"] and result["failed_stage"] == "solving"
    assert "no solver instance" in result["error"] and "--broker" in result["error"]


def test_a_cycle_solves_through_the_compute_host_and_the_robot_host_maps_no_table(
        hosts, keys, robot):
    solver = start_solver(hosts, keys["compute"])
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
    solver = start_solver(hosts, keys["compute"])
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
    solvers = [start_solver(hosts, keys["compute"]) for _ in range(2)]
    echo = hosts.run("robot", robocell_cmd("bus", "echo", "actuator.result", "--json"),
                     env=robot, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        wait_solver(hosts, robot)
        time.sleep(3.0)  # both instances registered (the second may start later)
        load = hosts.run("robot", [sys.executable, "-c", LOAD_SCRIPT, "300"], env=robot,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        results = [cycle(hosts, robot, 5)]
        stop(solvers[0], signal.SIGKILL)  # mid-load: the load script's requests in flight
        results += [cycle(hosts, robot, seed) for seed in (6, 7)]
        out, err = load.communicate(timeout=300)
        assert [r["ok"] for r in results] == [True] * 3, results
        loaded = json.loads(out.strip().splitlines()[-1])
        assert loaded["failed"] == [] and loaded["ok"] == 300, loaded
    finally:
        for proc in solvers:
            stop(proc)
        echo.send_signal(signal.SIGTERM)
    executed = [json.loads(line) for line in echo.communicate(timeout=30)[0].splitlines()
                if line.startswith("{")]
    plan_ids = [e.get("payload", e).get("plan_id") for e in executed]
    assert len(plan_ids) >= 3 and len(plan_ids) == len(set(plan_ids)), plan_ids


def test_keys_without_the_service_role_never_serve(hosts, keys, robot):
    refused = [start_solver(hosts, keys[name]) for name in ("reader", "stranger")]
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
        env = {k: v for k, v in env.items() if not k.startswith("ROBOCELL_BUS_CURVE")}
        up = start_robot_host(hosts, keys, env, second_port)
        address = hosts.robot_address_for("compute")
        solver = start_solver(hosts, keys["compute"], f"tcp://{address}:{REMOTE_PORT}",
                              f"tcp://{address}:{second_port}")
        try:
            wait_solver(hosts, robot)
            wait_solver(hosts, env)
            assert cycle(hosts, robot, 8)["ok"]
            assert cycle(hosts, env, 9)["ok"]
            assert solver.poll() is None  # one solver process, both cells' instance
        finally:
            stop(solver)
            stop(up, signal.SIGINT)
