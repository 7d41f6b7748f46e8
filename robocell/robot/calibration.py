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

Whole moves cannot tell a stepper's acceleration from its settle and its start latency
(``t = latency + d / v + v / a + settle`` once it reaches full speed): every split fits
them, but a cut corner saves the settle and the last ``ov`` degrees only. So the timing
program also runs perpendicular pairs cut at two probe overlaps (`tail_program`). The
firmware starts the second move when the first has ``ov`` steps to go, and reports each
move's start (its command) and end (settled) on its own clock; a line's measured time
counts from the latest end before it, so an early-started move measures its whole time
less the tail of the one before: ``tail(ov) = settle + time over the last ov degrees``
(``sqrt(2 ov / a)`` within the braking ramp). Two overlaps give the acceleration and the
settle; the whole moves then give the speed and the start latency. The joint fit is least
squares over speed and acceleration (a grid, then refined), settle and latency solved for
each. Without tails (a robot with no perpendicular single-motor moves) the latency is
fitted into the settle as before. A primitive's cost is the mean of its measured times, in
the profile's units.

On a robot cutting corners (``overlap_deg``) a MOVE sent with ``ov=`` started before the one
before it ended: its line is measured short, so it is no sample of its motor (it is one of
the tail of the motor before it), and a primitive run that began with one is no sample of
the primitive's cost (the search prices the saving per transition,
`robocell.robot.motion.transition_credit_ms`).
"""

from __future__ import annotations

import math
import random
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
REFINE_STEPS = (1.05 ** 0.25, 1.05 ** 0.05, 1.05 ** 0.01, 1.05 ** 0.002)
"""Ratios of the finer grids around the best joint fit (11 x 11 points each)."""
PROBE_OVERLAP_DEG = (4.5, 9.0)
"""The timing program's corner cuts (degrees a move has left when the next starts): small
enough for any real cube; a profile declaring less probes at half its value and its value."""
PROBE_RUNS = 3
"""Times each single-motor primitive leads a cut pair at each probe overlap."""


@dataclass(frozen=True)
class Tail:
    """One move started early: ``before`` (turning ``change`` degrees) had ``left`` degrees
    to go when ``after`` (turning ``after_change``) started; ``after``'s line measured
    ``line_ms`` (from ``before``'s end)."""

    before: str
    change: float
    left: float
    after: str
    after_change: float
    line_ms: float


@dataclass
class Observations:
    """What the timing program measured: per motor, (change in degrees, ms) of every
    command that moved it alone; per primitive, its measured times."""

    motors: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    primitives: dict[str, list[float]] = field(default_factory=dict)
    tails: list[Tail] = field(default_factory=list)

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
                before = command_targets(previous) if previous is not None else {}
                previous = command
                if command.verb in ("MOVE", "SERVO") and len(targets) == 1:
                    (motor, value), = targets.items()
                    change = (motors[motor].degrees(value) if command.verb == "MOVE"
                              else value - model.positions[motor])
                    if not cut:
                        self.motors.setdefault(motor, []).append((abs(change), line_ms[index]))
                    elif len(before) == 1:
                        (first, steps), = before.items()
                        self.tails.append(Tail(
                            first, abs(motors[first].degrees(steps)),
                            motors[first].degrees(cut), motor, abs(change), line_ms[index]))
                model.apply(command.verb, targets)
                index += 1


def tail_samples(observed: Observations) -> dict[str, list[tuple[float, float, float]]]:
    """Per motor, (change, degrees left, ms) of its measured tails: the time it took over its
    last degrees plus its settle, which is what the move after it measured short of that
    move alone (the mean of its motor's whole moves by the same amount)."""
    alone: dict[tuple[str, float], list[float]] = {}
    for motor, samples in observed.motors.items():
        for change, ms in samples:
            alone.setdefault((motor, round(change, 6)), []).append(ms)
    out: dict[str, list[tuple[float, float, float]]] = {}
    for tail in observed.tails:
        whole = alone.get((tail.after, round(tail.after_change, 6)))
        if whole:
            out.setdefault(tail.before, []).append(
                (tail.change, tail.left, statistics.fmean(whole) - tail.line_ms))
    return out


def _joint_trial(motor: Motor, turns: list[tuple[float, float]],
                 tails: list[tuple[float, float, float]], speed: float,
                 accel: float) -> tuple[float, Motor]:
    """(squared error, motor) of a speed and acceleration: settle from the tails, latency
    from the whole moves, neither below 0."""
    trial = replace(motor, speed_dps=speed, accel_dps2=accel, settle_ms=0.0,
                    start_latency_ms=0.0)
    moving = [trial.turning_ms(d) for d, _ in turns]
    braking = [trial.time_left_ms(d, left) for d, left, _ in tails]
    settle = max(0.0, statistics.fmean(ms - b for (_, _, ms), b in
                                       zip(tails, braking, strict=True)))
    latency = max(0.0, statistics.fmean(ms - m for (_, ms), m in
                                        zip(turns, moving, strict=True)) - settle)
    error = (sum((m + latency + settle - ms) ** 2 for (_, ms), m in
                 zip(turns, moving, strict=True))
             + sum((b + settle - ms) ** 2 for (_, _, ms), b in zip(tails, braking, strict=True)))
    return error, replace(trial, settle_ms=settle, start_latency_ms=latency)


def fit_stepper_tails(motor: Motor, samples: list[tuple[float, float]],
                      tails: list[tuple[float, float, float]]) -> Motor:
    """Speed, acceleration, settle and start latency fitting a stepper's whole turns and
    tails best (least squares: a grid over speed and acceleration, then finer ones around
    the best)."""
    turns = [(d, ms) for d, ms in samples if d > 0]
    best = min((_joint_trial(motor, turns, tails, motor.speed_dps * fs, motor.accel_dps2 * fa)
                for fs in SPEED_GRID for fa in ACCEL_GRID), key=lambda trial: trial[0])
    for ratio in REFINE_STEPS:
        centre = best[1]
        best = min((_joint_trial(motor, turns, tails, centre.speed_dps * ratio ** i,
                                 centre.accel_dps2 * ratio ** j)
                    for i in range(-5, 6) for j in range(-5, 6)), key=lambda trial: trial[0])
    return best[1]


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
    tails: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)
    """Per stepper fitted with its latency apart: its tails (change, degrees left, ms)."""


