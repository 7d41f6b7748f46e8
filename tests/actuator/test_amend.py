"""A running plan's rest replaced while the robot executes its first steps (the rolling
search): through the link to a real firmware-sim process, and through the actuator service on
a real broker. Nothing of a held step is sent before it is released, each line runs exactly
once, and an amendment that comes after the robot reached the step is refused with the
reason while the rest runs as it was."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from robocell.common.bus import CommandFailed
from robocell.common.profile import load_profile
from robocell.services.actuator.amend import AmendRefused, RunningPlan
from robocell.services.actuator.executor import Compiler, Execution, PlanMismatch
from robocell.services.actuator.link import Link, Tail

from .conftest import primitive_inverses
from .test_execution import assert_exactly_once, marks
from .test_service import CALL_S, Cell, scrambled_twin

PLAN = ["R'", "B'+F'", "R2+L'", "F'", "R'+L2", "B2"]
"""A scramble of the soltvvo-2x2 robot; the tests run it and then a plan that undoes it."""


def undo(plan: list[str]) -> list[str]:
    inverses = primitive_inverses(load_profile("soltvvo-2x2"))
    return [p for name in reversed(plan) for p in inverses[name]]


def detour(rest: list[str]) -> list[str]:
    """Another rest that does the same: a primitive and its undoing first."""
    inverses = primitive_inverses(load_profile("soltvvo-2x2"))
    return ["B2", *inverses["B2"], *rest]


@pytest.fixture
def bus_cell(tmp_path: Path) -> Iterator:
    """A broker, a firmware-sim and an actuator process (`test_service.Cell`) at a speed."""
    cells: list[Cell] = []

    def factory(speed: float) -> Cell:
        cells.append(Cell(tmp_path, speed=speed))
        return cells[-1]

    yield factory
    for cell in cells:
        cell.close()


def stream_in_thread(link: Link, tail: Tail, execution: Execution) -> list:
    out: list = []
    worker = threading.Thread(target=lambda: out.append(link.stream(tail, execution.line_done)))
    worker.start()
    out.append(worker)
    return out


@pytest.mark.slow
def test_a_held_rest_is_replaced_before_any_of_it_is_sent(firmware_factory, soltvvo):
    fw = firmware_factory(speed=2)  # the head takes about a second
    link = Link(fw.url)
    link.open()
    compiler = Compiler(soltvvo)
    plan = PLAN + undo(PLAN)
    running = RunningPlan.start("p1", "2x2x2", "soltvvo-2x2", plan, compiler.plan(plan),
                                hold_at=len(PLAN))
    execution = Execution(running.job)
    out = stream_in_thread(link, running.tail, execution)
    time.sleep(0.3)
    assert 0 < execution.done_lines < running.job.first_line(len(PLAN))
    rest = detour(undo(PLAN))
    accepted, reason = running.amend(compiler, len(PLAN), rest, hold_at=len(PLAN) + 2)
    assert accepted, reason
    assert running.amendments == 1 and running.primitives == PLAN + rest
    accepted, reason = running.amend(compiler, len(PLAN) + 2, None, hold_at=None)
    assert accepted, reason  # released, the rest kept
    out[0].join(20)
    assert out[1].outcome == "completed"
    assert execution.finished and execution.steps_done == len(PLAN + rest)
    assert_exactly_once(fw, PLAN + rest)
    assert fw.wait_executed(link.next_line - 1)[-1]["solved"]
    assert running.tail.released_idle == []


def test_a_hold_nobody_releases_lets_the_rest_run_as_it_was(firmware_factory, soltvvo):
    fw = firmware_factory(speed=20)
    link = Link(fw.url)
    link.open()
    compiler = Compiler(soltvvo)
    plan = PLAN + undo(PLAN)
    running = RunningPlan.start("p2", "2x2x2", "soltvvo-2x2", plan, compiler.plan(plan),
                                hold_at=3)
    execution = Execution(running.job)
    out = stream_in_thread(link, running.tail, execution)
    out[0].join(20)
    assert out[1].outcome == "completed" and execution.finished
    assert running.tail.released_idle == [running.job.first_line(3)]
    accepted, reason = running.amend(compiler, 3, detour(plan[3:]), hold_at=None)
    assert not accepted and reason.startswith("too late: the robot reached step 3")
    assert running.primitives == plan and running.amendments == 0
    assert marks(fw.executed()) == plan
    assert fw.wait_executed(link.next_line - 1)[-1]["solved"]


def test_amendments_that_cannot_apply_change_nothing(soltvvo):
    compiler = Compiler(soltvvo)
    plan = PLAN + undo(PLAN)
    running = RunningPlan.start("p3", "2x2x2", "soltvvo-2x2", plan, compiler.plan(plan),
                                hold_at=2)
    texts = list(running.tail.commands)
    for at, rest, hold, message in [
            (2, ["Q9"], None, "primitive 'Q9' is not one of"),
            (2, [], None, "the rest from step 2 is empty"),
            (2, None, 2, "hold_at 2: give a step after 2"),
            (0, None, None, "at_step 0: give a step from 1"),
            (len(plan), None, None, f"at_step {len(plan)}: give a step from 1")]:
        with pytest.raises(PlanMismatch, match=message):
            running.amend(compiler, at, rest, hold)
    accepted, reason = running.amend(compiler, 4, None, None)
    assert not accepted and reason == ("step 4 is not held (the plan is held at step 2); "
                                       "the plan's rest runs as it is")
    assert running.tail.commands == texts and running.tail.hold == running.job.first_line(2)
    held = running.tail.hold
    with pytest.raises(ValueError, match=f"hold at command {held}: give one after {held}"):
        running.tail.splice(held, ["X"], held)  # the tail's own check, before any change
    assert running.tail.commands == texts
    with pytest.raises(AmendRefused, match="hold_at 0: give a step from 1"):
        RunningPlan.start("p4", "2x2x2", "soltvvo-2x2", plan, compiler.plan(plan), hold_at=0)


@pytest.mark.slow
def test_amend_over_the_bus_replaces_the_rest_and_the_result_says_so(bus_cell):
    cell = bus_cell(speed=2)
    plan = scrambled_twin(cell)
    plan_id = cell.make_plan(plan)
    at = len(plan) - 2
    reply = cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id], "hold_at": at},
                           timeout=CALL_S)
    assert reply["n_steps"] == len(plan)
    other = cell.make_plan(plan)
    with pytest.raises(CommandFailed, match=f"hold_at {len(plan)}: give a step from 1"):
        cell.node.call("actuator", "execute", {"plan": cell.plans[other],
                                               "hold_at": len(plan)}, timeout=CALL_S)
    rest = detour(plan[at:])
    with pytest.raises(CommandFailed, match="invalid_arguments.*not one of"):
        cell.node.call("actuator", "amend", {"plan_id": plan_id, "at_step": at,
                                             "primitives": ["Q9"]}, timeout=CALL_S)
    reply = cell.node.call("actuator", "amend", {"plan_id": plan_id, "at_step": at,
                                                 "primitives": rest}, timeout=CALL_S)
    assert reply["accepted"] and reply["n_steps"] == at + len(rest)
    again = cell.node.call("actuator", "amend", {"plan_id": plan_id, "at_step": at,
                                                 "primitives": rest}, timeout=CALL_S)
    assert not again["accepted"] and "not held" in again["reason"]
    result = cell.wait("actuator.result", lambda p: p["plan_id"] == plan_id)
    assert result["ok"] and result["amendments"] == 1
    assert result["primitives"] == plan[:at] + rest
    assert result["executed"] == result["n_steps"] == at + len(rest)
    steps = [p for p in cell.seen["actuator.progress"] if p["plan_id"] == plan_id]
    assert [p["step"] for p in steps] == list(range(at + len(rest)))
    assert cell.wait("sim.twin_state", lambda p: p["solved"], timeout=CALL_S)
    late = cell.node.call("actuator", "amend", {"plan_id": plan_id, "at_step": at},
                          timeout=CALL_S)
    assert not late["accepted"] and late["reason"].startswith(f"plan {plan_id} is not running")


@pytest.mark.slow
def test_an_amendment_after_the_robot_reached_the_step_is_refused(bus_cell):
    cell = bus_cell(speed=50)
    plan = scrambled_twin(cell)
    plan_id = cell.make_plan(plan)
    cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id], "hold_at": 1},
                   timeout=CALL_S)
    assert cell.wait("actuator.progress", lambda p: p["plan_id"] == plan_id and p["step"] >= 1)
    reply = cell.node.call("actuator", "amend", {"plan_id": plan_id, "at_step": 1,
                                                 "primitives": detour(plan[1:])},
                           timeout=CALL_S)
    assert not reply["accepted"]
    assert reply["reason"].startswith("too late: the robot reached step 1") or \
        reply["reason"].startswith(f"plan {plan_id} is not running")
    result = cell.wait("actuator.result", lambda p: p["plan_id"] == plan_id)
    assert result["ok"] and result["amendments"] == 0 and result["primitives"] == plan
    assert cell.wait("sim.twin_state", lambda p: p["solved"], timeout=CALL_S)
