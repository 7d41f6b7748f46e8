"""The solve cycle: scan -> read -> plan -> execute -> verify, with every stage timed.

`run_cycle` is the whole cycle over a small `CellBus` interface (commands with deadlines,
waiting for a message, the latest value of a latched topic), so the sequence and its error
handling are plain code; `robocell.services.cell.service` supplies the bus. Any stage that fails
stops the cycle, e-stops the robot if it was moving, and reports which stage, why, and
what to do next.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from robocell.errors import RobocellError

STAGES = ("scanning", "solving", "executing", "verifying")


class CellBus(Protocol):
    def call(self, service: str, command: str, args: dict[str, Any], timeout: float) -> Any:
        """Result of a command, or raise robocell.common.bus.CommandFailed."""

    def wait_for(self, topic: str, match: Callable[[dict[str, Any]], bool],
                 timeout: float) -> dict[str, Any] | None:
        """The first payload on ``topic`` (since the cycle began) that ``match``es."""

    def latest(self, topic: str) -> dict[str, Any] | None:
        """The newest payload seen on a latched topic."""

    def status(self, cycle_id: str, stage: str, detail: str = "") -> None:
        """Publish where the cycle is."""

    def errors_since(self, since: float) -> list[dict[str, Any]]:
        """Payloads of the `errors` topic received since ``since`` (time.monotonic())."""

    def stopped(self) -> bool:
        """True once an emergency stop was requested (waits return at once after it)."""

    def alive(self, service: str) -> bool:
        """True while ``service``'s heartbeats are current."""


@dataclass
class CycleTimeouts:
    """Seconds each stage may take at simulation speed 1 (divided by the speed factor)."""

    scan: float = 90.0
    solve: float = 10.0
    execute_margin: float = 30.0
    verify: float = 10.0
    compute: float = 60.0
    """Seconds allowed for computation (image processing, resolution), at any speed."""
    scan_attempts: int = 2
    """Scans tried before the cycle fails: a doubtful reading is rescanned once."""


@dataclass
class CycleResult:
    cycle_id: str
    ok: bool
    stages_s: dict[str, float] = field(default_factory=dict)
    total_s: float = 0.0
    failed_stage: str | None = None
    error: str | None = None
    facelets: str | None = None
    plan: dict[str, Any] | None = None
    verified_by: str | None = None

    def payload(self) -> dict[str, Any]:
        """The `cell.result` message."""
        out: dict[str, Any] = {"cycle_id": self.cycle_id, "ok": self.ok,
                               "stages_s": self.stages_s, "total_s": self.total_s}
        if self.failed_stage:
            out["failed_stage"] = self.failed_stage
        if self.error:
            out["error"] = self.error
        return out


class StageFailed(RobocellError):
    def __init__(self, stage: str, message: str) -> None:
        self.stage = stage
        super().__init__(message)


