"""Helpers for tests that run the real cell: free loopback ports, a launched cell, a bus client."""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from robocell.cell.launcher import Launcher


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_block(count: int) -> int:
    """The first of ``count`` consecutive free loopback ports."""
    for _ in range(200):
        base = random.randrange(20000, 60000 - count)
        if all(port_free(base + i) for i in range(count)):
            return base
    raise RuntimeError("no free block of loopback ports")


def cell_env(profile: str, speed: float) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "ROBOCELL_PROFILE": profile,
        "ROBOCELL_SPEED": str(speed),
        "ROBOCELL_BUS_PORT": str(free_port_block(4)),
        "ROBOCELL_SIM_PORT": str(free_port_block(1)),
        "ROBOCELL_MONITOR_PORT": str(free_port_block(1)),
        "ROBOCELL_SOLVER_WORKERS": "1",
    })
    return env


@contextmanager
def running_cell(profile: str, speed: float = 50.0) -> Iterator[Launcher]:
    """The simulated cell of docker-compose.yml as local processes, stopped afterwards."""
    launcher = Launcher("sim", cell_env(profile, speed), quiet={
        "broker", "solver", "firmware-sim", "actuator-sim", "vision-sim", "cell", "monitor"})
    with launcher:
        launcher.start()
        yield launcher


def bus_address(launcher: Launcher) -> str:
    return launcher.services[0].environment["ROBOCELL_BUS"]
