"""`robocell actuator`: the actuator service on the bus, driving the firmware's serial line."""

from __future__ import annotations

import argparse
import sys

from robocell.common import config
from robocell.common.bus.options import add_remote_options
from robocell.errors import CommandError
from robocell.services.actuator.port import SerialUrlError, check_serial_url, precheck_device


def register(subparsers: argparse._SubParsersAction) -> None:
    act = subparsers.add_parser(
        "actuator", help="the actuator service: plans from the bus -> motor commands",
        description="Execute plans from the bus on the robot through its serial line "
                    "(device path or pyserial URL such as socket://127.0.0.1:7700).")
    act.add_argument("--profile", default=config.default_profile())
    act.add_argument("--serial", default=None,
                     help="device path or pyserial URL of the firmware; default "
                          "$ROBOCELL_SERIAL, else the local simulator: "
                          "socket://127.0.0.1:$ROBOCELL_SIM_PORT (7700)")
    add_remote_options(act)
    act.set_defaults(func=cmd_actuator)


def cmd_actuator(args: argparse.Namespace) -> int:
    if args.serial is None:
        args.serial = config.serial_url()
    try:
        check_serial_url(args.serial)
    except SerialUrlError as exc:
        raise CommandError(str(exc)) from None
    # say what is wrong with the device before the bus is even loaded
    args.serial_problem = precheck_device(args.serial)
    if args.serial_problem:
        print(f"actuator: {args.serial_problem}; retrying", file=sys.stderr, flush=True)
    # lazy: the bus (numpy, ZeroMQ, schemas) takes 1-3 s to import on a busy machine; the
    # device's problem above is printed first
    from robocell.services.actuator.service import serve_actuator
    return serve_actuator(args)
