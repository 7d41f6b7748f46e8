"""A first run that talks: while `robocell up` / `demo` wait for a service, they are never
silent for more than ten seconds, and what a quiet service says while it starts (the tables
it builds, the search it compiles) is shown.

A real launcher, a real broker, and stand-in services that start slowly (real processes).
"""

from __future__ import annotations

import io
import itertools
import os
import sys
import time

import pytest
from support.bus import REPO

from robocell.common.config import free_port_block
from robocell.deploy.compose import LocalService
from robocell.deploy.launcher import Launcher, LaunchError

LONGEST_SILENCE_S = 10.0


class StampedOutput(io.StringIO):
    """The launcher's output, each line with when it came."""

    def __init__(self) -> None:
        super().__init__()
        self.stamps: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        for line in text.splitlines():
            self.stamps.append((time.monotonic(), line))
        return super().write(text)


def test_waiting_for_a_slow_service_is_never_silent_and_shows_its_start_up_lines():
    base = free_port_block(4)
    env = {"ROBOCELL_BUS_PORT": str(base)}
    out = StampedOutput()
    launcher = Launcher("sim", env, out=out, only={"broker", "solver"},
                        quiet={"broker", "solver"}, talking={"solver"})
    bus = {"ROBOCELL_BUS": f"tcp://127.0.0.1:{base}"}
    slow = ("import sys, time\n"
            "print('tables: building cube3-twophase (not built yet)', flush=True)\n"
            "time.sleep(30)\n")
    launcher.services = [launcher.services[0], LocalService(
        "solver", (sys.executable, "-c", slow), bus, (), "solver")]
    launcher.ready_timeout_s = 24.0
    started = time.monotonic()
    with launcher, pytest.raises(LaunchError):
        launcher.start()
    lines = [line for _, line in out.stamps]
    assert any("tables: building cube3-twophase" in line for line in lines), lines
    assert any("waiting for solver" in line for line in lines), lines
    stamps = [started] + [t for t, _ in out.stamps if t >= started]
    silences = [b - a for a, b in itertools.pairwise(stamps)]
    assert max(silences) <= LONGEST_SILENCE_S + 1.0, (silences, lines)


def test_a_service_still_making_progress_is_not_cut_off_by_the_ready_timeout():
    """Building a big table takes longer than any fixed timeout on a slow machine: a service
    that keeps saying how it goes is waited for; one that falls silent is given up on, and
    the message says for how long it said nothing."""
    base = free_port_block(4)
    env = {"ROBOCELL_BUS_PORT": str(base)}
    launcher = Launcher("sim", env, out=StampedOutput(), only={"broker", "solver"},
                        quiet={"broker", "solver"}, talking={"solver"})
    bus = {"ROBOCELL_BUS": f"tcp://127.0.0.1:{base}"}
    talking_s = 9.0
    slow = ("import time\n"
            f"for i in range({int(talking_s * 2)}):\n"
            "    print(f'six-motor: phase-1 moves: {5 * i:5.1f}%', flush=True)\n"
            "    time.sleep(0.5)\n"
            "time.sleep(60)\n")
    launcher.services = [launcher.services[0], LocalService(
        "solver", (sys.executable, "-c", slow), bus, (), "solver")]
    launcher.ready_timeout_s = 3.0
    started = time.monotonic()
    with launcher, pytest.raises(LaunchError) as refused:
        launcher.start()
    assert time.monotonic() - started > talking_s
    assert "said nothing for 3 s" in str(refused.value), refused.value


def test_waiting_for_a_service_that_beats_shows_its_state_and_what_it_last_said(tmp_path):
    """A service heard on the bus ("starting") that says what it is doing (a compile): the
    waiting line gives both, not the state alone."""
    base = free_port_block(4)
    out = StampedOutput()
    launcher = Launcher("sim", {"ROBOCELL_BUS_PORT": str(base)}, out=out,
                        only={"broker", "vision-sim"}, quiet={"broker", "vision-sim"})
    bus = {"ROBOCELL_BUS": f"tcp://127.0.0.1:{base}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    slow = ("import os, time\n"
            "from robocell.common.bus import Endpoints, Node\n"
            "node = Node('vision', Endpoints.resolve(os.environ['ROBOCELL_BUS'])).start()\n"
            "print('vision: warming up (compiling the sim camera): 5 s so far', flush=True)\n"
            "time.sleep(60)\n")
    launcher.services = [launcher.services[0], LocalService(
        "vision-sim", (sys.executable, "-c", slow), bus, (), "vision")]
    launcher.ready_timeout_s = 14.0
    with launcher, pytest.raises(LaunchError):
        launcher.start()
    waiting = [line for _, line in out.stamps if "waiting for vision-sim" in line]
    assert any("its state: starting" in line and "it last said: vision: warming up" in line
               for line in waiting), waiting
