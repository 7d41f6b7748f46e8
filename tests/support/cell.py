"""Helpers for tests that run the real cell: a launched cell on free ports, its bus address."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from contextlib import contextmanager

from robocell.deploy.launcher import Launcher, temporary_cell_env


@contextmanager
def running_cell(profile: str, speed: float = 50.0, env: dict[str, str] | None = None
                 ) -> Iterator[Launcher]:
    """The simulated cell of docker-compose.yml as local processes, stopped afterwards;
    ``env`` adds variables (e.g. the monitor's token). Its cycle log is in a temporary
    directory, removed afterwards."""
    with temporary_cell_env(profile, speed) as cell_env:
        launcher = Launcher("sim", {**cell_env, **(env or {})}, quiet={
            "broker", "solver", "firmware-sim", "actuator-sim", "vision-sim", "cell",
            "monitor", "foxglove"})
        with launcher:
            launcher.start()
            yield launcher


def bus_address(launcher: Launcher) -> str:
    return launcher.services[0].environment["ROBOCELL_BUS"]


def foxglove_url(launcher: Launcher) -> str:
    """The WebSocket address of the cell's Foxglove bridge."""
    return f"ws://127.0.0.1:{launcher.env['ROBOCELL_FOXGLOVE_PORT']}"


def wait_executing(node, cycle_id: str, timeout: float = 60.0) -> None:
    """Return once cycle ``cycle_id`` is executing its plan and the actuator says a step of
    it runs (a 2x2 robot's scan moves the cube too: that progress is not the plan's)."""
    statuses: queue.Queue = queue.Queue()
    progress: queue.Queue = queue.Queue()
    node.subscribe("cell.status", statuses.put)
    node.subscribe("actuator.progress", progress.put)
    deadline = time.monotonic() + timeout
    while True:
        status = statuses.get(timeout=max(0.1, deadline - time.monotonic())).payload
        if status["cycle_id"] == cycle_id and status["stage"] == "executing":
            break
    while progress.get(timeout=max(0.1, deadline - time.monotonic())).payload["state"] \
            != "running":
        pass
