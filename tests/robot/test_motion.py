"""Motion strings compile to firmware commands; profile mistakes are named precisely."""

from __future__ import annotations

import pytest

from robocell.common.profile import ProfileError, load_profile, parse_profile
from robocell.robot.motion import compile_motion, load_motors
from robocell.robot.timing import predicted_plan_ms
from robocell.services.actuator.executor import Compiler, Execution, PlanMismatch


def profile_with(old: str, new: str):
    text = load_profile("soltvvo-2x2").path.read_text()
    assert old in text
    return parse_profile(text.replace(old, new, 1), "soltvvo-2x2.toml")


def test_motion_strings_compile_to_steps_and_angles(soltvvo):
    motors = load_motors(soltvvo)
    assert compile_motion("turn R:-90 L:-180", motors).text == "MOVE R:-400 L:-800"
    assert compile_motion("grip gR gL", motors).text == "SERVO gR:50 gL:50"
    assert compile_motion("release gB", motors).text == "SERVO gB:90"
    assert compile_motion("set gB:70", motors).text == "SERVO gB:70"


@pytest.mark.parametrize("text, message", [
    ("turn X:90", "no motor 'X'"),
    ("turn gR:90", "is a servo, not a stepper"),
    ("turn R:0.1", "not a whole number of steps"),
    ("set gR:half", "no position 'half'"),
    ("spin R:90", "unknown action"),
])
def test_bad_motion_strings_are_named(soltvvo, text, message):
    with pytest.raises(ValueError, match=message):
        compile_motion(text, load_motors(soltvvo))


def test_a_bad_motion_in_a_profile_names_file_key_and_problem():
    broken = profile_with('"turn R:-90"]', '"turn Q:-90"]')
    with pytest.raises(ProfileError, match=r"primitives\[0\]\.motion.*no motor 'Q'"):
        Compiler(broken)


def test_a_servo_without_home_is_refused():
    broken = profile_with('home = "closed"\n', "")
    with pytest.raises(ProfileError, match=r"motors\.gR\.home"):
        Compiler(broken)


def test_quarter_and_half_turn_times_follow_the_trapezoid(soltvvo):
    motors = load_motors(soltvvo)
    assert motors["R"].move_ms(90) == pytest.approx(85.0)
    assert motors["R"].move_ms(180) == pytest.approx(145.0)
    assert motors["gR"].move_ms(40) == pytest.approx(40.0)


def test_plan_compiles_with_a_mark_per_primitive_and_predicted_time(soltvvo):
    job = Compiler(soltvvo).plan(["R'", "B2"])
    assert [line.text for line in job.lines if line.starts_step] == [
        "MARK step=0 R'", "MARK step=1 B2"]
    # R': grip (already closed: settle only), release, quarter turn; B2: grip, release, half
    assert job.predicted_ms == pytest.approx(20 + 40 + 85 + 40 + 40 + 145)


def test_plan_check_names_the_mismatch(soltvvo):
    compiler = Compiler(soltvvo)
    compiler.check_plan("2x2x2", "soltvvo-2x2", ["R'", "B2"])
    with pytest.raises(PlanMismatch, match="puzzle 3x3x3"):
        compiler.check_plan("3x3x3", "soltvvo-2x2", ["R'"])
    with pytest.raises(PlanMismatch, match="re-plan with --profile soltvvo-2x2"):
        compiler.check_plan("2x2x2", "htm", ["R'"])
    with pytest.raises(PlanMismatch, match="step 1: primitive 'U'"):
        compiler.check_plan("2x2x2", "soltvvo-2x2", ["R'", "U"])


def test_execution_bookkeeping_refuses_a_line_twice_or_out_of_order(soltvvo):
    job = Compiler(soltvvo).plan(["R'", "B'"])
    execution = Execution(job)
    first = execution.line_done(0)
    assert first[0].step == 0 and first[0].n_steps == 2 and first[0].name == "R'"
    with pytest.raises(ValueError, match="exactly-once"):
        execution.line_done(0)
    with pytest.raises(ValueError, match="exactly-once"):
        execution.line_done(2)
    for i in range(1, len(job.lines)):
        execution.line_done(i)
    assert execution.finished and execution.completed_steps == [0, 1]


@pytest.mark.parametrize("name", ["soltvvo-2x2", "six-motor", "tilt-spin"])
def test_every_stepper_of_every_robot_stands_still_within_50_ms_of_an_estop(name):
    for motor in load_motors(load_profile(name)).values():
        if motor.kind != "stepper":
            continue
        for change in (90.0, 180.0):
            total = motor.move_ms(change)
            for k in range(21):
                stop_ms, fraction = motor.emergency_stop(change, total * k / 20)
                assert 0.0 <= stop_ms <= 50.0, f"{name}.{motor.name} needs {stop_ms:.1f} ms"
                assert 0.0 <= fraction <= 1.0


def test_emergency_stop_brakes_from_the_speed_of_the_moment(soltvvo):
    motor = load_motors(soltvvo)["R"]
    assert motor.emergency_stop(90.0, 0.0) == (0.0, 0.0)  # not moving yet
    stop_ms, fraction = motor.emergency_stop(90.0, 42.5)   # cruising at 1500 deg/s
    assert stop_ms == pytest.approx(25.0) and 0.4 < fraction < 0.9
    assert motor.emergency_stop(90.0, 85.0)[1] == pytest.approx(1.0)  # already there


@pytest.mark.parametrize("name", ["soltvvo-2x2", "six-motor", "tilt-spin"])
def test_a_plans_prediction_is_the_actuators_motion_model_not_the_declared_costs(name):
    # the same primitive costs more or less by what the one before left the servos doing:
    # the prediction replays the motions, as the actuator and the simulated robot do
    profile = load_profile(name)
    names = [p.name for p in profile.primitives]
    plan = (names * 3)[::-1][:40]
    assert predicted_plan_ms(profile, plan) == pytest.approx(
        Compiler(profile).plan(plan).predicted_ms, abs=1e-9)
    assert predicted_plan_ms(profile, []) == 0.0


def test_a_metric_profile_without_motors_is_predicted_by_its_declared_costs():
    htm = load_profile("htm")
    assert predicted_plan_ms(htm, ["R", "U2", "F'"]) == htm.cost_ms(3)
