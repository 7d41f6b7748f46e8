"""Motion: a profile's motors and motion strings compiled into firmware commands, with the
time each takes; a plan's primitives and the scan program as command sequences.

Motion strings (the ``motion`` list of a primitive, the ``motion`` of a scan pose) are
written in degrees and named positions, one simultaneous action per string:

``turn R:-90 L:-90``  steppers R and L turn together (degrees; + is clockwise looking at the
                      face the arm holds, as in cube notation) -> ``MOVE R:-200 L:-200``
``grip gR gL``        servos to their ``closed`` position   -> ``SERVO gR:10 gL:10``
``release gB gF``     servos to their ``open`` position     -> ``SERVO gB:90 gF:90``
``set tilt:push``     servos to a named position or degrees -> ``SERVO tilt:120``
``dwell 50``          wait (ms)                             -> ``DWELL 50``

A motor starts ``start_latency_ms`` (optional, default 0) after its command; a stepper then
moves with a trapezoidal speed profile (``speed_dps``, ``accel_dps2``) and settles
(``settle_ms``, optional, default 0); a servo takes ``|change| / speed_dps + settle_ms``.
The host's ETA comes from these functions; the firmware simulator moves by the same ones,
with a physics file's motors in place of the profile's when it has one
(`robocell.robot.physics`).

Corner cutting: ``[motion] overlap_deg`` (every stepper) or ``overlap_deg`` in
``[motors.NAME]`` (that one) lets a MOVE turning layers perpendicular to the MOVE before it
start while that one still has at most ``overlap_deg`` to go. The compiler writes it on the
line as ``ov=<steps>`` (`overlap_steps`); the firmware's planner queue starts the move at
that step, and the time saved (`Motor.time_left_ms`) comes off the move's predicted time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from robocell.common.profile import Profile, ProfileError

MOTOR_KINDS = ("stepper", "servo")
DEGREES_PER_REV = 360.0
QUARTER_DEG = 90.0
FACE_AXES = {"U": 0, "R": 1, "F": 2, "D": 0, "L": 1, "B": 2}
"""The axis of the layer an arm on each face turns (opposite faces share one)."""
OVERLAP_FIELD = "ov"
"""The MOVE argument ``ov=<steps>``: start while the move before has at most that many left."""


@dataclass(frozen=True)
class Motor:
    """One motor of the robot, as declared in the profile's ``[motors.NAME]`` table."""

    name: str
    kind: str
    steps_per_rev: int = 0
    speed_dps: float = 0.0
    accel_dps2: float = 0.0
    settle_ms: float = 0.0
    start_latency_ms: float = 0.0
    """From its command starting to its first step (a move overlapping the one before still
    waits it out: a cut corner saves the settle and the tail, never the latency)."""
    positions: dict[str, float] = field(default_factory=dict)
    home: float = 0.0
    estop_decel_dps2: float = 0.0
    align_steps: int = 0
    """Stepper: steps between aligned (reference) positions; HOME goes to a multiple."""
    home_switch: str | None = None
    """Stepper: name of the reference switch input HOME seeks, if the robot has one."""
    home_dir: int = 0
    """Stepper with a switch: direction of the seek (+1 or -1)."""
    overlap_deg: float = 0.0
    """Stepper: how far from its end a move of this motor may still be when a move of a
    perpendicular layer starts (corner cutting; 0 = never)."""
    axis: int | None = None
    """Stepper on an arm of ``[geometry]``: the axis of the layer it turns (`FACE_AXES`)."""

    def reference_steps(self, position: float) -> float:
        """The aligned position HOME takes a stepper to from ``position`` (steps since boot):
        the nearest multiple of ``align_steps``, a tie going to the higher one."""
        return math.floor((position + self.align_steps / 2) / self.align_steps) * self.align_steps

    def steps(self, degrees: float) -> int:
        """Steps for a turn of ``degrees``; exact or ValueError."""
        exact = degrees * self.steps_per_rev / DEGREES_PER_REV
        if abs(exact - round(exact)) > 1e-9:
            raise ValueError(f"stepper {self.name}: {degrees} degrees is not a whole number of "
                             f"steps at {self.steps_per_rev} steps per revolution")
        return round(exact)

    def degrees(self, steps: float) -> float:
        return steps * DEGREES_PER_REV / self.steps_per_rev

    def position(self, value: str) -> float:
        """A servo position by name (``closed``) or in degrees (``35``)."""
        if value in self.positions:
            return self.positions[value]
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"servo {self.name} has no position {value!r}; named positions: "
                             f"{', '.join(self.positions) or 'none'}") from None

    def move_ms(self, change: float) -> float:
        """Time of a move: ``change`` in degrees (servo: from its current angle)."""
        change = abs(change)
        if change == 0:
            return 0.0 if self.kind == "stepper" else self.start_latency_ms + self.settle_ms
        if self.kind == "servo":
            return self.start_latency_ms + 1000.0 * change / self.speed_dps + self.settle_ms
        return self.start_latency_ms + self.turning_ms(change) + self.settle_ms

    def turning_ms(self, change: float) -> float:
        """Stepper: time of the trapezoid of a move of ``change`` degrees (without its
        settle)."""
        change = abs(change)
        return 1000.0 * self._ramp(change)[2] if change else 0.0

    def _ramp(self, change: float) -> tuple[float, float, float]:
        """(ramp seconds, peak speed, total seconds) of a stepper move of ``change`` deg."""
        v, a = self.speed_dps, self.accel_dps2
        if change >= v * v / a:
            ramp = v / a
            return ramp, v, change / v + ramp
        ramp = math.sqrt(change / a)
        return ramp, a * ramp, 2.0 * ramp

    def time_left_ms(self, change: float, left: float) -> float:
        """Time a stepper move of ``change`` degrees takes over its last ``left`` degrees
        (decelerating, then at its peak speed if ``left`` reaches back past the ramp)."""
        change, left = abs(change), min(abs(left), abs(change))
        if left <= 0:
            return 0.0
        a = self.accel_dps2
        ramp, peak, _ = self._ramp(change)
        braking = 0.5 * a * ramp * ramp
        if left <= braking:
            return 1000.0 * math.sqrt(2.0 * left / a)
        if left <= change - braking:
            return 1000.0 * (ramp + (left - braking) / peak)
        return self.turning_ms(change) - 1000.0 * math.sqrt(2.0 * (change - left) / a)

    def travel(self, change: float, elapsed_ms: float) -> tuple[float, float]:
        """(speed in deg/s, degrees turned) ``elapsed_ms`` into a stepper move of ``change``
        degrees."""
        change = abs(change)
        if change == 0:
            return 0.0, 0.0
        a = self.accel_dps2
        ramp, peak, total = self._ramp(change)
        t = min(max(elapsed_ms / 1000.0, 0.0), total)
        if t < ramp:
            return a * t, 0.5 * a * t * t
        if t <= total - ramp:
            return peak, 0.5 * peak * ramp + peak * (t - ramp)
        left = total - t
        return a * left, change - 0.5 * a * left * left

    def emergency_stop(self, change: float, elapsed_ms: float) -> tuple[float, float]:
        """E-stop ``elapsed_ms`` into a stepper move of ``change`` degrees: (ms until it
        stands still, fraction of the move done by then), braking at ``estop_decel_dps2``."""
        change = abs(change)
        if change == 0:
            return 0.0, 1.0
        brake = self.estop_decel_dps2 or self.accel_dps2
        speed, done = self.travel(change, elapsed_ms)
        stop_s = speed / brake
        done += speed * speed / (2.0 * brake)
        return 1000.0 * stop_s, min(1.0, done / change)


