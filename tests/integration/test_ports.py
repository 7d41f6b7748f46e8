"""Two cells on one host: every command follows the port variables, and `robocell up` on
ports that are taken refuses before starting anything and leaves the other cell alone.

Real processes on loopback: a broker (or a bare listening socket) stands in for the other
cell; nothing here needs solver tables, since a refused `up` starts no service.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from robocell.common.config import free_port_block, free_port_blocks
from robocell.deploy.compose import LocalService
from robocell.deploy.launcher import Launcher, LaunchError

PORT_VARIABLES = ("ROBOCELL_BUS", "ROBOCELL_BUS_PORT", "ROBOCELL_BUS_PORT_LAST",
                  "ROBOCELL_SIM_PORT", "ROBOCELL_FIRMWARE_PORT", "ROBOCELL_MONITOR_PORT",
                  "ROBOCELL_FOXGLOVE_PORT",
                  "ROBOCELL_BUS_SUB", "ROBOCELL_BUS_PUB", "ROBOCELL_BUS_CMD", "ROBOCELL_BUS_TAP",
                  "ROBOCELL_BUS_CURVE_KEY")
REFUSAL_TIMEOUT_S = 30.0


def clean_env(**ports: int) -> dict[str, str]:
    """This environment without any bus or port setting, then ``ports`` (by variable)."""
    env = {k: v for k, v in os.environ.items() if k not in PORT_VARIABLES}
    env.update({name: str(value) for name, value in ports.items()})
    return env


def robocell(*args: str, env: dict[str, str], timeout: float = 30.0
             ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robocell", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


@contextmanager
def other_broker(base: int) -> Iterator[subprocess.Popen]:
    """`robocell broker` on base..base+3, as another cell would run it; stopped afterwards."""
    proc = subprocess.Popen([sys.executable, "-m", "robocell", "broker", "--bus",
                             f"tcp://127.0.0.1:{base}"], env=clean_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60  # (only bounds a hang: a loaded machine starts slowly)
        while not _listening(base + 2):
            assert proc.poll() is None, "the other cell's broker did not start"
            assert time.monotonic() < deadline, "the other cell's broker did not listen"
            time.sleep(0.1)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def listener(port: int) -> Iterator[socket.socket]:
    """Some other program listening on 127.0.0.1:port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", port))
    sock.listen()
    try:
        yield sock
    finally:
        sock.close()


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def broker_pid_heard(base: int) -> int | None:
    """The pid in the heartbeat of the broker that `robocell bus list` finds with
    ROBOCELL_BUS_PORT=base, or None when it finds none."""
    out = robocell("bus", "list", "--json", env=clean_env(ROBOCELL_BUS_PORT=base))
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)["services"].get("broker", {}).get("pid")


@pytest.mark.slow
def test_health_and_bus_list_reach_the_broker_on_ROBOCELL_BUS_PORT():
    base = free_port_block(4)
    with other_broker(base) as broker:
        health = robocell("health", "broker", env=clean_env(ROBOCELL_BUS_PORT=base))
        assert health.returncode == 0, health.stderr
        assert broker_pid_heard(base) == broker.pid


def free_ports() -> dict[str, int]:
    bus, sim, monitor, foxglove = free_port_blocks(4, 1, 1, 1)
    return {"ROBOCELL_BUS_PORT": bus, "ROBOCELL_SIM_PORT": sim,
            "ROBOCELL_MONITOR_PORT": monitor, "ROBOCELL_FOXGLOVE_PORT": foxglove}


def assert_refused(out: subprocess.CompletedProcess, port: int, variable: str) -> None:
    assert out.returncode != 0, out.stdout
    assert "Traceback" not in out.stderr + out.stdout
    assert f"port {port}" in out.stderr and variable in out.stderr, out.stderr
    assert len(out.stderr.splitlines()) <= 6, out.stderr
    assert "is up" not in out.stdout  # no service started, the cell neither


