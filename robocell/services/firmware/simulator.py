"""The simulated firmware itself: `FirmwareCore`, a pure state machine fed with received
bytes and the simulated time, returning the bytes to send; it times every motion with the
motor model, moves the digital twin and logs every executed line.

Its serial line (TCP or a pty, the clock, fault injection) is `serial_server.serve`; its bus
side is `service.FirmwareSimBus`; `robocell firmware-sim` is `cli`.

HOME (docs/serial-protocol.md, "Homing"): its targets are fixed when it starts, from the
step counts (or, for a stepper with a home switch, from where the arm physically stands:
a power-up zeroes the count, not the arm); steppers first, then servos.

Timing: simulated time is real time since start multiplied by the speed factor. A command
starts when the previous one ends if it is already queued then (no idle), else when it
arrives; so the logged gaps between motions measure how well the host keeps the queue fed.
The robot moves by its profile's motors, or by a physics file's (`robocell.robot.physics`)
when it has one: then the host's predictions and the robot differ as on real hardware. A
motion's first step comes the physics' start latency after it starts; ``done`` reports its
start and end on the simulated clock, in µs since boot (protocol 2).

Planner queue (corner cutting): a ``MOVE ... ov=<steps>`` starts as soon as every motor of the MOVE
before it (MARK lines in between move nothing and do not count) has at most that many steps to go,
if the two share no motor and turn perpendicular layers; the twin checks the layers' angles at that
instant and jams if the cube cannot take it (physics ``[cube] cut_tolerance_deg``). ``done``
reports keep line order: a move that ends first waits for the lines before it; its ``start=`` is
when it really started, so an overlapped move's span begins inside the span of the move before.
"""

from __future__ import annotations

import json
import math
import uuid
from collections import deque
from dataclasses import dataclass, field, replace
from typing import IO

from robocell.common.profile import Profile
from robocell.robot import protocol as proto
from robocell.robot.motion import OVERLAP_FIELD, MotorModel, load_motors, move_axes
from robocell.robot.physics import Physics
from robocell.services.firmware.twin import Twin, TwinFaultError