def _number(table: dict, key: str, where: str, path: object, positive: bool = True) -> float:
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProfileError(path, f"{where}.{key}", "missing or not a number")
    if positive and value <= 0:
        raise ProfileError(path, f"{where}.{key}", "must be positive")
    return float(value)


def load_motors(profile: Profile) -> dict[str, Motor]:
    """The ``[motors]`` section, validated (ProfileError naming file, key and problem)."""
    raw = profile.data.get("motors")
    path = profile.path
    if not isinstance(raw, dict) or not raw:
        raise ProfileError(path, "motors", "missing: the actuator needs the robot's motors")
    overlap = _default_overlap(profile)
    axes = _stepper_axes(profile)
    motors: dict[str, Motor] = {}
    for name, spec in raw.items():
        where = f"motors.{name}"
        if not isinstance(spec, dict):
            raise ProfileError(path, where, "expected a table")
        if not name.isidentifier():
            raise ProfileError(path, where, "motor names are letters, digits and _")
        kind = spec.get("kind")
        if kind not in MOTOR_KINDS:
            raise ProfileError(path, f"{where}.kind", f"{kind!r} is not one of {MOTOR_KINDS}")
        if kind == "stepper":
            spr = spec.get("steps_per_rev")
            if not isinstance(spr, int) or isinstance(spr, bool) or spr <= 0:
                raise ProfileError(path, f"{where}.steps_per_rev", "expected a positive integer")
            motors[name] = Motor(
                name, kind, steps_per_rev=spr,
                speed_dps=_number(spec, "speed_dps", where, path),
                accel_dps2=_number(spec, "accel_dps2", where, path),
                estop_decel_dps2=(_number(spec, "estop_decel_dps2", where, path)
                                  if "estop_decel_dps2" in spec else 0.0),
                settle_ms=(_number(spec, "settle_ms", where, path, positive=False)
                           if "settle_ms" in spec else 0.0),
                start_latency_ms=_latency(spec, where, path),
                overlap_deg=(_overlap(spec["overlap_deg"], f"{where}.overlap_deg", path)
                             if "overlap_deg" in spec else overlap),
                axis=axes.get(name),
                **_stepper_homing(spec, spr, where, path))
        else:
            if "overlap_deg" in spec:
                raise ProfileError(path, f"{where}.overlap_deg", "only steppers overlap their "
                                   "moves; remove it from this servo")
            positions = spec.get("positions")
            if not isinstance(positions, dict) or not positions or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool)
                    for v in positions.values()):
                raise ProfileError(path, f"{where}.positions", "expected a table of named "
                                   "angles, e.g. {open = 90, closed = 10}")
            home = spec.get("home")
            if home not in positions:
                raise ProfileError(path, f"{where}.home",
                                   f"expected one of the named positions {sorted(positions)}")
            motors[name] = Motor(
                name, kind, speed_dps=_number(spec, "speed_dps", where, path),
                settle_ms=_number(spec, "settle_ms", where, path, positive=False),
                start_latency_ms=_latency(spec, where, path),
                positions={k: float(v) for k, v in positions.items()},
                home=float(positions[home]))
    return motors


