"""The cell's commands as Foxglove services, behind the monitor's token.

Foxglove calls a service with one JSON request; here it is the command's arguments plus the
monitor's token (``--token`` / ``$ROBOCELL_MONITOR_TOKEN``, the dashboard's)::

    cell.scramble  {"token": "...", "seed": 3}

The token is checked as the dashboard checks it (:func:`~robocell.common.operator_control.
check_token`, constant time, a refused one answered late); without it, or with arguments
that do not fit the command's declaration, the call fails with a message saying why and
nothing reaches the bus. Otherwise the bus commands are sent (``cell.estop`` stops the
actuator and the cycle together, as the dashboard's e-stop) and the response is their
replies::

    {"ok": true, "replies": [{"service", "command", "ok", "error", "message", "result"}]}
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from foxglove import MessageSchema, Schema, Service, ServiceRequest, ServiceSchema

from robocell.common.bus.commands import Reply
from robocell.common.bus.schema import command_spec, type_json_schema, validate_args
from robocell.common.bus.views import jsonable
from robocell.common.bus.wire import MessageError
from robocell.common.operator_control import (
    ACTIONS,
    WRONG_TOKEN_DELAY_S,
    Action,
    ControlRefusedError,
    check_token,
)

SOLVE_TIMEOUT_S = 30.0
"""A 3x3 search may use its whole budget: wait longer than for the cell's buttons."""
ENCODING = "json"
MAX_REQUEST_BYTES = 64 * 1024
CALL_WORKERS = 4
TOKEN_BACKLOG_MAX_S = 10.0
"""Token checks queued this far ahead (at WRONG_TOKEN_DELAY_S each) refuse a new one without a
try, as the dashboard's AUTH_BACKLOG_MAX_S."""

CALLS: dict[str, Action] = {
    "cell.start": ACTIONS["start"],
    "cell.scramble": ACTIONS["scramble"],
    "cell.estop": ACTIONS["estop"],
    "solver.solve": Action("solve", (("solver", "solve"),), SOLVE_TIMEOUT_S, takes_args=True),
}
"""Foxglove service name -> the bus commands it sends (the dashboard's actions where it has
them)."""

RESPONSE_SCHEMA: dict[str, Any] = {
    "title": "robocell.ControlReply", "type": "object",
    "properties": {
        "ok": {"type": "boolean", "description": "every bus command succeeded"},
        "elapsed_ms": {"type": "number"},
        "replies": {"type": "array", "items": {"type": "object", "properties": {
            "service": {"type": "string"}, "command": {"type": "string"},
            "ok": {"type": "boolean"}, "error": {"type": ["string", "null"]},
            "message": {"type": "string"}, "result": {}}}},
    },
}

Requester = Callable[[str, str, dict[str, Any], float], Reply]
"""(service, command, args, timeout_s) -> Reply: Node.request."""


def request_schema(name: str, action: Action) -> dict[str, Any]:
    """JSON Schema of a call's request: the token and the command's declared arguments."""
    properties: dict[str, Any] = {"token": {
        "type": "string", "description": "the monitor's token (robocell monitor --token / "
                                          "$ROBOCELL_MONITOR_TOKEN)"}}
    service, command = action.commands[0]
    spec = command_spec(service, command)
    if action.takes_args and spec is not None:
        for field in spec.args:
            properties[field.name] = dict(type_json_schema(field.type), description=field.doc)
    return {"title": f"robocell.{name}.request",
            "description": spec.doc if spec is not None else name,
            "type": "object", "properties": properties, "required": ["token"],
            "additionalProperties": False}


class TokenGate:
    """Token checks of every connection, one at a time, the next one WRONG_TOKEN_DELAY_S after
    a wrong token: guesses are tried at most that often in all, however many connections
    make them (the SDK names no client address; its clients share the host's loopback, as
    one address of the dashboard). A right token delays no one; a check that would wait
    past TOKEN_BACKLOG_MAX_S is refused without a try."""

    def __init__(self) -> None:
        self._turn = threading.Lock()
        self._count = threading.Lock()
        self._waiting = 0
        self._next = 0.0

    def check(self, configured: str | None, presented: Any) -> bool:
        """Whether ``presented`` is the token; ControlRefusedError (``busy``) when too many
        attempts wait already."""
        with self._count:
            if self._waiting * WRONG_TOKEN_DELAY_S >= TOKEN_BACKLOG_MAX_S:
                raise ControlRefusedError("busy", "too many token attempts; wait and try "
                                                  "again")
            self._waiting += 1
        try:
            with self._turn:
                wait = self._next - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                accepted = check_token(configured, presented)
                if not accepted:
                    self._next = time.monotonic() + WRONG_TOKEN_DELAY_S
                return accepted
        finally:
            with self._count:
                self._waiting -= 1


