"""The largest safe corner cut: step a profile's ``overlap_deg`` up until the cube jams, then
back off by a margin (`robocell calibrate --overlap`).

A trial runs a program of perpendicular moves, each with ``ov=`` for the overlap tried (the
firmware's planner queue cuts the corners), and reports the jam if the cube took one. In
simulation the trial runs on the firmware simulator with the simulated robot's physics file
(`FirmwareCore`: the same code and physics as the cell's firmware-sim); on hardware the
search never goes past the profile's declared overlap (``limit_deg``): a jam there is a
real cube caught between two layers.

The margin (`MARGIN_DEG`, 3 degrees) is what a real cube's tolerance loses to wear, to
lubricant and to a stepper's lag behind its commanded step at speed; the simulated cube's
tolerance is exact, so the largest overlap it takes is where a real cube starts to catch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from robocell.common.profile import Profile
from robocell.robot import protocol as proto
from robocell.robot.motion import DEGREES_PER_REV, OVERLAP_FIELD, Motor, load_motors
from robocell.robot.physics import Physics
from robocell.services.firmware.simulator import FirmwareCore

MARGIN_DEG = 3.0
"""Backed off the largest overlap the simulated cube took (see the module docstring)."""
STEP_DEG = 1.0
"""How much each trial adds to the overlap."""
TRIAL_REPEATS = 3
"""Each perpendicular pair runs this many times per trial."""

Trial = Callable[[float], "str | None"]
"""Runs the timing program at an overlap (degrees): None, or the jam it caused."""


@dataclass(frozen=True)
class OverlapFound:
    """The outcome: the safe overlap to declare, what the cube took, and where it jammed."""

    safe_deg: float
    largest_ok_deg: float
    jammed_at_deg: float | None
    jam: str | None
    trials: int


def probe_program(motors: dict[str, Motor], overlap_deg: float) -> list[str]:
    """Every stepper's quarter and half turn followed by one of each perpendicular stepper,
    the follower with ``ov=`` of the overlap (in the leader's steps), TRIAL_REPEATS times."""
    steppers = [m for m in motors.values() if m.kind == "stepper" and m.axis is not None]
    body = []
    for leader in steppers:
        ov = math.floor(overlap_deg * leader.steps_per_rev / DEGREES_PER_REV + 1e-9)
        for follower in steppers:
            if follower.axis == leader.axis:
                continue
            for degrees in (90, 180):
                body.append(f"MOVE {leader.name}:{leader.steps(degrees)}")
                body.append(f"MOVE {follower.name}:{follower.steps(-90)} {OVERLAP_FIELD}={ov}")
                body.append(f"MOVE {follower.name}:{follower.steps(90)}")
                body.append(f"MOVE {leader.name}:{leader.steps(-degrees)}")
    return body * TRIAL_REPEATS


def simulated_trial(profile: Profile, physics: Physics | None) -> Trial:
    """A trial on the firmware simulator with the simulated robot's physics."""
    motors = load_motors(profile)

    def run(overlap_deg: float) -> str | None:
        core = FirmwareCore(profile, physics=physics)
        now = 0.0
        for n, text in enumerate(probe_program(motors, overlap_deg), 1):
            core.queue_size = n + 1
            core.line(proto.frame(f"N{n} {text}")[:-1], now)
        while core.state != "fault":
            deadline = core.next_deadline()
            if deadline is None:
                return None
            for raw in core.advance(deadline):
                report = proto.parse_report(proto.unframe(raw))
                if report.kind == "fault":
                    return report.text()
        return str(core.twin.fault)

    return run


def find_safe_overlap(trial: Trial, limit_deg: float | None = None,
                      start_deg: float = STEP_DEG, step_deg: float = STEP_DEG,
                      margin_deg: float = MARGIN_DEG) -> OverlapFound:
    """Step the overlap up from ``start_deg`` until a trial jams (or ``limit_deg``, never
    passed: on hardware the declared value); the safe overlap is the largest that did not
    jam less ``margin_deg`` (a search stopped by the limit keeps the limit: it never jammed)."""
    ceiling = limit_deg if limit_deg is not None else 90.0 - step_deg
    largest_ok = 0.0
    overlap = start_deg
    trials = 0
    while overlap <= ceiling + 1e-9:
        trials += 1
        jam = trial(overlap)
        if jam is not None:
            safe = max(0.0, largest_ok - margin_deg)
            return OverlapFound(round(safe, 3), largest_ok, overlap, jam, trials)
        largest_ok = overlap
        overlap += step_deg
    safe = largest_ok if limit_deg is not None else max(0.0, largest_ok - margin_deg)
    return OverlapFound(round(safe, 3), largest_ok, None, None, trials)
