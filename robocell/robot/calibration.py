"""Calibration: a robot's motors and primitive costs fitted to the times it was measured
to take, and the profile rewritten with the fitted values (`robocell calibrate`).

The timing program is plans of the profile's own primitives in seeded random orders, so each
primitive runs several times after different ones (alone, axial pairs, perpendicular
transitions). The robot reports every firmware line's time (``actuator.result``
``line_ms``); replaying the plan through the profile's motor model tells what each line
moved and by how much. Then, per motor:

- stepper: ``t(d) = trapezoid(d; speed_dps, accel_dps2) + settle_ms`` over the turns of it
  alone, fitted on a grid of speed and acceleration (settle the mean rest, not below 0);
- servo: ``t(change) = |change| / speed_dps + settle_ms``, least squares when it moved by
  two or more different amounts, else its settle with the declared speed.

A command's start latency has no place of its own in a profile: it is fitted into the
settle. A primitive's cost is the mean of its measured times, in the profile's units.

On a robot cutting corners (``overlap_deg``) a MOVE sent with ``ov=`` started before the one
before it ended: its line is measured short, so it is no sample of its motor, and a
primitive run that began with one is no sample of the primitive's cost (the search prices
the saving per transition, `robocell.robot.motion.transition_credit_ms`).
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field, replace

from robocell.common.profile import Profile
from robocell.robot.motion import (
    Motor,
    MotorModel,
    command_targets,
    compile_primitives,
    load_motors,
    overlap_steps,
)

SPEED_GRID = tuple(0.25 * 1.05 ** k for k in range(58))
"""Speed factors over the declared one tried by the stepper fit (0.25x to about 4x)."""
ACCEL_GRID = SPEED_GRID


@dataclass
class Observations:
    """What the timing program measured: per motor, (change in degrees, ms) of every
    command that moved it alone; per primitive, its measured times."""

    motors: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    primitives: dict[str, list[float]] = field(default_factory=dict)

    def add_plan(self, profile: Profile, primitives: list[str], line_ms: list[float],
                 primitive_ms: list[float]) -> None:
        """One executed plan: its lines replayed through the profile's motor model (a MARK
        line, then the primitive's commands, as the actuator streams them)."""
        motors = load_motors(profile)
        compiled = compile_primitives(profile, motors)
        model = MotorModel(motors)
        lines = sum(1 + len(compiled[name].commands) for name in primitives)
        if lines != len(line_ms) or len(primitive_ms) != len(primitives):
            raise ValueError(f"the plan has {lines} lines, the robot measured {len(line_ms)}: "
                             "the actuator runs another profile")
        index = 0
        previous = None
        for name, measured in zip(primitives, primitive_ms, strict=True):
            first = compiled[name].commands[0] if compiled[name].commands else None
            if first is None or not overlap_steps(previous, first, motors):
                self.primitives.setdefault(name, []).append(measured)
            index += 1  # the primitive's MARK line
            for command in compiled[name].commands:
                targets = command_targets(command)
                cut = overlap_steps(previous, command, motors)  # started early: not alone
                previous = command
                if command.verb in ("MOVE", "SERVO") and len(targets) == 1 and not cut:
                    (motor, value), = targets.items()
                    change = (motors[motor].degrees(value) if command.verb == "MOVE"
                              else value - model.positions[motor])
                    self.motors.setdefault(motor, []).append((abs(change), line_ms[index]))
                model.apply(command.verb, targets)
                index += 1


def fit_stepper(motor: Motor, samples: list[tuple[float, float]]) -> Motor:
    """Speed, acceleration and settle fitting a stepper's measured turns best (least squares;
    of equally good fits, the one nearest the declared speed and acceleration)."""
    turns = [(d, ms) for d, ms in samples if d > 0]
    if not turns:
        return motor
    best: tuple[float, float, Motor] | None = None
    for fs in SPEED_GRID:
        for fa in ACCEL_GRID:
            trial = replace(motor, speed_dps=motor.speed_dps * fs,
                            accel_dps2=motor.accel_dps2 * fa, settle_ms=0.0)
            moving = [trial.move_ms(d) for d, _ in turns]
            settle = max(0.0, statistics.fmean(ms - m for (_, ms), m in zip(turns, moving,
                                                                             strict=True)))
            error = sum((m + settle - ms) ** 2 for (_, ms), m in zip(turns, moving, strict=True))
            nearness = abs(math.log(fs)) + abs(math.log(fa))
            key = (round(error, 6), nearness)
            if best is None or key < (best[0], best[1]):
                best = (key[0], nearness, replace(trial, settle_ms=settle))
    assert best is not None
    return best[2]