def parse_call(payload: bytes, action: Action, configured: str | None,
               check: Callable[[str | None, Any], bool] = check_token
               ) -> tuple[bool, dict[str, Any]]:
    """(token accepted?, the command's arguments) of a request, or ControlRefusedError
    (``invalid_arguments``) for a malformed one; the token is tried with ``check``. The caller
    refuses an unaccepted one."""
    if len(payload) > MAX_REQUEST_BYTES:
        raise ControlRefusedError("invalid_arguments", f"request of {len(payload)} bytes; at "
                                  f"most {MAX_REQUEST_BYTES}")
    try:
        request = json.loads(payload or b"{}")
    except ValueError as exc:
        raise ControlRefusedError("invalid_arguments", f"the request is not JSON ({exc}); "
                                  'send an object such as {"token": "..."}') from None
    if not isinstance(request, dict):
        raise ControlRefusedError("invalid_arguments", "the request must be a JSON object "
                                  'such as {"token": "..."}')
    authorised = check(configured, request.pop("token", None))
    if not authorised:
        return False, {}
    if request and not action.takes_args:
        raise ControlRefusedError("invalid_arguments", f"takes only the token; got "
                                  f"{', '.join(sorted(request))}")
    for service, command in action.commands:
        try:
            validate_args(service, command, request)
        except MessageError as exc:
            raise ControlRefusedError("invalid_arguments", str(exc)) from None
    return True, request


class CellServices:
    """The Foxglove services of :data:`CALLS`; each call is checked, then sent with
    ``request`` (from the SDK's handler thread)."""

    def __init__(self, token: str | None, request: Requester) -> None:
        self.token = token
        self._request = request
        self._pool = ThreadPoolExecutor(CALL_WORKERS, thread_name_prefix="foxglove-call")
        self._lock = threading.Lock()
        self.refused = 0
        self.answered = 0
        self.gate = TokenGate()

    def services(self) -> list[Service]:
        return [Service(name, handler=self.handle, schema=ServiceSchema(
                    f"robocell.{name}",
                    request=MessageSchema(encoding=ENCODING, schema=Schema(
                        name=f"robocell.{name}.request", encoding="jsonschema",
                        data=json.dumps(request_schema(name, action)).encode())),
                    response=MessageSchema(encoding=ENCODING, schema=Schema(
                        name="robocell.ControlReply", encoding="jsonschema",
                        data=json.dumps(RESPONSE_SCHEMA).encode()))))
                for name, action in CALLS.items()]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def handle(self, call: ServiceRequest) -> bytes:
        """One call: the JSON response, or ControlRefusedError (the SDK answers it as a
        failed call with this message)."""
        action = CALLS[call.service_name]
        if call.encoding != ENCODING:
            raise ControlRefusedError("invalid_arguments", f"{call.service_name}: request "
                                      f"encoding {call.encoding!r}; send {ENCODING}")
        if self.token is None:
            raise ControlRefusedError("forbidden", "control is off: this Foxglove bridge was "
                                      "started without the monitor's token (start it with "
                                      "--token or $ROBOCELL_MONITOR_TOKEN)")
        try:
            authorised, args = parse_call(call.payload, action, self.token, self.gate.check)
        except ControlRefusedError as exc:
            if exc.code == "busy":
                with self._lock:
                    self.refused += 1
            raise
        if not authorised:
            with self._lock:
                self.refused += 1
            print(f"foxglove: refused {call.service_name} from client {call.client_id}: "
                  "no or wrong token", file=sys.stderr, flush=True)
            raise ControlRefusedError("forbidden", f"{call.service_name} needs the monitor's "
                                      'token: call it with {"token": "TOKEN", ...} (the '
                                      "token of `robocell monitor --token` / "
                                      "$ROBOCELL_MONITOR_TOKEN)")
        started = time.monotonic()
        replies = list(self._pool.map(
            lambda sc: self._request(sc[0], sc[1], args, action.timeout_s), action.commands))
        with self._lock:
            self.answered += 1
        answers = [{"service": r.service, "command": r.command, "ok": r.ok, "error": r.error,
                    "message": r.message, "result": jsonable(r.result)} for r in replies]
        return json.dumps({"ok": all(a["ok"] for a in answers), "replies": answers,
                           "elapsed_ms": round((time.monotonic() - started) * 1000, 1)}
                          ).encode()
