"""`robocell solve` on a 2x2x2 as a user runs it, and the errors bad input gets."""

import json
import subprocess
import sys

import pytest

from robocell.common.cube import (
    CubeStateError,
    apply_to_facelets,
    corner_facelets,
    random_facelets,
    solved,
)
from robocell.services.solver.api import solve


def _twisted_corner() -> str:
    """The solved cube with the URF corner twisted in place."""
    cube = list(solved(2))
    u, r, f = corner_facelets(2)[0]
    cube[u], cube[r], cube[f] = cube[f], cube[u], cube[r]
    return "".join(cube)


TWISTED_CORNER = _twisted_corner()
SWAPPED_CORNERS = solved(2).replace("B", "x").replace("F", "B").replace("x", "F")


def robocell(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robocell", *args], capture_output=True,
                          text=True, input=stdin, timeout=300)


@pytest.mark.parametrize("facelets, code", [
    ("UUUURRRRFFFFDDDDLLLLBBB", "length"),
    ("UUUURRRRFFFFDDDDLLLLBBBX", "letters"),
    ("UUUURRRRFFFFDDDDLLLLBBBU", "colour_count"),
    (TWISTED_CORNER, "corner_twist"),
    (SWAPPED_CORNERS, "corner_colours"),
])
def test_invalid_cubes_get_the_specific_validation_error(facelets, code):
    with pytest.raises(CubeStateError) as err:
        solve(facelets, "soltvvo-2x2")
    assert err.value.code == code


def test_a_2x2_profile_is_refused_for_a_3x3_cube():
    with pytest.raises(ValueError, match="2x2"):
        solve(solved(3), "soltvvo-2x2")


def test_a_solved_cube_in_any_orientation_needs_no_motion():
    for rotation in ("", "x", "y2", "z'"):
        plan = solve(apply_to_facelets(solved(2), rotation), "soltvvo-2x2")
        assert plan.primitives == [] and plan.cost == 0 and plan.moves == []


def test_solve_json_has_primitives_turns_and_costs():
    facelets = random_facelets(2, 3)
    out = robocell("solve", "--puzzle", "2x2", "--profile", "soltvvo-2x2", "--json", facelets)
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)
    assert row["facelets"] == facelets and row["optimal"] is True
    assert row["primitives"] and all("'" in name or "2" in name for name in row["primitives"])
    assert row["cost_ms"] == pytest.approx(row["cost"] * 84)
    assert row["solve_ms"] > 0
    assert apply_to_facelets(facelets, row["moves"]) != facelets


def test_batch_mode_writes_one_json_line_per_cube_and_reports_bad_lines():
    cubes = [random_facelets(2, seed) for seed in range(50)]
    lines = cubes[:25] + [TWISTED_CORNER] + cubes[25:]
    out = robocell("solve", "--puzzle", "2x2", "--profile", "htm", "-",
                   stdin="\n".join(lines) + "\n")
    assert out.returncode == 1  # one bad line
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == len(lines)
    assert rows[25]["code"] == "corner_twist" and rows[25]["line"] == 26
    for facelets, row in zip(cubes, rows[:25] + rows[26:], strict=True):
        assert row["facelets"] == facelets
        assert {"primitives", "moves", "cost", "cost_ms", "solve_ms"} <= set(row)
        assert row["cost"] == len(row["primitives"]) <= 11


def test_bad_cube_on_the_command_line_exits_2_with_the_reason():
    out = robocell("solve", "--puzzle", "2x2", "--profile", "qtm", TWISTED_CORNER)
    assert out.returncode == 2
    assert "corner_twist" in out.stderr
