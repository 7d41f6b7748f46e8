"""The cell's commands as Foxglove services: the monitor's token gate, the arguments checked
against the commands' declarations, and the bus commands each call sends. The bus is replaced
by a recorder of requests here (the live test sends them for real)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from robocell.common.bus.commands import Reply
from robocell.common.operator_control import ControlRefusedError
from robocell.services.foxglove import control
from robocell.services.foxglove.control import CALLS, CellServices, parse_call, request_schema

TOKEN = "foxglove-token-91ab"


@dataclass
class Call:
    """What the SDK hands a service handler."""

    service_name: str
    payload: bytes
    encoding: str = "json"
    client_id: int = 1
    call_id: int = 1


class Bus:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str, dict, float]] = []

    def request(self, service: str, command: str, args: dict, timeout: float) -> Reply:
        self.sent.append((service, command, args, timeout))
        return Reply("r1", True, {"done": command}, service=service, command=command)


@pytest.fixture
def no_delay(monkeypatch):
    monkeypatch.setattr(control, "WRONG_TOKEN_DELAY_S", 0.0)


def call(services: CellServices, name: str, request: object) -> dict:
    return json.loads(services.handle(Call(name, json.dumps(request).encode())))


@pytest.mark.parametrize("request_", [{}, {"token": ""}, {"token": TOKEN + "x"},
                                      {"token": 12345678}, {"seed": 3}])
def test_a_call_without_the_token_is_refused_and_sends_nothing(request_, no_delay):
    bus = Bus()
    services = CellServices(TOKEN, bus.request)
    with pytest.raises(ControlRefusedError) as refused:
        call(services, "cell.scramble", request_)
    assert refused.value.code == "forbidden" and "token" in str(refused.value)
    assert bus.sent == [] and services.refused == 1


def test_without_a_configured_token_every_call_is_refused(no_delay):
    bus = Bus()
    with pytest.raises(ControlRefusedError, match="started without the monitor's token"):
        call(CellServices(None, bus.request), "cell.start", {"token": ""})
    assert bus.sent == []


def test_with_the_token_each_service_sends_its_bus_commands(no_delay):
    bus = Bus()
    services = CellServices(TOKEN, bus.request)
    answer = call(services, "cell.scramble", {"token": TOKEN, "seed": 3})
    assert answer["ok"] and answer["replies"][0]["result"] == {"done": "scramble"}
    assert bus.sent[-1][:3] == ("cell", "scramble", {"seed": 3})
    answer = call(services, "cell.estop", {"token": TOKEN})
    assert sorted(s[:2] for s in bus.sent[1:]) == [("actuator", "estop"), ("cell", "estop")]
    assert len(answer["replies"]) == 2
    call(services, "solver.solve", {"token": TOKEN, "facelets": "UUUU"})
    assert bus.sent[-1][:3] == ("solver", "solve", {"facelets": "UUUU"})
    assert bus.sent[-1][3] == control.SOLVE_TIMEOUT_S


@pytest.mark.parametrize("name,request_,words", [
    ("cell.start", {"token": TOKEN, "seed": 3}, "takes only the token"),
    ("cell.scramble", {"token": TOKEN, "seed": "three"}, "seed"),
    ("cell.scramble", {"token": TOKEN, "colour": 1}, "colour"),
    ("solver.solve", {"token": TOKEN}, "facelets"),
])
def test_arguments_that_do_not_fit_the_command_are_refused_naming_the_field(
        name, request_, words):
    with pytest.raises(ControlRefusedError) as refused:
        parse_call(json.dumps(request_).encode(), CALLS[name], TOKEN)
    assert refused.value.code == "invalid_arguments" and words in str(refused.value)


@pytest.mark.parametrize("payload", [b"{not json", b"[1, 2]", b"x" * 70_000])
def test_a_malformed_request_is_refused_with_what_to_send(payload):
    with pytest.raises(ControlRefusedError) as refused:
        parse_call(payload, CALLS["cell.start"], TOKEN)
    assert refused.value.code == "invalid_arguments"


def test_request_schemas_offer_the_token_and_the_commands_arguments():
    scramble = request_schema("cell.scramble", CALLS["cell.scramble"])
    assert set(scramble["properties"]) == {"token", "moves", "seed"}
    assert scramble["required"] == ["token"]
    assert set(request_schema("cell.start", CALLS["cell.start"])["properties"]) == {"token"}
    assert "facelets" in request_schema("solver.solve", CALLS["solver.solve"])["properties"]
