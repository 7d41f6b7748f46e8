"""What a person waiting on `robocell sokoban solve` is told: that the first solve compiles,
how a long search is going (on a terminal only), and why a level is unsolvable."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.bus import REPO

from robocell.cli import main
from robocell.sokoban.search_report import prepare_search

DEAD_START = "######\n#$ @.#\n######\n"
"""The box sits in a corner off goal: no push can ever move it."""


def robocell(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robocell", *args], capture_output=True,
                          text=True, timeout=600, env=env)


CROWDED_START = "########\n#.$ $@.#\n########\n"
"""Each box alone could reach a goal, but both can only be pushed to the left one."""

FROZEN_BLOCK = "#######\n#     #\n# $$  #\n# $$ .#\n#@  ..#\n#    .#\n#######\n"
"""Four boxes in a 2x2 block off the goals: each holds the others, none can ever move."""


@pytest.mark.parametrize("drawing, why", [
    (DEAD_START, "box at row 2, column 2 can reach no goal by pushes"),
    (CROWDED_START, "the boxes cannot each be pushed to a goal of their own: too many of them "
                    "can only reach the same few goals"),
    (FROZEN_BLOCK, "boxes at row 3, column 3, row 3, column 4, row 4, column 3 and row 4, "
                   "column 4 are frozen off goals: they hold each other, no push can bring "
                   "them to a goal"),
])
@pytest.mark.slow
def test_an_unsolvable_level_says_why_instead_of_a_huge_bound(tmp_path: Path, drawing: str,
                                                              why: str):
    level = tmp_path / "dead.xsb"
    level.write_text(drawing)
    done = robocell("sokoban", "solve", str(level))
    assert done.returncode == 1
    assert done.stdout.startswith(f"status: unsolvable (dead start: {why}")
    assert "1048576" not in done.stdout
    as_json = json.loads(robocell("sokoban", "solve", str(level), "--json").stdout)
    assert as_json["status"] == "no solution" and why in as_json["dead_start"]


SEVEN_PUSHES = "#######\n#.@ # #\n#$* $ #\n#   $ #\n# ..  #\n#  *  #\n#######\n"
"""A small level, solved in milliseconds once the search is compiled (7 pushes)."""
COMPILE_SAID_WITHIN_S = 10.0


def _timed_lines(args: list[str], env: dict) -> tuple[int, list[tuple[float, str]]]:
    """Run robocell with stderr joined to stdout; its exit code and every line with the
    seconds since the start at which it came."""
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "robocell", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    lines = [(time.monotonic() - started, line.rstrip("\n")) for line in proc.stdout]
    return proc.wait(60), lines


@pytest.mark.slow
def test_the_first_solve_says_it_compiles_at_once_and_times_the_search_alone(tmp_path: Path):
    level = tmp_path / "seven.xsb"
    level.write_text(SEVEN_PUSHES)
    fresh = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "empty-cache"),
             "PYTHONPATH": str(REPO)}
    status, lines = _timed_lines(["sokoban", "solve", str(level)], fresh)
    assert status == 0, lines
    said = [(at, line) for at, line in lines if "compiling" in line]
    assert said, f"the compile was never announced: {lines}"
    at, first = said[0]
    assert at < COMPILE_SAID_WITHIN_S, f"the compile was announced only at {at:.1f} s: {first}"
    assert "search" in first and "first run" in first
    done = [line for _, line in said if "done in" in line]
    assert done, f"the compile's time is not said: {lines}"
    compile_s = float(done[-1].rsplit("done in ", 1)[1].split()[0])
    status_line = next(line for _, line in lines if line.startswith("status: solved"))
    search_s = float(status_line.split("; ")[-2].split()[0])
    assert search_s < compile_s / 4, (search_s, compile_s)
    warm_status, warm = _timed_lines(["sokoban", "solve", str(level)], fresh)
    assert warm_status == 0 and not any("compiling" in line for _, line in warm), warm


def test_a_compiled_search_is_not_announced(microban: Path, capsys):
    assert main(["sokoban", "solve", str(microban), "--level", "1"]) == 0  # compiles if needed
    capsys.readouterr()
    prepare_search("pushes", [{"weight": 1}])
    assert capsys.readouterr().err == ""


def _stderr_on_a_terminal(args: list[str]) -> tuple[int, str]:
    """Run robocell with stderr on a pseudo-terminal; its exit code and what it drew."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "robocell", *args], stdout=subprocess.PIPE,
                            stderr=slave, env={**os.environ, "PYTHONPATH": str(REPO)})
    os.close(slave)
    drawn = b""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    proc.stdout.read()
    proc.stdout.close()
    return proc.wait(30), drawn.decode(errors="replace")


@pytest.mark.slow
def test_a_long_search_shows_its_progress_on_a_terminal(xsokoban: Path, microban: Path):
    assert main(["sokoban", "solve", str(microban), "--level", "1"]) == 0  # compiled first
    args = ["sokoban", "solve", str(xsokoban), "--level", "29", "--timeout", "3"]
    status, drawn = _stderr_on_a_terminal(args)
    assert status == 1  # timed out
    assert "searching: " in drawn
    line = drawn.split("\r\x1b[K")[-2]  # the last progress line before it was cleared
    assert "states expanded" in line and "stored" in line and ", bound " in line
    assert line.rstrip().endswith(" s")
    piped = robocell(*args)
    assert "searching:" not in piped.stderr
