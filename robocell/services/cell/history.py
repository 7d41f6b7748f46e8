"""The cycle log: every cycle the cell ran, kept in an embedded SQLite database across restarts.

One row per cycle (id, start, profile, the cube read, the plan, each stage's duration, the
result, the errors seen), written when the cycle starts and again as it ends, so a cycle cut
short by the cell's own death is found at the next start and closed as ``interrupted``. A
result not yet seen back from the broker stays marked unpublished until it is (see the
cell service). WAL mode: `robocell history` reads while the cell writes.

Another process may hold the file locked (a backup, an operator's `sqlite3` shell): every
write is retried with backoff (BACKOFF_S doubling to MAX_BACKOFF_S) for as long as its caller
allows, then raises LogBusy, so a caller can answer at once and write again later; nothing
waits on SQLite's own busy handler for more than BUSY_TIMEOUT_S at a time.

The schema is versioned with SQLite's ``user_version``: opening applies the migrations a
database lacks, in order, and refuses one written by a newer robocell.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robocell.common.paths import HISTORY_ENV, HISTORY_FILE_NAME, history_path
from robocell.errors import RobocellError

DB_NAME = HISTORY_FILE_NAME

MIGRATIONS: tuple[str, ...] = (
    # 1: the cycle table
    """
    CREATE TABLE cycles (
        cycle_id      TEXT PRIMARY KEY,
        started_wall  REAL NOT NULL,
        profile       TEXT,
        homed         INTEGER NOT NULL DEFAULT 0,
        facelets      TEXT,
        plan          TEXT,
        stages        TEXT NOT NULL DEFAULT '{}',
        total_s       REAL,
        result        TEXT NOT NULL DEFAULT 'running',
        failed_stage  TEXT,
        error         TEXT,
        errors        TEXT NOT NULL DEFAULT '[]',
        published     INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX cycles_started ON cycles (started_wall);
    """,
    # 2: the robot's time, predicted by the plan and measured on the robot's clock
    """
    ALTER TABLE cycles ADD COLUMN predicted_ms REAL;
    ALTER TABLE cycles ADD COLUMN measured_ms REAL;
    ALTER TABLE cycles ADD COLUMN primitive_ms TEXT;
    """,
)
ERROR_FLAG = 0.10
"""A cycle whose measured robot time differs from the prediction by more than this (a
fraction of the measured time) is flagged: the profile no longer matches the robot."""
SCHEMA_VERSION = len(MIGRATIONS)
RESULTS = ("running", "solved", "failed", "interrupted")
BUSY_TIMEOUT_S = 0.1
"""SQLite's own wait for a lock, per attempt (the retries are ours, with backoff)."""
BACKOFF_S = 0.05
MAX_BACKOFF_S = 1.0
BEGIN_WAIT_S = 2.0
"""How long a cycle's first row may wait for a locked log (a start is answered in time)."""


class HistoryError(RobocellError):
    """The cycle log cannot be opened or read (the message says which file and why)."""


class LogBusy(HistoryError):
    """The cycle log stayed locked (or busy) by another process for as long as was allowed."""


def default_path() -> Path:
    """The cycle log's path: `robocell.common.paths.history_path`."""
    return history_path()


def migrate(db: sqlite3.Connection, path: Path) -> int:
    """Bring ``db`` to SCHEMA_VERSION; the version it had. HistoryError if it is newer."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise HistoryError(f"cycle log {path} has schema version {version}, newer than this "
                           f"robocell's {SCHEMA_VERSION}: upgrade robocell, or point "
                           f"{HISTORY_ENV} at another file")
    for number in range(version, SCHEMA_VERSION):
        with db:
            db.executescript(MIGRATIONS[number])
            db.execute(f"PRAGMA user_version = {number + 1}")
    return version


@dataclass
class CycleRecord:
    """One row of the cycle log."""

    cycle_id: str
    started_wall: float
    profile: str | None
    homed: bool
    facelets: str | None
    plan: dict[str, Any] | None
    stages: dict[str, float]
    total_s: float | None
    result: str
    failed_stage: str | None
    error: str | None
    errors: list[str]
    published: bool
    predicted_ms: float | None = None
    measured_ms: float | None = None
    primitive_ms: list[float] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {**vars(self), "error_pct": self.error_pct}

    @property
    def error_pct(self) -> float | None:
        """The prediction's error in percent of the measured robot time (+: slower than
        predicted); None unless both are known."""
        return prediction_error_pct(self.predicted_ms, self.measured_ms)


def prediction_error_pct(predicted_ms: float | None, measured_ms: float | None) -> float | None:
    """(measured - predicted) / measured in percent; None unless both are known."""
    if predicted_ms is None or not measured_ms:
        return None
    return 100.0 * (measured_ms - predicted_ms) / measured_ms


class CycleLog:
    """The cycle log at ``path`` (created with its directory when missing)."""

    def __init__(self, path: Path | None = None, readonly: bool = False) -> None:
        self.path = Path(path) if path is not None else default_path()
        self._lock = threading.Lock()
        try:
            if readonly:
                if not self.path.exists():
                    raise HistoryError(f"no cycle log at {self.path}: no cycle has run with "
                                       f"this log yet (set {HISTORY_ENV} or --db to the "
                                       "cell's)")
                self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True,
                                          check_same_thread=False, timeout=5.0)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(self.path, check_same_thread=False,
                                          timeout=BUSY_TIMEOUT_S)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                migrate(self.db, self.path)
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.Error as exc:
            if "not a database" in str(exc):
                raise HistoryError(f"{self.path} is not a cycle log (not an SQLite file): "
                                   f"point --db or {HISTORY_ENV} at the cell's log") from None
            raise HistoryError(f"cannot open the cycle log {self.path}: {exc}; check the "
                               f"directory is writable, or set {HISTORY_ENV}") from None
        if readonly:
            if version != SCHEMA_VERSION:
                raise HistoryError(f"cycle log {self.path} has schema version {version}, "
                                   f"this robocell reads {SCHEMA_VERSION}: run the cell once "
                                   "to migrate it, or upgrade robocell")

    def close(self) -> None:
        self.db.close()

    # --- writing ------------------------------------------------------------------------
    def _write(self, sql: str, params: tuple, wait_s: float) -> None:
        """Run one write, retried with backoff while the file is locked or busy, for up to
        ``wait_s``; LogBusy after that, HistoryError for any other failure."""
        deadline = time.monotonic() + wait_s
        backoff = BACKOFF_S
        while True:
            try:
                with self._lock, self.db:
                    self.db.execute(sql, params)
                return
            except sqlite3.OperationalError as exc:
                text = str(exc)
                if "locked" not in text and "busy" not in text:
                    raise HistoryError(f"cannot write the cycle log {self.path}: {exc}; check "
                                       "the disk and the file's permissions") from None
                if time.monotonic() + backoff > deadline:
                    raise LogBusy(f"the cycle log {self.path} is locked by another process "
                                  f"({exc}, for over {wait_s:g} s); close whatever holds it "
                                  "(a sqlite3 shell, a backup)") from None
            except sqlite3.Error as exc:
                raise HistoryError(f"cannot write the cycle log {self.path}: {exc}; check the "
                                   "disk and the file's permissions") from None
            time.sleep(backoff)
            backoff = min(MAX_BACKOFF_S, backoff * 2)

    def begin(self, cycle_id: str, profile: str | None, homed: bool = False,
              wait_s: float = BEGIN_WAIT_S) -> None:
        self._write("INSERT INTO cycles (cycle_id, started_wall, profile, homed) "
                    "VALUES (?, ?, ?, ?)", (cycle_id, time.time(), profile, int(homed)), wait_s)

    def stage(self, cycle_id: str, stages: dict[str, float], wait_s: float = 0.0) -> None:
        """The durations of the stages finished so far (a cycle cut short keeps them)."""
        self._write("UPDATE cycles SET stages = ? WHERE cycle_id = ?",
                    (json.dumps(stages), cycle_id), wait_s)

    def finish(self, cycle_id: str, *, ok: bool, stages: dict[str, float], total_s: float,
               facelets: str | None, plan: dict[str, Any] | None, failed_stage: str | None,
               error: str | None, errors: Iterable[str], homed: bool = False,
               wait_s: float = 60.0, measured_ms: float | None = None,
               primitive_ms: list[float] | None = None) -> None:
        """The cycle's end: its result, stages and the robot time (the plan's
        ``predicted_ms``, the robot's ``measured_ms`` and ``primitive_ms``)."""
        kept_plan = None if plan is None else {
            k: plan.get(k) for k in ("plan_id", "primitives", "face_turns", "predicted_ms",
                                     "amendments", "found_predicted_ms", "rolling")
            if k in plan or k in ("plan_id", "primitives", "face_turns", "predicted_ms")}
        self._write(
            "UPDATE cycles SET result = ?, stages = ?, total_s = ?, facelets = ?, plan = ?,"
            " failed_stage = ?, error = ?, errors = ?, homed = ?, predicted_ms = ?,"
            " measured_ms = ?, primitive_ms = ? WHERE cycle_id = ?",
            ("solved" if ok else "failed", json.dumps(stages), total_s, facelets,
             None if kept_plan is None else json.dumps(kept_plan), failed_stage, error,
             json.dumps(list(errors)), int(homed),
             None if plan is None else plan.get("predicted_ms"), measured_ms,
             None if primitive_ms is None else json.dumps(primitive_ms), cycle_id), wait_s)

    def mark_published(self, cycle_id: str, wait_s: float = 5.0) -> None:
        self._write("UPDATE cycles SET published = 1 WHERE cycle_id = ?", (cycle_id,), wait_s)

    def close_interrupted(self) -> list[str]:
        """Cycles left ``running`` by a cell that died: closed as ``interrupted``; their ids."""
        with self._lock, self.db:
            rows = self.db.execute("SELECT cycle_id, stages FROM cycles WHERE result = 'running'"
                                   ).fetchall()
            for cycle_id, stages in rows:
                done = list(json.loads(stages))
                self.db.execute(
                    "UPDATE cycles SET result = 'interrupted', error = ? WHERE cycle_id = ?",
                    ("the cell process ended during the cycle (after stages: "
                     f"{', '.join(done) or 'none'}); it was not finished", cycle_id))
        return [r[0] for r in rows]

    # --- reading ------------------------------------------------------------------------
    def cycles(self, since: float | None = None, limit: int | None = None,
               unpublished: bool = False) -> list[CycleRecord]:
        """Cycles started at ``since`` (wall time) or later, oldest first (the newest
        ``limit`` of them)."""
        query = "SELECT * FROM cycles WHERE started_wall >= ?"
        if unpublished:
            query += " AND published = 0 AND result IN ('solved', 'failed')"
        query += " ORDER BY started_wall DESC, rowid DESC"
        if limit is not None:
            query += f" LIMIT {int(limit)}"
        with self._lock:
            try:
                rows = self.db.execute(query, (since or 0.0,)).fetchall()
            except sqlite3.Error as exc:
                raise HistoryError(f"cannot read the cycle log {self.path}: {exc}") from None
        return [_record(row) for row in reversed(rows)]


