"""The fault suite: the simulated cell under the faults a real host sees, one after another.

One cell runs for the whole module (docker-compose.yml's `sim` profile as real processes,
motors sped up). Each test injects one fault into a cycle: SIGKILL of each of the seven
services in turn (restarting only that one), a firmware reboot mid-execution (the cube stays
where it was), an e-stop mid-turn followed by the recovery path (`cell.recover`: e-stop,
clear, home, rescan, plan, solve), and a broker restart. Each cycle with a fault either
succeeds or fails with a report naming the stage and the cause, no cycle is ever reported
solved with the twin unsolved, and the next cycle solves the cube without any other service
being restarted. Scrambles are seeded; `bench/cell_faults.py` prints the timings.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.faults import FAULTS, FaultyCell

SPEED = 10.0
REPORT_BOUND_S = 20.0
"""Generous bound on the time to a report under test load (the target, 3 s, is measured by
bench/cell_faults.py)."""
STAGES = ("homing", "scanning", "solving", "executing", "verifying")


@pytest.fixture(scope="module")
def cell(launch_cell) -> Iterator[FaultyCell]:
    with launch_cell("soltvvo-2x2", speed=SPEED) as launcher:
        faulty = FaultyCell(launcher, seed=21)
        try:
            result, wrong = faulty.cycle(scramble_seed=2100)
            assert result["ok"] and not wrong, result
            yield faulty
        finally:
            faulty.close()


@pytest.mark.parametrize("fault", FAULTS)
def test_a_fault_is_reported_and_the_next_cycle_solves(cell, fault):
    outcome = cell.inject(fault, scramble_seed=2200 + FAULTS.index(fault))
    assert outcome.wrong == 0, outcome
    assert outcome.report, outcome
    assert outcome.report_s is not None and outcome.report_s < REPORT_BOUND_S, outcome
    if outcome.cycle_ok is False:
        # the cell's own report: the stage, and the cause in words
        assert outcome.failed_stage in STAGES, outcome
        assert len(outcome.report) > 20, outcome
    elif outcome.cycle_ok is None:
        # the cell or the broker went away: `robocell cycle` named it and the stage
        assert any(word in outcome.report for word in ("went away", "restarted",
                                                        "lost the broker")), outcome
        assert "stage" in outcome.report, outcome
    assert outcome.next_ok, outcome.next_result
    if fault == "e-stop mid-turn":
        assert outcome.cycle_ok is False and outcome.failed_stage == "executing", outcome
        assert "emergency stop" in outcome.report, outcome
        assert outcome.next_result.get("homed"), outcome.next_result
    if fault == "kill vision-sim":
        assert outcome.failed_stage == "scanning" and "vision" in outcome.report, outcome
    if fault == "kill monitor":
        assert outcome.cycle_ok, outcome


def test_every_cycle_of_the_suite_is_in_the_history(cell):
    history = cell.history()
    logged = {c["cycle_id"]: c for c in history["cycles"]}
    missing = [c for c in cell.cycle_ids if c not in logged]
    assert not missing, missing
    assert all(c["result"] in ("solved", "failed", "interrupted") for c in logged.values())
    assert cell.solved_ids and all(logged[c]["result"] == "solved" for c in cell.solved_ids)
