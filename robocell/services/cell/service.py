"""`robocell cell`: the cycle coordinator on the bus (commands `cell.start`, `cell.recover`,
`cell.scramble`, `cell.estop`, `cell.history`).

The bus adapter around `robocell.services.cell.cycle.run_cycle`: it keeps the recent messages of
the topics a cycle waits on, runs one cycle at a time in its own thread (a second `start`
while one runs is answered ``busy``), writes every cycle to the cycle log
(`robocell.services.cell.history`) and publishes `cell.status`, `cell.result` and
`cell.history` (latched).

A result counts as published only once it has come back through the broker: a result
finished while the broker is down stays marked in the log and is published again, each
heartbeat period, until it is seen. The result is published before it is written to the log:
a log another process holds locked delays its row (retried with backoff, then again each
period until written), never the result, and never ends the cycle thread. After a firmware
reboot, or a motion stopped part way, the next cycle homes the robot before it scans (the
recovery path); `cell.recover` asks for that path at once.
"""

from __future__ import annotations

import collections
import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from robocell.common import config
from robocell.common.bus import Busy, CommandFailed
from robocell.common.bus.liveness import BrokerPresence
from robocell.common.malloc import freeze_startup_objects
from robocell.services.cell.cycle import CycleResult, CycleTimeouts, run_cycle
from robocell.services.cell.history import (
    CycleLog,
    CycleRecord,
    HistoryError,
    LogBusy,
    prediction_flag,
    summary,
)

WATCHED_TOPICS = ("vision.cube_state", "actuator.result", "errors", "solver.plan",
                  "cell.result")
HISTORY = 64
PUBLISHED_HISTORY = 20
"""Cycles carried by the latched `cell.history` topic (the dashboard's list)."""
REPUBLISH_PERIOD_S = 1.0
REPUBLISH_AFTER_S = 2.0
"""A result not seen back from the broker this long after it was sent is sent again."""
FINISH_WAIT_S = 15.0
"""How long the cycle thread retries writing a finished cycle's row to a locked log before
handing it to the republishing thread (which tries again each period until it is written)."""
HOMING_CODES = ("firmware_reset", "cube_state_unknown", "estop", "fault")
"""Codes on the `errors` topic from the actuator after which the robot must be homed."""