def _record(row: tuple) -> CycleRecord:
    (cycle_id, started, profile, homed, facelets, plan, stages, total_s, result, failed_stage,
     error, errors, published, predicted_ms, measured_ms, primitive_ms) = row
    return CycleRecord(cycle_id, started, profile, bool(homed), facelets,
                       None if plan is None else json.loads(plan), json.loads(stages), total_s,
                       result, failed_stage, error, json.loads(errors), bool(published),
                       predicted_ms, measured_ms,
                       None if primitive_ms is None else json.loads(primitive_ms))


# --- summary statistics ------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float | None:
    """Linear interpolation between order statistics (numpy's default); None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(records: list[CycleRecord]) -> dict[str, Any]:
    """Cycles, results, success rate, and p50/p90/p99 of cycle and stage times (seconds)."""
    finished = [r for r in records if r.result != "running"]
    solved = [r for r in finished if r.result == "solved"]
    stage_times: dict[str, list[float]] = {}
    for r in finished:
        for stage, seconds in r.stages.items():
            stage_times.setdefault(stage, []).append(seconds)
    failed_by_stage: dict[str, int] = {}
    for r in finished:
        if r.result != "solved":
            key = r.failed_stage or r.result
            failed_by_stage[key] = failed_by_stage.get(key, 0) + 1

    def spread(values: list[float]) -> dict[str, float | None]:
        return {"n": len(values), "p50": percentile(values, 0.5),
                "p90": percentile(values, 0.9), "p99": percentile(values, 0.99)}

    timed = [r for r in finished if r.error_pct is not None]
    errors = [abs(r.error_pct) for r in timed]  # type: ignore[arg-type]
    return {"cycles": len(records), "finished": len(finished), "solved": len(solved),
            "prediction": {"n": len(timed),
                           "predicted_ms": _mean([r.predicted_ms for r in timed]),
                           "measured_ms": _mean([r.measured_ms for r in timed]),
                           "mean_error_pct": _mean([r.error_pct for r in timed]),
                           "abs_error_pct": spread(errors),
                           "flagged": sum(e > 100 * ERROR_FLAG for e in errors)},
            "failed": len(finished) - len(solved),
            "running": len(records) - len(finished),
            "success_rate": len(solved) / len(finished) if finished else None,
            "failed_by_stage": failed_by_stage,
            "cycle_s": spread([r.total_s for r in solved if r.total_s is not None]),
            "stages_s": {stage: spread(v) for stage, v in stage_times.items()}}


def _mean(values: list) -> float | None:
    return sum(values) / len(values) if values else None


_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: float | None = None) -> float:
    """Wall time from ``30m``, ``2h``, ``7d`` (that long ago) or an ISO date/time."""
    now = time.time() if now is None else now
    match = _RELATIVE.match(text.strip())
    if match:
        return now - float(match.group(1)) * _UNIT_S[match.group(2)]
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise HistoryError(f"--since {text!r}: give a duration back from now (30m, 2h, 7d) "
                           "or a date/time such as 2026-12-01 or 2026-12-01T09:30") from None
    if when.tzinfo is None:
        when = when.astimezone()
    return when.timestamp()
