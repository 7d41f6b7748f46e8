"""Corner cutting on the host side: ``overlap_deg`` read from a profile, ``ov=<steps>`` written
only where a move may overlap the one before, and the time it saves off the prediction."""

from __future__ import annotations

import pytest

from robocell.common.profile import ProfileError, load_profile, parse_profile
from robocell.robot.motion import (
    WireCommand,
    compile_motion,
    compile_primitives,
    load_motors,
    overlap_steps,
    overlapped,
    transition_credit_ms,
)
from robocell.services.actuator.executor import Compiler

SIX = "six-motor"


def six_motor_with(text: str, old: str = "[sequencing]"):
    """six-motor with ``text`` inserted before ``old``."""
    source = load_profile(SIX).path.read_text()
    assert old in source
    return parse_profile(source.replace(old, text + "\n" + old, 1), f"{SIX}.toml")


def test_overlap_is_read_for_all_motors_and_a_motor_may_set_its_own():
    motors = load_motors(six_motor_with("[motion]\noverlap_deg = 20\n"))
    assert {m.overlap_deg for m in motors.values()} == {20.0}
    assert {m.axis for m in motors.values()} == {0, 1, 2}
    text = load_profile(SIX).path.read_text().replace(
        "[sequencing]", "[motion]\noverlap_deg = 20\n\n[sequencing]", 1).replace(
        "[motors.R]\n", "[motors.R]\noverlap_deg = 12\n", 1)
    own = load_motors(parse_profile(text, f"{SIX}.toml"))
    assert own["R"].overlap_deg == 12.0 and own["U"].overlap_deg == 20.0
    assert load_motors(load_profile(SIX))["U"].overlap_deg == 0.0


@pytest.mark.parametrize("value", ["-1", "90", "true", "\"20\""])
def test_an_impossible_overlap_names_the_key(value):
    with pytest.raises(ProfileError, match=r"motion\.overlap_deg"):
        load_motors(six_motor_with(f"[motion]\noverlap_deg = {value}\n"))


def test_ov_is_written_only_for_a_perpendicular_move_after_a_move():
    motors = load_motors(six_motor_with("[motion]\noverlap_deg = 20\n"))
    r, l_turn = compile_motion("turn R:90", motors), compile_motion("turn L:-90", motors)
    u, ud = compile_motion("turn U:90", motors), compile_motion("turn U:90 D:180", motors)
    assert overlap_steps(r, u, motors) == 44  # 20 degrees at 800 steps a turn, rounded down
    assert overlap_steps(r, ud, motors) == 44
    assert overlap_steps(r, l_turn, motors) == 0  # same axis: not a cut corner
    assert overlap_steps(None, u, motors) == 0
    assert overlap_steps(WireCommand("DWELL", ("5",)), u, motors) == 0
    sent, saved = overlapped(r, u, motors)
    assert sent.text == "MOVE U:200 ov=44"
    # the last 20 degrees of a quarter turn: decelerating (19.65 deg) then a little at speed
    assert 29.0 < saved < 32.0


def test_time_left_matches_the_trapezoid_both_ways():
    motor = load_motors(load_profile(SIX))["R"]
    total = motor.move_ms(90.0)
    for left in (0.5, 10.0, 19.0, 30.0, 60.0, 85.0, 90.0):
        elapsed = total - motor.time_left_ms(90.0, left)
        assert motor.travel(90.0, elapsed)[1] == pytest.approx(90.0 - left, abs=1e-6)


def test_overlapped_plan_is_predicted_shorter_by_the_saved_time():
    plan = ["R", "U", "U+D2", "F'", "B", "R2"]
    plain = Compiler(load_profile(SIX)).plan(plan)
    cut = Compiler(six_motor_with("[motion]\noverlap_deg = 20\n")).plan(plan)
    assert [t.split(" ov=")[0] for t in cut.texts] == plain.texts
    overlapping = [t for t in cut.texts if " ov=" in t]
    assert len(overlapping) == 3  # U after R, F' after U+D2, R2 after B; not along an axis
    assert plain.predicted_ms - cut.predicted_ms == pytest.approx(3 * 30.5, abs=3.0)


def test_the_transition_credit_is_the_saving_of_a_perpendicular_pair_or_nothing(soltvvo):
    overlapping = six_motor_with("[motion]\noverlap_deg = 20\n")
    motors = load_motors(overlapping)
    credit = transition_credit_ms(compile_primitives(overlapping, motors), motors)
    r, u = compile_motion("turn R:90", motors), compile_motion("turn U:-90", motors)
    assert credit == pytest.approx(overlapped(r, u, motors)[1]) and credit > 0
    six = load_profile(SIX)
    assert transition_credit_ms(compile_primitives(six), load_motors(six)) == 0.0
    # grippers between turns: not a robot that turns layers in place
    assert transition_credit_ms(compile_primitives(soltvvo), load_motors(soltvvo)) == 0.0
    assert overlapping.search_hash != six.search_hash
