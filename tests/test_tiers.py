"""The test tiers: a test is marked by the fixtures it uses (``cell``, ``browser``, ``avr``),
and ``--fast`` (``./dev test --fast``) selects at least 300 tests, none of them marked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.tiers import FAST_TIER, HEAVY, tier_marks

TESTS = Path(__file__).resolve().parent
FAST_TIER_MIN_TESTS = 300
COLLECT_TIMEOUT_S = 300.0


def test_a_test_gets_the_tier_of_each_fixture_it_uses() -> None:
    assert tier_marks(["tmp_path", "launch_cell"]) == {"cell"}
    assert tier_marks(["cell_env"]) == {"cell"}
    assert tier_marks(["page", "browser"]) == {"browser"}
    assert tier_marks(["avr", "avr_toolchain", "tmp_path"]) == {"avr"}
    assert tier_marks(["launch_cell", "browser"]) == {"cell", "browser"}
    assert tier_marks(["tmp_path", "soltvvo", "broker"]) == set()


def test_the_fast_tier_leaves_out_every_heavy_marker() -> None:
    assert FAST_TIER == "not cell and not browser and not avr and not slow"
    assert set(HEAVY) == {"cell", "browser", "avr", "slow"}


def collect_fast_tier() -> dict[str, tuple[bool, set[str]]]:
    """Every test of the suite: whether ``--fast`` selects it, and its tier markers."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "--fast", "-p",
         "support.tier_listing", "-p", "no:cacheprovider", str(TESTS)],
        cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=COLLECT_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    tests: dict[str, tuple[bool, set[str]]] = {}
    for line in done.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        if kind in ("selected", "deselected"):
            node_id, _, marks = rest.rpartition(" ")
            tests[node_id] = (kind == "selected", set(filter(None, marks.split(","))))
    return tests


@pytest.mark.slow
def test_tests_are_marked_by_their_fixtures_and_the_fast_tier_has_none_of_them() -> None:
    tests = collect_fast_tier()
    fast = [node_id for node_id, (selected, _) in tests.items() if selected]
    assert len(fast) >= FAST_TIER_MIN_TESTS, f"the fast tier holds {len(fast)} tests"
    for node_id, (selected, marks) in tests.items():
        assert selected == (not marks), (node_id, marks)

    def tiers(test: str, param: str = "") -> set[frozenset[str]]:
        """The distinct sets of tier markers, ``slow`` aside, of the tests ``test`` (a node
        id's start) whose parameters name ``param``."""
        start = f"tests/{test}"
        found = {frozenset(marks - {"slow"}) for node_id, (_, marks) in tests.items()
                 if node_id.startswith(start) and param in node_id[len(start):]}
        assert found, f"no test {test} {param}"
        return found

    cell, browser, avr, none = (frozenset({"cell"}), frozenset({"browser"}),
                                frozenset({"avr"}), frozenset())
    # a module-scoped cell built on launch_cell, launch_cell itself, cell_env
    assert tiers("integration/test_rolling.py::") == {cell}
    assert tiers("integration/test_cell.py::") == {cell}
    assert tiers("integration/test_lifetime.py::test_up_sim_") == {cell}
    # browser through the page fixture; avr through usefixtures and through a fixture's param
    assert tiers("monitor/test_page.py::") == {browser}
    assert tiers("firmware/test_conformance.py::") == {avr}
    faults = "actuator/test_execution.py::test_faults_leave_twin_solved"
    assert tiers(faults, "avr") == {avr}
    assert tiers(faults, "python") == {none}
    assert tiers("bus/test_envelope.py::") == {none}
    # slow on one parameter alone
    assert all("slow" in tests[n][1] for n in tests if "[python-six-motor-" in n)
    assert not any("slow" in tests[n][1] for n in tests if "[python-soltvvo-2x2-" in n)
