"""numba's cache of compiled functions follows the sources (`robocell.common.numba_cache`):
numba alone keeps a caller's old copy of a callee from another module; the sweep deletes the
cache when any source file changed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numba
import pytest

from robocell.common.numba_cache import STAMP_NAME, sweep

NUMBA_VERSION = tuple(int(part) for part in numba.__version__.split(".")[:2])

CALLEE = """
from numba import njit

@njit(cache=True)
def value():
    return {value}
"""
CALLER = """
from numba import njit

from pkg.callee import value

@njit(cache=True)
def read():
    return value()
"""
RUN = """
import sys
from pathlib import Path
from robocell.common.numba_cache import sweep
if sys.argv[1] == "sweep":
    sweep(Path("pkg").resolve())
from pkg.caller import read
print(read())
"""


def _package(tmp_path: Path, value: int) -> Path:
    package = tmp_path / "pkg"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "callee.py").write_text(CALLEE.format(value=value))
    (package / "caller.py").write_text(CALLER)
    return package


def _run(tmp_path: Path, mode: str) -> int:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(RUN), mode], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=120, check=True)
    return int(out.stdout.split()[-1])


def _edit_callee(tmp_path: Path, value: int) -> None:
    callee = tmp_path / "pkg" / "callee.py"
    before = callee.stat().st_mtime_ns
    callee.write_text(CALLEE.format(value=value))
    # a new modification time even on a coarse clock
    os.utime(callee, ns=(before + 2_000_000_000, before + 2_000_000_000))


@pytest.mark.slow
def test_after_the_sweep_a_caller_runs_its_callees_current_code(tmp_path: Path) -> None:
    _package(tmp_path, 1)
    assert _run(tmp_path, "plain") == 1
    _edit_callee(tmp_path, 2)
    # what the sweep is for: the caller's file did not change, so numba (0.68 here) loads its
    # old code; a numba that notices the callee's change gives 2, which is right too
    stale = _run(tmp_path, "plain")
    assert stale == 1 if NUMBA_VERSION <= (0, 68) else stale in (1, 2)
    assert _run(tmp_path, "sweep") == 2
    _edit_callee(tmp_path, 3)
    assert _run(tmp_path, "sweep") == 3


def test_the_sweep_deletes_only_when_a_source_changed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    package = _package(tmp_path, 1)
    cache = package / "__pycache__"
    cache.mkdir()
    for name in ("callee.value-5.py312.nbi", "callee.value-5.py312.1.nbc", "callee.pyc"):
        (cache / name).write_bytes(b"x")
    assert sweep(package) == 2  # no stamp yet: the cache files go, the bytecode stays
    assert (cache / STAMP_NAME).is_file() and (cache / "callee.pyc").is_file()
    (cache / "caller.read-6.py312.nbi").write_bytes(b"x")
    assert sweep(package) == 0  # nothing changed: kept
    time.sleep(0.01)
    (package / "new.py").write_text("")
    assert sweep(package) == 1
    assert not list(cache.glob("*.nb?"))


def test_a_chosen_cache_folder_is_left_alone(tmp_path: Path, monkeypatch) -> None:
    package = _package(tmp_path, 1)
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "callee.value-5.py312.nbi").write_bytes(b"x")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert sweep(package) == 0
    assert (package / "__pycache__" / "callee.value-5.py312.nbi").is_file()