@pytest.mark.parametrize("command", [["up", "--sim"], ["demo"]])
@pytest.mark.slow
def test_up_on_the_ports_of_another_cell_refuses_and_leaves_that_cell_running(command):
    ports = free_ports()
    base = ports["ROBOCELL_BUS_PORT"]
    with other_broker(base) as broker:
        started = time.monotonic()
        out = robocell(*command, env=clean_env(**ports), timeout=REFUSAL_TIMEOUT_S)
        assert time.monotonic() - started < 15
        assert_refused(out, base, "ROBOCELL_BUS_PORT")
        assert "bus list" in out.stderr  # how to find the other cell
        assert broker.poll() is None
        assert broker_pid_heard(base) == broker.pid


@pytest.mark.parametrize("variable", ["ROBOCELL_SIM_PORT", "ROBOCELL_MONITOR_PORT",
                                      "ROBOCELL_FOXGLOVE_PORT"])
def test_up_refuses_a_taken_sim_monitor_or_foxglove_port_before_starting_anything(variable):
    ports = free_ports()
    with listener(ports[variable]):
        out = robocell("up", "--sim", env=clean_env(**ports), timeout=REFUSAL_TIMEOUT_S)
    assert_refused(out, ports[variable], variable)
    assert "[broker]" not in out.stdout  # nothing was started


@pytest.mark.parametrize("variable", ["ROBOCELL_SIM_PORT", "ROBOCELL_MONITOR_PORT",
                                      "ROBOCELL_FOXGLOVE_PORT"])
def test_up_refuses_a_port_that_is_also_one_of_the_bus_ports_before_starting_anything(variable):
    """Two services told to listen on one port: the second would fail half-way through the
    launch, after the others had started. The launch refuses first and names both."""
    ports = free_ports()
    ports[variable] = ports["ROBOCELL_BUS_PORT"] + 2
    out = robocell("up", "--sim", env=clean_env(**ports), timeout=REFUSAL_TIMEOUT_S)
    assert_refused(out, ports[variable], variable)
    assert "ROBOCELL_BUS_PORT" in out.stderr and "its own port" in out.stderr, out.stderr
    assert "[broker]" not in out.stdout  # nothing was started


def test_free_ports_of_a_cell_never_share_a_port():
    for _ in range(200):
        ports = free_ports()
        taken = [*range(ports["ROBOCELL_BUS_PORT"], ports["ROBOCELL_BUS_PORT"] + 4),
                 ports["ROBOCELL_SIM_PORT"], ports["ROBOCELL_MONITOR_PORT"],
                 ports["ROBOCELL_FOXGLOVE_PORT"]]
        assert len(set(taken)) == len(taken), ports


@pytest.mark.slow
def test_launcher_does_not_take_another_process_heartbeat_for_its_own_service():
    base = free_port_block(4)
    with other_broker(base) as broker:
        env = clean_env(ROBOCELL_BUS_PORT=base)
        launcher = Launcher("sim", env, only={"broker"}, quiet={"broker"})
        # a "broker" of ours that never beats: only the other cell's broker is heard
        launcher.services = [LocalService(
            "broker", (sys.executable, "-c", "import time; time.sleep(60)"),
            {"ROBOCELL_BUS": f"tcp://127.0.0.1:{base}"}, (), "broker")]
        launcher.ready_timeout_s = 4.0
        with launcher, pytest.raises(LaunchError) as refused:
            launcher.start(check_ports=False)
        assert f"pid {broker.pid}" in str(refused.value)
        assert broker.poll() is None


@pytest.mark.parametrize(("command", "variable"), [
    (["firmware-sim", "--max-runtime", "30"], "ROBOCELL_SIM_PORT"),
    (["firmware-sim", "--max-runtime", "30"], "ROBOCELL_FIRMWARE_PORT"),  # the old name
    pytest.param(["monitor"], "ROBOCELL_MONITOR_PORT", marks=pytest.mark.slow),
    (["foxglove"], "ROBOCELL_FOXGLOVE_PORT"),
])
def test_simulator_dashboard_and_foxglove_listen_where_the_variables_say(command, variable):
    bus, port = free_port_blocks(4, 1)  # apart: blocks picked one by one could overlap
    env = clean_env(ROBOCELL_BUS_PORT=bus, **{variable: port})
    proc = subprocess.Popen([sys.executable, "-m", "robocell", *command], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60  # (only bounds a hang: a loaded machine starts slowly)
        while not _listening(port):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, f"nothing listens on {variable}={port}"
            time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stderr:
            proc.stderr.close()