def _latency(spec: dict, where: str, path: object) -> float:
    return (_number(spec, "start_latency_ms", where, path, positive=False)
            if "start_latency_ms" in spec else 0.0)


def _overlap(value: object, where: str, path: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            0 <= value < QUARTER_DEG):
        raise ProfileError(path, where, f"expected degrees from 0 to below {QUARTER_DEG:g} "
                           "(how far from its end a move may be when a perpendicular one "
                           "starts)")
    return float(value)


def _default_overlap(profile: Profile) -> float:
    """``[motion] overlap_deg``: every stepper's overlap unless its motor sets its own."""
    section = profile.data.get("motion", {})
    if not isinstance(section, dict) or set(section) - {"overlap_deg"}:
        raise ProfileError(profile.path, "motion", "expected a table with overlap_deg only")
    if "overlap_deg" not in section:
        return 0.0
    return _overlap(section["overlap_deg"], "motion.overlap_deg", profile.path)


def _stepper_axes(profile: Profile) -> dict[str, int]:
    """Stepper name -> axis of the layer its arm turns, from ``[[geometry.arms]]`` (checked
    in full by the twin's loader; entries it would refuse are skipped here)."""
    geometry = profile.data.get("geometry")
    arms = geometry.get("arms", []) if isinstance(geometry, dict) else []
    return {arm["stepper"]: FACE_AXES[arm["face"]] for arm in arms
            if isinstance(arm, dict) and isinstance(arm.get("stepper"), str)
            and arm.get("face") in FACE_AXES}


