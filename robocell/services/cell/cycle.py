"""The solve cycle: scan -> read -> plan -> execute -> verify, with every stage timed.

`run_cycle` is the whole cycle over a small `CellBus` interface (commands with deadlines,
waiting for a message, the latest value of a latched topic), so the sequence and its error
handling are plain code; `robocell.services.cell.service` supplies the bus. Any stage that fails
stops the cycle, e-stops the robot if it was moving, and reports which stage, why, and
what to do next.
"""

from __future__ import annotations

import concurrent.futures
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from robocell.common.bus import CommandFailed
from robocell.errors import RobocellError
from robocell.services.cell.rolling import Rolling, amended_plan, rolling_profile

BROKER_GRACE_S = 20.0
"""How long a cycle waits for a broker that went away to come back (a restart) before it
fails; the cycle's result is kept and published when the broker returns."""
HOME_ATTEMPTS = 2
VERIFY_POLL_S = 0.05
"""How often verification asks the firmware simulator for its twin while the twin does not
yet show the last motion."""
_CALLERS = concurrent.futures.ThreadPoolExecutor(max_workers=8,
                                                thread_name_prefix="cell-call")
"""Threads that wait for command replies while a cycle watches heartbeats (long-lived: each
keeps its bus client)."""

SOLVER_POLL_S = 0.25
"""How often a cycle asks again while no solver instance is connected."""
NO_SOLVER = ("no solver instance connected to the broker within the solve stage's {seconds:g} "
             "s: start one on the compute host (`robocell solver --broker tcp://ROBOT-HOST:PORT "
             "--curve-key compute.key`, its key allowed on the robot host's broker with "
             "`--allow compute.pub:service:solver`), or start the robot host without "
             "`--without solver`")
"""Why a cycle failed when no solver came (the robot host runs none of its own)."""

STAGES = ("homing", "scanning", "solving", "executing", "verifying")
"""Stages in the order a cycle runs them (``homing`` only when the robot must be homed
first: after a firmware reboot, an e-stop mid-motion, or a recovery asked for)."""


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

    def broker_up_s(self) -> float:
        """Seconds the broker has carried this service's own heartbeat back to it without a
        break; negative: seconds since the last one came back (the broker is away)."""

    def gone(self, service: str) -> bool:
        """True once ``service``'s heartbeat is stale while the broker demonstrably carried
        others' (so it is the service, not the broker, that went away)."""