def fit_servo(motor: Motor, samples: list[tuple[float, float]]) -> Motor:
    """Speed and settle of a servo from its moves: least squares over the amounts it moved
    (the declared speed when it only ever moved by one amount)."""
    if not samples:
        return motor
    changes = sorted({round(c, 6) for c, _ in samples})
    if len(changes) >= 2:
        xs = [c for c, _ in samples]
        ys = [ms for _, ms in samples]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        slope = (sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
                 / sum((x - mx) ** 2 for x in xs))
        if slope > 0:
            return replace(motor, speed_dps=1000.0 / slope,
                           settle_ms=max(0.0, my - slope * mx))
    rest = statistics.fmean(ms - 1000.0 * c / motor.speed_dps for c, ms in samples)
    return replace(motor, settle_ms=max(0.0, rest))


@dataclass(frozen=True)
class Fitted:
    """The outcome: fitted motors and primitive costs (ms), with what they rest on."""

    motors: dict[str, Motor]
    samples: dict[str, list[tuple[float, float]]]
    primitive_ms: dict[str, list[float]]


def fit(profile: Profile, observed: Observations) -> Fitted:
    """Every motor and primitive of ``profile`` fitted to ``observed`` (unmeasured ones as
    declared)."""
    declared = load_motors(profile)
    motors = {}
    for name, motor in declared.items():
        samples = observed.motors.get(name, [])
        motors[name] = (fit_stepper if motor.kind == "stepper" else fit_servo)(motor, samples)
    return Fitted(motors, observed.motors, observed.primitives)


def _spread(values: list[float]) -> str:
    return (f"measured from {len(values)} runs, mean {statistics.fmean(values):.1f} ms, "
            f"spread {min(values):.1f}-{max(values):.1f} ms")


_SECTION = re.compile(r"^\s*\[\[?([^\]]+)\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_]*)\s*=")


def calibrated_text(profile: Profile, text: str, fitted: Fitted, name: str) -> str:
    """The profile file ``text`` with the fitted values in place, each with a comment saying
    what it was measured from, under the new ``name``."""
    unit = profile.unit_ms
    out = [f"# Calibrated by robocell calibrate from profile {profile.name}: motor parameters "
           "and primitive costs", "# fitted to the robot's own measured times (each value "
                                  "says how many runs and their spread).", ""]
    section, prim_index = "", -1
    motor_keys: dict[str, str] = {}

    def motor_lines(motor_name: str) -> dict[str, str]:
        motor, samples = fitted.motors[motor_name], fitted.samples.get(motor_name, [])
        how = (f"fitted to {len(samples)} moves"
               + (f", {min(s[1] for s in samples):.1f}-{max(s[1] for s in samples):.1f} ms"
                  if samples else " (none measured: as declared)"))
        keys = {"speed_dps": f"speed_dps = {motor.speed_dps:.1f}  # {how}",
                "settle_ms": f"settle_ms = {motor.settle_ms:.2f}  # {how}; includes the "
                             "start latency"}
        if motor.kind == "stepper":
            keys["accel_dps2"] = f"accel_dps2 = {motor.accel_dps2:.0f}  # {how}"
        return keys

    def flush_motor() -> None:
        out.extend(motor_keys.values())
        motor_keys.clear()

    for raw in text.splitlines():
        header = _SECTION.match(raw)
        if header:
            flush_motor()
            section = header.group(1).strip()
            if raw.strip().startswith("[[primitives]]"):
                prim_index += 1
            if section.startswith("motors.") and section[7:] in fitted.motors:
                motor_keys.update(motor_lines(section[7:]))
            out.append(raw)
            continue
        key = _KEY.match(raw)
        if key and not section and key.group(2) == "name":
            out.append(f'name = "{name}"')
            continue
        if key and section == "primitives" and key.group(2) == "cost":
            prim = profile.primitives[prim_index]
            runs = fitted.primitive_ms.get(prim.name)
            if runs:
                out.append(f"cost = {statistics.fmean(runs) / unit:.3f}  # {_spread(runs)}")
                continue
        if key and section.startswith("motors.") and key.group(2) in motor_keys:
            out.append(motor_keys.pop(key.group(2)))
            continue
        out.append(raw)
    flush_motor()
    return "\n".join(out) + "\n"
