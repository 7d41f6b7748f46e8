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

from robocell.common.bus import CommandFailed
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
    return _Cycle(bus, simulated, max(speed, 1e-6), timeouts or CycleTimeouts(),
                  cycle_id or uuid.uuid4().hex[:12], on_stage).run()


class _Cycle:
    """One run of the cycle: the stage it is in, the clock of each stage, the result."""

    def __init__(self, bus: CellBus, simulated: bool, speed: float, timeouts: CycleTimeouts,
                 cycle_id: str, on_stage: Callable[[str, float], None] | None) -> None:
        self.bus = bus
        self.simulated = simulated
        self.speed = speed
        self.timeouts = timeouts
        self.cycle_id = cycle_id
        self.on_stage = on_stage
        self.result = CycleResult(cycle_id, ok=False)
        self.started = time.monotonic()
        self.stage = "scanning"
        self.stage_started = self.started

    def run(self) -> CycleResult:
        result = self.result
        try:
            self.enter("scanning")
            state = self.scan()
            result.facelets = state["facelets"]
            self.enter("solving")
            plan = self.solve(state)
            result.plan = plan
            self.check_stop()
            self.enter("executing")
            self.execute(plan)
            self.enter("verifying")
            result.verified_by = self.verify()
            result.ok = True
            self.enter("done")
        except StageFailed as exc:
            result.failed_stage = exc.stage
            result.error = str(exc)
            if exc.stage in ("scanning", "executing"):
                try:
                    self.bus.call("actuator", "estop", {}, timeout=2.0)
                except CommandFailed:
                    pass  # the failure is reported already; the e-stop was a precaution
            self.enter("failed")
        result.total_s = round(time.monotonic() - self.started, 4)
        return result

    def enter(self, name: str) -> None:
        now = time.monotonic()
        if name != self.stage:
            self.result.stages_s[self.stage] = round(now - self.stage_started, 4)
            if self.on_stage:
                self.on_stage(self.stage, now - self.stage_started)
        self.stage, self.stage_started = name, now
        self.bus.status(self.cycle_id, name)

    def wait_watching(self, service: str, topic: str, match: Callable[[dict[str, Any]], bool],
                      timeout: float) -> dict[str, Any] | None:
        """Wait for a message, failing at once if ``service`` stops beating or on e-stop."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.bus.wait_for(topic, match, timeout=min(0.5, max(0.0, deadline -
                                                                         time.monotonic())))
            if found is not None:
                return found
            self.check_stop()
            if not self.bus.alive(service):
                raise StageFailed(self.stage, f"{service} stopped responding (no heartbeat for "
                                  f"3 s) during {self.stage}; restart {service} and start a "
                                  "new cycle")
            if time.monotonic() >= deadline:
                return None

    def check_stop(self) -> None:
        if self.bus.stopped():
            raise StageFailed(self.stage, "emergency stop requested; the robot was stopped. "
                              "Check the cell, then rescan before a new cycle")

    def fail_from_errors(self, stage_name: str, since: float) -> None:
        errors = self.bus.errors_since(since)
        if errors:
            e = errors[-1]
            action = f"; {e['action']}" if e.get("action") else ""
            raise StageFailed(stage_name, f"{e['service']}: {e['message']} [{e['code']}]"
                              f"{action}")

    def scan(self) -> dict[str, Any]:
        """The cube state read, after up to ``scan_attempts`` scans."""
        attempts = self.timeouts.scan_attempts
        complaint = "no scan was attempted (scan_attempts is 0)"
        for attempt in range(1, attempts + 1):
            state, complaint = self.scan_once(f"{self.cycle_id}-scan{attempt}")
            if state is not None:
                return state
            if attempt < attempts:
                self.bus.status(self.cycle_id, "scanning", f"rescanning: {complaint}")
        raise StageFailed("scanning", f"{complaint} (after {attempts} scans)")

    def scan_once(self, scan_id: str) -> tuple[dict[str, Any] | None, str]:
        """Run the scan program once: the cube state read, or None and vision's complaint."""
        bus, timeouts = self.bus, self.timeouts
        started_at = time.monotonic()
        # motion time shrinks with the simulation speed; image processing does not
        scan_budget = timeouts.scan / self.speed + timeouts.compute
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
            state = self.wait_watching("vision", "vision.cube_state",
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

    def solve(self, state: dict[str, Any]) -> dict[str, Any]:
        try:
            # published too (latched) for watchers; the plan itself goes to the actuator
            return self.bus.call("solver", "solve", {"facelets": state["facelets"],
                                                     "scan_id": state["scan_id"],
                                                     "publish": True},
                                 timeout=self.timeouts.solve)
        except CommandFailed as exc:
            raise StageFailed("solving", f"solver: {exc}") from None

    def execute(self, plan: dict[str, Any]) -> None:
        speed, timeouts = self.speed, self.timeouts
        budget = (plan["predicted_ms"] / 1000.0 / speed * 3 + timeouts.execute_margin / speed
                  + timeouts.compute)
        exec_started = time.monotonic()
        try:
            self.bus.call("actuator", "execute", {"plan": plan}, timeout=10.0)
        except CommandFailed as exc:
            raise StageFailed("executing", f"actuator refused the plan: {exc}") from None
        done = self.wait_watching("actuator", "actuator.result",
                                  lambda p: p.get("plan_id") == plan["plan_id"], budget)
        self.check_stop()
        if done is None:
            self.fail_from_errors("executing", exec_started)
            raise StageFailed("executing", f"no execution result within {budget:.0f} s; "
                              "check the actuator and the serial line")
        if not done["ok"]:
            known = "" if done.get("cube_state_known", True) else " The cube state is unknown: " \
                                                                 "rescan before the next cycle."
            raise StageFailed("executing", f"execution stopped after {done['executed']} of "
                              f"{done['n_steps']} primitives: {done.get('error')}.{known}")

    def verify(self) -> str:
        """What confirmed the solve: the twin in simulation, else the execution itself."""
        if not self.simulated:
            return "execution"
        bus = self.bus
        deadline = time.monotonic() + self.timeouts.verify / self.speed
        twin = bus.latest("sim.twin_state")
        while (twin is None or not twin["solved"]) and time.monotonic() < deadline:
            twin = bus.wait_for("sim.twin_state", lambda p: p["solved"], timeout=0.2) \
                or bus.latest("sim.twin_state")
        if twin is None or not twin["solved"]:
            fault = f" (twin fault: {twin['fault']})" if twin and twin.get("fault") else ""
            raise StageFailed("verifying", "the plan ran but the twin cube is not "
                              f"solved{fault}; the motor mapping or the scan is wrong")
        return "twin"
