"""`robocell calibrate --overlap`: the overlap steps up on the simulated robot until its cube
jams, backs off by the margin, never passes a hardware limit, and the profile written runs."""

from __future__ import annotations

import pytest

from robocell.cli import main
from robocell.common.profile import load_profile
from robocell.robot.motion import load_motors
from robocell.robot.physics import load_physics
from robocell.services.firmware.overlap_probe import (
    MARGIN_DEG,
    find_safe_overlap,
    simulated_trial,
)


@pytest.fixture
def physics(tmp_path):
    path = tmp_path / "physics.toml"
    path.write_text("[defaults]\naccel_scale = 0.55\n[cube]\ncut_tolerance_deg = 17\n")
    return path


def test_the_overlap_steps_up_to_the_jam_and_backs_off_the_margin(physics):
    found = find_safe_overlap(simulated_trial(load_profile("six-motor"), load_physics(physics)))
    assert (found.largest_ok_deg, found.jammed_at_deg) == (17.0, 18.0)
    assert found.safe_deg == 17.0 - MARGIN_DEG and "jam" in found.jam


def test_on_hardware_the_search_never_passes_the_declared_overlap(physics):
    run = simulated_trial(load_profile("six-motor"), load_physics(physics))
    tried = []

    def trial(overlap: float) -> str | None:
        tried.append(overlap)
        return run(overlap)

    found = find_safe_overlap(trial, limit_deg=10.0)
    assert max(tried) == 10.0 and found.jammed_at_deg is None and found.safe_deg == 10.0


def test_calibrate_writes_a_profile_that_loads_with_the_safe_overlap(physics, tmp_path, capsys):
    out = tmp_path / "six-fast.toml"
    assert main(["calibrate", "--overlap", "--profile", "six-motor", "--physics",
                 str(physics), "--out", str(out)]) == 0
    assert "safe overlap 14 deg" in capsys.readouterr().out
    profile = load_profile(out)
    assert profile.name == "six-fast"
    assert {m.overlap_deg for m in load_motors(profile).values()} == {14.0}
    assert profile.primitives == load_profile("six-motor").primitives


@pytest.mark.parametrize(("extra", "out_name", "said"), [
    (["--overlap", "--runs", "3"], "six-fast", "--runs: the timing program's"),
    (["--physics", "robot.toml"], "six-fast", "--physics goes with --overlap"),
    (["--overlap"], "six-motor", "name the file other than six-motor.toml"),
])
def test_one_calibrate_command_keeps_the_timing_and_overlap_options_apart(
        extra, out_name, said, tmp_path, capsys):
    out = tmp_path / f"{out_name}.toml"
    assert main(["calibrate", "--profile", "six-motor", *extra, "--out", str(out)]) == 2
    assert said in capsys.readouterr().err and not out.exists()


def test_a_robot_with_no_perpendicular_layers_is_told_it_has_no_corner_to_cut(
        physics, tmp_path, capsys):
    # tilt-spin turns one layer (its turntable, under D); tilts and spins are servo motions
    out = tmp_path / "tilt-fast.toml"
    assert main(["calibrate", "--overlap", "--profile", "tilt-spin", "--physics",
                 str(physics), "--out", str(out)]) == 2
    said = capsys.readouterr().err
    assert "tilt-spin has no two steppers turning perpendicular layers" in said
    assert "table (D)" in said and not out.exists()
