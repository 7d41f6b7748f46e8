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
                   "column 4 are frozen off goals: they hold each other, no push can move "
                   "them"),
])
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


def test_the_first_solve_after_install_says_it_compiles(tmp_path: Path):
    check = ("import sys\nfrom robocell.sokoban.search_report import announce_compiling\n"
             "print(announce_compiling(sys.stdout))")
    fresh = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "empty-cache"),
             "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                         env=fresh, timeout=300).stdout
    assert "compiling the search for this installation" in out
    assert out.strip().endswith("True")


def test_a_compiled_search_is_not_announced(microban: Path, capsys):
    assert main(["sokoban", "solve", str(microban), "--level", "1"]) == 0  # compiles if needed
    capsys.readouterr()
    from robocell.sokoban.search_report import announce_compiling

    assert announce_compiling() is False
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