def run_cycle(bus: CellBus, simulated: bool, speed: float = 1.0,
              timeouts: CycleTimeouts | None = None, cycle_id: str | None = None,
              on_stage: Callable[[str, float], None] | None = None) -> CycleResult:
    """Run one cycle; never raises for a failing stage (the result says what failed)."""
    from robocell.common.bus import CommandFailed

    timeouts = timeouts or CycleTimeouts()
    speed = max(speed, 1e-6)
    cycle_id = cycle_id or uuid.uuid4().hex[:12]
    result = CycleResult(cycle_id, ok=False)
    started = time.monotonic()
    stage = "scanning"
    stage_started = started

    def enter(name: str) -> None:
        nonlocal stage, stage_started
        now = time.monotonic()
        if name != stage:
            result.stages_s[stage] = round(now - stage_started, 4)
            if on_stage:
                on_stage(stage, now - stage_started)
        stage, stage_started = name, now
        bus.status(cycle_id, name)

    def wait_watching(service: str, topic: str, match: Callable[[dict[str, Any]], bool],
                      timeout: float) -> dict[str, Any] | None:
        """Wait for a message, failing at once if ``service`` stops beating or on e-stop."""
        deadline = time.monotonic() + timeout
        while True:
            found = bus.wait_for(topic, match, timeout=min(0.5, max(0.0, deadline -
                                                                    time.monotonic())))
            if found is not None:
                return found
            check_stop()
            if not bus.alive(service):
                raise StageFailed(stage, f"{service} stopped responding (no heartbeat for 3 s) "
                                  f"during {stage}; restart {service} and start a new cycle")
            if time.monotonic() >= deadline:
                return None

    def check_stop() -> None:
        if bus.stopped():
            raise StageFailed(stage, "emergency stop requested; the robot was stopped. "
                              "Check the cell, then rescan before a new cycle")

    def fail_from_errors(stage_name: str, since: float) -> None:
        errors = bus.errors_since(since)
        if errors:
            e = errors[-1]
            action = f"; {e['action']}" if e.get("action") else ""
            raise StageFailed(stage_name, f"{e['service']}: {e['message']} [{e['code']}]"
                              f"{action}")

    def scan_once(scan_id: str) -> tuple[dict[str, Any] | None, str]:
        """Run the scan program once: the cube state read, or None and vision's complaint."""
        started_at = time.monotonic()
        # motion time shrinks with the simulation speed; image processing does not
        scan_budget = timeouts.scan / speed + timeouts.compute
        try:
            bus.call("actuator", "scan", {"scan_id": scan_id}, timeout=scan_budget)
        except CommandFailed as exc:
            if not bus.alive("vision"):
                raise StageFailed("scanning", "vision stopped responding (no heartbeat) while "
                                  f"the robot scanned ({exc}); restart vision and start a new "
                                  "cycle") from None
            raise StageFailed("scanning", f"actuator could not scan: {exc}") from None
        deadline = time.monotonic() + timeouts.compute
        while True:
            state = wait_watching("vision", "vision.cube_state",
                                  lambda p: p.get("scan_id") == scan_id, 0.25)
            if state is not None:
                return state, ""
            for e in bus.errors_since(started_at):
                if e.get("service") == "vision" and (e.get("detail") or {}).get(
                        "scan_id") == scan_id:
                    action = f"; {e['action']}" if e.get("action") else ""
                    return None, f"vision: {e['message']} [{e['code']}]{action}"
            if time.monotonic() >= deadline:
                return None, ("vision published no cube state for this scan; check the vision "
                              "service and the camera")

    try:
        enter("scanning")
        state = None
        for attempt in range(1, timeouts.scan_attempts + 1):
            scan_id = f"{cycle_id}-scan{attempt}"
            state, complaint = scan_once(scan_id)
            if state is not None:
                break
            if attempt < timeouts.scan_attempts:
                bus.status(cycle_id, "scanning", f"rescanning: {complaint}")
            else:
                raise StageFailed("scanning", f"{complaint} (after {attempt} scans)")
        assert state is not None
        result.facelets = state["facelets"]

        enter("solving")
        try:
            # published too (latched) for watchers; the plan itself goes to the actuator
            plan = bus.call("solver", "solve", {"facelets": state["facelets"],
                                                "scan_id": state["scan_id"], "publish": True},
                            timeout=timeouts.solve)
        except CommandFailed as exc:
            raise StageFailed("solving", f"solver: {exc}") from None
        result.plan = plan
        check_stop()

        enter("executing")
        budget = (plan["predicted_ms"] / 1000.0 / speed * 3 + timeouts.execute_margin / speed
                  + timeouts.compute)
        exec_started = time.monotonic()
        try:
            bus.call("actuator", "execute", {"plan": plan}, timeout=10.0)
        except CommandFailed as exc:
            raise StageFailed("executing", f"actuator refused the plan: {exc}") from None
        done = wait_watching("actuator", "actuator.result",
                             lambda p: p.get("plan_id") == plan["plan_id"], budget)
        check_stop()
        if done is None:
            fail_from_errors("executing", exec_started)
            raise StageFailed("executing", f"no execution result within {budget:.0f} s; "
                              "check the actuator and the serial line")
        if not done["ok"]:
            known = "" if done.get("cube_state_known", True) else " The cube state is unknown: " \
                                                                 "rescan before the next cycle."
            raise StageFailed("executing", f"execution stopped after {done['executed']} of "
                              f"{done['n_steps']} primitives: {done.get('error')}.{known}")

        enter("verifying")
        if simulated:
            deadline = time.monotonic() + timeouts.verify / speed
            twin = bus.latest("sim.twin_state")
            while (twin is None or not twin["solved"]) and time.monotonic() < deadline:
                twin = bus.wait_for("sim.twin_state", lambda p: p["solved"], timeout=0.2) \
                    or bus.latest("sim.twin_state")
            if twin is None or not twin["solved"]:
                fault = f" (twin fault: {twin['fault']})" if twin and twin.get("fault") else ""
                raise StageFailed("verifying", "the plan ran but the twin cube is not "
                                  f"solved{fault}; the motor mapping or the scan is wrong")
            result.verified_by = "twin"
        else:
            result.verified_by = "execution"
        result.ok = True
        enter("done")
    except StageFailed as exc:
        result.failed_stage = exc.stage
        result.error = str(exc)
        if exc.stage in ("scanning", "executing"):
            try:
                bus.call("actuator", "estop", {}, timeout=2.0)
            except CommandFailed:
                pass
        enter("failed")
    result.total_s = round(time.monotonic() - started, 4)
    return result
