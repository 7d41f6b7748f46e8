"""The cycle log never loses a cycle: another process holds the log locked for 12 s, mid-cycle
and between cycles; the cell publishes `cell.result` at once, its cycle thread lives on, the
row is closed once the lock is gone, and a start while the log is locked is answered with a
reason. The cell service on a real broker (ZeroMQ on loopback), an actuator that scans on
cue, and a real second process holding SQLite's lock."""

from __future__ import annotations

import queue
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.bus import free_base_port

from robocell.common.bus import CommandFailed, Endpoints, Node
from robocell.services.broker.service import Broker
from robocell.services.cell.history import CycleLog
from robocell.services.cell.service import CellService

LOCK_S = 12.0
HOLD_LOCK = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
"""


@pytest.fixture
def endpoints() -> Iterator[Endpoints]:
    broker = Broker(Endpoints.from_base(f"tcp://127.0.0.1:{free_base_port()}"),
                    stats_period=0.2)
    thread = threading.Thread(target=broker.run, daemon=True)
    thread.start()
    assert broker.ready.wait(5)
    yield broker.endpoints
    broker.stop()
    thread.join(5)


@contextmanager
def locked(path: Path, seconds: float) -> Iterator[subprocess.Popen]:
    """Another process holding the log locked (an exclusive transaction) for ``seconds``."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        yield proc
    finally:
        proc.wait(timeout=seconds + 10)


def rows(path: Path) -> dict[str, str]:
    db = sqlite3.connect(path, timeout=30)
    try:
        return dict(db.execute("SELECT cycle_id, result FROM cycles").fetchall())
    finally:
        db.close()


def test_a_log_locked_mid_cycle_still_publishes_the_result_at_once_and_closes_the_row(
        endpoints: Endpoints, tmp_path: Path) -> None:
    path = tmp_path / "cycles.sqlite3"
    lock_taken = threading.Event()

    def scan(args: dict, ctx) -> dict:
        assert lock_taken.wait(20)
        raise CommandFailed("failed", "the scan program was interrupted")

    with Node("actuator", endpoints) as actuator, Node("vision", endpoints) as vision, \
            Node("cell", endpoints) as node, \
            Node("test-log", endpoints, track_peers=False) as watcher:
        vision.set_state("ready")
        actuator.serve("scan", scan)
        actuator.serve("status", lambda args, ctx: {"cube_state_known": True})
        actuator.serve("estop", lambda args, ctx: {})
        actuator.set_state("ready")
        results: queue.Queue = queue.Queue()
        watcher.subscribe("cell.result", results.put)
        cell = CellService(node, speed=1.0, log=CycleLog(path))
        cell.start()
        cycle_id = watcher.call("cell", "start", {}, timeout=10.0)["cycle_id"]
        with locked(path, LOCK_S):
            lock_taken.set()
            began = time.monotonic()
            result = results.get(timeout=LOCK_S / 2).payload  # at once, not after the lock
            assert result["cycle_id"] == cycle_id and not result["ok"]
            assert time.monotonic() - began < LOCK_S / 2
            # a start while the log is locked: an explicit answer, not silence (while the
            # finished cycle's thread is still closing its row, "a cycle is running" first)
            messages = []
            while not any("cycle log" in m for m in messages) \
                    and time.monotonic() - began < LOCK_S * 0.8:
                with pytest.raises(CommandFailed) as refused:
                    watcher.call("cell", "start", {}, timeout=8.0)
                assert refused.value.code == "busy", refused.value
                messages.append(refused.value.message)
                time.sleep(0.1)
            assert any("cycle log" in m for m in messages), messages
        deadline = time.monotonic() + 15.0
        while rows(path).get(cycle_id) == "running" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert rows(path)[cycle_id] == "failed"
        # the cycle thread lived on: the next cycle runs and is logged
        lock_taken.set()
        again = watcher.call("cell", "start", {}, timeout=10.0)["cycle_id"]
        assert results.get(timeout=15.0).payload["cycle_id"] == again
        deadline = time.monotonic() + 15.0
        while rows(path).get(again) in (None, "running") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert rows(path)[again] == "failed"
        cell.stop()
