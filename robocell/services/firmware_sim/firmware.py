"""The simulated firmware itself: `FirmwareCore`, a pure state machine fed with received
bytes and the simulated time, returning the bytes to send; it times every motion with the
motor model, moves the digital twin and logs every executed line.

Its serial line (TCP or a pty, the clock, fault injection) is `serial_server.serve`; its bus
side is `service.FirmwareSimBus`; `robocell firmware-sim` is `cli`.

Timing: simulated time is real time since start multiplied by the speed factor. A command
starts when the previous one ends if it is already queued then (no idle), else when it
arrives; so the logged gaps between motions measure how well the host keeps the queue fed.
"""

from __future__ import annotations

import json
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import IO

from robocell.common.profile import Profile
from robocell.services.actuator import protocol as proto
from robocell.services.actuator.motion import MotorModel, load_motors
from robocell.services.firmware_sim.twin import Twin, TwinFaultError

FIRMWARE_NAME = "robocell-fwsim"
FIRMWARE_VERSION = "1.0"
DEFAULT_QUEUE = 8
CAPABILITIES = ("move", "servo", "mark", "dwell", "status", "estop", "resend", "boot-id")
ESTOP_SERVO_STOP_MS = 0.0
"""Servos hold their commanded pulse: they stop at once on e-stop."""


@dataclass
class Motion:
    """A queued or running command with its simulated schedule."""

    command: proto.Command
    targets: dict[str, float]
    arrival: float
    start: float = 0.0
    end: float = 0.0
    idle: float = 0.0


@dataclass
class FaultPlan:
    """Fault injection settings (all off by default)."""

    drop_rate: float = 0.0
    corrupt_rate: float = 0.0
    seed: int = 0
    disconnect_after: tuple[int, ...] = ()
    stall_after: int | None = None
    stall_ms: float = 0.0
    reset_after: int | None = None


