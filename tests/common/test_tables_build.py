"""Processes that need one missing table group build it once: the first takes the group's
lock and builds, the others wait for it and load what it built. (The solver's workers warm up
together; each used to build the group itself, with the memory and the core a build takes:
two copies of a 1.1-GB phase-1 move-word table at once on a robot host.) A builder that dies
leaves no lock behind."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import numpy as np

from robocell.common import tables

FORK = multiprocessing.get_context("fork")


def _group(log: Path, seconds: float) -> tables.TableGroup:
    def build() -> dict[str, np.ndarray]:
        with log.open("a") as fh:
            fh.write(f"{os.getpid()}\n")
        time.sleep(seconds)
        return {"x": np.arange(10, dtype=np.int64)}

    return tables.TableGroup("test-shared-build", {"version": 1}, build)


def _load(root: str, log: Path, seconds: float, out) -> None:
    os.environ["ROBOCELL_TABLES"] = root
    out.put(int(tables.load(_group(log, seconds))["x"].sum()))


def test_a_group_two_processes_need_is_built_once(tmp_path) -> None:
    log = tmp_path / "builds.log"
    out = FORK.Queue()
    procs = [FORK.Process(target=_load, args=(str(tmp_path / "t"), log, 1.0, out))
             for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0, 0]
    assert sorted(out.get(timeout=5) for _ in procs) == [45, 45]
    assert len(log.read_text().split()) == 1


def test_a_builder_that_dies_leaves_no_lock(tmp_path) -> None:
    log = tmp_path / "builds.log"
    out = FORK.Queue()
    root = str(tmp_path / "t")
    doomed = FORK.Process(target=_load, args=(root, log, 60.0, out))
    doomed.start()
    deadline = time.monotonic() + 10
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert log.exists(), "the first builder never started"
    doomed.kill()
    doomed.join(10)
    survivor = FORK.Process(target=_load, args=(root, log, 0.1, out))
    survivor.start()
    survivor.join(30)
    assert survivor.exitcode == 0
    assert out.get(timeout=5) == 45
    assert len(log.read_text().split()) == 2


def test_a_group_up_to_date_is_left_alone(tmp_path, monkeypatch) -> None:
    # nothing written, not even the lock file: the tables may be on a read-only mount
    monkeypatch.setenv("ROBOCELL_TABLES", str(tmp_path / "t"))
    group = _group(tmp_path / "builds.log", 0.0)
    assert tables.ensure_built(group) == "not built yet"
    lock = tmp_path / "t" / ".test-shared-build.lock"
    lock.unlink()
    assert tables.ensure_built(group) is None
    assert not lock.exists()
    assert len((tmp_path / "builds.log").read_text().split()) == 1
