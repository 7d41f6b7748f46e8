"""How every service and tool reaches a broker: the ``--broker`` / ``--curve-key`` options
they share and the endpoints those options (or the environment) name; and JSON arguments
given on the command line."""

from __future__ import annotations

import argparse
import base64
import json
from typing import Any

from robocell.common.bus import Endpoints
from robocell.common.bus.endpoints import broker_problem
from robocell.common.bus.keys import KeyFileError
from robocell.errors import CommandError


def add_remote_options(parser: argparse.ArgumentParser, inherited: bool = False) -> None:
    """Add ``--broker`` and ``--curve-key`` to ``parser``; ``inherited``: a subcommand's
    copy, which leaves the parent command's value alone when not given."""
    extra: dict[str, Any] = {"default": argparse.SUPPRESS} if inherited else {}
    parser.add_argument("--broker", metavar="tcp://HOST:PORT",
                        help="broker base address (default $ROBOCELL_BUS or "
                             "tcp://127.0.0.1:$ROBOCELL_BUS_PORT, 7600)", **extra)
    parser.add_argument("--curve-key", metavar="FILE",
                        help="client key file for a remote broker's CURVE endpoint "
                             "(default $ROBOCELL_BUS_CURVE_KEY)", **extra)


def endpoints_of(args: argparse.Namespace) -> Endpoints:
    """The endpoints named by the parsed ``--broker`` / ``--curve-key`` (CommandError when
    they are wrong)."""
    try:
        return Endpoints.resolve(getattr(args, "broker", None), getattr(args, "curve_key", None))
    except (ValueError, KeyFileError) as exc:
        raise CommandError(str(exc)) from None


def broker_endpoints(args: argparse.Namespace) -> Endpoints:
    """The endpoints named by the parsed options, once a broker answers there: for a command
    that needs the bus now (CommandError naming the address and how to start one, within a
    few seconds, instead of waiting or blaming a service)."""
    endpoints = endpoints_of(args)
    problem = broker_problem(endpoints)
    if problem is not None:
        raise CommandError(problem)
    return endpoints


def _from_json_value(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$base64"}:
            return base64.b64decode(value["$base64"])
        return {k: _from_json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json_value(v) for v in value]
    return value


def json_object_argument(text: str, what: str, example: str) -> dict[str, Any]:
    """The JSON object ``text`` given on the command line as ``what`` (binary fields written
    ``{"$base64": "..."}``); CommandError naming where it is wrong otherwise."""
    try:
        value = _from_json_value(json.loads(text))
    except json.JSONDecodeError as exc:
        raise CommandError(f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column "
                           f"{exc.colno} of {text!r}; write it as one JSON object in single "
                           f"quotes, e.g. '{example}'") from None
    except (ValueError, TypeError) as exc:  # a $base64 value that is not base64
        raise CommandError(f"{what}: {exc}") from None
    if not isinstance(value, dict):
        raise CommandError(f"{what} must be a JSON object, not {type(value).__name__} "
                           f"{text!r}; e.g. '{example}'")
    return value