class NodeCellBus:
    """`CellBus` over a `Node`: remembers recent messages so no reply can slip past."""

    def __init__(self, node: Any) -> None:
        self.node = node
        self._messages: dict[str, collections.deque] = {
            t: collections.deque(maxlen=HISTORY) for t in WATCHED_TOPICS}
        self._changed = threading.Condition()
        self.stop_requested = threading.Event()
        self.listeners: list[Callable[[str, dict[str, Any]], None]] = []
        self.presence = BrokerPresence()
        for topic in WATCHED_TOPICS:
            node.subscribe(topic, self._on_message)
        node.subscribe("heartbeat", self._on_heartbeat)

    def _on_message(self, env: Any) -> None:
        with self._changed:
            self._messages[env.topic].append((time.monotonic(), env.payload))
            self._changed.notify_all()
        for listener in self.listeners:
            listener(env.topic, env.payload)

    def call(self, service: str, command: str, args: dict[str, Any], timeout: float) -> Any:
        return self.node.call(service, command, args, timeout=timeout)

    def wait_for(self, topic: str, match: Callable[[dict[str, Any]], bool],
                 timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for _, payload in reversed(self._messages[topic]):
                    if match(payload):
                        return payload
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.stop_requested.is_set():
                    return None
                self._changed.wait(min(remaining, 0.5))

    def latest(self, topic: str) -> dict[str, Any] | None:
        with self._changed:
            return self._messages[topic][-1][1] if self._messages[topic] else None

    def errors_since(self, since: float) -> list[dict[str, Any]]:
        with self._changed:
            return [p for t, p in self._messages["errors"] if t >= since]

    def stopped(self) -> bool:
        return self.stop_requested.is_set()

    def alive(self, service: str) -> bool:
        return self.node.liveness.is_alive(service)

    def broker_up_s(self) -> float:
        return self.presence.broker_up_s()

    def gone(self, service: str) -> bool:
        return self.presence.gone(self.node.liveness.peers().get(service))

    def _on_heartbeat(self, env: Any) -> None:
        """Our own heartbeat, back through the broker: the broker is there."""
        if env.payload["service"] == self.node.name and env.payload["pid"] == os.getpid():
            self.presence.on_own_heartbeat()

    def status(self, cycle_id: str, stage: str, detail: str = "") -> None:
        self.node.publish("cell.status", {"cycle_id": cycle_id, "stage": stage,
                                          "detail": detail})


class CellService:
    """Runs cycles on request, one at a time, and remembers every one."""

    def __init__(self, node: Any, speed: float, log: CycleLog | None = None) -> None:
        self.node = node
        self.bus = NodeCellBus(node)
        self.speed = speed
        self.log = log if log is not None else CycleLog()
        self.profile = config.profile_name()
        self.rolling = config.switch(config.ROLLING_ENV)
        """Search a 3x3 plan's rest again while the robot executes it (`rolling`)."""
        self._running: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.cycles = 0
        self.failures = 0
        self.needs_homing = False
        """Set when the robot's position is unknown (firmware reboot, motion stopped part
        way): the next cycle homes first."""
        self._writing = False
        """The cycle thread is writing its finished cycle's row (the cycle itself ended)."""
        self._unlogged: dict[str, dict[str, Any]] = {}
        """cycle id -> the row of a finished cycle not yet written (the log was locked)"""
        self._seen_back: set[str] = set()
        """cycle ids whose result came back through the broker, to mark in the log"""
        self._unconfirmed: dict[str, tuple[dict[str, Any], float]] = {}
        """cycle id -> (cell.result payload not yet seen back from the broker, when it was
        last sent)"""
        self.bus.listeners.append(self._on_message)

    def start(self) -> None:
        interrupted = self.log.close_interrupted()
        for record in self.log.cycles(unpublished=True):
            self._unconfirmed[record.cycle_id] = (_result_payload(record), 0.0)
        self.node.serve("start", self.on_start, concurrency=4)
        self.node.serve("recover", self.on_recover, concurrency=4)
        self.node.serve("scramble", self.on_scramble, concurrency=1)
        self.node.serve("estop", self.on_estop, concurrency=8)
        self.node.serve("history", self.on_history, concurrency=4)
        self.node.publish("cell.status", {"cycle_id": "", "stage": "idle"})
        self.publish_history()
        threading.Thread(target=self._republish, name="cell-republish", daemon=True).start()
        freeze_startup_objects()
        self.node.set_state("ready", cycles=0, failures=0, history=str(self.log.path),
                            interrupted=len(interrupted))

    def stop(self) -> None:
        self._stop.set()

    # --- commands -------------------------------------------------------------------------
    def on_start(self, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return self._begin(home_first=None)

    def on_recover(self, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        """The recovery path: e-stop, clear, home, rescan, plan, solve (one cycle)."""
        return self._begin(home_first=True)

    def _begin(self, home_first: bool | None) -> dict[str, Any]:
        with self._lock:
            if self._running is not None and self._running.is_alive():
                if self._writing:
                    raise Busy(f"cell: the last cycle ended (its cell.result is out) but the "
                               f"cycle log {self.log.path} is locked by another process and "
                               "its row is still being written; start again once it is free")
                raise Busy("cell: a cycle is already running; wait for its cell.result")
            cycle_id = uuid.uuid4().hex[:12]
            home = self.needs_homing if home_first is None else home_first
            try:
                self.log.begin(cycle_id, self.profile, homed=home)
            except LogBusy as exc:
                raise Busy(f"cell: {exc}; no cycle was started: start again once it is "
                           "free") from None
            except HistoryError as exc:
                raise CommandFailed("failed", f"cell: {exc}; no cycle was started") from None
            self.bus.stop_requested.clear()
            self._running = threading.Thread(target=self._run, args=(cycle_id, home),
                                             daemon=True)
            self._running.start()
        return {"cycle_id": cycle_id, "homing": home}

    def on_history(self, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        records = self.log.cycles(since=args.get("since"))
        shown = records[-args["limit"]:] if args.get("limit") else records
        return {"summary": summary(records), "cycles": [r.as_dict() for r in shown],
                "path": str(self.log.path)}

    @property
    def simulated(self) -> bool:
        """A simulated cell is one whose firmware simulator has been alive on the bus: once
        seen, always (a heartbeat missed, or a forger's frames under its name, must never
        turn the twin's verification into trusting the execution alone)."""
        if not getattr(self, "_seen_simulator", False):
            alive = "firmware-sim" in self.node.alive()
            if not alive:  # asked too: its heartbeat may be late, its name forged
                try:
                    self.node.call("firmware-sim", "ping", {}, timeout=0.5)
                    alive = True
                except CommandFailed:
                    pass
            self._seen_simulator = alive
        return self._seen_simulator

    def _write_finished(self, wait_s: float) -> None:
        """Write the rows of finished cycles still unwritten, then mark the results seen
        back; what the locked log refuses stays for the next try (said on `errors`)."""
        for cycle_id, row in list(self._unlogged.items()):
            try:
                self.log.finish(cycle_id, wait_s=wait_s, **row)
            except HistoryError as exc:
                self._log_trouble(exc)
                return
            self._unlogged.pop(cycle_id, None)
        for cycle_id in list(self._seen_back):
            if cycle_id in self._unlogged:
                continue
            try:
                self.log.mark_published(cycle_id, wait_s=wait_s)
            except HistoryError as exc:
                self._log_trouble(exc)
                return
            self._seen_back.discard(cycle_id)

    def _log_trouble(self, exc: HistoryError) -> None:
        try:
            self.node.publish("errors", {
                "service": "cell", "stage": "cycle log", "code": "log_busy",
                "message": f"{exc}; written again each second until it is",
                "action": "free the cycle log"})
        except Exception:  # noqa: BLE001 - reporting must never end the thread that reports
            pass

    def _run(self, cycle_id: str, home_first: bool) -> None:
        self.node.set_state("busy", cycle=cycle_id)

        def on_stage(stage: str, seconds: float) -> None:
            try:
                self.log.stage(cycle_id, dict(cycle.stages_s))
            except HistoryError:
                pass  # the stages are written again with the result

        cycle = CycleResult(cycle_id, ok=False)  # the stages so far, for on_stage
        try:
            result = run_cycle(self.bus, self.simulated, self.speed, CycleTimeouts(),
                               cycle_id=cycle_id, on_stage=on_stage, home_first=home_first,
                               result=cycle, rolling=self.rolling)
        except Exception as exc:  # noqa: BLE001 - a bug in a cycle must not kill the cell
            result = cycle
            result.failed_stage = result.failed_stage or "cycle"
            result.error = f"internal error: {type(exc).__name__}: {exc}; report this bug"
        self.cycles += 1
        self.failures += 0 if result.ok else 1
        if result.homed or (home_first and result.ok):
            self.needs_homing = False
        if not result.ok and result.failed_stage in ("scanning", "executing", "homing"):
            self.needs_homing = True  # a motion stopped part way: the position is unknown
        payload = result.payload()
        if result.homed:
            payload["homed"] = True
        self._unconfirmed[cycle_id] = (payload, time.monotonic())
        self.node.publish("cell.result", payload)
        if not result.ok:
            self.node.publish("errors", {
                "service": "cell", "stage": result.failed_stage or "cycle",
                "code": "cycle_failed", "message": result.error or "cycle failed",
                "action": "fix the named stage, then start a new cycle"})
        self._unlogged[cycle_id] = {
            "ok": result.ok, "stages": result.stages_s, "total_s": result.total_s,
            "facelets": result.facelets, "plan": result.plan,
            "failed_stage": result.failed_stage, "error": result.error,
            "errors": result.errors, "homed": result.homed,
            "measured_ms": result.measured_ms, "primitive_ms": result.primitive_ms}
        self._writing = True
        try:
            self._write_finished(FINISH_WAIT_S)
        finally:
            self._writing = False
        self._flag_prediction(result)
        self.publish_history()
        self.node.set_state("ready", cycles=self.cycles, failures=self.failures,
                            needs_homing=self.needs_homing)

    def _flag_prediction(self, result: CycleResult) -> None:
        """On `errors` when the robot's measured time is off the plan's prediction by more
        than `history.ERROR_FLAG`: the profile no longer describes this robot."""
        flag = prediction_flag(result.cycle_id,
                               None if result.plan is None else result.plan.get("predicted_ms"),
                               result.measured_ms)
        if flag is not None:
            self.node.publish("errors", flag)

    def on_estop(self, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        """Stop the robot at once and abandon the running cycle (it reports `failed`)."""
        self.bus.stop_requested.set()
        try:
            self.node.call("actuator", "estop", {}, timeout=min(1.0, ctx.remaining()))
            robot = "stopped"
        except CommandFailed as exc:
            robot = f"not confirmed: {exc}"
        return {"cycle_running": bool(self._running and self._running.is_alive()),
                "actuator": robot}

    def on_scramble(self, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        """Simulation only: hand the twin to the firmware simulator's scramble."""
        try:
            return self.node.call("firmware-sim", "scramble", dict(args),
                                  timeout=max(1.0, ctx.remaining() - 0.1))
        except CommandFailed as exc:
            if exc.code == "unavailable":
                raise CommandFailed("failed", "cell.scramble only exists in simulation (no "
                                    "firmware simulator is running): scramble the real cube "
                                    "by hand and start a cycle") from None
            raise

    # --- what comes back ------------------------------------------------------------------
    def _on_message(self, topic: str, payload: dict[str, Any]) -> None:
        """On the node's I/O thread: results seen back, and the actuator's word that the
        robot's position is lost."""
        if topic == "cell.result":
            if self._unconfirmed.pop(payload.get("cycle_id", ""), None) is not None:
                self._seen_back.add(payload["cycle_id"])  # marked off this thread
        elif topic == "errors" and payload.get("service") == "actuator" and \
                payload.get("code") in HOMING_CODES:
            self.needs_homing = True

    def _republish(self) -> None:
        """Publish again, oldest first, the results the broker has not echoed back (it was
        down when they finished); the loop ends when the service stops."""
        while not self._stop.wait(REPUBLISH_PERIOD_S):
            if not (self._running is not None and self._running.is_alive()):
                self._write_finished(0.0)
            now = time.monotonic()
            pending = [(cycle_id, payload) for cycle_id, (payload, sent) in
                       list(self._unconfirmed.items()) if now - sent >= REPUBLISH_AFTER_S]
            if not pending or (self._running is not None and self._running.is_alive()):
                continue
            for cycle_id, payload in pending:
                if cycle_id in self._unconfirmed:
                    self._unconfirmed[cycle_id] = (payload, now)
                    self.node.publish("cell.result", payload)
            self.publish_history()

    def publish_history(self) -> None:
        try:
            records = self.log.cycles()
        except HistoryError:
            return  # the log is unreadable now; published again after the next write
        self.node.publish("cell.history", {
            "cycles": [_history_entry(r) for r in records[-PUBLISHED_HISTORY:]],
            "summary": {k: v for k, v in summary(records).items()
                        if k in ("cycles", "solved", "failed", "success_rate")}})


def _result_payload(record: CycleRecord) -> dict[str, Any]:
    """The `cell.result` message of a logged cycle (to publish it again)."""
    out: dict[str, Any] = {"cycle_id": record.cycle_id, "ok": record.result == "solved",
                           "stages_s": record.stages, "total_s": record.total_s or 0.0}
    if record.failed_stage:
        out["failed_stage"] = record.failed_stage
    if record.error:
        out["error"] = record.error
    if record.homed:
        out["homed"] = True
    return out


def _history_entry(record: CycleRecord) -> dict[str, Any]:
    return {"cycle_id": record.cycle_id, "started_wall": record.started_wall,
            "result": record.result, "total_s": record.total_s, "stages_s": record.stages,
            "failed_stage": record.failed_stage, "error": record.error,
            "profile": record.profile, "predicted_ms": record.predicted_ms,
            "measured_ms": record.measured_ms}
