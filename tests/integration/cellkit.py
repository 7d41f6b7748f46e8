"""Helpers for tests that run the real cell: free loopback ports, a launched cell, a bus client."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from robocell.common.ports import free_port_block
from robocell.services.cell.launcher import Launcher


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
