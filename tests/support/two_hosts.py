"""The two-host recipe of docs/hosts.md on network namespaces (`support.netns.Hosts`): CURVE
keys, the robot host (`robocell up --sim --without solver` with the broker's remote options),
solvers on the compute host, and the command line tools run on the robot host to drive it.
Shared by tests/integration/test_two_hosts.py and bench/two_hosts.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

from support.netns import Hosts

REMOTE_PORT = 7620
"""The robot host's CURVE endpoint (and the next three ports)."""
SOLVED_2X2 = "U" * 4 + "R" * 4 + "F" * 4 + "D" * 4 + "L" * 4 + "B" * 4
ROBOT_HOST_START_S = 300.0


def robocell_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "robocell", *args]


def generate_keys(key_dir: Path, clients: tuple[str, ...]) -> dict[str, Path]:
    """The broker's key and a client key for each of ``clients`` (each knowing the broker's
    public key), by `robocell keys generate`; also "dir": the folder."""
    def generate(name: str, broker_pub: Path | None = None) -> Path:
        args = ["keys", "generate", name, "--dir", str(key_dir)]
        if broker_pub is not None:
            args += ["--broker-pub", str(broker_pub)]
        done = subprocess.run(robocell_cmd(*args), capture_output=True, text=True,
                              timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"robocell keys generate {name}: {done.stderr}")
        return key_dir / f"{name}.key"

    made = {"broker": generate("broker")}
    made.update({name: generate(name, key_dir / "broker.pub") for name in clients})
    made["dir"] = key_dir
    return made


def robot_env(cell_env: dict[str, str]) -> dict[str, str]:
    """A cell's environment for the robot host: its own loopback bus, no client key, and the
    small host's vision setting of docs/hosts.md (the views read in the vision process, no
    reader processes: each would hold its own numba and OpenCV, ~340 MB)."""
    env = {k: v for k, v in cell_env.items() if not k.startswith("ROBOCELL_BUS_CURVE")}
    env["ROBOCELL_VISION_READERS"] = "0"
    return env


def compute_env() -> dict[str, str]:
    """The compute host's environment: no bus of its own (it names the robot host's)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("ROBOCELL_BUS")}


def start_robot_host(hosts: Hosts, keys: dict, env: dict[str, str],
                     remote_port: int = REMOTE_PORT,
                     allow: tuple[str, ...] = ("compute:service:solver", "reader")
                     ) -> subprocess.Popen:
    """`robocell up --sim --without solver` on the robot host with its CURVE endpoint open
    (``allow``: key name and role), returned once it says the cell is up."""
    key_dir = keys["dir"]
    argv = ["up", "--sim", "--without", "solver", "--remote", f"tcp://0.0.0.0:{remote_port}",
            "--curve-key", str(key_dir / "broker.key")]
    for entry in allow:
        name, _, role = entry.partition(":")
        argv += ["--allow", f"{key_dir / name}.pub" + (f":{role}" if role else "")]
    up = hosts.run("robot", robocell_cmd(*argv), env=env, stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    _UP_LINES[up.pid] = lines  # said by `stop` when it does not end
    is_up = threading.Event()

    def pump() -> None:
        for line in up.stdout:
            lines.append(line)
            if "the cell is up" in line:
                is_up.set()

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + ROBOT_HOST_START_S
    while not is_up.wait(0.5):
        if up.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the robot host did not come up:\n" + "".join(lines[-30:]))
    return up


def start_solver(hosts: Hosts, key: Path, profile: str, *brokers: str,
                 workers: int = 1) -> subprocess.Popen:
    """A solver on the compute host serving the cell(s) of ``brokers`` (default the robot
    host's CURVE endpoint)."""
    argv = ["solver", "--profile", profile, "--workers", str(workers), "--curve-key", str(key)]
    for broker in brokers or (remote_address(hosts),):
        argv += ["--broker", broker]
    # its output kept for when it ends early (`output_of`)
    log = tempfile.TemporaryFile("w+")
    proc = hosts.run("compute", robocell_cmd(*argv), env=compute_env(), stdout=log,
                     stderr=subprocess.STDOUT)
    _OUTPUT[proc.pid] = log
    return proc


_OUTPUT: dict[int, IO[str]] = {}
"""The output files of the solvers started here, by pid."""


def output_of(proc: subprocess.Popen, count: int = 20) -> str:
    """The last ``count`` lines a solver started by `start_solver` said."""
    log = _OUTPUT.get(proc.pid)
    if log is None:
        return ""
    log.seek(0)
    return "".join(log.readlines()[-count:])


def remote_address(hosts: Hosts, port: int = REMOTE_PORT) -> str:
    return f"tcp://{hosts.robot_address_for('compute')}:{port}"


def solve_once(hosts: Hosts, env: dict[str, str]) -> subprocess.CompletedProcess:
    """One `solve` of a solved 2x2 from the robot host (any profile answers it)."""
    return hosts.call("robot", robocell_cmd("bus", "call", "--timeout", "5", "solver", "solve",
                                            json.dumps({"facelets": SOLVED_2X2})), env=env)


def wait_solver(hosts: Hosts, env: dict[str, str], timeout: float = 300.0,
                solver: subprocess.Popen | None = None) -> float:
    """Seconds until the robot host's bus routes a solve to a solver instance (``solver``:
    the one expected, whose output is said if it ends first)."""
    started = time.monotonic()
    while solve_once(hosts, env).returncode != 0:
        if solver is not None and solver.poll() is not None:
            raise AssertionError(f"the solver ended ({solver.returncode}):\n"
                                 + output_of(solver))
        if time.monotonic() - started > timeout:
            raise AssertionError(f"no solver instance answered within {timeout:.0f} s"
                                 + (":\n" + output_of(solver) if solver is not None else ""))
        time.sleep(0.5)
    return time.monotonic() - started


def cycle(hosts: Hosts, env: dict[str, str], seed: int) -> dict:
    """Scramble the twin and run one cycle from the robot host; its result."""
    scrambled = hosts.call("robot", robocell_cmd("bus", "call", "cell", "scramble",
                                                 json.dumps({"seed": seed})), env=env)
    if scrambled.returncode != 0:
        raise AssertionError(f"scramble: {scrambled.stdout} {scrambled.stderr}")
    done = hosts.call("robot", robocell_cmd("cycle", "--json", "--timeout", "120"), env=env,
                      timeout=180)
    return json.loads(done.stdout.strip().splitlines()[-1])


_UP_LINES: dict[int, list[str]] = {}
"""What each robot host started by `start_robot_host` has said, by pid."""

STOP_TIMEOUT_S = 30.0
"""Bound on a process's end after its signal (`up` itself gives its services 5 s)."""


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Send ``sig`` and wait for the end. A process still running after `STOP_TIMEOUT_S` is
    asked for its threads' stacks (SIGUSR1), killed, and the failure says what it printed."""
    if proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
        return
    except subprocess.TimeoutExpired:
        pass
    proc.send_signal(signal.SIGUSR1)  # robocell's processes print their stacks
    time.sleep(2.0)
    proc.kill()
    proc.wait(timeout=30)
    said = "".join(_UP_LINES.get(proc.pid, [])[-200:]) or output_of(proc, 200)
    raise AssertionError(f"pid {proc.pid} did not end within {STOP_TIMEOUT_S:.0f} s of "
                         f"signal {sig}; its last output and stacks:\n{said}")
