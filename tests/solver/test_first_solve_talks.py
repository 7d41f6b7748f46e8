"""A cold first solve: compiling the search is said while it happens and never reported as
search time. A fresh numba cache forces the compile (a real process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from robocell.services.solver.cli import COMPILE_QUIET_S

ROOT = Path(__file__).resolve().parents[2]
STARTUP_S = 5.0
"""A solve process's start before its search is compiled (interpreter, imports, tables)."""


def test_a_cold_solve_says_it_compiles_and_reports_only_the_search(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    scrambled = subprocess.run([sys.executable, "-m", "robocell", "cube", "apply", "--size",
                                "2", "R U2 F' R2 U' F", "--json"], env=env,
                               capture_output=True, text=True, timeout=120)
    facelets = json.loads(scrambled.stdout)["facelets"]
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "robocell", "solve", "--puzzle", "2x2",
                          "--profile", "soltvvo-2x2", "--json", facelets], env=env,
                         capture_output=True, text=True, timeout=600)
    took = time.monotonic() - started
    assert out.returncode == 0, out.stderr
    # a compile that outlasts the quiet time is said; a quicker one has nothing to say (the
    # process's start, imports and table load come on top: a few seconds)
    assert ("compiling the 2x2 search" in out.stderr
            or took < COMPILE_QUIET_S + STARTUP_S), (took, out.stderr)
    assert json.loads(out.stdout)["solve_ms"] < 1000.0, out.stdout
