"""Physics: how a simulated robot really moves where it differs from what its profile
believes, read from a TOML file (docs/robot-physics.md).

```toml
[defaults]              # every motor of the profile
accel_scale = 0.55      # or accel_dps2 = ...: the true acceleration (steppers)
speed_scale = 0.9       # or speed_dps = ...: the true top speed
settle_ms = 28          # the true settle time after a move
start_latency_ms = 4    # from a command starting to the first step
[motors.R]              # one motor: the same keys, over the defaults
speed_scale = 0.8
[cube]
cut_tolerance_deg = 17  # how far from aligned a layer may be when a perpendicular one starts
```

`Physics.apply` turns the profile's motors into the true ones; the firmware simulator
moves by those, the host keeps predicting with the profile's. With no file the simulated
robot is its profile.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from robocell.errors import RobocellError
from robocell.robot.motion import Motor

MOTOR_KEYS = ("accel_scale", "accel_dps2", "speed_scale", "speed_dps", "settle_ms",
              "start_latency_ms")
SECTIONS = ("defaults", "motors", "cube")
CUBE_KEYS = ("cut_tolerance_deg",)
STEPPER_ONLY = ("accel_scale", "accel_dps2")
EXCLUSIVE = (("accel_scale", "accel_dps2"), ("speed_scale", "speed_dps"))


class PhysicsError(RobocellError, ValueError):
    """A physics file that cannot be used; the message names the file, the key and the fix."""

    def __init__(self, path: Path | str, key: str, problem: str) -> None:
        super().__init__(f"{path}: {key}: {problem}")
        self.path, self.key, self.problem = str(path), key, problem


@dataclass(frozen=True)
class Physics:
    """The true motion of a simulated robot: per-motor overrides over the defaults, and the
    cube's tolerance to corner cutting (None: the twin never jams on a cut)."""

    defaults: dict[str, float] = field(default_factory=dict)
    motors: dict[str, dict[str, float]] = field(default_factory=dict)
    cut_tolerance_deg: float | None = None
    path: str = "<physics>"

    def settings(self, name: str) -> dict[str, float]:
        """The keys in force for motor ``name``: its own over the defaults (a motor's
        ``speed_dps`` replaces a default ``speed_scale`` and the other way round)."""
        own = self.motors.get(name, {})
        merged = dict(self.defaults)
        for pair in EXCLUSIVE:
            if any(key in own for key in pair):
                for key in pair:
                    merged.pop(key, None)
        merged.update(own)
        return merged

    def apply(self, motors: dict[str, Motor]) -> dict[str, Motor]:
        """The true motors: each profile motor with this file's speed, acceleration and
        settle (unnamed ones as declared); PhysicsError for a motor the profile lacks."""
        for name in self.motors:
            if name not in motors:
                raise PhysicsError(self.path, f"motors.{name}", "the profile has no such "
                                   f"motor; its motors: {', '.join(motors)}")
        out: dict[str, Motor] = {}
        for name, motor in motors.items():
            keys = self.settings(name)
            speed = keys.get("speed_dps", motor.speed_dps * keys.get("speed_scale", 1.0))
            accel = motor.accel_dps2
            if motor.kind == "stepper":
                accel = keys.get("accel_dps2", motor.accel_dps2 * keys.get("accel_scale", 1.0))
            elif name in self.motors and any(k in self.motors[name] for k in STEPPER_ONLY):
                raise PhysicsError(self.path, f"motors.{name}", "a servo has no acceleration "
                                   "here: give speed_* and settle_ms only")
            out[name] = replace(motor, speed_dps=speed, accel_dps2=accel,
                                settle_ms=keys.get("settle_ms", motor.settle_ms),
                                start_latency_ms=keys.get("start_latency_ms",
                                                          motor.start_latency_ms))
        return out

    def start_latency_ms(self, names: list[str] | tuple[str, ...]) -> float:
        """Latency before the first step of a command moving ``names`` (the largest)."""
        return max((self.settings(n).get("start_latency_ms", 0.0) for n in names),
                   default=self.defaults.get("start_latency_ms", 0.0))


def _motor_keys(table: object, where: str, path: str) -> dict[str, float]:
    if not isinstance(table, dict):
        raise PhysicsError(path, where, "expected a table of " + ", ".join(MOTOR_KEYS))
    out: dict[str, float] = {}
    for key, value in table.items():
        if key not in MOTOR_KEYS:
            raise PhysicsError(path, f"{where}.{key}", "unknown key; known: "
                               + ", ".join(MOTOR_KEYS))
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise PhysicsError(path, f"{where}.{key}", f"{value!r} is not a number")
        positive = key not in ("settle_ms", "start_latency_ms")
        if value < 0 or (positive and value == 0):
            raise PhysicsError(path, f"{where}.{key}",
                               "must be positive" if positive else "must not be negative")
        out[key] = float(value)
    for a, b in EXCLUSIVE:
        if a in out and b in out:
            raise PhysicsError(path, f"{where}.{b}", f"give {a} or {b}, not both")
    return out


def parse_physics(text: str, path: Path | str = "<physics>") -> Physics:
    """A physics file's text, validated (PhysicsError naming file, key and problem)."""
    path = str(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PhysicsError(path, "TOML", str(exc)) from None
    for key in data:
        if key not in SECTIONS:
            raise PhysicsError(path, key, "unknown section; known: " + ", ".join(SECTIONS))
    defaults = _motor_keys(data.get("defaults", {}), "defaults", path)
    raw_motors = data.get("motors", {})
    if not isinstance(raw_motors, dict):
        raise PhysicsError(path, "motors", "expected [motors.NAME] tables")
    motors = {name: _motor_keys(spec, f"motors.{name}", path)
              for name, spec in raw_motors.items()}
    cube = data.get("cube", {})
    if not isinstance(cube, dict):
        raise PhysicsError(path, "cube", "expected a table")
    for key in cube:
        if key not in CUBE_KEYS:
            raise PhysicsError(path, f"cube.{key}", "unknown key; known: " + ", ".join(CUBE_KEYS))
    tolerance = cube.get("cut_tolerance_deg")
    if tolerance is not None and (isinstance(tolerance, bool)
                                  or not isinstance(tolerance, (int, float))
                                  or not 0 <= tolerance <= 90):
        raise PhysicsError(path, "cube.cut_tolerance_deg", "expected degrees in 0..90")
    return Physics(defaults, motors, None if tolerance is None else float(tolerance), path)


def load_physics(path: Path | str) -> Physics:
    """A physics file from disk (PhysicsError if it is missing or invalid)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise PhysicsError(path, "file", f"cannot read it ({exc.strerror}); give an existing "
                           "TOML file (docs/robot-physics.md)") from None
    return parse_physics(text, path)
