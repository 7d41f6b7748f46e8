"""Careless input and small surprises of a first hour: a trailing space, no arguments, a
profile that does not exist or a speed that cannot be, refused before anything starts; what
the demo prints of the twin and of a stopped plan.

Real `robocell` processes; nothing here starts a cell.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from robocell.common.facelets import solved
from robocell.deploy.cli import ready_line
from robocell.tools.cycle import scramble_line, show_event

ROOT = Path(__file__).resolve().parents[2]
REFUSED_WITHIN_S = 20.0
"""Before anything starts: an interpreter's start on a loaded machine, no service."""


def robocell(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "robocell", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_a_trailing_space_or_spaces_between_faces_are_not_letters():
    assert robocell("cube", "check", solved(3) + " ").returncode == 0
    spaced = " ".join(solved(2)[i:i + 4] for i in range(0, 24, 4))
    out = robocell("cube", "check", spaced)
    assert out.returncode == 0, out.stdout + out.stderr


def test_robocell_without_a_command_shows_the_commands_and_fails():
    out = robocell()
    assert out.returncode == 2
    assert "demo" in out.stdout + out.stderr


@pytest.mark.parametrize(("option", "said"), [
    (["--profile", "nosuch"], "nosuch"),
    (["--speed", "-1"], "--speed"),
    (["--speed", "0"], "--speed"),
])
@pytest.mark.parametrize("command", [["demo"], ["up", "--sim"]])
def test_a_wrong_profile_or_speed_is_refused_before_anything_starts(command, option, said):
    started = time.monotonic()
    out = robocell(*command, *option)
    assert time.monotonic() - started < REFUSED_WITHIN_S
    assert out.returncode == 2, out.stdout + out.stderr
    assert said in out.stderr, out.stderr
    assert "broker" not in out.stdout and "[broker]" not in out.stdout, out.stdout


def test_the_demo_shows_the_scrambled_twin_as_a_line_not_a_dict():
    line = scramble_line({"facelets": solved(2), "moves": ["R", "U2", "F'"]})
    assert line == f"twin scrambled: {solved(2)} (moves: R U2 F')"


def test_a_stopped_plan_says_where_it_stopped_not_an_eta():
    shown = io.StringIO()
    with redirect_stdout(shown):
        show_event("actuator.progress", {"plan_id": "p", "step": 3, "n_steps": 7,
                                         "primitive": "R", "eta_s": 0.0, "state": "stopped"})
    assert "stopped at step 4/7" in shown.getvalue() and "eta" not in shown.getvalue()


def test_up_and_demo_say_where_the_dashboard_and_foxglove_are():
    env = {"ROBOCELL_MONITOR_PORT": "8775", "ROBOCELL_FOXGLOVE_PORT": "8776"}
    assert ready_line("monitor", env) == "monitor is up: http://127.0.0.1:8775/"
    assert ready_line("foxglove", env) == "foxglove is up: ws://127.0.0.1:8776"
    assert ready_line("solver", env) == "solver is up"


def test_the_cube_read_says_why_it_is_not_the_scrambled_string():
    shown = io.StringIO()
    with redirect_stdout(shown):
        show_event("vision.cube_state", {"facelets": solved(2)})
    assert "robot" in shown.getvalue() and "holds" in shown.getvalue()
