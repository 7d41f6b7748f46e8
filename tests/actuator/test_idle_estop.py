"""An e-stop the actuator cannot write (the serial line is closed) is never answered as sent:
the command fails naming the line, the actuator says so on the bus and on its output, prints no
traceback, and keeps serving."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from robocell.common.bus import CommandFailed
from robocell.common.config import free_port_block
from robocell.common.profile import load_profile
from robocell.services.actuator.link import Link
from robocell.services.actuator.service import ActuatorService


class RecordingNode:
    """The bus at the edge of the unit: what the service publishes and its states."""

    def __init__(self) -> None:
        self.published: list[tuple[str, dict]] = []
        self.states: list[tuple[str, dict]] = []

    def publish(self, topic: str, payload: dict[str, Any]) -> int:
        self.published.append((topic, payload))
        return len(self.published)

    def set_state(self, state: str, **health: Any) -> None:
        self.states.append((state, health))


def test_an_estop_while_idle_on_a_closed_line_is_reported_without_a_traceback(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    crashed: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: crashed.append(args.exc_value))
    node = RecordingNode()
    # nothing listens there, and the service was never started: the line is closed
    link = Link(f"socket://127.0.0.1:{free_port_block(1)}")
    service = ActuatorService(node, load_profile("soltvvo-2x2"), link)

    with pytest.raises(CommandFailed) as failed:
        service.on_estop({}, None)
    # the byte was not written: the caller must not read "sent"
    assert failed.value.code == "failed" and "e-stop not written" in str(failed.value)
    assert link.url in str(failed.value) and "power" in str(failed.value)

    def reported() -> list[dict]:
        return [p for topic, p in node.published
                if topic == "errors" and p["code"] == "serial_estop_failed"]

    deadline = time.monotonic() + 10
    while not (reported() or crashed) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not crashed, f"the idle e-stop's thread died: {crashed[0]!r}"
    errors = reported()
    assert len(errors) == 1, node.published
    error = errors[0]
    assert error["service"] == "actuator" and error["stage"] == "serial"
    assert link.url in error["message"] and "not written" in error["message"]
    assert "power" in error["action"]
    printed = capsys.readouterr().err
    assert "Traceback" not in printed
    assert "e-stop" in printed and link.url in printed
    # and the service still serves
    assert service.on_status({}, None)["job"] is None
