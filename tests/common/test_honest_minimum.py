"""The honest minimum: `robocell tables build` and `verify` without --profile work on what the
configured cell uses (and say the size before a build starts); the solver service warms only
its profile's tables, so a 2x2 cell never builds the 3x3 ones.

Real processes, each with its own empty tables directory; the 2x2 tables build in seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys

from robocell.services.solver.table_groups import all_groups, cell_groups
from robocell.services.solver.worker import warm_profiles

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def robocell(*args: str, tables: str, profile: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ROBOCELL_PROFILE"}
    env["ROBOCELL_TABLES"] = tables
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    if profile is not None:
        env["ROBOCELL_PROFILE"] = profile
    return subprocess.run([sys.executable, "-m", "robocell", *args], env=env,
                          capture_output=True, text=True, timeout=600)


def test_tables_build_without_profile_builds_the_configured_cell_and_says_the_size_first(
        tmp_path):
    out = robocell("tables", "build", tables=str(tmp_path), profile="soltvvo-2x2")
    assert out.returncode == 0, out.stderr
    built = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("."))
    assert built == ["cube2-classes", "cube2-soltvvo-2x2"], built
    first = out.stderr.splitlines()[0]
    assert "soltvvo-2x2" in first and "MB" in first and " s" in first, out.stderr
    assert "--all" in out.stderr  # how to build every profile's, and that it is more


def test_tables_verify_without_profile_checks_the_configured_cell_only(tmp_path):
    assert robocell("tables", "build", tables=str(tmp_path),
                    profile="soltvvo-2x2").returncode == 0
    out = robocell("tables", "verify", tables=str(tmp_path), profile="soltvvo-2x2")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "cube3" not in out.stdout


def test_a_2x2_cell_warms_and_builds_no_3x3_table():
    assert warm_profiles("soltvvo-2x2") == ("soltvvo-2x2",)
    assert all(g.name.startswith("cube2-") for g in cell_groups("soltvvo-2x2"))
    assert warm_profiles(None) == ("htm",)


def test_every_group_says_how_big_and_how_long_before_it_is_built():
    for group in all_groups():
        assert group.expected_mb > 0 and group.expected_s > 0, group.name
