"""The robot's time as its motion model gives it: each command timed from where the one
before left the motors, corner cutting included (`timed_overlapped`), and a plan's predicted
robot time (`predicted_plan_ms`), with the very functions the simulated robot moves by."""

from __future__ import annotations

from collections.abc import Sequence

from robocell.common.profile import Profile
from robocell.robot.motion import (
    Motor,
    MotorModel,
    WireCommand,
    command_targets,
    compile_primitives,
    load_motors,
    overlapped,
)


def timed_commands(commands: Sequence[WireCommand], model: MotorModel) -> list[float]:
    """Each command's duration (ms) from where the motors are, the model moved past it."""
    out = []
    for command in commands:
        targets = command_targets(command)
        out.append(model.duration_ms(command.verb, targets))
        model.apply(command.verb, targets)
    return out


def timed_overlapped(commands: Sequence[WireCommand], model: MotorModel,
                     motors: dict[str, Motor], previous: WireCommand | None
                     ) -> tuple[list[tuple[WireCommand, float]], WireCommand | None]:
    """Each command as sent after the one before (``ov=`` when it may cut the corner) with
    its duration less what starting early saves, the model moved past it; and the last
    command, for the next primitive's first to overlap."""
    out = []
    for command in commands:
        targets = command_targets(command)
        duration = model.duration_ms(command.verb, targets)
        model.apply(command.verb, targets)
        sent, saved = overlapped(previous, command, motors)
        out.append((sent, duration - saved))
        previous = command
    return out, previous


def predicted_plan_ms(profile: Profile, primitives: Sequence[str]) -> float:
    """A plan's robot time as the profile's motion model predicts it: each primitive's
    motion timed from where the one before left the motors, starting from their home
    positions (where the scan program leaves them, and where the actuator's prediction
    starts), with the very functions the simulated robot moves by. A metric profile (no
    ``[motors]``) has no motion model: the sum of its declared costs. KeyError for a
    primitive the profile lacks."""
    if not profile.data.get("motors"):
        return profile.cost_ms(sum(profile.primitive(name).cost for name in primitives))
    motors = load_motors(profile)
    motions = compile_primitives(profile, motors)
    model = MotorModel(motors)
    total, previous = 0.0, None
    for name in primitives:
        if name not in motions:
            raise KeyError(f"profile {profile.name} has no primitive {name!r}")
        timed, previous = timed_overlapped(motions[name].commands, model, motors, previous)
        total += sum(duration for _, duration in timed)
    return total
