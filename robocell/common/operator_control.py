"""Control of the cell from the dashboard: the token gate and which bus commands each button sends.

A browser may control the cell only after presenting the token the monitor was started with
(``--token`` or ``$ROBOCELL_MONITOR_TOKEN``); without a configured token nobody may. Every
control request names an *action*; the action maps to one or more bus commands, sent with
``Node.call`` to the service that owns them. E-stop goes to the actuator (it stops the motors
at once) and to the cell (it stops the cycle), in parallel.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Any

from robocell.common.bus.schema import validate_args
from robocell.common.bus.wire import MessageError
from robocell.errors import RobocellError

TOKEN_ENV = "ROBOCELL_MONITOR_TOKEN"
MIN_TOKEN_CHARS = 16
CONTROL_TIMEOUT_S = 3.0
WRONG_TOKEN_DELAY_S = 0.5
"""How long a refused token is answered late (slows down guessing)."""
ESTOP_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class Action:
    """One button: the bus commands it sends and the arguments the page may pass."""

    name: str
    commands: tuple[tuple[str, str], ...]  # (service, command)
    timeout_s: float = CONTROL_TIMEOUT_S
    takes_args: bool = False


ACTIONS: dict[str, Action] = {a.name: a for a in (
    Action("start", (("cell", "start"),)),
    Action("scramble", (("cell", "scramble"),), takes_args=True),
    Action("pause", (("actuator", "pause"),)),
    Action("resume", (("actuator", "resume"),)),
    Action("estop", (("actuator", "estop"), ("cell", "estop")), ESTOP_TIMEOUT_S),
)}


class ControlRefusedError(RobocellError):
    """A control request that is not sent: ``code`` is a bus command error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def check_token(configured: str | None, presented: Any) -> bool:
    """True when a token is configured and ``presented`` equals it (constant-time)."""
    if not configured or not isinstance(presented, str):
        return False
    try:
        given = presented.encode()
    except UnicodeEncodeError:  # a lone surrogate from JSON's \ud800: not a token
        return False
    return hmac.compare_digest(configured.encode(), given)


def check_configured_token(token: str | None) -> str | None:
    """The token to use (None: read-only monitor); ValueError if it is too short to be safe."""
    if token is None or token == "":
        return None
    if len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f"the monitor token must have at least {MIN_TOKEN_CHARS} characters "
                         f"(got {len(token)}); make one with `python -c \"import secrets; "
                         f"print(secrets.token_urlsafe(16))\"`")
    return token


def plan_control(request: Any, authorised: bool) -> tuple[Action, dict[str, Any]]:
    """The action and arguments of a control request from a browser, or ControlRefusedError:
    ``forbidden`` without the token, ``invalid_arguments`` for anything malformed."""
    if not authorised:
        raise ControlRefusedError("forbidden", "this dashboard is read-only: control needs the "
                             "monitor's token (open the page as /#token=TOKEN or enter it "
                             "under Control)")
    if not isinstance(request, dict):
        raise ControlRefusedError("invalid_arguments", "a control request must be a JSON object")
    name = request.get("action")
    action = ACTIONS.get(name) if isinstance(name, str) else None
    if action is None:
        raise ControlRefusedError("invalid_arguments", f"unknown control action {name!r}; "
                             f"known: {', '.join(ACTIONS)}")
    args = request.get("args") or {}
    if args and not action.takes_args:
        raise ControlRefusedError("invalid_arguments", f"action {name!r} takes no arguments")
    for service, command in action.commands:
        try:
            validate_args(service, command, args)
        except MessageError as exc:
            raise ControlRefusedError("invalid_arguments", str(exc)) from None
    return action, args
