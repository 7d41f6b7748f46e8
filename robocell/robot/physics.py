"""The simulated robot's true physics: a TOML file saying where the robot really moves
unlike what its profile believes (docs/profiles.md, "Physics file").

```toml
[defaults]              # every motor of the profile
accel_scale = 0.55      # or accel_dps2 = ...: the true acceleration
speed_scale = 0.8       # or speed_dps = ...
settle_ms = 28          # the true settle time after a move (servos)
start_latency_ms = 4    # from a command's arrival to the first step
[motors.R]              # one motor: the same keys
speed_scale = 0.8
[cube]
cut_tolerance_deg = 17  # how far from aligned a layer may still be when a perpendicular
                        # layer starts turning without jamming
```

With no file the simulated robot is its profile, and its cube never jams on a cut corner.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from robocell.errors import RobocellError
from robocell.robot.motion import Motor

MOTOR_KEYS = ("accel_scale", "accel_dps2", "speed_scale", "speed_dps", "settle_ms",
              "start_latency_ms")
CUBE_KEYS = ("cut_tolerance_deg",)


class PhysicsError(RobocellError, ValueError):
    """A physics file that cannot be read or says something impossible (names file and key)."""

    def __init__(self, path: Path | str, key: str, problem: str) -> None:
        super().__init__(f"physics file {path}: {key}: {problem}")


@dataclass(frozen=True)
class Physics:
    """The true motion of the simulated robot, where it differs from the profile."""

    path: Path
    defaults: dict[str, float] = field(default_factory=dict)
    motors: dict[str, dict[str, float]] = field(default_factory=dict)
    cut_tolerance_deg: float | None = None

    def apply(self, motors: dict[str, Motor]) -> dict[str, Motor]:
        """The true motor models: the profile's with this file's values in place."""
        unknown = sorted(set(self.motors) - set(motors))
        if unknown:
            raise PhysicsError(self.path, f"motors.{unknown[0]}",
                               f"the profile has no such motor ({', '.join(motors)})")
        return {name: _true_motor(motor, {**self.defaults, **self.motors.get(name, {})})
                for name, motor in motors.items()}

    def start_latency_ms(self, motor: str) -> float:
        return {**self.defaults, **self.motors.get(motor, {})}.get("start_latency_ms", 0.0)


def _true_motor(motor: Motor, values: dict[str, float]) -> Motor:
    change: dict[str, float] = {}
    for key, scaled in (("speed_dps", "speed_scale"), ("accel_dps2", "accel_scale")):
        if key in values:
            change[key] = values[key]
        elif scaled in values:
            change[key] = getattr(motor, key) * values[scaled]
    if "settle_ms" in values and motor.kind == "servo":
        change["settle_ms"] = values["settle_ms"]
    if motor.kind == "servo":
        change.pop("accel_dps2", None)
    return dataclasses.replace(motor, **change)


def _values(table: object, where: str, keys: tuple[str, ...], path: Path) -> dict[str, float]:
    if not isinstance(table, dict):
        raise PhysicsError(path, where, "expected a table")
    out: dict[str, float] = {}
    for key, value in table.items():
        if key not in keys:
            raise PhysicsError(path, f"{where}.{key}", f"unknown key; allowed: {', '.join(keys)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (
                value == 0 and key not in ("settle_ms", "start_latency_ms")):
            raise PhysicsError(path, f"{where}.{key}", "expected a positive number")
        out[key] = float(value)
    for pair in (("accel_scale", "accel_dps2"), ("speed_scale", "speed_dps")):
        if all(k in out for k in pair):
            raise PhysicsError(path, f"{where}.{pair[1]}", f"give {pair[0]} or {pair[1]}, "
                               "not both")
    return out


def load_physics(path: Path | str) -> Physics:
    """Read and check a physics file; PhysicsError naming the file and key."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PhysicsError(path, "file", f"cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PhysicsError(path, "file", f"not TOML: {exc}") from None
    unknown = sorted(set(data) - {"defaults", "motors", "cube"})
    if unknown:
        raise PhysicsError(path, unknown[0], "unknown section; allowed: defaults, motors, cube")
    defaults = _values(data.get("defaults", {}), "defaults", MOTOR_KEYS, path)
    raw_motors = data.get("motors", {})
    if not isinstance(raw_motors, dict):
        raise PhysicsError(path, "motors", "expected [motors.NAME] tables")
    motors = {name: _values(table, f"motors.{name}", MOTOR_KEYS, path)
              for name, table in raw_motors.items()}
    cube = _values(data.get("cube", {}), "cube", CUBE_KEYS, path)
    return Physics(path, defaults, motors, cube.get("cut_tolerance_deg"))