@dataclass
class FirmwareCore:
    """The firmware's protocol and motion state machine (no I/O; time in simulated ms)."""

    profile: Profile
    facelets: str | None = None
    queue_size: int = DEFAULT_QUEUE
    log: IO[str] | None = None
    on_twin: object = None
    boot_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    accepted_count: int = 0

    def __post_init__(self) -> None:
        self.motors = load_motors(self.profile)
        self.model = MotorModel(self.motors)
        self.twin = Twin(self.profile, self.facelets)
        self._boot_state()
        self._log("boot", fw=FIRMWARE_NAME, version=FIRMWARE_VERSION)

    def _boot_state(self) -> None:
        self.expected = 1
        self.executed = 0
        self.waiting: deque[Motion] = deque()
        self.current: Motion | None = None
        self.state = "idle"
        self.resend_pending = False
        self.last_end = 0.0

    # --- logging and reports ----------------------------------------------------------------
    def _log(self, event: str, **fields: object) -> None:
        if self.log is not None:
            self.log.write(json.dumps({"ev": event, "boot": self.boot_id, **fields}) + "\n")
            self.log.flush()

    def banner(self) -> bytes:
        return proto.report(
            "start", fw=FIRMWARE_NAME, version=FIRMWARE_VERSION, proto=proto.PROTOCOL_VERSION,
            boot=self.boot_id, queue=self.queue_size, caps=",".join(CAPABILITIES),
            motors=",".join(self.motors), last=self.executed, accepted=self.expected - 1,
        ).encode()

    def status(self) -> bytes:
        depth = len(self.waiting) + (1 if self.current else 0)
        return proto.report(
            "status", state=self.state, boot=self.boot_id, last=self.executed,
            accepted=self.expected - 1, queue=depth,
            pos=proto.format_positions({k: round(v, 3) for k, v in self.model.positions.items()}),
        ).encode()

    # --- input ------------------------------------------------------------------------------
    def realtime(self, byte: bytes, now: float, wall: float) -> list[bytes]:
        """A real-time byte: status at once, or e-stop acted on at once."""
        if byte == proto.STATUS_BYTE:
            return [self.status()]
        return self.estop(now, wall)

    def estop(self, now: float, wall: float) -> list[bytes]:
        stopped = now
        if self.current is not None and self.current.start <= now < self.current.end:
            motion = self.current
            elapsed = now - motion.start
            if motion.command.verb == "MOVE":
                # each stepper brakes from its speed at this instant of its trapezoid
                stops = [self.motors[n].emergency_stop(self.motors[n].degrees(v), elapsed)
                         for n, v in motion.targets.items()]
                stop_ms = max(s for s, _ in stops)
                fraction = max(f for _, f in stops)
            else:
                stop_ms = ESTOP_SERVO_STOP_MS
                fraction = elapsed / (motion.end - motion.start)
            stopped = now + stop_ms
            self._apply_partial(motion, fraction)
            self._log("interrupted", line=motion.command.line, text=motion.command.body,
                      fraction=round(fraction, 4), facelets=self.twin.facelets)
        dropped = len(self.waiting) + (1 if self.current else 0)
        self.waiting.clear()
        self.current = None
        self.expected = self.executed + 1
        self.state = "estop"
        self._log("estop", t=now, stopped=stopped, discarded=dropped)
        return [proto.report("estop", t=f"{now:.3f}", stopped=f"{stopped:.3f}",
                             rx_wall=f"{wall:.6f}", discarded=dropped).encode()]

    def line(self, raw: bytes, now: float) -> list[bytes]:
        """One received line (without its newline)."""
        try:
            parsed = proto.parse_host_line(proto.unframe(raw))
        except proto.ProtocolError:
            # every damaged line asks for a resend (the damaged one may be a resent line)
            self.resend_pending = True
            return [proto.report("rs", self.expected, "bad-line").encode()]
        if isinstance(parsed, str):
            if parsed == "HELLO":
                return [self.banner()]
            if parsed == "CLEAR":
                if self.state in ("estop", "fault"):
                    self.twin.fault = None
                    self.state = "idle"
                    self._log("clear")
                return [self.status()]
            return []
        command = parsed
        if command.line < self.expected:
            return [proto.report("ok", command.line, "dup").encode()]
        if command.line > self.expected:
            if self.resend_pending:
                return []
            self.resend_pending = True
            return [proto.report("rs", self.expected, "skipped").encode()]
        self.resend_pending = False
        if self.state in ("estop", "fault"):
            return [proto.report("err", command.line, self.state, "send CLEAR first").encode()]
        if len(self.waiting) + (1 if self.current else 0) >= self.queue_size:
            return [proto.report("busy", command.line).encode()]
        try:
            targets = self._targets(command)
        except ValueError as exc:
            self.expected += 1
            return [proto.report("err", command.line, *str(exc).split()).encode()]
        self.expected += 1
        self.accepted_count += 1
        self.waiting.append(Motion(command, targets, arrival=now))
        out = [proto.report("ok", command.line,
                            free=self.queue_size - len(self.waiting) - (1 if self.current else 0)
                            ).encode()]
        out += self.advance(now)
        return out

    def _targets(self, command: proto.Command) -> dict[str, float]:
        if command.verb == "MARK":
            return {}
        if command.verb == "DWELL":
            if len(command.args) != 1:
                raise ValueError("DWELL takes one duration in ms")
            return {"ms": float(command.args[0])}
        targets = proto.parse_targets(command.args)
        kind = "stepper" if command.verb == "MOVE" else "servo"
        for name in targets:
            motor = self.motors.get(name)
            if motor is None or motor.kind != kind:
                raise ValueError(f"no {kind} named {name}")
        return targets

    # --- motion -----------------------------------------------------------------------------
    def next_deadline(self) -> float | None:
        """Simulated time at which the running motion ends, if any."""
        return self.current.end if self.current else None

    def advance(self, now: float) -> list[bytes]:
        """Finish motions due by ``now`` and start queued ones back to back."""
        out: list[bytes] = []
        while True:
            if self.current is not None:
                if self.current.end > now:
                    break
                out += self._finish(self.current)
                if self.state == "fault":
                    break
            if not self.waiting:
                break
            motion = self.waiting.popleft()
            motion.start = max(motion.arrival, self.last_end)
            motion.idle = motion.start - self.last_end
            motion.end = motion.start + self.model.duration_ms(motion.command.verb,
                                                               motion.targets)
            self.current = motion
            self.state = "run"
        if self.current is None and self.state == "run":
            self.state = "idle"
        return out

    def _apply(self, motion: Motion, fraction: float = 1.0) -> None:
        verb = motion.command.verb
        if verb == "MOVE":
            self.twin.move({n: self.motors[n].degrees(v) for n, v in motion.targets.items()},
                           fraction)
        elif verb == "SERVO":
            self.twin.set_servos(motion.targets, fraction)
        self.model.apply(verb, motion.targets, fraction)

    def _apply_partial(self, motion: Motion, fraction: float) -> None:
        """A motion cut short (e-stop, reset): the twin records what physically happened."""
        try:
            self._apply(motion, fraction)
        except TwinFaultError as exc:
            self._log("fault", code=exc.code, message=str(exc), line=motion.command.line)

    def _finish(self, motion: Motion) -> list[bytes]:
        self.current = None
        self.last_end = motion.end
        self.executed = motion.command.line
        fault = None
        try:
            self._apply(motion)
        except TwinFaultError as exc:
            fault = exc
        self._log("exec", line=motion.command.line, text=motion.command.body,
                  start=round(motion.start, 3), end=round(motion.end, 3),
                  idle=round(motion.idle, 3),
                  facelets=self.twin.facelets, solved=self.twin.solved)
        if callable(self.on_twin):
            self.on_twin(self)
        if fault is not None:
            self.state = "fault"
            self.waiting.clear()
            self.expected = self.executed + 1
            self._log("fault", code=fault.code, message=str(fault), line=motion.command.line)
            return [proto.report("fault", fault.code, *str(fault).split(),
                                 line=motion.command.line).encode()]
        return [proto.report("done", motion.command.line, t=f"{motion.end:.3f}").encode()]

    # --- connection events ------------------------------------------------------------------
    def disconnected(self, now: float) -> None:
        """The host went away: finish the running motion, discard the waiting queue."""
        self._log("disconnect", t=now, discarded=len(self.waiting))
        self.waiting.clear()
        self.expected = (self.current.command.line if self.current else self.executed) + 1
        self.resend_pending = False

    def reset(self, now: float) -> bytes:
        """A reboot: new boot id, queue and line numbers gone; the cube stays as it is."""
        if self.current is not None:
            self._apply_partial(self.current, min(1.0, (now - self.current.start) / max(
                1e-9, self.current.end - self.current.start)))
        self.boot_id = uuid.uuid4().hex[:8]
        self._boot_state()
        self.last_end = now
        self._log("boot", fw=FIRMWARE_NAME, version=FIRMWARE_VERSION, reason="reset")
        return self.banner()


def motion_gaps(entries: list[dict]) -> tuple[list[float], list[float]]:
    """From ``exec`` log entries of one run: the motors' idle time (simulated ms) between
    consecutive motions, and the subset at primitive boundaries (gaps spanning a MARK line,
    which moves nothing)."""
    gaps: list[float] = []
    boundaries: list[float] = []
    previous_end = None
    spans_mark = False
    for entry in entries:
        if entry.get("ev") != "exec":
            continue
        if " MARK " in entry["text"]:
            spans_mark = previous_end is not None
            continue
        if previous_end is not None:
            gap = entry["start"] - previous_end
            gaps.append(gap)
            if spans_mark:
                boundaries.append(gap)
        previous_end, spans_mark = entry["end"], False
    return gaps, boundaries
