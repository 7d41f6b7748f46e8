"""Helpers for the bus tests: free ports, subprocess commands, a scripted service, waiting for
messages."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from robocell.common.bus import Endpoints, Subscriber
from robocell.common.config import free_port_block

REPO = Path(__file__).resolve().parents[2]
N_PORTS = 4  # subscribe, publish, command, tap
BROKER_START_TIMEOUT_S = 10.0
SCRIPTED_SERVICE = Path(__file__).with_name("scripted_service.py")
"""A bus service whose behaviour a test scripts (run it with ``python``)."""


def free_base_port() -> int:
    """A port P such that P..P+3 are free on 127.0.0.1 right now."""
    return free_port_block(N_PORTS)


def robocell_env(bus_base: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["ROBOCELL_BUS"] = bus_base
    for name in ("ROBOCELL_BUS_SUB", "ROBOCELL_BUS_PUB", "ROBOCELL_BUS_CMD", "ROBOCELL_BUS_TAP",
                 "ROBOCELL_BUS_CURVE_KEY"):
        env.pop(name, None)
    return env


def robocell_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "robocell", *args]


def wait_for_broker(endpoints: Endpoints, timeout: float = BROKER_START_TIMEOUT_S) -> None:
    """Wait until the broker answers (its latched bus.stats arrives)."""
    sub = Subscriber(["bus.stats"], endpoints)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sub.recv(0.2) is not None:
                return
        raise AssertionError(f"broker at {endpoints.subscribe} did not start")
    finally:
        sub.close()


def recv_topic(sub: Subscriber, topic: str, timeout: float = 3.0):
    """The next message of ``topic`` within ``timeout`` s, skipping others; None if none."""
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        env = sub.recv(remaining)
        if env is not None and env.topic == topic:
            return env
    return None


def stop_process(proc: subprocess.Popen) -> None:
    """Terminate (then kill) ``proc`` and close its pipes."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
