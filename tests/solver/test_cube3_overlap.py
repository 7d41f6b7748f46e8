"""Corner cutting in the 3x3 plans: the motion compiler prices every block after the first by
the perpendicular one before it (what the actuator's compiled lines save), and the robot-time
search chooses its plans in those prices."""

from __future__ import annotations

import pytest

from robocell.common.cube import apply_to_facelets, random_facelets
from robocell.common.notation import parse_moves
from robocell.common.profile import load_profile, parse_profile
from robocell.common.validation import validate
from robocell.robot.motion import compile_primitives, load_motors, transition_credit_ms
from robocell.services.actuator.executor import Compiler
from robocell.services.solver.cube3.motion_compiler import (
    compile_plan,
    motion_tables,
    sequence_blocks,
)
from robocell.services.solver.cube3.robot_time.counting_bound import BoundError, count_by_cost
from robocell.services.solver.cube3.solver import solve_robot_time

OVERLAP_DEG = 14


def overlapping():
    """six-motor cutting corners by OVERLAP_DEG (the overlap `calibrate --overlap` finds on
    a cube that takes 17 degrees)."""
    text = load_profile("six-motor").path.read_text().replace(
        'name = "six-motor"', 'name = "six-motor-overlap"', 1).replace(
        "[sequencing]", f"[motion]\noverlap_deg = {OVERLAP_DEG}\n\n[sequencing]", 1)
    return parse_profile(text, "six-motor-overlap.toml")


def test_every_block_after_the_first_costs_the_saving_less():
    profile, plain = overlapping(), load_profile("six-motor")
    motors = load_motors(profile)
    credit_ms = transition_credit_ms(compile_primitives(profile, motors), motors)
    assert motion_tables(profile).first_block == pytest.approx(credit_ms / profile.unit_ms)
    moves = parse_moves("R U2 D' F B L2 R' U F2 D")
    blocks = len(sequence_blocks(moves)[0])
    names, cost = compile_plan(moves, profile)
    plain_names, plain_cost = compile_plan(moves, plain)
    assert names == plain_names  # six-motor: every block's primitives stay the cheapest
    assert profile.cost_ms(cost) == pytest.approx(
        plain.cost_ms(plain_cost) - (blocks - 1) * credit_ms)
    # what the actuator's lines save on that plan, exactly
    saved = Compiler(plain).plan(names).predicted_ms - Compiler(profile).plan(names).predicted_ms
    assert saved == pytest.approx((blocks - 1) * credit_ms)
    assert compile_plan([], profile) == ([], 0.0)


def test_a_robot_that_does_not_cut_corners_is_priced_as_before():
    for name in ("six-motor", "tilt-spin", "htm"):
        assert motion_tables(load_profile(name)).first_block == 0.0
    with pytest.raises(BoundError, match="cuts corners"):
        count_by_cost(overlapping())


def test_the_search_prices_its_plans_as_the_overlapping_compiler_does():
    profile = overlapping()
    for seed in range(2):
        facelets = random_facelets(3, 4700 + seed)
        moves, primitives, cost, stats = solve_robot_time(validate(facelets, 3), profile,
                                                          timeout=0.1)
        assert compile_plan(moves, profile) == (primitives, pytest.approx(cost))
        assert cost == stats["search_cost"] and cost <= stats["first_cost"]
        turned = apply_to_facelets(facelets, moves)
        assert all(len(set(turned[9 * f:9 * f + 9])) == 1 for f in range(6))