FIRMWARE_NAME = "robocell-fwsim"
FIRMWARE_VERSION = "1.0"
DEFAULT_QUEUE = 8
CAPABILITIES = ("move", "servo", "mark", "dwell", "status", "estop", "resend", "boot-id",
                "home", "overlap")
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
    steppers_ms: float = 0.0
    """HOME: length of its first phase (steppers); the servos follow."""
    overlap: int = 0
    """MOVE: its ``ov=<steps>`` (start while the MOVE before has at most that many left)."""
    latency: float = 0.0
    """From its start to its first step (physics ``start_latency_ms``)."""


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
    physics: Physics | None = None
    """How the robot really moves (None: as its profile says)."""

    def __post_init__(self) -> None:
        motors = load_motors(self.profile)
        self.motors = self.physics.apply(motors) if self.physics else motors
        self.booted = 0.0
        """Simulated ms at the last boot: the clock of the ``done`` reports starts there."""
        self.model = MotorModel({n: replace(m, start_latency_ms=0.0)  # from the first step
                                 for n, m in self.motors.items()})
        self.twin = Twin(self.profile, self.facelets,
                         self.physics.cut_tolerance_deg if self.physics else None)
        self.physical_offset = {n: 0.0 for n, m in self.motors.items() if m.kind == "stepper"}
        """Steps between where each stepper physically stands and its step count since
        boot (non-zero after a reboot: the count restarts at 0 wherever the arm is)."""
        self._boot_state()
        self._log("boot", fw=FIRMWARE_NAME, version=FIRMWARE_VERSION)

    def _boot_state(self) -> None:
        self.expected = 1
        self.executed = 0
        self.waiting: deque[Motion] = deque()
        self.running: list[Motion] = []
        """Started and not yet reported done, in line order (two when a move overlaps)."""
        self.state = "idle"
        self.resend_pending = False
        self.last_end = 0.0

    @property
    def current(self) -> Motion | None:
        """The oldest motion not yet reported done."""
        return self.running[0] if self.running else None

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
        depth = len(self.waiting) + len(self.running)
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
        for motion in self.running:
            if not motion.start <= now < motion.end:
                continue
            elapsed = self._moving_ms(motion, now)
            if motion.command.verb == "HOME":
                stop_ms, fraction = self._estop_home(motion, elapsed)
            elif motion.command.verb == "MOVE":
                # each stepper brakes from its speed at this instant of its trapezoid
                stops = [self.motors[n].emergency_stop(self.motors[n].degrees(v), elapsed)
                         for n, v in motion.targets.items()]
                stop_ms = max(s for s, _ in stops)
                fraction = max(f for _, f in stops)
            else:
                stop_ms = ESTOP_SERVO_STOP_MS
                fraction = elapsed / max(1e-9, motion.end - motion.start - motion.latency)
            stopped = max(stopped, now + stop_ms)
            if motion.command.verb != "HOME":
                self._apply_partial(motion, fraction)
            self._log("interrupted", line=motion.command.line, text=motion.command.body,
                      fraction=round(fraction, 4), facelets=self.twin.facelets)
        dropped = len(self.waiting) + len(self.running)
        self.waiting.clear()
        self.running = []
        self.expected = self.executed + 1
        self.state = "estop"
        self._log("estop", t=now, stopped=stopped, discarded=dropped)
        return [proto.report("estop", t=f"{now:.3f}", stopped=f"{stopped:.3f}",
                             rx_wall=f"{wall:.6f}", discarded=dropped).encode()]

    def _estop_home(self, motion: Motion, elapsed: float) -> tuple[float, float]:
        """E-stop during HOME: the phase running is cut short; (ms until standstill, fraction
        of the stepper phase done)."""
        steppers, servos = self._split(motion.targets)
        if elapsed < motion.steppers_ms:
            stops = [self.motors[n].emergency_stop(self.motors[n].degrees(v), elapsed)
                     for n, v in steppers.items() if v]
            stepper_fraction = max((f for _, f in stops), default=1.0)
            servo_fraction, stop_ms = 0.0, max((s for s, _ in stops), default=0.0)
        else:
            servo_ms = max(motion.end - motion.start - motion.latency - motion.steppers_ms, 1e-9)
            stepper_fraction, stop_ms = 1.0, ESTOP_SERVO_STOP_MS
            servo_fraction = min(1.0, (elapsed - motion.steppers_ms) / servo_ms)
        try:
            self._apply_home(motion, stepper_fraction, servo_fraction)
        except TwinFaultError as exc:
            self._log("fault", code=exc.code, message=str(exc), line=motion.command.line)
        return stop_ms, stepper_fraction

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
        if len(self.waiting) + len(self.running) >= self.queue_size:
            return [proto.report("busy", command.line).encode()]
        try:
            targets = self._targets(command)
        except ValueError as exc:
            self.expected += 1
            return [proto.report("err", command.line, *str(exc).split()).encode()]
        self.expected += 1
        self.accepted_count += 1
        self.waiting.append(Motion(command, targets, arrival=now, overlap=_overlap(command)))
        out = [proto.report("ok", command.line,
                            free=self.queue_size - len(self.waiting) - len(self.running)
                            ).encode()]
        out += self.advance(now)
        return out

    def _targets(self, command: proto.Command) -> dict[str, float]:
        """The checked arguments of a queued command; ValueError naming the field (sent back
        as ``err N <text>``)."""
        verb = command.verb
        if verb == "MARK":
            return {}
        if verb == "DWELL":
            if len(command.args) != 1:
                raise ValueError("DWELL takes one duration in ms")
            low, high = proto.DWELL_RANGE_MS
            return {"ms": proto.parse_decimal(command.args[0], "DWELL ms", low, high)}
        if verb == "HOME":
            names = command.args or tuple(self.motors)
            for name in names:
                if name not in self.motors:
                    raise ValueError(f"HOME: no motor named {name}")
            if len(set(names)) != len(names):
                raise ValueError("HOME: a motor is named twice")
            return dict.fromkeys(names, 0.0)
        kind = "stepper" if verb == "MOVE" else "servo"
        targets: dict[str, float] = {}
        for arg in command.args:
            key, equals, steps = arg.partition("=")
            if verb == "MOVE" and equals and key == OVERLAP_FIELD:
                proto.parse_integer(steps, "MOVE ov steps", 0, proto.MAX_STEPS)
                continue
            name, sep, value = arg.partition(":")
            if not sep or not name:
                raise ValueError(f"{verb}: argument {arg} is not motor:value")
            motor = self.motors.get(name)
            if motor is None or motor.kind != kind:
                raise ValueError(f"no {kind} named {name}")
            if name in targets:
                raise ValueError(f"{verb}: motor {name} named twice")
            if verb == "MOVE":
                targets[name] = float(proto.parse_integer(
                    value, f"MOVE {name} steps", -proto.MAX_STEPS, proto.MAX_STEPS))
            else:
                low, high = proto.SERVO_RANGE_DEG
                targets[name] = proto.parse_decimal(value, f"SERVO {name} degrees", low, high)
        if not targets:
            raise ValueError(f"{verb}: no motor targets given")
        return targets

    def _home_targets(self, names: list[str]) -> dict[str, float]:
        """HOME's targets from where the motors stand now: steppers a relative move in steps
        to their reference position (from the step count, or to the switch the physical arm
        meets first in ``home_dir``), servos their home angle."""
        targets: dict[str, float] = {}
        for name in names:
            motor = self.motors[name]
            if motor.kind == "servo":
                targets[name] = motor.home
                continue
            count = self.model.positions[name]
            if motor.home_switch:
                physical = count + self.physical_offset[name]
                step = motor.align_steps * motor.home_dir
                # the switch closes at every aligned position: seek to the next one
                ahead = math.ceil(round(physical / step, 9)) * step
                targets[name] = ahead - physical
            else:
                targets[name] = motor.reference_steps(count) - count
        return targets

    def _start_home(self, motion: Motion) -> float:
        """Fix a HOME's targets as it starts; its duration (steppers, then servos)."""
        motion.targets = self._home_targets(list(motion.targets))
        steppers, servos = self._split(motion.targets)
        motion.steppers_ms = self.model.duration_ms("MOVE", steppers)
        return motion.steppers_ms + (self.model.duration_ms("SERVO", servos) if servos else 0.0)

    def _split(self, targets: dict[str, float]) -> tuple[dict[str, float], dict[str, float]]:
        steppers = {n: v for n, v in targets.items() if self.motors[n].kind == "stepper"}
        return steppers, {n: v for n, v in targets.items() if n not in steppers}

    # --- motion -----------------------------------------------------------------------------
    def next_deadline(self) -> float | None:
        """Simulated time of the next event: a running motion ends or a queued one starts."""
        events = [t for t in self._next_events() if t != math.inf]
        return min(events) if events else None

    def _next_events(self) -> tuple[float, float]:
        """(when the oldest running motion ends, when the head of the queue starts)."""
        finish = self.running[0].end if self.running else math.inf
        start = math.inf
        if self.waiting and self.state not in ("fault", "estop"):
            start = self._start_time(self.waiting[0])
        return finish, start

    def advance(self, now: float) -> list[bytes]:
        """Finish motions due by ``now`` and start queued ones, in the order of their times:
        back to back, or overlapped where a MOVE's ``ov=`` lets it."""
        out: list[bytes] = []
        while self.state != "fault":
            finish, start = self._next_events()
            if min(finish, start) > now:
                break
            if finish <= start:
                out += self._finish(self.running[0])
            else:
                out += self._begin(self.waiting.popleft(), start)
        if not self.running and self.state == "run":
            self.state = "idle"
        return out

    def _motions_running(self) -> list[Motion]:
        return [m for m in self.running if m.command.verb != "MARK"]

    def _cut_corner_of(self, motion: Motion) -> Motion | None:
        """The running MOVE ``motion`` may start before the end of (its ``ov=``), if any."""
        moving = self._motions_running()
        if motion.command.verb != "MOVE" or not motion.overlap or not moving:
            return None
        previous = moving[-1]
        if previous.command.verb != "MOVE" or set(previous.targets) & set(motion.targets):
            return None
        before, after = (move_axes(m.command, self.motors) for m in (previous, motion))
        if not before or not after or before & after:
            return None  # only perpendicular layers cut the corner
        return previous

    def _start_time(self, motion: Motion) -> float:
        """When the queued ``motion`` starts: when it arrived, but not before the motions
        running end (a MARK: at once; an overlapping MOVE: when the MOVE before has at most
        ``ov`` steps to go)."""
        moving = self._motions_running()
        if not moving:
            return max(motion.arrival, self.last_end)
        if motion.command.verb == "MARK":
            return motion.arrival
        previous = self._cut_corner_of(motion)
        if previous is None:
            return max(motion.arrival, max(m.end for m in moving))
        others = [m.end for m in moving if m is not previous]
        return max(motion.arrival, self._steps_left_at(previous, motion.overlap), *others)

    def _steps_left_at(self, motion: Motion, steps: int) -> float:
        """When every motor of a running MOVE has at most ``steps`` steps to go."""
        first_step = motion.start + motion.latency
        latest = first_step
        for name, value in motion.targets.items():
            motor = self.motors[name]
            change = motor.degrees(value)
            left = motor.time_left_ms(change, motor.degrees(steps))
            latest = max(latest, first_step + motor.turning_ms(change) - left)
        return latest

    def _begin(self, motion: Motion, start: float) -> list[bytes]:
        """Start a queued motion at ``start`` (a jam, if its layers cannot turn yet)."""
        verb = motion.command.verb
        latest = max((m.end for m in self.running), default=self.last_end)
        if verb == "MARK":  # moves nothing; reported done after the lines before it
            motion.start = motion.end = max(start, latest)
            self.running.append(motion)
            return []
        previous = self._cut_corner_of(motion)
        if previous is not None and start < previous.end:
            jam = self._check_cut(previous, motion, start)
            if jam is not None:
                return jam
        motion.start = start
        motion.idle = max(0.0, start - max(self.last_end, latest))
        if verb == "HOME":
            duration = self._start_home(motion)
        else:
            duration = self.model.duration_ms(verb, motion.targets)
        motion.latency = self._latency(motion)
        motion.end = start + motion.latency + duration
        self.running.append(motion)
        self.state = "run"
        return []

    def _check_cut(self, previous: Motion, motion: Motion, now: float) -> list[bytes] | None:
        """``motion`` starts while ``previous`` still turns: the twin decides whether the
        cube takes it; on a jam every motor stops where it is and the firmware faults."""
        elapsed = self._moving_ms(previous, now)
        left = {}
        for name, value in previous.targets.items():
            motor = self.motors[name]
            change = motor.degrees(value)
            left[name] = abs(change) - motor.travel(change, elapsed)[1]
        try:
            self.twin.check_cut(list(motion.targets), left)
            return None
        except TwinFaultError as jam:
            self.twin.fault = None  # what the stopped motors did still happens to the cube
            for running in self._motions_running():
                fraction = self._fraction_done(running, now)
                self._apply_partial(running, fraction)
                self._log("interrupted", line=running.command.line,
                          text=running.command.body, fraction=round(fraction, 4),
                          facelets=self.twin.facelets)
            self.twin.fault = jam
            line = self.running[0].command.line
            self.running = []
            self.last_end = now
            return self._fault(jam, line)

    def _fraction_done(self, motion: Motion, now: float) -> float:
        """How much of a running motion is done at ``now`` (a MOVE: of its way)."""
        elapsed = self._moving_ms(motion, now)
        if motion.command.verb == "MOVE":
            return max((self.motors[n].travel(self.motors[n].degrees(v), elapsed)[1]
                        / abs(self.motors[n].degrees(v)) for n, v in motion.targets.items()
                        if v), default=1.0)
        return min(1.0, elapsed / max(1e-9, motion.end - motion.start - motion.latency))

    @staticmethod
    def _moving_ms(motion: Motion, now: float) -> float:
        """How long a running motion's motors have been moving at ``now`` (its start
        latency over, none before)."""
        return max(0.0, now - motion.start - motion.latency)

    def _fault(self, fault: TwinFaultError, line: int) -> list[bytes]:
        """A physical fault at ``line``: the queue is gone, motion refused until CLEAR."""
        self.state = "fault"
        self.waiting.clear()
        self.expected = self.executed + 1
        self._log("fault", code=fault.code, message=str(fault), line=line)
        if callable(self.on_twin):
            self.on_twin(self)
        return [proto.report("fault", fault.code, *str(fault).split(), line=line).encode()]

    def _latency(self, motion: Motion) -> float:
        """From a motion's start to its first step (its motors' ``start_latency_ms``)."""
        moving = motion.command.verb in ("MOVE", "SERVO", "HOME")
        return max((self.motors[n].start_latency_ms for n in motion.targets
                    if moving and n in self.motors), default=0.0)

    def _apply(self, motion: Motion, fraction: float = 1.0) -> None:
        verb = motion.command.verb
        if verb == "HOME":
            self._apply_home(motion, fraction, 1.0 if fraction >= 1.0 else 0.0)
            return
        # the motors move whatever the mechanism makes of it (a jam is the twin's to report)
        self.model.apply(verb, motion.targets, fraction)
        if verb == "MOVE":
            self.twin.move({n: self.motors[n].degrees(v) for n, v in motion.targets.items()},
                           fraction)
        elif verb == "SERVO":
            self.twin.set_servos(motion.targets, fraction)

    def _apply_home(self, motion: Motion, stepper_fraction: float,
                    servo_fraction: float) -> None:
        """HOME done (or stopped part way): steppers turn first, then servos move."""
        steppers, servos = self._split(motion.targets)
        moving = {n: v for n, v in steppers.items() if v}
        if moving:
            self.model.apply("MOVE", moving, stepper_fraction)
            self.twin.move({n: self.motors[n].degrees(v) for n, v in moving.items()},
                           stepper_fraction)
        if stepper_fraction >= 1.0:
            for name in steppers:  # at the reference: the count is a multiple again
                motor = self.motors[name]
                count = self.model.positions[name]
                aligned = motor.reference_steps(count)
                self.physical_offset[name] += count - aligned
                self.model.positions[name] = aligned
        if servos and servo_fraction > 0.0:
            self.model.apply("SERVO", servos, servo_fraction)
            self.twin.set_servos(servos, servo_fraction)

    def _apply_partial(self, motion: Motion, fraction: float) -> None:
        """A motion cut short (e-stop, reset): the twin records what physically happened."""
        try:
            self._apply(motion, fraction)
        except TwinFaultError as exc:
            self._log("fault", code=exc.code, message=str(exc), line=motion.command.line)

    def _finish(self, motion: Motion) -> list[bytes]:
        self.running.remove(motion)
        self.last_end = max(self.last_end, motion.end)
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
        if fault is not None:
            self.running = []
            return self._fault(fault, motion.command.line)
        if callable(self.on_twin):
            self.on_twin(self)
        return [proto.report("done", motion.command.line, t=f"{motion.end:.3f}",
                             start=round(1000 * (motion.start - self.booted)),
                             end=round(1000 * (motion.end - self.booted))).encode()]

    # --- connection events ------------------------------------------------------------------
    def disconnected(self, now: float) -> None:
        """The host went away: finish the running motion, discard the waiting queue."""
        self._log("disconnect", t=now, discarded=len(self.waiting))
        self.waiting.clear()
        self.expected = (self.running[-1].command.line if self.running else self.executed) + 1
        self.resend_pending = False

    def reset(self, now: float, counts_kept: bool = True) -> bytes:
        """A reboot: new boot id, queue and line numbers gone; the motion in progress stops
        where it is and the cube stays as it is. ``counts_kept``: a watchdog reset, whose
        step counts survive in RAM the start-up leaves alone; False: a power-up, the counts
        restart at 0 wherever the arms stand (only a home switch finds them again)."""
        for motion in self._motions_running():
            self._apply_partial(motion, min(1.0, max(0.0, now - motion.start) / max(
                1e-9, motion.end - motion.start)))
        self.boot_id = uuid.uuid4().hex[:8]
        # the rebooted firmware knows of no fault; what stands misaligned stays so physically
        self.twin.fault = None
        if not counts_kept:
            for name in self.physical_offset:
                self.physical_offset[name] += self.model.positions[name]
                self.model.positions[name] = 0.0
        self._boot_state()
        self.last_end = self.booted = now
        self._log("boot", fw=FIRMWARE_NAME, version=FIRMWARE_VERSION, reason="reset")
        return self.banner()


def _overlap(command: proto.Command) -> int:
    """A checked MOVE's ``ov=<steps>`` (0 without one)."""
    for arg in command.args:
        key, equals, steps = arg.partition("=")
        if equals and key == OVERLAP_FIELD:
            return int(steps)
    return 0


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
