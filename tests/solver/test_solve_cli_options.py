"""`robocell solve` and `robocell tables` options as a new user meets them: the profile list
the help points to, limits that are kept or refused, and what to do about unbuilt tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from robocell.common.profile import available_profiles, load_profile

SCRAMBLED_3X3 = "UDFFUUFFLFBDDRUBLBURDDFRBBLLDURDFRBRFURRLFBUDRLLLBBDLU"
"""`robocell cube scramble --seed 1` (a 20-move scramble)."""
SCRAMBLED_2X2 = "UUURBBDRRDRFDLDBFFLFLLUB"


def robocell(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robocell", *args], capture_output=True,
                          text=True, timeout=300, env=env)


@pytest.mark.slow
def test_list_profiles_names_every_shipped_profile_with_puzzle_primitives_description():
    done = robocell("solve", "--list-profiles")
    assert done.returncode == 0, done.stderr
    for name in available_profiles():
        profile = load_profile(name)
        row = next(line for line in done.stdout.splitlines() if line.startswith(name + " "))
        assert row.split() == [name, profile.puzzle, str(len(profile.primitives))]
        assert " ".join(profile.description.split()[:6]) in " ".join(done.stdout.split())
    listed = json.loads(robocell("solve", "--list-profiles", "--json").stdout)
    assert {row["name"] for row in listed} >= {"six-motor", "tilt-spin", "soltvvo-2x2"}


def test_help_points_to_an_option_that_exists():
    assert "--list-profiles" in robocell("solve", "--help").stdout


def test_max_length_not_reached_in_the_budget_fails_clearly():
    done = robocell("solve", "--max-length", "5", "--timeout", "0.2", SCRAMBLED_3X3)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "no solution of at most 5 moves" in done.stderr
    assert "--timeout" in done.stderr


@pytest.mark.slow
def test_max_length_reached_is_kept():
    done = robocell("solve", "--max-length", "22", "--json", SCRAMBLED_3X3)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["length"] <= 22


def test_max_length_below_the_optimum_of_a_2x2_says_it_is_optimal():
    done = robocell("solve", "--profile", "soltvvo-2x2", "--max-length", "1", SCRAMBLED_2X2)
    assert done.returncode == 1
    assert "the optimal solution for profile soltvvo-2x2 has" in done.stderr


def test_max_length_failure_is_one_error_row_per_line_on_stdin():
    done = subprocess.run([sys.executable, "-m", "robocell", "solve", "--max-length", "3",
                           "--timeout", "0", "-"], input=SCRAMBLED_3X3 + "\n",
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert json.loads(done.stdout)["code"] == "too_long"


@pytest.mark.parametrize("option, value, needle", [
    ("--timeout", "-1", "--timeout must be 0 or more seconds, not -1"),
    ("--timeout", "nan", "--timeout must be 0 or more seconds"),
    ("--max-length", "-2", "--max-length must be 0 or more"),
])
def test_negative_limits_are_refused(option: str, value: str, needle: str):
    done = robocell("solve", option, value, SCRAMBLED_3X3)
    assert done.returncode == 2
    assert needle in done.stderr


def _fresh_clone_env(tmp_path: Path) -> dict:
    return {**os.environ, "ROBOCELL_TABLES": str(tmp_path / "tables")}


def test_verify_on_unbuilt_tables_says_how_to_build_them(tmp_path: Path):
    done = robocell("tables", "verify", "--profile", "soltvvo-2x2",
                    env=_fresh_clone_env(tmp_path))
    assert done.returncode == 1
    assert "cube2-soltvvo-2x2: not built yet" in done.stdout
    assert "`robocell tables build --profile soltvvo-2x2`" in done.stderr


def test_info_on_unbuilt_tables_prints_no_none(tmp_path: Path):
    done = robocell("tables", "info", "--profile", "soltvvo-2x2",
                    env=_fresh_clone_env(tmp_path))
    assert done.returncode == 0
    assert "None" not in done.stdout
    assert "cube2-soltvvo-2x2: not built yet — " in done.stdout


def test_the_docs_table_of_shipped_profiles_lists_every_one():
    docs = Path(__file__).resolve().parents[2] / "docs" / "profiles.md"
    rows = {line.split("|")[1].strip().strip("`") for line in docs.read_text().splitlines()
            if line.startswith("| `")}
    assert set(available_profiles()) <= rows
