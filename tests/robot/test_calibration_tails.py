"""Calibration of a corner-cutting robot: the timing program's moves started early (``ov=``
at two probe overlaps) measure each motor's tail, which separates its acceleration, settle
and start latency; the profile fitted from them predicts overlapped plans as the simulated
robot (the firmware core moving by a physics file unlike its profile) runs them."""

from __future__ import annotations

import random

import pytest

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
from robocell.services.firmware.simulator import FirmwareCore
from robocell.tools.calibrate import timing_program

PHYSICS = """
[defaults]
accel_dps2 = 23650
speed_dps = 1300
settle_ms = 28
start_latency_ms = 4
[motors.R]
speed_dps = 1040
"""
"""The robot of bench/robot_timing.py: unlike six-motor in acceleration, settle, latency, R."""


def execute(profile: Profile, primitives: list[str]) -> tuple[list[float], list[float]]:
    """The plan compiled for ``profile`` run on the simulated robot, the queue kept fed as
    the actuator keeps it: (ms per line, ms per primitive) on the robot's clock."""
    job = Compiler(profile).plan(primitives)
    core = FirmwareCore(load_profile("six-motor"), physics=parse_physics(PHYSICS))
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
            assert report.kind in ("ok", "done"), report
            if report.kind == "done":
                spans[int(report.words[0]) - 1] = proto.motion_span(report)
    return measured_lines(job, spans), measured_steps(job, spans)


def calibrated(six: Profile) -> Profile:
    observed = Observations()
    for plan in timing_program(six, runs=3, plans=2, seed=1):
        observed.add_plan(six, plan, *execute(six, plan))
    for overlap_deg, plan in tail_program(six, seed=1):
        probing = with_overlap(six, overlap_deg)
        observed.add_plan(probing, plan, *execute(probing, plan))
    text = calibrated_text(six, profile_path("six-motor").read_text(), fit(six, observed),
                           "six-motor-fitted")
    return parse_profile(text + "\n[motion]\noverlap_deg = 14\n", "six-motor-fitted.toml")


def test_the_calibrated_profile_predicts_an_overlapped_plan_within_two_percent():
    six = load_profile("six-motor")
    fitted = calibrated(six)
    motors = load_motors(fitted)
    assert motors["U"].accel_dps2 == pytest.approx(23650, rel=0.02)
    assert motors["U"].settle_ms == pytest.approx(28, abs=1.0)
    assert motors["U"].start_latency_ms == pytest.approx(4, abs=1.0)
    rng = random.Random(47)
    names = [p.name for p in six.primitives]
    for _ in range(3):
        plan = [rng.choice(names) for _ in range(20)]
        line_ms, _ = execute(fitted, plan)
        measured = sum(line_ms)
        assert predicted_plan_ms(fitted, plan) == pytest.approx(measured, rel=0.02)


def test_the_tail_program_cuts_only_perpendicular_corners_within_the_probe_overlaps():
    six = load_profile("six-motor")
    program = tail_program(six, seed=3)
    assert len({deg for deg, _ in program}) >= 2
    motors = load_motors(six)
    axes = {p.name: motors[p.motion[0].split()[1].split(":")[0]].axis for p in six.primitives
            if len(p.motion[0].split()) == 2}
    for deg, plan in program:
        assert 0 < deg <= 10
        assert all(axes[a] != axes[b] for a, b in zip(plan, plan[1:], strict=False))


def test_the_tail_program_never_cuts_past_what_it_is_allowed():
    """A robot whose cube must not cut corners (`calibrate --tail-deg 0`) gets no tail plan,
    and a smaller limit is kept, as is a profile's own smaller overlap_deg."""
    six = load_profile("six-motor")
    assert tail_program(six, seed=3, max_deg=0) == []
    assert {deg for deg, _ in tail_program(six, seed=3, max_deg=5)} == {2.5, 5.0}
    text = profile_path("six-motor").read_text(encoding="utf-8")
    declared = parse_profile(text.replace("[motion]", "[motion]\noverlap_deg = 3", 1)
                             if "[motion]" in text else text + "\n[motion]\noverlap_deg = 3\n",
                             profile_path("six-motor"))
    assert {deg for deg, _ in tail_program(declared, seed=3, max_deg=5)} == {1.5, 3.0}


def test_calibrate_refuses_a_tail_limit_that_is_not_a_small_angle(capsys):
    from robocell import cli
    for bad in ("-1", "45", "x"):
        with pytest.raises(SystemExit) as exited:
            cli.main(["calibrate", "--out", "x.toml", "--tail-deg", bad])
        assert exited.value.code == 2
        assert "--tail-deg" in (err := capsys.readouterr().err) and "0 (none) to 15" in err