def _stepper_homing(spec: dict, steps_per_rev: int, where: str, path: object) -> dict:
    """A stepper's homing keys (docs/serial-protocol.md, "Homing"): ``home_align_steps``
    (default a quarter turn), optional ``home_switch`` with ``home_dir``."""
    align = spec.get("home_align_steps", steps_per_rev // 4 if steps_per_rev % 4 == 0 else 0)
    if (not isinstance(align, int) or isinstance(align, bool) or align <= 0
            or steps_per_rev % align):
        raise ProfileError(path, f"{where}.home_align_steps", "expected a positive integer that "
                           f"divides steps_per_rev ({steps_per_rev}), e.g. a quarter turn")
    switch = spec.get("home_switch")
    direction = spec.get("home_dir", 0)
    if switch is not None:
        if not isinstance(switch, str) or not switch:
            raise ProfileError(path, f"{where}.home_switch", "expected the switch input's name")
        if direction not in (1, -1) or isinstance(direction, bool):
            raise ProfileError(path, f"{where}.home_dir", "expected 1 or -1: the direction "
                               "the stepper turns to find its home switch")
    elif "home_dir" in spec:
        raise ProfileError(path, f"{where}.home_dir", "only with home_switch")
    return {"align_steps": align, "home_switch": switch, "home_dir": direction or 0}


@dataclass(frozen=True)
class WireCommand:
    """A queued firmware command before it gets its line number: ``MOVE R:-200``."""

    verb: str
    args: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join((self.verb, *self.args))


def compile_motion(text: str, motors: dict[str, Motor]) -> WireCommand:
    """One motion string -> one firmware command (ValueError naming the problem)."""
    parts = text.split()
    if not parts:
        raise ValueError("empty motion string")
    verb, args = parts[0], parts[1:]
    if verb == "dwell":
        if len(args) != 1 or not args[0].replace(".", "", 1).isdigit():
            raise ValueError(f"{text!r}: dwell takes one duration in ms")
        return WireCommand("DWELL", (args[0],))
    if not args:
        raise ValueError(f"{text!r}: no motors named")
    if verb == "turn":
        out = []
        for arg in args:
            name, sep, value = arg.partition(":")
            motor = _motor(motors, name, "stepper", text)
            if not sep:
                raise ValueError(f"{text!r}: write turn {name}:DEGREES")
            out.append(f"{name}:{motor.steps(float(value))}")
        return WireCommand("MOVE", tuple(out))
    if verb in ("grip", "release"):
        position = "closed" if verb == "grip" else "open"
        out = []
        for name in args:
            motor = _motor(motors, name, "servo", text)
            out.append(f"{name}:{motor.position(position):g}")
        return WireCommand("SERVO", tuple(out))
    if verb == "set":
        out = []
        for arg in args:
            name, sep, value = arg.partition(":")
            motor = _motor(motors, name, "servo", text)
            if not sep:
                raise ValueError(f"{text!r}: write set {name}:POSITION")
            out.append(f"{name}:{motor.position(value):g}")
        return WireCommand("SERVO", tuple(out))
    raise ValueError(f"{text!r}: unknown action {verb!r}; use turn, grip, release, set, dwell")


def _motor(motors: dict[str, Motor], name: str, kind: str, text: str) -> Motor:
    motor = motors.get(name)
    if motor is None:
        raise ValueError(f"{text!r}: no motor {name!r}; motors: {', '.join(motors)}")
    if motor.kind != kind:
        raise ValueError(f"{text!r}: motor {name!r} is a {motor.kind}, not a {kind}")
    return motor


class MotorModel:
    """Where every motor is and how long a command takes from there (host ETA and firmware
    simulator share it)."""

    def __init__(self, motors: dict[str, Motor]) -> None:
        self.motors = motors
        self.positions: dict[str, float] = {
            name: (m.home if m.kind == "servo" else 0.0) for name, m in motors.items()}

    def duration_ms(self, verb: str, targets: dict[str, float]) -> float:
        """Duration of MOVE (relative steps) / SERVO (absolute degrees) / DWELL / MARK."""
        if verb == "MARK":
            return 0.0
        if verb == "DWELL":
            return float(targets.get("ms", 0.0))
        longest = 0.0
        for name, value in targets.items():
            motor = self.motors[name]
            if verb == "MOVE":
                change = motor.degrees(value)
            else:
                change = value - self.positions[name]
            longest = max(longest, motor.move_ms(change))
        return longest

    def apply(self, verb: str, targets: dict[str, float], fraction: float = 1.0) -> None:
        """Advance the positions by a command (``fraction`` < 1 when stopped part way)."""
        for name, value in targets.items():
            if verb == "MOVE":
                self.positions[name] += value * fraction
            elif verb == "SERVO":
                start = self.positions[name]
                self.positions[name] = start + (value - start) * fraction


def command_targets(command: WireCommand) -> dict[str, float]:
    """The ``name:value`` arguments of a MOVE/SERVO command (``{"ms": d}`` for DWELL)."""
    if command.verb == "DWELL":
        return {"ms": float(command.args[0])}
    if command.verb == "MARK":
        return {}
    return {name: float(value) for name, sep, value in (a.partition(":") for a in command.args)
            if sep}


def command_overlap(command: WireCommand) -> int:
    """The ``ov=<steps>`` of a MOVE (0 without one)."""
    for arg in command.args:
        key, sep, value = arg.partition("=")
        if sep and key == OVERLAP_FIELD:
            return int(value)
    return 0


def move_axes(command: WireCommand, motors: dict[str, Motor]) -> frozenset[int] | None:
    """The layer axes a MOVE turns; None unless every motor it turns is on an arm."""
    axes = set()
    for name, steps in command_targets(command).items():
        axis = motors[name].axis
        if axis is None:
            return None
        if steps:
            axes.add(axis)
    return frozenset(axes)


def overlap_steps(previous: WireCommand | None, command: WireCommand,
                  motors: dict[str, Motor]) -> int:
    """How many steps before ``previous`` ends ``command`` may start (its ``ov=``): both
    MOVEs of layers on perpendicular axes, the least of ``previous``'s motors' overlaps
    (each in its own steps); 0 when they may not overlap."""
    if previous is None or previous.verb != "MOVE" or command.verb != "MOVE":
        return 0
    before, after = move_axes(previous, motors), move_axes(command, motors)
    if not before or not after or before & after:
        return 0
    turning = [motors[n] for n, v in command_targets(previous).items() if v]
    return min((math.floor(m.overlap_deg * m.steps_per_rev / DEGREES_PER_REV + 1e-9)
                for m in turning), default=0)


def overlap_saving_ms(previous: WireCommand, steps: int, motors: dict[str, Motor]) -> float:
    """How much earlier than ``previous``'s end a move with ``ov=steps`` starts: when every
    motor of ``previous`` has at most ``steps`` steps to go."""
    if steps <= 0:
        return 0.0
    ends = []
    for name, value in command_targets(previous).items():
        motor = motors[name]
        change = motor.degrees(value)
        left = motor.time_left_ms(change, motor.degrees(steps))
        ends.append((motor.move_ms(change),
                     motor.start_latency_ms + motor.turning_ms(change) - left))
    return max(d for d, _ in ends) - max(start for _, start in ends)


def overlapped(previous: WireCommand | None, command: WireCommand,
               motors: dict[str, Motor]) -> tuple[WireCommand, float]:
    """``command`` as sent after ``previous`` (with ``ov=<steps>`` when it may overlap it)
    and the milliseconds it saves by starting early."""
    steps = overlap_steps(previous, command, motors)
    if not steps or previous is None:
        return command, 0.0
    return (WireCommand(command.verb, (*command.args, f"{OVERLAP_FIELD}={steps}")),
            overlap_saving_ms(previous, steps, motors))


@dataclass(frozen=True)
class PrimitiveMotion:
    """The firmware commands of one primitive."""

    name: str
    commands: tuple[WireCommand, ...]


def compile_primitives(profile: Profile, motors: dict[str, Motor] | None = None
                       ) -> dict[str, PrimitiveMotion]:
    """Every primitive's motion compiled; ProfileError for a primitive without motion or a
    motion string that names no such motor or no whole step."""
    motors = motors if motors is not None else load_motors(profile)
    out: dict[str, PrimitiveMotion] = {}
    for prim in profile.primitives:
        where = f"primitives[{prim.index}].motion"
        if not prim.motion:
            raise ProfileError(profile.path, where,
                               f"primitive {prim.name!r} has no motion; the actuator cannot run it")
        commands = []
        for text in prim.motion:
            try:
                commands.append(compile_motion(text, motors))
            except ValueError as exc:
                raise ProfileError(profile.path, where, str(exc)) from None
        out[prim.name] = PrimitiveMotion(prim.name, tuple(commands))
    return out


def transition_credit_ms(primitives: dict[str, PrimitiveMotion],
                         motors: dict[str, Motor]) -> float:
    """What corner cutting takes off every primitive after one of another axis, for a robot
    whose every primitive is one MOVE turning layers in place: the least time saved over all
    perpendicular pairs (a pair saving more is priced a little dear). 0 for any other robot
    (a primitive of several commands, or servos) and without overlap."""
    moves = list(primitives.values())
    if not moves or any(len(p.commands) != 1 or p.commands[0].verb != "MOVE" for p in moves):
        return 0.0
    least = math.inf
    for before in moves:
        for after in moves:
            first, then = before.commands[0], after.commands[0]
            axes, next_axes = move_axes(first, motors), move_axes(then, motors)
            if axes is None or next_axes is None:
                return 0.0
            if axes and next_axes and not axes & next_axes:
                least = min(least, overlapped(first, then, motors)[1])
    return 0.0 if least == math.inf else least


@dataclass(frozen=True)
class View:
    """What the camera sees at a pose: at robot face ``at`` it sees cube face ``face`` (named
    by where that face is when the scan ends) turned clockwise by ``rotation`` quarter turns."""

    at: str
    face: str
    rotation: int


@dataclass(frozen=True)
class ScanPose:
    """One pose of the scan program: the motion that reaches it and what is in view there."""

    index: int
    name: str
    commands: tuple[WireCommand, ...]
    views: tuple[View, ...]


@dataclass(frozen=True)
class ScanProgram:
    poses: tuple[ScanPose, ...]
    finish: tuple[WireCommand, ...]

    @property
    def faces(self) -> list[str]:
        return [view.face for pose in self.poses for view in pose.views]


def load_scan(profile: Profile, motors: dict[str, Motor] | None = None) -> ScanProgram:
    """The ``[scan]`` section: ``[[scan.poses]]`` with ``name``, ``motion`` (list of motion
    strings run before the pose is held), ``views`` (list of ``{at, face, rotation}``), and
    ``finish`` (motion strings after the last pose, for example back to the start orientation;
    optional, since the views name faces by where they are when the scan ends)."""
    motors = motors if motors is not None else load_motors(profile)
    raw = profile.data.get("scan")
    path = profile.path
    if not isinstance(raw, dict) or not isinstance(raw.get("poses"), list) or not raw["poses"]:
        raise ProfileError(path, "scan.poses", "missing: the scan program needs its poses")

    def compile_list(items: object, where: str) -> tuple[WireCommand, ...]:
        if not isinstance(items, list) or not all(isinstance(t, str) for t in items):
            raise ProfileError(path, where, "expected a list of motion strings")
        try:
            return tuple(compile_motion(t, motors) for t in items)
        except ValueError as exc:
            raise ProfileError(path, where, str(exc)) from None

    poses = []
    seen: list[str] = []
    for i, item in enumerate(raw["poses"]):
        where = f"scan.poses[{i}]"
        if not isinstance(item, dict):
            raise ProfileError(path, where, "expected a table")
        views = []
        raw_views = item.get("views")
        if not isinstance(raw_views, list) or not raw_views:
            raise ProfileError(path, f"{where}.views", "expected a list of {at, face, rotation}")
        for j, v in enumerate(raw_views):
            vw = f"{where}.views[{j}]"
            if not isinstance(v, dict) or v.get("at") not in tuple("URFDLB") or v.get(
                    "face") not in tuple("URFDLB") or v.get("rotation") not in (0, 1, 2, 3):
                raise ProfileError(path, vw, "expected at and face in U R F D L B and "
                                   "rotation 0..3 (clockwise quarter turns)")
            views.append(View(v["at"], v["face"], v["rotation"]))
            seen.append(v["face"])
        poses.append(ScanPose(i, str(item.get("name", f"pose{i}")),
                              compile_list(item.get("motion", []), f"{where}.motion"),
                              tuple(views)))
    if sorted(seen) != sorted("URFDLB"):
        raise ProfileError(path, "scan.poses", f"the views must show each face once; they show "
                           f"{''.join(seen)}")
    return ScanProgram(tuple(poses), compile_list(raw.get("finish", []), "scan.finish"))
