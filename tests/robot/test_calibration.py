"""Calibration: against a real broker, firmware simulator (moving by a physics file unlike
its profile) and actuator, `robocell calibrate` writes a profile whose motors and costs
predict what the robot then does."""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import pytest
from support.bus import (
    free_base_port,
    robocell_cmd,
    robocell_env,
    stop_process,
    wait_for_broker,
)

from robocell.common.bus import Endpoints, Node
from robocell.common.profile import load_profile, parse_profile, profile_path
from robocell.robot.calibration import Observations, fit, fit_servo, fit_stepper
from robocell.robot.motion import MotorModel, command_targets, compile_primitives, load_motors
from robocell.robot.physics import parse_physics
from robocell.tools.calibrate import timing_program

PHYSICS = """
[defaults]
accel_scale = 0.55
settle_ms = 28
start_latency_ms = 4
[motors.R]
speed_scale = 0.8
"""


def test_a_stepper_fit_predicts_its_turns_whatever_the_true_motor():
    declared = load_motors(load_profile("six-motor"))["R"]
    true = parse_physics(PHYSICS).apply({"R": declared})["R"]
    samples = [(d, true.move_ms(d)) for d in (90, 90, 180, 180)]
    fitted = fit_stepper(declared, samples)
    for d in (90, 180):
        assert fitted.move_ms(d) == pytest.approx(true.move_ms(d), rel=0.005)


def test_a_servo_fit_separates_speed_from_settle_when_it_moved_by_two_amounts():
    declared = load_motors(load_profile("tilt-spin"))["cover"]
    samples = [(60.0, 1000 * 60 / 400 + 70), (0.0, 70.0), (60.0, 1000 * 60 / 400 + 70)]
    fitted = fit_servo(declared, samples)
    assert fitted.speed_dps == pytest.approx(400) and fitted.settle_ms == pytest.approx(70)
    once = fit_servo(declared, [(60.0, 300.0)])  # one amount: the declared speed kept
    assert once.speed_dps == declared.speed_dps
    assert once.settle_ms == pytest.approx(300 - 1000 * 60 / declared.speed_dps)


def test_the_timing_program_runs_every_primitive_the_times_asked():
    profile = load_profile("tilt-spin")
    program = timing_program(profile, runs=5, plans=2, seed=3)
    names = [p for plan in program for p in plan]
    assert len(program) == 2
    assert all(names.count(p.name) == 5 for p in profile.primitives)


def test_observations_replay_the_plan_through_the_motor_model():
    profile = load_profile("tilt-spin")
    motors = load_motors(profile)
    plan = ["turn", "spin", "tilt"]
    # the robot as declared: every line as the model times it
    model, line_ms, primitive_ms = MotorModel(motors), [], []
    for name in plan:
        line_ms.append(0.0)
        total = 0.0
        for command in compile_primitives(profile, motors)[name].commands:
            targets = command_targets(command)
            line_ms.append(model.duration_ms(command.verb, targets))
            total += line_ms[-1]
            model.apply(command.verb, targets)
        primitive_ms.append(total)
    observed = Observations()
    observed.add_plan(profile, plan, line_ms, primitive_ms)
    assert sorted(c for c, _ in observed.motors["cover"]) == [0.0, 0.0, 60.0, 60.0]
    fitted = fit(profile, observed)
    assert fitted.motors["cover"].speed_dps == pytest.approx(motors["cover"].speed_dps)
    with pytest.raises(ValueError, match="another profile"):
        observed.add_plan(profile, plan, line_ms[:-1], primitive_ms)


@pytest.fixture
def robot(tmp_path: Path):
    """Broker, firmware simulator moving by PHYSICS, actuator: six-motor at 20x."""
    base = f"tcp://127.0.0.1:{free_base_port()}"
    env = robocell_env(base)
    procs = [subprocess.Popen(robocell_cmd("broker"), env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)]
    physics = tmp_path / "robot.toml"
    physics.write_text(PHYSICS)
    try:
        wait_for_broker(Endpoints.from_base(base))
        sim = subprocess.Popen(robocell_cmd(
            "firmware-sim", "--port", "0", "--speed", "20", "--profile", "six-motor",
            "--physics", str(physics)), env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        procs.append(sim)
        url = sim.stdout.readline().split()[1]
        procs.append(subprocess.Popen(robocell_cmd(
            "actuator", "--serial", url, "--profile", "six-motor"), env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        with Node(f"t-{uuid.uuid4().hex[:4]}", Endpoints.from_base(base)) as node:
            deadline = time.monotonic() + 20
            while "actuator" not in node.alive() and time.monotonic() < deadline:
                time.sleep(0.1)
        yield base, env
    finally:
        for proc in reversed(procs):
            stop_process(proc)


def test_calibrate_writes_a_profile_that_predicts_the_robot(robot, tmp_path):
    base, env = robot
    out = tmp_path / "six-motor-fitted.toml"
    run = subprocess.run([*robocell_cmd("calibrate", "--profile", "six-motor", "--out",
                                        str(out), "--runs", "3")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "declared" in run.stdout and "R " in run.stdout
    fitted = load_profile(out)
    assert fitted.name == "six-motor-fitted"
    assert "measured from 3 runs" in out.read_text()
    declared = load_profile("six-motor")
    true = parse_physics(PHYSICS).apply(load_motors(declared))
    for name in ("R", "R2", "U+D2"):
        prim = declared.primitive(name)
        axis = [w.split(":") for w in prim.motion[0].split()[1:]]
        expect = max(true[m].move_ms(float(d)) for m, d in axis)
        assert fitted.cost_ms(fitted.primitive(name).cost) == pytest.approx(expect, rel=0.01)
        assert declared.cost_ms(prim.cost) < 0.9 * expect  # the profile's guess was far off
    model = MotorModel(load_motors(fitted))
    assert model.duration_ms("MOVE", {"R": 400}) == pytest.approx(
        true["R"].move_ms(180), rel=0.01)
    u = load_motors(fitted)["U"]  # the tail plans tell acceleration, settle and latency apart
    assert (u.accel_dps2, u.settle_ms, u.start_latency_ms) == pytest.approx(
        (true["U"].accel_dps2, 28.0, 4.0), rel=0.02, abs=0.2)
    assert "tail plan at 4.5 deg overlap" in run.stdout


def test_a_move_that_cut_a_corner_is_no_sample_of_its_motor_nor_of_its_primitive():
    six = load_profile("six-motor")
    cutting = parse_profile(profile_path("six-motor").read_text()
                            + "\n[motion]\noverlap_deg = 14\n")
    plan = ["R", "R2", "U"]  # R2 after R: same axis, whole; U after R2: started early
    line_ms = [0.0, 100.0, 0.0, 150.0, 0.0, 70.0]
    for profile, u_runs in ((six, [70.0]), (cutting, [])):
        observed = Observations()
        observed.add_plan(profile, plan, line_ms, [100.0, 150.0, 70.0])
        assert observed.primitives.get("U", []) == u_runs
        assert observed.motors.get("U", []) == [(90.0, 70.0)] * len(u_runs)
        assert observed.motors["R"] == [(90.0, 100.0), (180.0, 150.0)]