def fit(profile: Profile, observed: Observations) -> Fitted:
    """Every motor and primitive of ``profile`` fitted to ``observed`` (unmeasured ones as
    declared); a stepper with tails at two or more overlaps and whole turns by two or more
    amounts with its settle and start latency apart."""
    declared = load_motors(profile)
    tails = tail_samples(observed)
    motors, used = {}, {}
    for name, motor in declared.items():
        samples = observed.motors.get(name, [])
        own = tails.get(name, [])
        if (motor.kind == "stepper" and len({round(left, 6) for _, left, _ in own}) >= 2
                and len({round(d, 6) for d, _ in samples if d > 0}) >= 2):
            motors[name], used[name] = fit_stepper_tails(motor, samples, own), own
        else:
            motors[name] = (fit_stepper if motor.kind == "stepper" else fit_servo)(motor,
                                                                                   samples)
    return Fitted(motors, observed.motors, observed.primitives, used)


def with_overlap(profile: Profile, overlap_deg: float) -> Profile:
    """``profile`` with every stepper cutting corners by ``overlap_deg`` (its name kept:
    the timing program's plans are the robot's own)."""
    motors = {name: {k: v for k, v in spec.items() if k != "overlap_deg"}
              for name, spec in profile.data.get("motors", {}).items()}
    return replace(profile, data={**profile.data, "motors": motors,
                                  "motion": {"overlap_deg": overlap_deg}})


def tail_program(profile: Profile, seed: int, runs: int = PROBE_RUNS,
                 max_deg: float = PROBE_OVERLAP_DEG[-1]) -> list[tuple[float, list[str]]]:
    """Per probe overlap, a plan of the profile's single-motor turns each leading ``runs``
    times, in a seeded order where each turns a layer perpendicular to the one before (so
    each after the first starts early, measuring the tail of the one before). The probes are
    half and all of ``max_deg`` (`calibrate --tail-deg`), or of the profile's own smaller
    ``overlap_deg``. Empty for a robot with no such turns on two axes, or ``max_deg`` 0."""
    if max_deg <= 0:
        return []
    motors = load_motors(profile)
    axis_of = {}
    for name, motion in compile_primitives(profile, motors).items():
        if len(motion.commands) == 1 and motion.commands[0].verb == "MOVE":
            targets = command_targets(motion.commands[0])
            if len(targets) == 1 and motors[next(iter(targets))].axis is not None:
                axis_of[name] = motors[next(iter(targets))].axis
    if len(set(axis_of.values())) < 2:
        return []
    declared = max((m.overlap_deg for m in motors.values()), default=0.0)
    limit = declared if 0 < declared < max_deg else max_deg
    probes = (limit / 2, limit)
    rng = random.Random(seed)
    program = []
    for overlap_deg in probes:
        pool = sorted(axis_of) * runs
        plan = [pool.pop(rng.randrange(len(pool)))]
        while pool:
            fits = [i for i, name in enumerate(pool) if axis_of[name] != axis_of[plan[-1]]]
            if not fits:
                break
            plan.append(pool.pop(rng.choice(fits)))
        program.append((overlap_deg, plan))
    return program


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
        tails = fitted.tails.get(motor_name, [])
        if tails:
            how += f" and {len(tails)} tails (cut at {len({t[1] for t in tails})} overlaps)"
        keys = {"speed_dps": f"speed_dps = {motor.speed_dps:.1f}  # {how}",
                "settle_ms": f"settle_ms = {motor.settle_ms:.2f}  # {how}"
                             + ("" if tails else "; includes the start latency")}
        if motor.kind == "stepper":
            keys["accel_dps2"] = f"accel_dps2 = {motor.accel_dps2:.0f}  # {how}"
        if tails:
            keys["start_latency_ms"] = (f"start_latency_ms = {motor.start_latency_ms:.2f}  "
                                        f"# {how}")
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
