"""Command line of the monitor: `robocell monitor` serves the live web dashboard of the cell."""

from __future__ import annotations

import argparse
import os

from robocell.common import config
from robocell.common.bus.keys import KeyFileError
from robocell.common.bus.options import add_remote_options, endpoints_of
from robocell.common.operator_control import TOKEN_ENV, check_configured_token
from robocell.errors import CommandError
from robocell.services.monitor.service import MonitorServer, serve

DEFAULT_HTTP = "127.0.0.1:8765"
"""Where the dashboard listens when $ROBOCELL_MONITOR_PORT is unset."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "monitor", help="live web dashboard of the cell (aiohttp + WebSocket)",
        description="Serve a dashboard of the cell: services and their health, topic rates, "
                    "the cube and the twin, scan thumbnails, the plan and its progress, cycle "
                    "history and errors. Control (scramble, start, pause/resume, e-stop) is "
                    "offered only to a browser that presents the token: open "
                    "http://HOST:PORT/#token=TOKEN. Watch a remote cell with --broker and "
                    "--curve-key (its broker's CURVE endpoint).")
    add_remote_options(p)
    p.add_argument("--http", default=None, metavar="HOST:PORT",
                   help="where the dashboard listens (default 127.0.0.1:$ROBOCELL_MONITOR_PORT, "
                        f"{DEFAULT_HTTP})")
    p.add_argument("--token", default=None,
                   help="token that enables control (default $ROBOCELL_MONITOR_TOKEN; "
                        "without one the dashboard is read-only)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="another name browsers reach the dashboard by (e.g. behind a proxy); "
                        "requests naming any other host are refused (DNS rebinding)")
    p.add_argument("--name", default="monitor",
                   help="service name on the bus (default monitor)")
    p.set_defaults(func=run_monitor)


def parse_http(text: str) -> tuple[str, int]:
    """HOST:PORT of --http as (host, port); ValueError with what to write otherwise."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"--http {text!r} must look like HOST:PORT, e.g. 127.0.0.1:8765")
    return host.strip("[]"), int(port_text)


def run_monitor(args: argparse.Namespace) -> int:
    try:
        if args.http is None:
            args.http = config.monitor_http()
        host, port = parse_http(args.http)
        endpoints = endpoints_of(args)
        token = check_configured_token(args.token if args.token is not None
                                       else os.environ.get(TOKEN_ENV))
    except KeyFileError as exc:
        raise CommandError(str(exc)) from None
    except ValueError as exc:
        raise CommandError(str(exc)) from None

    try:
        serve(MonitorServer(endpoints, token, name=args.name), host, port,
              extra_hosts=args.allow_host)
    except OSError as exc:
        raise CommandError(f"cannot listen on {args.http} ({exc}); is another monitor "
                           "running? choose another port with --http") from None
    return 0
