"""How every service and tool reaches a broker: the ``--broker`` / ``--curve-key`` options
they share and the endpoints those options (or the environment) name; and JSON arguments
given on the command line."""

from __future__ import annotations

import argparse
import base64
import json
import sys
import threading
from typing import Any, TextIO

from robocell.common.bus import Endpoints
from robocell.common.bus.endpoints import broker_problem
from robocell.common.bus.keys import KeyFileError
from robocell.common.bus.plain import plain_problem
from robocell.errors import CommandError


def add_remote_options(parser: argparse.ArgumentParser, inherited: bool = False,
                       several: bool = False) -> None:
    """Add ``--broker`` and ``--curve-key`` to ``parser``; ``inherited``: a subcommand's
    copy, which leaves the parent command's value alone when not given; ``several``: both
    may be repeated (a service serving several cells, one broker each)."""
    extra: dict[str, Any] = {"default": argparse.SUPPRESS} if inherited else {}
    if several:
        extra["action"] = "append"
    parser.add_argument("--broker", metavar="tcp://HOST:PORT",
                        help="broker base address (default $ROBOCELL_BUS or "
                             "tcp://127.0.0.1:$ROBOCELL_BUS_PORT, 7600)"
                             + ("; repeat to serve several cells at once" if several else ""),
                        **extra)
    parser.add_argument("--curve-key", metavar="FILE",
                        help="client key file for a remote broker's CURVE endpoint "
                             "(default $ROBOCELL_BUS_CURVE_KEY)"
                             + ("; one for every --broker, or one per --broker in their order "
                                "('' for a broker without CURVE)" if several else ""), **extra)


def _brokers(args: argparse.Namespace) -> list[tuple[str | None, str | None]]:
    """(broker address, key file) pairs the parsed options name (one or more)."""
    brokers = getattr(args, "broker", None)
    keys = getattr(args, "curve_key", None)
    brokers = [None] if not brokers else [brokers] if isinstance(brokers, str) else brokers
    keys = [None] if not keys else [keys] if isinstance(keys, str) else keys
    if len(keys) == 1:
        keys = keys * len(brokers)
    if len(keys) != len(brokers):
        raise CommandError(f"{len(brokers)} --broker and {len(keys)} --curve-key: give one "
                           "--curve-key for all brokers or one per --broker, in their order")
    return list(zip(brokers, keys, strict=True))


def endpoints_of(args: argparse.Namespace, serve: bool = False) -> Endpoints:
    """The endpoints named by the parsed ``--broker`` / ``--curve-key`` (CommandError when
    they are wrong); ``serve``: for a service, which on a remote broker also publishes and
    registers (its key needs the service role)."""
    return _resolve(*_brokers(args)[0], serve)


def _resolve(broker: str | None, key: str | None, serve: bool) -> Endpoints:
    try:
        return Endpoints.resolve(broker, key, serve)
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


def service_endpoints(args: argparse.Namespace, service: str,
                      out: TextIO | None = None) -> Endpoints:
    """The endpoints named by the parsed options, for a long-running ``service`` that waits
    for its broker rather than refusing to start: when no broker answers there within a few
    seconds (or it refuses this CURVE key), the service says so once, on ``out`` (stderr),
    with how to start one, and goes on retrying (ZeroMQ reconnects by itself)."""
    return services_endpoints(args, service, out)[0]


def services_endpoints(args: argparse.Namespace, service: str,
                       out: TextIO | None = None) -> list[Endpoints]:
    """Like :func:`service_endpoints`, for each broker the options name (``several``)."""
    found = [_resolve(broker, key, True) for broker, key in _brokers(args)]
    for endpoints in found:
        threading.Thread(target=_say_if_no_broker, args=(endpoints, service, out),
                         name=f"{service}-broker-probe", daemon=True).start()
    return found


def _say_if_no_broker(endpoints: Endpoints, service: str, out: TextIO | None) -> None:
    """One probe of the broker (broker_problem), its problem said once if there is one."""
    problem = broker_problem(endpoints)
    if problem is not None:
        print(f"{service}: {problem}; {service} keeps retrying and goes on once a broker "
              "answers", file=out or sys.stderr, flush=True)


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
