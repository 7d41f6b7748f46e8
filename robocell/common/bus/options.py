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
from robocell.common.bus.plain import plain_problem
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


MSGPACK_INT_MIN = -(2 ** 63)
"""Smallest integer a message can carry (msgpack's int64)."""
MSGPACK_INT_MAX = 2 ** 64 - 1
"""Largest integer a message can carry (msgpack's uint64)."""


def _scalar_problem(value: Any) -> str | None:
    """What keeps the parsed JSON ``value`` from being sent: an integer msgpack cannot
    carry or a string that is not UTF-8 (a lone surrogate); None if nothing. Iterative, and
    called only on values already checked for depth."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int) and not isinstance(item, bool) and not (
                MSGPACK_INT_MIN <= item <= MSGPACK_INT_MAX):
            return (f"holds an integer out of range (a {item.bit_length()}-bit number; a "
                    f"message carries integers from -2^63 to 2^64-1)")
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return (f"holds a lone surrogate in the string {item[:24]!r} (not UTF-8; "
                        f"write the character itself or a surrogate pair)")
    return None


def json_object_argument(text: str, what: str, example: str) -> dict[str, Any]:
    """The JSON object ``text`` given on the command line as ``what`` (binary fields written
    ``{"$base64": "..."}``); CommandError naming where it is wrong otherwise."""
    try:
        parsed = json.loads(text)
    except RecursionError:
        raise CommandError(f"{what} is nested too deep (JSON parsing gave up); e.g. "
                           f"'{example}'") from None
    except json.JSONDecodeError as exc:
        raise CommandError(f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column "
                           f"{exc.colno} of {text!r}; write it as one JSON object in single "
                           f"quotes, e.g. '{example}'") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise CommandError(f"{what}: {exc}") from None
    problem = plain_problem(parsed) or _scalar_problem(parsed)
    if problem is not None:
        raise CommandError(f"{what} {problem}")
    try:
        value = _from_json_value(parsed)
    except (ValueError, TypeError) as exc:  # a $base64 value that is not base64
        raise CommandError(f"{what}: {exc}") from None
    if not isinstance(value, dict):
        raise CommandError(f"{what} must be a JSON object, not {type(value).__name__} "
                           f"{text!r}; e.g. '{example}'")
    return value
