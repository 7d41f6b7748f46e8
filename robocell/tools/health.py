"""`robocell health SERVICE`: exit 0 when a service's heartbeat is current and, for a service that
serves commands, a ``ping`` reaches it through the broker."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from robocell.common.bus import CommandClient, Liveness, Subscriber
from robocell.common.bus.options import add_remote_options, broker_endpoints


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `health` to the subcommands."""
    p = subparsers.add_parser("health", help="exit 0 when SERVICE's heartbeat is current")
    p.add_argument("service", metavar="SERVICE")
    add_remote_options(p)
    p.add_argument("--wait", type=float, default=3.5, help="seconds to listen (default 3.5)")
    p.set_defaults(func=cmd_health)


STARTING_GRACE_S = 1.5
"""How long `health` waits past a "starting" beat for the next (a heartbeat period and some):
a state change is announced at once, and the beat before it may be the one cached."""


def cmd_health(args: argparse.Namespace) -> int:
    liveness = Liveness()
    sub = Subscriber(["heartbeat"], broker_endpoints(args))
    deadline = time.monotonic() + args.wait
    starting = None
    try:
        while time.monotonic() < deadline:
            env = sub.recv(timeout=0.2)
            if env is not None:
                liveness.update(env)
                peer = liveness.peers().get(args.service)
                if peer is not None and peer.alive and env.payload["service"] == args.service:
                    if env.payload["state"] == "starting":
                        # not healthy yet (e.g. the actuator before its firmware answered):
                        # its next beat, a state change's at once, may say why
                        if starting is None:
                            deadline = min(deadline, time.monotonic() + STARTING_GRACE_S)
                        starting = env.payload
                        continue
                    if env.payload["state"] in ("error", "stopping"):
                        print(f"{args.service}: {env.payload['state']} "
                              f"{env.payload['health']}", file=sys.stderr)
                        return 1
                    where = f"{env.payload['state']} (pid {env.payload['pid']} on " \
                            f"{env.payload['host']})"
                    if env.payload["commands"]:
                        return _commands_route(args.service, sub.endpoints, where,
                                               max(0.5, deadline - time.monotonic()))
                    print(f"{args.service}: {where}")
                    return 0
    finally:
        sub.close()
    if starting is not None:
        print(f"{args.service}: starting {starting['health']}", file=sys.stderr)
        return 1
    print(f"{args.service}: no heartbeat within {args.wait:g} s", file=sys.stderr)
    return 1


def _commands_route(service: str, endpoints: Any, state: str, timeout: float) -> int:
    """A service that serves commands is healthy only if they reach it through the broker:
    a ``ping`` answered, and how many instances answer to its name."""
    client = CommandClient("health", endpoints)
    try:
        reply = client.request(service, "ping", timeout=timeout)
    finally:
        client.close()
    if not reply.ok:
        print(f"{service}: its heartbeat is current ({state}) but its commands do not reach "
              f"it: {reply.error}: {reply.message}", file=sys.stderr)
        return 1
    print(f"{service}: {state}")
    return 0
