"""`robocell firmware build|flash`: the AVR firmware built from a robot profile, and written
to a board with avrdude."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess

from robocell.common.profile import ProfileError, load_profile
from robocell.errors import CommandError
from robocell.services.firmware_avr.build import (
    ToolchainError,
    build_firmware,
    build_harness,
    flash_command,
    simavr_available,
)
from robocell.services.firmware_avr.config import BOARDS, DEFAULT_MCU

DEFAULT_PROFILE = "soltvvo-2x2"


def register(subparsers: argparse._SubParsersAction) -> None:
    fw = subparsers.add_parser(
        "firmware", help="build the AVR motor firmware from a robot profile, flash it",
        description="The motor firmware for Arduino boards (firmware/ in the repository), "
                    "built with avr-gcc from a robot profile's motors and wiring.")
    sub = fw.add_subparsers(dest="action", required=True)
    for name, text in (("build", "compile firmware.elf/.hex (and the simavr harness) and "
                                 "print flash and RAM use"),
                       ("flash", "build, then write the firmware to a board with avrdude")):
        cmd = sub.add_parser(name, help=text, description=text)
        cmd.add_argument("--profile", default=os.environ.get("ROBOCELL_PROFILE", DEFAULT_PROFILE),
                         help="robot profile; default %(default)s")
        cmd.add_argument("--mcu", default=DEFAULT_MCU, choices=sorted(BOARDS),
                         help="microcontroller: atmega2560 (Mega 2560) or atmega328p (Uno); "
                              "default %(default)s")
        if name == "flash":
            cmd.add_argument("--port", required=True, help="serial port of the board, e.g. "
                             "/dev/ttyACM0")
            cmd.add_argument("--baud", type=int, help="bootloader baud rate (default: the "
                             "board's, 115200)")
            cmd.add_argument("--dry-run", action="store_true",
                             help="print the avrdude command instead of running it")
    fw.set_defaults(func=cmd_firmware)


def cmd_firmware(args: argparse.Namespace) -> int:
    try:
        profile = load_profile(args.profile)
        build = build_firmware(profile, args.mcu)
    except (ProfileError, ToolchainError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    print(f"built {build.elf} and {build.hex}")
    print(build.summary())
    if args.action == "build":
        if simavr_available():
            try:
                print(f"simavr harness: {build_harness()}")
            except ToolchainError as exc:
                raise CommandError(str(exc)) from None
        return 0
    command = flash_command(build, args.port, args.baud)
    print(shlex.join(command))
    if args.dry_run:
        return 0
    if not os.path.exists(args.port):
        raise CommandError(f"--port {args.port}: no such device; plug the board in (ls "
                           "/dev/ttyACM* /dev/ttyUSB*) or give its port")
    try:
        result = subprocess.run(command, check=False)
    except FileNotFoundError:
        raise CommandError("avrdude is not installed; install it with: apt-get install "
                           "avrdude") from None
    if result.returncode != 0:
        raise CommandError(f"avrdude failed (exit {result.returncode}); check the port, that "
                           "the board is a " + BOARDS[args.mcu].name + " and that nothing "
                           "else holds the port")
    return 0
