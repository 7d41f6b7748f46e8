"""The plan as one type: `Plan` has exactly the fields of `solver.plan` and round-trips."""

import dataclasses

import pytest

from robocell.common.bus.messages import Plan
from robocell.common.bus.schema import command_spec, topic_spec
from robocell.common.bus.wire import ValidationError

PAYLOAD = {"plan_id": "p1", "puzzle": "2x2x2", "profile": "soltvvo-2x2", "facelets": "",
           "primitives": ["R'", "B2"], "face_turns": ["R'"], "predicted_ms": 10.0,
           "search": {"length": 1}}


def test_the_plan_type_has_the_fields_of_the_topic():
    declared = {f.name for f in topic_spec("solver.plan").fields}
    assert {f.name for f in dataclasses.fields(Plan)} == declared


def test_a_plan_round_trips_through_its_payload():
    assert Plan.from_payload(PAYLOAD).to_payload() == PAYLOAD
    with_scan = {**PAYLOAD, "scan_id": "s1"}
    assert Plan.from_payload(with_scan).to_payload() == with_scan


def test_a_payload_that_is_not_a_plan_is_refused_by_field():
    with pytest.raises(ValidationError, match="primitives"):
        Plan.from_payload({k: v for k, v in PAYLOAD.items() if k != "primitives"})


def test_execute_takes_the_plan_itself():
    # the plan itself, not an id to look up; the only other argument is the optional hold
    # of the rolling search (actuator.amend)
    args = {f.name: f for f in command_spec("actuator", "execute").args}
    assert list(args) == ["plan", "hold_at"]
    assert not args["plan"].optional and args["hold_at"].optional
