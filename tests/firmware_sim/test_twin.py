"""The digital twin: motion moves the cube only as the mechanism allows; jams and drops are
faults; the declared scan views are what the twin really shows."""

from __future__ import annotations

import random

import pytest

from robocell.common.moves import apply_to_facelets
from robocell.common.profile import available_profiles, load_profile
from robocell.services.actuator.executor import Compiler
from robocell.services.actuator.motion import load_scan
from robocell.services.firmware_sim.twin import Twin, TwinFaultError, observed_views, run_commands

ROBOTS = [name for name in available_profiles() if "geometry" in load_profile(name).data]


@pytest.mark.parametrize("name", ROBOTS)
def test_every_primitive_moves_the_twin_like_its_moves(name):
    profile = load_profile(name)
    compiler = Compiler(profile)
    twin = Twin(profile)
    expected = twin.facelets
    rng = random.Random(3)
    last = None
    for _ in range(300):
        prim = rng.choice([p for p in profile.primitives
                           if profile.sequencing != "alternate-groups" or p.group != last])
        last = prim.group
        run_commands(twin, compiler.primitives[prim.name].commands)
        expected = apply_to_facelets(expected, list(prim.moves), twin.size)
        assert twin.facelets == expected, f"primitive {prim.name} moved the twin differently"
    assert twin.fault is None


@pytest.mark.parametrize("name", ROBOTS)
def test_declared_scan_views_match_what_the_twin_shows(name):
    profile = load_profile(name)
    declared = [[(v.at, v.face, v.rotation) for v in pose.views]
                for pose in load_scan(profile).poses]
    assert observed_views(profile) == declared


@pytest.mark.parametrize("name", ROBOTS)
def test_scan_program_returns_the_cube_unchanged(name):
    profile = load_profile(name)
    compiler = Compiler(profile)
    twin = Twin(profile, None)
    for name_ in [p.name for p in profile.primitives][:3]:
        run_commands(twin, compiler.primitives[name_].commands)
    before = twin.facelets
    program = compiler.scan_program
    for pose in program.poses:
        run_commands(twin, pose.commands)
    run_commands(twin, program.finish)
    assert twin.facelets == before


def test_turning_an_arm_while_the_perpendicular_pair_grips_jams(soltvvo):
    twin = Twin(soltvvo)  # all four grippers closed at power-up
    with pytest.raises(TwinFaultError, match="grips part of its layer") as fault:
        twin.move({"R": -90.0})
    assert fault.value.code == "jam" and twin.fault is not None


def test_releasing_both_pairs_drops_the_cube(soltvvo):
    twin = Twin(soltvvo)
    twin.set_servos({"gB": 90.0, "gF": 90.0})
    with pytest.raises(TwinFaultError) as fault:
        twin.set_servos({"gR": 90.0})
    assert fault.value.code == "dropped"


def test_gripping_an_arm_that_is_not_square_jams(soltvvo):
    twin = Twin(soltvvo)
    twin.set_servos({"gB": 90.0, "gF": 90.0})
    twin.move({"B": 45.0})  # open arm: turns freely
    with pytest.raises(TwinFaultError, match="not square"):
        twin.set_servos({"gB": 50.0})


def test_a_layer_left_part_way_is_a_misalignment(soltvvo):
    twin = Twin(soltvvo)
    twin.set_servos({"gB": 90.0, "gF": 90.0})
    with pytest.raises(TwinFaultError) as fault:
        twin.move({"R": -90.0}, fraction=0.4)
    assert fault.value.code == "misaligned"


def test_both_arms_of_a_pair_turning_together_rotate_the_whole_cube(soltvvo):
    twin = Twin(soltvvo)
    twin.facelets = apply_to_facelets(twin.facelets, "R U F", 2)
    start = twin.facelets
    twin.set_servos({"gB": 90.0, "gF": 90.0})
    twin.move({"R": 90.0, "L": -90.0})
    assert twin.facelets == apply_to_facelets(start, "x", 2)


def test_open_arm_spins_without_moving_the_cube(soltvvo):
    twin = Twin(soltvvo)
    twin.set_servos({"gB": 90.0, "gF": 90.0})
    before = twin.facelets
    twin.move({"B": -270.0})
    assert twin.facelets == before and twin.arm_angles["B"] == -270.0