@dataclass
class CycleTimeouts:
    """Seconds each stage may take at simulation speed 1 (divided by the speed factor)."""

    scan: float = 90.0
    solve: float = 10.0
    execute_margin: float = 30.0
    verify: float = 10.0
    compute: float = 60.0
    """Seconds allowed for computation (image processing, resolution), at any speed."""
    home: float = 30.0
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
    homed: bool = False
    errors: list[str] = field(default_factory=list)
    """Messages of the `errors` topic received during the cycle (for the cycle log)."""
    measured_ms: float | None = None
    """The plan's motion time on the robot's clock (actuator.result)."""
    primitive_ms: list[float] | None = None

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
              on_stage: Callable[[str, float], None] | None = None,
              home_first: bool = False, result: CycleResult | None = None,
              rolling: bool = True) -> CycleResult:
    """Run one cycle; never raises for a failing stage (the result says what failed).
    ``home_first``: clear the robot's stop or fault and home every motor before scanning
    (the recovery path: e-stop, clear, home, rescan, plan, solve). ``result``: the record
    to fill in (a caller may read the stages done so far from it). ``rolling``: search a
    3x3 plan's rest again while the robot executes it (`robocell.services.cell.rolling`)."""
    cycle = _Cycle(bus, simulated, max(speed, 1e-6), timeouts or CycleTimeouts(),
                   cycle_id or uuid.uuid4().hex[:12], on_stage)
    cycle.home_first = home_first
    cycle.rolling = rolling
    if result is not None:
        result.cycle_id = cycle.cycle_id
        cycle.result = result
    return cycle.run()


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
        self.stage = ""
        self.stage_started = self.started
        self.home_first = False
        self.rolling = True

    def run(self) -> CycleResult:
        result = self.result
        try:
            if self.home_first or self.position_unknown():
                self.enter("homing")
                result.homed = self.home()
            self.enter("scanning")
            state = self.scan()
            result.facelets = state["facelets"]
            self.enter("solving")
            plan = self.solve(state)
            result.plan = plan
            self.check_stop()
            self.enter("executing")
            done, rolled = self.execute(plan)
            result.measured_ms = done.get("measured_ms")
            result.primitive_ms = done.get("primitive_ms")
            if done.get("amendments"):
                result.plan = amended_plan(plan, list(done["primitives"]), done["amendments"])
            if rolled is not None:
                result.plan = {**result.plan, "rolling": rolled}
            self.enter("verifying")
            result.verified_by = self.verify(done)
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
        result.errors = [f"{e.get('service')}: {e.get('message')} [{e.get('code')}]"
                         for e in self.bus.errors_since(self.started)]
        return result

    def enter(self, name: str) -> None:
        now = time.monotonic()
        if name != self.stage and self.stage:
            self.result.stages_s[self.stage] = round(now - self.stage_started, 4)
            if self.on_stage:
                self.on_stage(self.stage, now - self.stage_started)
        self.stage, self.stage_started = name, now
        self.bus.status(self.cycle_id, name)

    def call_watching(self, service: str, command: str, args: dict[str, Any], timeout: float,
                      watch: tuple[str, ...]) -> Any:
        """``service.command``, failing within a heartbeat period of staleness if a service
        of ``watch`` stops beating (or on e-stop) instead of waiting for the whole deadline."""
        reply = _CALLERS.submit(self.bus.call, service, command, args, timeout)
        while True:
            try:
                return reply.result(timeout=0.2)  # or raises its CommandFailed
            except concurrent.futures.TimeoutError:
                pass
            self.check_stop()
            for watched in watch:
                self.check_alive(watched)

    def call_when_free(self, service: str, command: str, args: dict[str, Any],
                       timeout: float, watch: tuple[str, ...]) -> Any:
        """`call_watching`, asking again while ``service`` answers ``busy`` (a job left
        running by a cycle that was cut short ends first), up to ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.call_watching(service, command, args,
                                          max(1.0, deadline - time.monotonic()), watch)
            except CommandFailed as exc:
                if exc.code != "busy" or time.monotonic() >= deadline:
                    raise
                self.bus.status(self.cycle_id, self.stage, f"waiting for {service}: {exc}")
                time.sleep(0.5)

    def wait_watching(self, service: str | tuple[str, ...], topic: str,
                      match: Callable[[dict[str, Any]], bool],
                      timeout: float) -> dict[str, Any] | None:
        """Wait for a message, failing at once if ``service`` (or one of them) stops
        beating, or on e-stop."""
        watched = (service,) if isinstance(service, str) else service
        deadline = time.monotonic() + timeout
        while True:
            found = self.bus.wait_for(topic, match, timeout=min(0.5, max(0.0, deadline -
                                                                         time.monotonic())))
            if found is not None:
                return found
            self.check_stop()
            for name in watched:
                self.check_alive(name)
            if time.monotonic() >= deadline and self.bus.broker_up_s() > 0:
                return None

    def check_alive(self, service: str) -> None:
        """StageFailed naming ``service`` once its heartbeat is stale while the broker
        carries the others', or naming the broker once it has been away BROKER_GRACE_S;
        while the broker is away (or just back) the cycle waits for it."""
        if self.bus.alive(service):
            return
        if self.bus.gone(service):
            raise StageFailed(self.stage, f"{service} stopped responding (no heartbeat for "
                              f"3 s) during {self.stage}; restart {service} and start a new "
                              "cycle")
        up = self.bus.broker_up_s()
        if up < -BROKER_GRACE_S:
            raise StageFailed(self.stage, f"the broker went away during {self.stage} (nothing "
                              f"came back through it for {-up:.0f} s); restart the broker, "
                              "then start a new cycle")

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
        up_before = bus.broker_up_s()
        try:
            self.call_when_free("actuator", "scan", {"scan_id": scan_id}, scan_budget,
                                watch=("vision", "actuator"))
        except CommandFailed as exc:
            if exc.code in ("timeout", "unavailable") and self.broker_went_away(up_before,
                                                                                started_at):
                self.wait_broker_back(exc)
                return None, f"the broker went away during the scan ({exc})"
            if bus.gone("vision"):
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

    def position_unknown(self) -> bool:
        """Whether the actuator says the cube state is unknown (a firmware reboot, a motion
        stopped part way) so the robot must be homed before it scans; False when it cannot
        say (the scan then reports what is wrong)."""
        try:
            status = self.bus.call("actuator", "status", {}, timeout=2.0)
        except CommandFailed:
            return False
        return status.get("cube_state_known") is False

    def home(self) -> bool:
        """Stop (if a job still moves the robot), clear and home the robot; False when its
        actuator cannot home (it has no ``home`` command), so the cycle goes on with a
        rescan alone. A homing cut short by the stop's own report is tried once more."""
        try:
            if self.bus.call("actuator", "status", {}, timeout=2.0).get("job"):
                self.bus.call("actuator", "estop", {}, timeout=2.0)
        except CommandFailed:
            pass  # the actuator is gone or busy: `home` says which
        budget = self.timeouts.home / self.speed + self.timeouts.compute
        for attempt in range(1, HOME_ATTEMPTS + 1):
            try:
                self.call_when_free("actuator", "home", {}, budget, watch=("actuator",))
                return True
            except CommandFailed as exc:
                if exc.code == "unknown_command":
                    self.bus.status(self.cycle_id, "homing",
                                    "the actuator cannot home; rescanning")
                    return False
                if attempt == HOME_ATTEMPTS:
                    raise StageFailed("homing", f"actuator could not home the robot: {exc}; "
                                      "free the mechanism and ask for a recovery again"
                                      ) from None
                self.bus.status(self.cycle_id, "homing", f"homing again: {exc}")
                time.sleep(0.5)
        return False

    def solve(self, state: dict[str, Any]) -> dict[str, Any]:
        """The plan, from whichever solver instance the broker routes to; while none is
        connected (it runs on another host and has not joined yet, or its link is down) the
        cycle waits for one, up to the stage's deadline."""
        deadline = time.monotonic() + self.timeouts.solve
        said = False
        while True:
            try:
                # published too (latched) for watchers; the plan itself goes to the actuator
                return self.bus.call("solver", "solve", {"facelets": state["facelets"],
                                                         "scan_id": state["scan_id"],
                                                         "publish": True},
                                     timeout=max(1.0, deadline - time.monotonic()))
            except CommandFailed as exc:
                if exc.code != "unavailable":
                    raise StageFailed("solving", f"solver: {exc}") from None
                if time.monotonic() >= deadline:
                    raise StageFailed("solving", NO_SOLVER.format(
                        seconds=self.timeouts.solve)) from None
            if not said:
                self.bus.status(self.cycle_id, "solving", "waiting for a solver instance "
                                "to connect")
                said = True
            self.check_stop()
            time.sleep(max(0.0, min(SOLVER_POLL_S, deadline - time.monotonic())))

    def execute(self, plan: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Execute the plan, rolling its rest when asked: the actuator's result, and what
        the rolling did (None when it did not roll)."""
        speed, timeouts = self.speed, self.timeouts
        budget = (plan["predicted_ms"] / 1000.0 / speed * 3 + timeouts.execute_margin / speed
                  + timeouts.compute)
        exec_started = time.monotonic()
        up_before = self.bus.broker_up_s()
        profile = rolling_profile(plan) if self.rolling else None
        rolling = None if profile is None else Rolling(plan, profile, speed)
        hold = None if rolling is None else rolling.first_hold()
        try:
            self.bus.call("actuator", "execute",
                          {"plan": plan} if hold is None else {"plan": plan, "hold_at": hold},
                          timeout=10.0)
        except CommandFailed as exc:
            hold = None  # a plan sent again after the broker went away runs as it is
            if exc.code not in ("timeout", "unavailable") or not self.broker_went_away(
                    up_before, exec_started):
                raise StageFailed("executing", f"actuator refused the plan: {exc}") from None
            if not self.plan_arrived(plan["plan_id"], exc):
                try:  # the actuator never had it: sending it again runs it once
                    self.bus.call("actuator", "execute", {"plan": plan}, timeout=10.0)
                except CommandFailed as again:
                    raise StageFailed("executing", f"actuator refused the plan: {again} "
                                      f"(sent again after the broker went away: {exc})"
                                      ) from None
        def plan_ended() -> bool:
            return self.bus.stopped() or self.bus.wait_for(
                "actuator.result", lambda p: p.get("plan_id") == plan["plan_id"], 0.0) is not None

        if rolling is not None and hold is not None:
            rolling.run(self.bus.call, hold, lambda: not plan_ended())
            if rolling.stopped:
                self.bus.status(self.cycle_id, "executing", f"rolling stopped: {rolling.stopped}")
        # in simulation the firmware beats on the bus too: its death is seen within seconds
        watched = ("actuator", "firmware-sim") if self.simulated else ("actuator",)
        done = self.wait_watching(watched, "actuator.result",
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
        if rolling is None or hold is None:
            return done, None
        return done, {"searches": rolling.searches, "replaced": rolling.replaced,
                      "stopped": rolling.stopped}

    def broker_went_away(self, up_before: float, since: float) -> bool:
        """Whether the broker went away (is away, or came back) since ``since``, when it had
        been up ``up_before`` seconds: a reply may have been lost with it."""
        up = self.bus.broker_up_s()
        return up < 0 or up < up_before + (time.monotonic() - since) - 1.0

    def wait_broker_back(self, exc: CommandFailed) -> None:
        """Wait until the broker has been back long enough for every live service to be
        heard again; StageFailed if it stays away BROKER_GRACE_S."""
        self.bus.status(self.cycle_id, self.stage, f"the broker went away ({exc}); waiting "
                        "for it to come back")
        deadline = time.monotonic() + BROKER_GRACE_S
        while self.bus.broker_up_s() < 2.0:
            self.check_stop()
            if time.monotonic() >= deadline:
                raise StageFailed(self.stage, f"the broker went away during {self.stage} "
                                  f"({exc}) and did not come back; restart the broker, then "
                                  "start a new cycle")
            time.sleep(0.2)

    def plan_arrived(self, plan_id: str, exc: CommandFailed) -> bool:
        """The broker went away with the plan in flight: once it is back, whether the
        actuator got the plan (it runs it, or has its result); StageFailed if the broker
        does not come back or the actuator cannot say."""
        self.wait_broker_back(exc)
        if self.bus.wait_for("actuator.result", lambda p: p.get("plan_id") == plan_id, 1.0):
            return True
        try:
            status = self.bus.call("actuator", "status", {}, timeout=2.0)
        except CommandFailed as again:
            raise StageFailed("executing", f"the broker went away while the plan was sent, "
                              f"and the actuator does not answer since ({again}); check the "
                              "actuator, then start a new cycle") from None
        return status.get("job") == "plan"

    def verify(self, done: dict[str, Any]) -> str:
        """What confirmed the solve: the twin in simulation, else the execution itself.

        The twin is asked, not read off a topic: the ``twin`` command of the firmware
        simulator answers with the twin as that process holds it now, through its registered
        instance on the command channel (anyone local may publish `sim.twin_state`; a
        publisher cannot answer a command, and a replay sends no replies). Only an answer
        from the firmware's boot that shows the last line the actuator streamed, both named
        by the plan's result ``done``, counts: a solved twin from an earlier cycle, another
        boot, or before a later scramble is never taken."""
        if not self.simulated:
            return "execution"
        last_line, boot_id = done["last_line"], done["boot_id"]
        twin = self.twin_after(last_line, boot_id, self.timeouts.verify / self.speed)
        if not twin["solved"]:
            fault = f" (twin fault: {twin['fault']})" if twin.get("fault") else ""
            raise StageFailed("verifying", "the plan ran but the twin cube is not "
                              f"solved{fault}; the cube was moved by hand, or the motor mapping "
                              "or the scan is wrong: rescan and start a new cycle")
        return "twin"

    def twin_after(self, last_line: int, boot_id: str | None, timeout: float
                   ) -> dict[str, Any]:
        """The firmware simulator's twin once it shows ``last_line`` of boot ``boot_id``,
        asked every VERIFY_POLL_S; StageFailed when it does not within ``timeout``."""
        deadline = time.monotonic() + timeout
        seen = "no answer"
        while True:
            self.check_stop()
            try:
                twin = self.bus.call("firmware-sim", "twin", {},
                                     timeout=max(0.5, min(2.0, deadline - time.monotonic())))
                if boot_id is not None and twin.get("boot_id") != boot_id:
                    seen = f"a twin of boot {twin.get('boot_id')}"
                elif int(twin.get("line") or 0) < last_line:
                    seen = f"the twin at line {twin.get('line')}"
                else:
                    return twin
            except CommandFailed as exc:
                seen = f"firmware-sim: {exc}"
            if time.monotonic() >= deadline:
                raise StageFailed("verifying", f"the twin did not report the end of the motion "
                                  f"(firmware line {last_line}, boot {boot_id}) within "
                                  f"{timeout:.1f} s ({seen}); check the firmware simulator")
            time.sleep(VERIFY_POLL_S)
