"""Calibration with and without the tail plans, on the firmware core alone: how well the
calibrated, overlapping six-motor profile predicts overlapped plans on the simulated robot.

The robot is the firmware simulator's core (`FirmwareCore`, the motion of `robocell
firmware-sim`, no processes or sockets) moving by `robot_timing`'s six-motor physics file.
The timing program of `robocell calibrate` (default runs and plans) is executed on it as the
actuator streams it; the motors are fitted from its whole turns only (the fit before the tail
plans) and from those and the tail plans (`robocell.robot.calibration.tail_program`); each
profile then gets the safe overlap (`--overlap`, 14 degrees on this physics) and predicts
--plans seeded plans of --length random primitives, each run on the robot.

Prints, per fit: the fitted U motor, and the prediction error (measured - predicted, in %
of measured) as mean, p95 |error| and max |error|.

    python bench/calibration_tails.py --plans 24 --length 20
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from robot_timing import PHYSICS  # noqa: E402  (a sibling bench module)

from robocell.common.profile import Profile, load_profile, parse_profile, profile_path
from robocell.robot import protocol as proto
from robocell.robot.calibration import (
    Observations,
    calibrated_text,
    fit,
    tail_program,
    with_overlap,
)
from robocell.robot.motion import load_motors
from robocell.robot.physics import parse_physics
from robocell.robot.timing import predicted_plan_ms
from robocell.services.actuator.executor import Compiler, measured_lines, measured_steps
from robocell.services.cell.history import percentile
from robocell.services.firmware.simulator import FirmwareCore
from robocell.tools.calibrate import DEFAULT_PLANS, DEFAULT_RUNS, DEFAULT_SEED, timing_program

SAFE_OVERLAP_DEG = 14.0
"""`robocell calibrate --overlap` on this physics (cut tolerance 17, margin 3)."""


def execute(profile: Profile, primitives: list[str]) -> tuple[list[float], list[float]]:
    """The plan compiled for ``profile`` run on the simulated robot with the queue kept fed:
    (ms per line, ms per primitive) on the robot's clock."""
    job = Compiler(profile).plan(primitives)
    core = FirmwareCore(load_profile("six-motor"), physics=parse_physics(PHYSICS["six-motor"]))
    spans: dict[int, tuple[int, int] | None] = {}
    sent, now = 0, 0.0
    while len(spans) < len(job.lines):
        out = []
        while sent < len(job.lines) and len(core.waiting) + len(core.running) < core.queue_size:
            out += core.line(proto.frame(f"N{sent + 1} {job.lines[sent].text}")[:-1], now)
            sent += 1
        now = core.next_deadline() or now
        for raw in out + core.advance(now):
            report = proto.parse_report(proto.unframe(raw))
            if report.kind == "done":
                spans[int(report.words[0]) - 1] = proto.motion_span(report)
            elif report.kind != "ok":
                raise SystemExit(f"the robot answered {report}")
    return measured_lines(job, spans), measured_steps(job, spans)


def calibrated(six: Profile, tails: bool) -> Profile:
    observed = Observations()
    for plan in timing_program(six, DEFAULT_RUNS, DEFAULT_PLANS, DEFAULT_SEED):
        observed.add_plan(six, plan, *execute(six, plan))
    if tails:
        for overlap_deg, plan in tail_program(six, DEFAULT_SEED):
            probing = with_overlap(six, overlap_deg)
            observed.add_plan(probing, plan, *execute(probing, plan))
    text = calibrated_text(six, profile_path("six-motor").read_text(), fit(six, observed),
                           "six-motor-fitted")
    return parse_profile(f"{text}\n[motion]\noverlap_deg = {SAFE_OVERLAP_DEG:g}\n",
                         "six-motor-fitted.toml")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=24)
    parser.add_argument("--length", type=int, default=20)
    args = parser.parse_args()
    six = load_profile("six-motor")
    names = [p.name for p in six.primitives]
    print(f"{'fit':<22} {'U speed':>8} {'U accel':>8} {'settle':>7} {'latency':>7} "
          f"{'mean err':>9} {'p95 |err|':>9} {'max |err|':>9}")
    for label, tails in (("whole turns (before)", False), ("with tails (after)", True)):
        profile = calibrated(six, tails)
        u = load_motors(profile)["U"]
        rng = random.Random(47)
        errors = []
        for _ in range(args.plans):
            plan = [rng.choice(names) for _ in range(args.length)]
            measured = sum(execute(profile, plan)[0])
            errors.append(100.0 * (measured - predicted_plan_ms(profile, plan)) / measured)
        absolute = [abs(e) for e in errors]
        print(f"{label:<22} {u.speed_dps:>8.1f} {u.accel_dps2:>8.0f} {u.settle_ms:>7.2f} "
              f"{u.start_latency_ms:>7.2f} {statistics.fmean(errors):>+9.2f} "
              f"{percentile(absolute, 0.95):>9.2f} {max(absolute):>9.2f}")
    print(f"\n{args.plans} plans of {args.length} seeded random primitives, overlap "
          f"{SAFE_OVERLAP_DEG:g} deg; error = (measured - predicted) / measured, %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
