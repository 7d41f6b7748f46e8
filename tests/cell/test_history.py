"""The cycle log: written as cycles run, kept across restarts, versioned, summarised."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from robocell.deploy.launcher import temporary_cell_env
from robocell.services.cell.history import (
    HISTORY_ENV,
    MIGRATIONS,
    SCHEMA_VERSION,
    CycleLog,
    HistoryError,
    parse_since,
    percentile,
    summary,
)

PLAN = {"plan_id": "p1", "primitives": ["R", "F'"], "face_turns": ["R"], "predicted_ms": 800.0,
        "search": {"nodes": 5}}


def run(log: CycleLog, cycle_id: str, ok: bool, scanning: float = 1.0) -> None:
    log.begin(cycle_id, "soltvvo-2x2")
    log.stage(cycle_id, {"scanning": scanning})
    log.finish(cycle_id, ok=ok, stages={"scanning": scanning, "executing": 2.0},
               total_s=scanning + 2.0, facelets="UUUURRRR", plan=PLAN,
               failed_stage=None if ok else "executing",
               error=None if ok else "execution stopped", errors=["actuator: jam [fault]"])


def test_a_cycle_is_kept_across_a_restart_with_its_read_plan_and_stages(tmp_path):
    path = tmp_path / "log" / "cycles.sqlite3"
    log = CycleLog(path)
    run(log, "c1", ok=True)
    run(log, "c2", ok=False)
    log.close()
    again = CycleLog(path, readonly=True)
    first, second = again.cycles()
    again.close()
    assert (first.cycle_id, first.result, first.profile) == ("c1", "solved", "soltvvo-2x2")
    assert first.facelets == "UUUURRRR" and first.plan["primitives"] == ["R", "F'"]
    assert "search" not in first.plan  # the log keeps the plan, not the search statistics
    assert first.stages == {"scanning": 1.0, "executing": 2.0}
    assert (second.result, second.failed_stage) == ("failed", "executing")
    assert second.errors == ["actuator: jam [fault]"]
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_cycle_cut_short_by_the_cells_death_is_closed_as_interrupted(tmp_path):
    log = CycleLog(tmp_path / "c.sqlite3")
    log.begin("c1", "six-motor")
    log.stage("c1", {"scanning": 0.5})
    log.close()  # the cell dies here
    restarted = CycleLog(tmp_path / "c.sqlite3")
    assert restarted.close_interrupted() == ["c1"]
    (record,) = restarted.cycles()
    assert record.result == "interrupted" and "scanning" in record.error
    assert restarted.close_interrupted() == []


def test_results_not_seen_back_from_the_broker_stay_unpublished(tmp_path):
    log = CycleLog(tmp_path / "c.sqlite3")
    run(log, "c1", ok=True)
    run(log, "c2", ok=True)
    log.mark_published("c1")
    assert [r.cycle_id for r in log.cycles(unpublished=True)] == ["c2"]


def test_a_log_from_a_newer_robocell_is_refused_and_an_old_one_migrated(tmp_path):
    path = tmp_path / "c.sqlite3"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(HistoryError, match="newer than this robocell"):
        CycleLog(path)
    empty = tmp_path / "old.sqlite3"
    sqlite3.connect(empty).close()  # version 0: no tables yet
    log = CycleLog(empty)
    assert log.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    run(log, "c1", ok=True)
    assert len(log.cycles()) == 1


def test_reading_a_missing_log_says_where_it_looked(tmp_path):
    with pytest.raises(HistoryError, match="no cycle log at .*nothing.sqlite3"):
        CycleLog(tmp_path / "nothing.sqlite3", readonly=True)


def test_the_summary_counts_results_and_interpolates_percentiles(tmp_path):
    log = CycleLog(tmp_path / "c.sqlite3")
    for i in range(10):
        run(log, f"c{i}", ok=i != 3, scanning=float(i))
    stats = summary(log.cycles())
    assert (stats["cycles"], stats["solved"], stats["failed"]) == (10, 9, 1)
    assert stats["success_rate"] == pytest.approx(0.9)
    assert stats["failed_by_stage"] == {"executing": 1}
    assert stats["stages_s"]["scanning"]["p50"] == pytest.approx(4.5)
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.9) == pytest.approx(3.7)
    assert percentile([], 0.5) is None


def test_since_takes_a_duration_or_a_date():
    assert parse_since("2h", now=10_000.0) == 10_000.0 - 7200
    assert parse_since("30m", now=10_000.0) == 10_000.0 - 1800
    assert parse_since("2026-12-01T00:00:00+00:00") == 1_796_083_200.0
    with pytest.raises(HistoryError, match="30m, 2h, 7d"):
        parse_since("yesterday")


def test_the_cell_writes_while_a_reader_reads(tmp_path):
    log = CycleLog(tmp_path / "c.sqlite3")
    reader = CycleLog(tmp_path / "c.sqlite3", readonly=True)
    seen: list[int] = []

    def read() -> None:
        for _ in range(50):
            seen.append(len(reader.cycles()))

    thread = threading.Thread(target=read)
    thread.start()
    for i in range(50):
        run(log, f"c{i}", ok=True)
    thread.join()
    assert seen == sorted(seen) and len(reader.cycles()) == 50


def test_a_temporary_cells_log_is_removed_with_its_folder_when_it_ends() -> None:
    """Tests and benchmarks run cells with their cycle log in a temporary folder of its own;
    nothing of it is left behind (users' cells keep theirs in the data directory)."""
    with temporary_cell_env("soltvvo-2x2", 50.0) as env:
        path = Path(env[HISTORY_ENV])
        assert path.parent.is_dir() and path.parent.name.startswith("robocell-cell-")
        assert path.parent.parent == Path(tempfile.gettempdir())
        log = CycleLog(path)
        run(log, "c1", ok=True)
        log.close()
        assert path.is_file()
    assert not path.parent.exists()


def test_the_log_keeps_the_robot_time_and_summarises_the_prediction_error(tmp_path):
    log = CycleLog(tmp_path / "c.sqlite3")
    for cycle_id, measured in (("c1", 800.0), ("c2", 1000.0), ("c3", None)):
        log.begin(cycle_id, "six-motor")
        log.finish(cycle_id, ok=True, stages={}, total_s=1.0, facelets=None, plan=PLAN,
                   failed_stage=None, error=None, errors=[], measured_ms=measured,
                   primitive_ms=None if measured is None else [measured / 2] * 2)
    first, second, third = log.cycles()
    assert (first.predicted_ms, first.measured_ms, first.primitive_ms) == (800.0, 800.0,
                                                                           [400.0, 400.0])
    assert first.error_pct == 0.0 and second.error_pct == 20.0 and third.error_pct is None
    timing = summary(log.cycles())["prediction"]
    assert timing["n"] == 2 and timing["flagged"] == 1
    assert timing["mean_error_pct"] == 10.0 and timing["measured_ms"] == 900.0


def test_a_version_1_log_gains_the_robot_time_columns(tmp_path):
    path = tmp_path / "v1.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0])
    db.execute("PRAGMA user_version = 1")
    db.execute("INSERT INTO cycles (cycle_id, started_wall) VALUES ('old', 1.0)")
    db.commit()
    db.close()
    (old,) = CycleLog(path).cycles()
    assert old.cycle_id == "old" and old.measured_ms is None and old.error_pct is None


@pytest.mark.parametrize("content", [b"this is not a database\n" * 100, b"\x00" * 4096, b""])
def test_history_on_a_file_that_is_not_a_cycle_log_says_so_and_exits_2(tmp_path, content):
    fake = tmp_path / "notes.sqlite3"
    fake.write_bytes(content)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-m", "robocell", "history", "--db", str(fake)],
                          env=env, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr
    if content:
        assert done.returncode == 2, done.stderr
        assert f"{fake} is not a cycle log" in done.stderr
    else:  # SQLite takes an empty file as an empty database: no schema yet
        assert done.returncode == 2, done.stderr
        assert "schema version 0" in done.stderr
