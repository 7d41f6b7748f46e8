"""The physics file: how a simulated robot really moves, read and checked, and the firmware
simulator moving by it and reporting each motion's start and end on its own clock."""

from __future__ import annotations

import pytest

from robocell.common.profile import load_profile
from robocell.robot import protocol as proto
from robocell.robot.motion import MotorModel, load_motors
from robocell.robot.physics import PhysicsError, load_physics, parse_physics
from robocell.services.firmware.simulator import FirmwareCore

EXAMPLE = """
[defaults]
accel_scale = 0.55
settle_ms = 28
start_latency_ms = 4
[motors.R]
speed_scale = 0.8
[motors.U]
accel_dps2 = 20000
[cube]
cut_tolerance_deg = 17
"""


def test_the_example_file_gives_the_true_motors_over_the_profiles():
    physics = parse_physics(EXAMPLE, "robot.toml")
    declared = load_motors(load_profile("six-motor"))
    true = physics.apply(declared)
    assert physics.cut_tolerance_deg == 17.0
    assert true["R"].speed_dps == pytest.approx(0.8 * declared["R"].speed_dps)
    assert true["R"].accel_dps2 == pytest.approx(0.55 * declared["R"].accel_dps2)
    assert true["U"].accel_dps2 == 20000.0  # its own value replaces the default scale
    assert true["F"].speed_dps == declared["F"].speed_dps
    assert all(m.settle_ms == 28.0 for m in true.values())
    assert true["F"].move_ms(90) > declared["F"].move_ms(90) + 28
    assert physics.start_latency_ms(["R", "L"]) == 4.0


@pytest.mark.parametrize(("text", "key", "problem"), [
    ("[defaults]\naccel_scale = 0.5\naccel_dps2 = 9000\n", "defaults.accel_dps2", "not both"),
    ("[defaults]\nsped_scale = 0.5\n", "defaults.sped_scale", "unknown key"),
    ("[defaults]\nsettle_ms = -1\n", "defaults.settle_ms", "must not be negative"),
    ("[motors.R]\nspeed_scale = 0\n", "motors.R.speed_scale", "must be positive"),
    ("[cube]\ncut_tolerance_deg = 120\n", "cube.cut_tolerance_deg", "0..90"),
    ("[robot]\nx = 1\n", "robot", "unknown section"),
    ("[defaults\n", "TOML", "Expected"),
])
def test_a_bad_file_is_refused_naming_the_file_and_key(text, key, problem):
    with pytest.raises(PhysicsError, match=problem) as caught:
        parse_physics(text, "bad.toml")
    assert caught.value.key == key and str(caught.value).startswith("bad.toml: ")


def test_a_motor_the_profile_lacks_or_a_servo_acceleration_is_refused(tmp_path):
    motors = load_motors(load_profile("tilt-spin"))
    with pytest.raises(PhysicsError, match="no such motor; its motors: table"):
        parse_physics("[motors.Z]\nspeed_scale = 2\n").apply(motors)
    with pytest.raises(PhysicsError, match="a servo has no acceleration"):
        parse_physics("[motors.cover]\naccel_scale = 2\n").apply(motors)
    with pytest.raises(PhysicsError, match="cannot read it"):
        load_physics(tmp_path / "missing.toml")


def _done(out: list[bytes]) -> list[proto.Report]:
    return [r for r in (proto.parse_report(proto.unframe(raw)) for raw in out)
            if r.kind == "done"]


def test_the_simulator_moves_by_the_physics_and_reports_start_and_end():
    profile = load_profile("six-motor")
    physics = parse_physics(EXAMPLE)
    core = FirmwareCore(profile, physics=physics)
    assert core.banner().decode().split()[3] == "proto=2"
    quarter, half = core.motors["R"].steps(90), core.motors["F"].steps(-180)
    core.line(proto.frame(f"N1 MOVE R:{quarter}")[:-1], 0.0)
    core.line(proto.frame(f"N2 MOVE F:{half}")[:-1], 1.0)
    finished = _done(core.advance(10_000.0))
    spans = [proto.motion_span(r) for r in finished]
    true = MotorModel(physics.apply(load_motors(profile)))
    declared = MotorModel(load_motors(profile))
    first_ms = (spans[0][1] - spans[0][0]) / 1000
    assert first_ms == pytest.approx(true.duration_ms("MOVE", {"R": quarter}), abs=0.002)
    assert first_ms > declared.duration_ms("MOVE", {"R": quarter}) + 30
    assert spans[1][0] == spans[0][1]  # queued: starts as the first ends, no idle
    assert finished[1].float_field("t") == pytest.approx(spans[1][1] / 1000, abs=0.002)


def test_without_a_file_the_simulated_robot_is_its_profile():
    profile = load_profile("six-motor")
    core = FirmwareCore(profile)
    quarter = core.motors["U"].steps(90)
    core.line(proto.frame(f"N1 MOVE U:{quarter}")[:-1], 0.0)
    start, end = proto.motion_span(_done(core.advance(1_000.0))[0])
    assert (end - start) / 1000 == pytest.approx(
        MotorModel(load_motors(profile)).duration_ms("MOVE", {"U": quarter}), abs=0.002)


def test_the_host_reads_both_done_forms_and_a_wrapped_32_bit_clock():
    old = proto.parse_report("done 7 t=12.5")
    assert proto.motion_span(old) is None
    new = proto.parse_report("done 7 t=12.5 start=1000 end=2500")
    assert proto.motion_span(new) == (1000, 2500)
    wrapped = proto.parse_report(f"done 8 start={proto.CLOCK32_US - 100} end=400")
    assert proto.motion_span(wrapped) == (proto.CLOCK32_US - 100, proto.CLOCK32_US + 400)
    with pytest.raises(proto.ProtocolError, match="end=1 before start"):
        proto.motion_span(proto.parse_report(f"done 9 start={proto.CLOCK32_US * 2} end=1"))
    with pytest.raises(proto.ProtocolError, match="not µs counts"):
        proto.motion_span(proto.parse_report("done 9 start=-5 end=1"))
