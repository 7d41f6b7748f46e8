"""`robocell bus call SERVICE COMMAND [JSON]`: one command to a running service, like
`ros2 service call` -- its result printed as JSON, or its error and a non-zero exit code."""

from __future__ import annotations

import argparse
import json
import math
import sys

from robocell.common.bus import CommandClient
from robocell.common.bus.options import (
    add_remote_options,
    broker_endpoints,
    json_object_argument,
)
from robocell.common.bus.schema import command_spec, validate_args
from robocell.common.bus.topics import COMMAND_ERRORS
from robocell.common.bus.views import jsonable
from robocell.common.bus.wire import MessageError
from robocell.errors import CommandError

CALL_TIMEOUT_S = 30.0
"""Default deadline of `bus call`: long enough for a 3x3 solve on a loaded machine."""
EXIT_COMMAND_FAILED = 1
"""Exit code when the service answered with an error (or none answered in time); mistakes
on the command line itself exit 2, like every other robocell command."""


def add_call_parser(sub: argparse._SubParsersAction) -> None:
    """Add `call` to the subcommands of `robocell bus`."""
    p = sub.add_parser(
        "call", help="send one command to a service and print its reply",
        description="Send a command through the broker and print the result as JSON. "
                    "The exit code is 0 when the service answered ok, 1 when it answered "
                    f"with an error ({', '.join(COMMAND_ERRORS)}), 2 when the command line "
                    "is wrong. Example: robocell bus call solver solve "
                    "'{\"facelets\": \"UUUUUUUUURRRRRRRRRFFFFFFFFFDDDDDDDDDLLLLLLLLLBBBBBBBBB\"}'. "
                    "`robocell bus list` shows the services and the commands they offer.")
    add_remote_options(p)
    p.add_argument("service", help="service name, e.g. solver, cell, actuator")
    p.add_argument("command_name", metavar="command",
                   help="command name, e.g. solve, start, scramble, ping")
    p.add_argument("arguments", nargs="?", default="{}", metavar="JSON",
                   help="the command's arguments as one JSON object (default {})")
    p.add_argument("--timeout", type=float, default=CALL_TIMEOUT_S, metavar="S",
                   help=f"give up after S seconds (default {CALL_TIMEOUT_S:g})")
    p.set_defaults(func=run_call)


def call_arguments(service: str, command: str, text: str) -> dict:
    """The arguments ``text`` of ``service.command`` parsed and checked against the
    command's declaration, or CommandError saying what is wrong."""
    spec = command_spec(service, command)
    example = f'{{"{spec.args[0].name}": ...}}' if spec is not None and spec.args else "{}"
    args = json_object_argument(text, f"the JSON argument of {service}.{command}", example)
    try:
        validate_args(service, command, args)
    except MessageError as exc:
        fields = ", ".join(f"{f.name} ({f.type}{', optional' if f.optional else ''})"
                           for f in spec.args) if spec is not None else ""
        raise CommandError(f"{exc}" + (f"; {service}.{command} takes: {fields or 'nothing'}"
                                       if spec is not None else "")) from None
    return args


def run_call(args: argparse.Namespace) -> int:
    if not math.isfinite(args.timeout) or args.timeout <= 0:
        raise CommandError(f"--timeout must be a positive number of seconds, not "
                           f"{args.timeout:g}")
    arguments = call_arguments(args.service, args.command_name, args.arguments)
    client = CommandClient("bus-call", broker_endpoints(args))
    try:
        reply = client.request(args.service, args.command_name, arguments, timeout=args.timeout)
    finally:
        client.close()
    if not reply.ok:
        print(f"robocell bus call: {args.service}.{args.command_name} failed: {reply.error}: "
              f"{reply.message}", file=sys.stderr)
        return EXIT_COMMAND_FAILED
    print(json.dumps(jsonable(reply.result), indent=2, ensure_ascii=False))
    return 0
