"""The digital twin: motion moves the cube only as the mechanism allows; jams and drops are
faults; the declared scan views are what the twin really shows."""

from __future__ import annotations

import random

import pytest

from robocell.common.moves import apply_to_facelets
from robocell.common.profile import available_profiles, load_profile
from robocell.robot.motion import load_scan
from robocell.services.actuator.executor import Compiler
from robocell.services.firmware.twin import Twin, TwinFaultError, observed_views, run_commands

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


def _orientations(facelets: str) -> set[str]:
    """The cube in each of its 24 whole-cube orientations."""
    seen, todo = {facelets}, [facelets]
    while todo:
        here = todo.pop()
        for rotation in ("x", "y", "z"):
            turned = apply_to_facelets(here, rotation)
            if turned not in seen:
                seen.add(turned)
                todo.append(turned)
    return seen


@pytest.mark.parametrize("name", ROBOTS)
def test_scan_program_only_reorients_the_cube(name):
    """A scan may leave the cube in another orientation (its views name the faces by where
    they are when it ends), but it turns no layer against another."""
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
    assert twin.fault is None
    assert twin.facelets in _orientations(before)
    assert len(_orientations(before)) == 24


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


def _rotation_primitives(profile) -> list[tuple]:
    """(moves, cost) of the primitives that only re-orient the cube."""
    return [(p.moves, p.cost) for p in profile.primitives
            if all(m.name in "xyz" for m in p.moves)]


def _least_reorientations(profile, start: str) -> dict[str, float]:
    """Least cost, in the profile's units, of reaching each orientation of ``start`` with the
    primitives that only re-orient the cube (Dijkstra over the 24 orientations)."""
    rotations = _rotation_primitives(profile)
    best, todo = {start: 0.0}, [(0.0, start)]
    while todo:
        todo.sort(reverse=True)
        cost, here = todo.pop()
        if cost > best[here]:
            continue
        for moves, step in rotations:
            there = apply_to_facelets(here, list(moves))
            if cost + step < best.get(there, float("inf")):
                best[there] = cost + step
                todo.append((cost + step, there))
    return best


def test_tilt_spin_scan_shows_every_face_in_the_least_time():
    """Each pose's motion costs what the cheapest re-orientation to it costs, and the program
    as a whole costs what the cheapest order of tilts and spins showing all six faces costs."""
    profile = load_profile("tilt-spin")
    compiler = Compiler(profile)
    twin = Twin(profile, None)
    twin.facelets = "".join(chr(0x30 + i) for i in range(54))
    program_cost = 0.0
    for pose in compiler.scan_program.poses:
        before = twin.facelets
        run_commands(twin, pose.commands)
        program_cost += _least_reorientations(profile, before)[twin.facelets]
    # least over orders: Dijkstra over (orientation, faces seen on top so far)
    rotations = _rotation_primitives(profile)
    start = "".join(chr(0x30 + i) for i in range(54))
    todo = [(0.0, start, frozenset(start[4]))]
    done: set = set()
    least = None
    while todo:
        todo.sort(key=lambda item: item[0], reverse=True)
        cost, here, seen = todo.pop()
        if len(seen) == 6:
            least = cost
            break
        if (here, seen) in done:
            continue
        done.add((here, seen))
        for moves, step in rotations:
            there = apply_to_facelets(here, list(moves))
            todo.append((cost + step, there, seen | {there[4]}))
    assert least == 380
    assert program_cost == least
