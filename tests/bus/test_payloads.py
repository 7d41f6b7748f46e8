"""Typed contracts: one generated class per payload and per command result, every command's
result declared, a field typed by another declared type checked through it."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from support.bus import wait_registered, wait_subscribed

from robocell.common.bus import Endpoints, Node, payloads
from robocell.common.bus.payloads import Plan
from robocell.common.bus.schema import (
    result_class,
    type_json_schema,
    validate_args,
    validate_payload,
    validate_result,
)
from robocell.common.bus.topics import COMMAND_SPECS, COMMANDS, TOPICS
from robocell.common.bus.wire import ValidationError

SERVICES = Path(payloads.__file__).resolve().parents[2] / "services"
PROCESS_OF_PACKAGE = {"firmware": "firmware-sim"}
"""Process packages whose bus name is not the package's name."""
PLAN = Plan(plan_id="p1", puzzle="2x2x2", profile="soltvvo-2x2", facelets="F" * 24,
            primitives=["R'", "B2"], face_turns=["R'", "B2"], predicted_ms=640.0,
            search={"nodes": 12})


def test_every_payload_and_result_has_its_class_with_exactly_its_fields():
    declared = [(spec.type_name, spec.fields) for spec in TOPICS]
    declared += [(spec.result_name, spec.result) for spec in COMMAND_SPECS.values()]
    for name, fields in declared:
        cls = getattr(payloads, name)
        assert cls.__struct_fields__ == tuple(f.name for f in fields), name
    assert result_class("actuator", "status") is payloads.ActuatorStatusResult
    assert result_class("solver", "solve") is Plan
    assert result_class("anything", "ping") is payloads.PingResult


def test_every_command_a_process_serves_declares_its_arguments_and_result():
    served = set()
    for path in SERVICES.glob("*/service.py"):
        process = PROCESS_OF_PACKAGE.get(path.parent.name, path.parent.name)
        served |= {(process, c) for c in re.findall(r"\.serve\(\"(\w+)\"", path.read_text())}
    assert ("actuator", "home") in served and ("solver", "solve") in served
    assert served <= set(COMMAND_SPECS)
    assert all(spec.result is not None for spec in COMMANDS)


def test_a_class_built_in_code_is_a_payload_that_fits_its_topic():
    validate_payload("solver.plan", PLAN.to_payload())
    assert "scan_id" not in PLAN.to_payload()  # absent, as declared optional
    assert Plan.from_checked(PLAN.to_payload()) == PLAN


def test_a_plan_argument_is_checked_field_by_field_through_its_type():
    validate_args("actuator", "execute", {"plan": PLAN.to_payload(), "hold_at": 1})
    for plan, needle in ((5, "field 'plan': expected a map (Plan)"),
                         ({**PLAN.to_payload(), "primitives": "R' B2"}, "'plan.primitives'"),
                         ({**PLAN.to_payload(), "moves": []}, "undeclared field(s) plan.moves")):
        with pytest.raises(ValidationError, match=re.escape(needle)):
            validate_args("actuator", "execute", {"plan": plan})
    schema = type_json_schema("Plan")
    assert schema["required"][:2] == ["plan_id", "puzzle"] and not schema[
        "additionalProperties"]


def test_a_result_is_checked_against_its_declaration_naming_command_and_field():
    validate_result("solver", "solve", PLAN.to_payload())
    with pytest.raises(ValidationError, match=r"solver\.solve result: .*face_turns"):
        validate_result("solver", "solve", {**PLAN.to_payload(), "face_turns": "R' B2"})
    with pytest.raises(ValidationError, match=r"actuator\.status result: missing .*last_line"):
        validate_result("actuator", "status", {"profile": "x"})
    validate_result("anything", "undeclared", "any plain value")


def test_a_node_sends_a_payload_class_as_its_map(endpoints: Endpoints):
    received: list[dict] = []
    arrived = threading.Event()

    def on_plan(env) -> None:
        received.append(env.payload)
        arrived.set()

    with Node("solver", endpoints) as solver, Node("cell", endpoints) as cell:
        solver.serve("solve", lambda args, ctx: PLAN)  # a handler may return the class
        cell.subscribe("solver.plan", on_plan)
        wait_registered(endpoints, "solver", ["solve"])
        wait_subscribed(cell.subscriber, "solver.plan")
        solver.publish("solver.plan", PLAN)
        assert cell.call("solver", "solve", {"facelets": "F" * 24}, timeout=10) == \
            PLAN.to_payload()
        assert arrived.wait(10)
    assert received == [PLAN.to_payload()]
