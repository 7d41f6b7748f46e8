"""HOME in the firmware simulator (docs/serial-protocol.md, "Homing") and the number syntax
it enforces: after an e-stop in the middle of a turn the twin is square again after CLEAR
and HOME, a reboot is realigned from a home switch, and malformed numbers are refused with
an error naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from robocell.common.profile import PROFILE_DIR, Profile, load_profile
from robocell.robot import protocol as proto
from robocell.robot.motion import compile_primitives, load_motors
from robocell.services.firmware.simulator import FirmwareCore

ALL_GRIPPED_TURN = ("SERVO gB:90 gF:90", "MOVE R:-400 L:-400")
"""Release B and F, then turn R and L a quarter together (a whole-cube rotation)."""


def reports(data: list[bytes]) -> list[proto.Report]:
    return [proto.parse_report(proto.unframe(raw)) for raw in data]


def line(n: int, text: str) -> bytes:
    return proto.frame(f"N{n} {text}")[:-1]


def clear(core: FirmwareCore, now: float) -> proto.Report:
    return reports(core.line(proto.frame("CLEAR")[:-1], now))[0]


def estop_mid_turn(core: FirmwareCore) -> None:
    """Queue the turn, let the release finish, stop the motors half way through the turn."""
    for n, text in enumerate(ALL_GRIPPED_TURN, 1):
        assert reports(core.line(line(n, text), 0.0))[0].kind == "ok"
    assert [r.kind for r in reports(core.advance(45.0))] == ["done"]
    assert reports(core.realtime(proto.ESTOP_BYTE, 90.0, 0.0))[0].kind == "estop"
    assert core.twin.misaligned == ["R", "L"]


def run_primitive(core: FirmwareCore, profile: Profile, name: str, first: int,
                  now: float) -> list[proto.Report]:
    """Every command of one primitive, queued and run to the end."""
    out = []
    for i, command in enumerate(compile_primitives(profile)[name].commands):
        out += reports(core.line(line(first + i, command.text), now))
    return out + reports(core.advance(now + 10_000.0))


def test_after_an_estop_mid_turn_clear_alone_leaves_the_cube_jammed(soltvvo):
    core = FirmwareCore(soltvvo)
    estop_mid_turn(core)
    assert clear(core, 200.0).fields["state"] == "idle"
    out = run_primitive(core, soltvvo, "R'", 2, 300.0)
    assert [r.kind for r in out if r.kind in ("fault", "done")][-1] == "fault"


def test_home_after_an_estop_mid_turn_squares_the_twin_and_the_next_primitive_runs(soltvvo):
    core = FirmwareCore(soltvvo)
    estop_mid_turn(core)
    refused = reports(core.line(line(2, "HOME"), 150.0))[0]
    assert refused.kind == "err" and "CLEAR" in refused.text()
    clear(core, 200.0)
    assert reports(core.line(line(2, "HOME"), 210.0))[0].kind == "ok"
    assert [(r.kind, r.line) for r in reports(core.advance(2000.0))] == [("done", 2)]
    twin = core.twin
    assert twin.fault is None and twin.misaligned == []
    assert all(abs(angle / 90 - round(angle / 90)) < 1e-6 for angle in twin.arm_angles.values())
    assert set(twin.grips.values()) == {"closed"}
    status = reports([core.status()])[0]
    positions = proto.parse_positions(status.fields["pos"])
    motors = load_motors(soltvvo)
    for name, value in positions.items():
        if motors[name].kind == "stepper":
            quarters = value / motors[name].align_steps
            assert abs(quarters - round(quarters)) < 1e-6
        else:
            assert value == motors[name].home
    out = run_primitive(core, soltvvo, "R'", 3, 3000.0)
    assert "fault" not in [r.kind for r in out] and out[-1].kind == "done"


def test_home_of_named_motors_moves_only_those(soltvvo):
    core = FirmwareCore(soltvvo)
    reports(core.line(line(1, "SERVO gB:70 gF:90"), 0.0))
    core.advance(500.0)
    assert reports(core.line(line(2, "HOME gB"), 600.0))[0].kind == "ok"
    assert [r.kind for r in reports(core.advance(2000.0))] == ["done"]
    assert core.twin.servo_angles["gB"] == 50 and core.twin.servo_angles["gF"] == 90


@pytest.mark.parametrize("text, field", [
    ("HOME Z", "HOME: no motor named Z"), ("HOME gR gR", "named twice"),
    ("MOVE R:nan", "MOVE R steps"), ("MOVE R:inf", "MOVE R steps"),
    ("MOVE R:1e308", "MOVE R steps"), ("MOVE R:2000000", "out of range"),
    ("MOVE R:12.5", "MOVE R steps"), ("SERVO gR:nan", "SERVO gR degrees"),
    ("SERVO gR:400", "out of range"), ("DWELL -5", "DWELL ms"), ("DWELL nan", "DWELL ms"),
    ("DWELL 1e9", "DWELL ms"), ("DWELL +5", "DWELL ms"),
])
def test_malformed_numbers_and_motors_are_refused_naming_the_field(soltvvo, text, field):
    core = FirmwareCore(soltvvo)
    err = reports(core.line(line(1, text), 0.0))[0]
    assert err.kind == "err" and err.line == 1
    assert field in err.text()
    assert core.current is None and not core.waiting


def switch_profile(tmp_path: Path) -> Profile:
    """soltvvo-2x2 with a home switch on every arm (seeking clockwise)."""
    text = (PROFILE_DIR / "soltvvo-2x2.toml").read_text()
    for arm in "RBLF":
        text = text.replace(f"[motors.{arm}]\n",
                            f"[motors.{arm}]\nhome_switch = \"sw{arm}\"\nhome_dir = 1\n")
    path = tmp_path / "soltvvo-2x2.toml"
    path.write_text(text)
    return load_profile(path)


def test_a_watchdog_reset_mid_turn_keeps_the_step_counts_and_home_realigns(soltvvo):
    core = FirmwareCore(soltvvo)
    for n, text in enumerate(ALL_GRIPPED_TURN, 1):
        core.line(line(n, text), 0.0)
    core.advance(45.0)
    core.reset(90.0)
    assert core.twin.misaligned == ["R", "L"]
    assert reports(core.line(line(1, "HOME"), 110.0))[0].kind == "ok"
    assert [r.kind for r in reports(core.advance(3000.0))] == ["done"]
    assert core.twin.misaligned == [] and core.twin.fault is None
    assert run_primitive(core, soltvvo, "R'", 2, 4000.0)[-1].kind == "done"


def test_after_a_power_up_mid_turn_only_a_home_switch_realigns(soltvvo, tmp_path):
    for profile, realigned in ((soltvvo, False), (switch_profile(tmp_path), True)):
        core = FirmwareCore(profile)
        for n, text in enumerate(ALL_GRIPPED_TURN, 1):
            core.line(line(n, text), 0.0)
        core.advance(45.0)
        old_boot = core.boot_id
        core.reset(90.0, counts_kept=False)
        assert core.boot_id != old_boot and core.twin.misaligned == ["R", "L"]
        clear(core, 100.0)
        assert reports(core.line(line(1, "HOME"), 110.0))[0].kind == "ok"
        kinds = [r.kind for r in reports(core.advance(3000.0))]
        assert (core.twin.misaligned == []) is realigned, kinds
        if realigned:
            assert kinds == ["done"] and core.twin.fault is None
            # seeking clockwise from -75 degrees the switch closes at 0
            assert core.twin.arm_angles == {"R": 0.0, "B": 0.0, "L": 0.0, "F": 0.0}


def test_homing_keys_of_a_profile_are_checked(tmp_path):
    text = (PROFILE_DIR / "soltvvo-2x2.toml").read_text()
    bad = tmp_path / "soltvvo-2x2.toml"
    bad.write_text(text.replace("[motors.R]\n", "[motors.R]\nhome_switch = \"s\"\n"))
    with pytest.raises(ValueError, match="motors.R.home_dir"):
        load_motors(load_profile(bad))
    bad.write_text(text.replace("[motors.R]\n", "[motors.R]\nhome_align_steps = 300\n"))
    with pytest.raises(ValueError, match="divides steps_per_rev"):
        load_motors(load_profile(bad))
