"""Command line of the Foxglove bridge: `robocell foxglove` serves the running cell to Foxglove."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from robocell.common import config
from robocell.common.bus.keys import KeyFileError
from robocell.common.bus.options import add_remote_options, endpoints_of
from robocell.common.operator_control import TOKEN_ENV, check_configured_token
from robocell.errors import CommandError
from robocell.services.foxglove.layout import LAYOUT_FILE, write_layout
from robocell.services.foxglove.server import FoxgloveBridge, serve


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "foxglove", help="the running cell live in Foxglove (Foxglove WebSocket protocol)",
        description="Serve the running cell over the Foxglove WebSocket protocol: every bus "
                    "topic as a channel with its JSON Schema, the camera frames "
                    "(foxglove.CompressedImage), the cube as read and the twin in 3D "
                    "(foxglove.SceneUpdate), the plan and its progress, service states, and "
                    "errors (foxglove.Log). cell.start, cell.scramble, cell.estop and "
                    "solver.solve are offered as Foxglove services, accepted only with the "
                    "monitor's token in the request. In Foxglove: Open connection > Foxglove "
                    "WebSocket > ws://HOST:PORT, then import the layout "
                    "(docs/foxglove-layout.json, or --write-layout).")
    p.add_argument("--port", type=int, default=None,
                   help="WebSocket port (default $ROBOCELL_FOXGLOVE_PORT, "
                        f"{config.DEFAULT_FOXGLOVE_PORT}; 0 picks a free one)")
    p.add_argument("--host", default=config.LOOPBACK,
                   help="address to listen on (default 127.0.0.1: this host only)")
    add_remote_options(p)
    p.add_argument("--token", default=None,
                   help="the monitor's token, which the services require (default "
                        "$ROBOCELL_MONITOR_TOKEN; without one the services refuse every call)")
    p.add_argument("--name", default="foxglove", help="service name on the bus (default "
                                                       "foxglove)")
    p.add_argument("--record", metavar="FILE.mcap", type=Path,
                   help="also write every channel the bridge serves (scenes, camera, logs "
                        "included) to FILE.mcap with foxglove-sdk's writer; it opens in "
                        "Foxglove with the same layout (`robocell bus record` keeps the exact "
                        "bus messages for replay)")
    p.add_argument("--write-layout", metavar="FILE", type=Path,
                   help=f"write the Foxglove layout of the cell (as in {LAYOUT_FILE}) to FILE "
                        "and exit")
    p.set_defaults(func=run_foxglove)


def run_foxglove(args: argparse.Namespace) -> int:
    if args.write_layout is not None:
        try:
            path = write_layout(args.write_layout)
        except OSError as exc:
            raise CommandError(f"cannot write {args.write_layout}: {exc}") from None
        print(f"wrote {path}: in Foxglove, Layouts > Import from file")
        return 0
    if args.record is not None and not args.record.parent.is_dir():
        raise CommandError(f"--record {args.record}: folder {args.record.parent} does not "
                           "exist; create it or record elsewhere")
    port = config.foxglove_port() if args.port is None else args.port
    if not 0 <= port < 65536:
        raise CommandError(f"--port {port} is not a port number; use 1-65535 (0: any free one)")
    try:
        endpoints = endpoints_of(args)
        token = check_configured_token(args.token if args.token is not None
                                       else os.environ.get(TOKEN_ENV))
    except (KeyFileError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    try:
        serve(FoxgloveBridge(endpoints, token, args.host, port, name=args.name,
                             record=args.record))
    except (OSError, RuntimeError) as exc:
        raise CommandError(f"cannot listen on {args.host}:{port} ({exc}); is another bridge "
                           f"running? choose another port with --port or "
                           f"${config.FOXGLOVE_PORT_ENV}") from None
    return 0
