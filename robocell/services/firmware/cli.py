"""The firmware process's command line: `robocell firmware-sim` (the simulated firmware with
its digital twin, on TCP or a pty; the Python simulator or the compiled AVR firmware in simavr)
and `robocell firmware build|flash` (the AVR firmware built from a robot profile, written to a
board with avrdude)."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
from urllib.parse import urlsplit

from robocell.common import config
from robocell.common.bus.options import add_remote_options, endpoints_of
from robocell.common.cube import random_facelets
from robocell.common.profile import Profile, ProfileError, load_profile
from robocell.common.validation import CubeStateError, validate
from robocell.errors import CommandError
from robocell.robot.motion import load_motors
from robocell.robot.physics import Physics, PhysicsError, load_physics
from robocell.services.firmware.avr_build import (
    ToolchainError,
    build_firmware,
    build_harness,
    flash_command,
    simavr_available,
)
from robocell.services.firmware.avr_wiring import BOARDS, DEFAULT_MCU
from robocell.services.firmware.service import main_avr, main_with_args
from robocell.services.firmware.simulator import FaultPlan
from robocell.services.firmware.twin import Twin


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `firmware-sim` and `firmware` to the subcommands."""
    register_simulator(subparsers)
    register_firmware(subparsers)


def register_simulator(subparsers: argparse._SubParsersAction) -> None:
    sim = subparsers.add_parser(
        "firmware-sim", help="simulated motor firmware + digital twin on TCP or a pty",
        description="Speak the actuator serial protocol on 127.0.0.1:PORT (or a pty) and move a "
                    "digital twin of the robot and cube. Faults can be injected for tests.")
    sim.add_argument("--profile", default=config.default_profile(),
                     help="robot profile (motors and geometry); default %(default)s")
    where = sim.add_mutually_exclusive_group()
    where.add_argument("--port", type=int, default=None,
                       help="TCP port on 127.0.0.1 (0 = any free port); default "
                            "$ROBOCELL_SIM_PORT or 7700")
    where.add_argument("--pty", metavar="LINK", nargs="?", const="",
                       help="serve on a pseudo-terminal instead; optional symlink path to it")
    where.add_argument("--listen", metavar="URL",
                       help="tcp://HOST:PORT to listen on another interface (e.g. in a "
                            "container); default 127.0.0.1 and --port")
    sim.add_argument("--speed", type=float,
                     default=config.speed(),
                     help="simulated time runs this many times faster than real time "
                          "(default $ROBOCELL_SPEED or 1)")
    sim.add_argument("--physics", metavar="FILE", default=config.physics_file(),
                     help="how the simulated robot really moves where it differs from its "
                          "profile (TOML, docs/robot-physics.md; default $ROBOCELL_PHYSICS, "
                          "else the robot is its profile; with --avr only its [cube])")
    sim.add_argument("--cube", metavar="FACELETS", help="start cube (default solved)")
    sim.add_argument("--scramble-seed", type=int, metavar="SEED",
                     help="start from a random cube made with this seed")
    sim.add_argument("--queue", type=int, default=8, help="firmware command queue length")
    sim.add_argument("--log", metavar="FILE", help="append JSON lines of every executed line")
    sim.add_argument("--publish-twin", "--bus", dest="bus", action="store_true",
                     help="join the bus: twin on sim.twin_state, `scramble` command")
    noise = sim.add_argument_group("fault injection")
    noise.add_argument("--drop-rate", type=float, default=0.0, help="drop each byte with this "
                       "probability (both directions)")
    noise.add_argument("--corrupt-rate", type=float, default=0.0, help="flip one bit of each "
                       "byte with this probability (both directions)")
    noise.add_argument("--fault-seed", type=int, default=0, help="seed of drops and corruption")
    noise.add_argument("--disconnect-after", type=int, action="append", default=[],
                       metavar="N", help="drop the connection after N accepted commands "
                       "(repeatable)")
    noise.add_argument("--stall-after", type=int, metavar="N",
                       help="stop answering after N accepted commands ...")
    noise.add_argument("--stall-ms", type=float, default=500.0,
                       help="... for this long (simulated ms)")
    noise.add_argument("--reset-after", type=int, metavar="N",
                       help="reboot (new boot id) after N accepted commands")
    avr = sim.add_argument_group("hardware in the loop")
    avr.add_argument("--avr", action="store_true",
                     default=config.firmware_backend() == "avr",
                     help="run the real AVR firmware (firmware/, built for the profile) in "
                          "simavr instead of the Python simulator; its step/dir and servo "
                          "pins move the twin (default: on when $ROBOCELL_FIRMWARE is avr)")
    avr.add_argument("--mcu", default=DEFAULT_MCU, choices=sorted(BOARDS),
                     help="with --avr: the microcontroller (default %(default)s)")
    avr.add_argument("--trace", metavar="FILE",
                     help="with --avr: write every step edge, servo pulse width and serial "
                          "byte with its simulated time")
    avr.add_argument("--no-twin", action="store_true",
                     help="with --avr: the firmware alone, its pins traced but moving no twin "
                          "(protocol conformance and timing runs that make moves no robot "
                          "could)")
    add_remote_options(sim)
    sim.add_argument("--max-runtime", type=float, help=argparse.SUPPRESS)
    sim.set_defaults(func=cmd_firmware_sim)


def cmd_firmware_sim(args: argparse.Namespace) -> int:
    try:
        profile = load_profile(args.profile)
        Twin(profile)  # the motors and geometry must be usable before serving
    except ProfileError as exc:
        raise CommandError(f"{exc}; pick a robot profile with [motors] and [geometry]") from None
    physics = _physics(args.physics, profile)
    if args.speed <= 0:
        raise CommandError(f"--speed {args.speed}: must be positive (1 = real time)")
    for name in ("drop_rate", "corrupt_rate"):
        value = getattr(args, name)
        if not 0.0 <= value < 1.0:
            raise CommandError(f"--{name.replace('_', '-')} {value}: must be in [0, 1)")
    if args.pty is not None and args.disconnect_after:
        raise CommandError("--disconnect-after needs TCP (a pty cannot be disconnected); "
                           "drop --pty")
    facelets = args.cube
    if args.scramble_seed is not None:
        facelets = random_facelets(profile.size or 3, args.scramble_seed)
    if facelets is not None:
        try:
            validate(facelets, profile.size)
        except CubeStateError as exc:
            raise CommandError(f"--cube: {exc}") from None
    faults = FaultPlan(args.drop_rate, args.corrupt_rate, args.fault_seed,
                       tuple(args.disconnect_after), args.stall_after, args.stall_ms,
                       args.reset_after)
    host, port = "127.0.0.1", config.sim_port() if args.port is None else args.port
    if args.listen:
        url = urlsplit(args.listen)
        if url.scheme != "tcp" or not url.hostname or url.port is None:
            raise CommandError(f"--listen {args.listen}: expected tcp://HOST:PORT")
        host, port = url.hostname, url.port
    if args.avr:
        if physics is not None and (physics.defaults or physics.motors):
            raise CommandError(f"--physics {args.physics}: the AVR firmware moves as it is "
                               "built from the profile, timed by its own step timer: only its "
                               "[cube] applies (the twin's cut tolerance); drop [defaults] and "
                               "[motors], or --avr")
        return _run_avr(args, profile, facelets, faults, port, host,
                        physics.cut_tolerance_deg if physics is not None else None)
    if args.trace or args.no_twin:
        raise CommandError("--trace and --no-twin need --avr (the Python simulator has no pins)")
    try:
        main_with_args(profile, port=None if args.pty is not None else port,
                       pty_link=args.pty, speed=args.speed, facelets=facelets,
                       queue_size=args.queue, log_path=args.log, faults=faults,
                       max_runtime_s=args.max_runtime, host=host, bus=args.bus,
                       endpoints=endpoints_of(args, serve=True) if args.bus else None,
                       physics=physics)
    except OSError as exc:
        raise CommandError(f"cannot serve on port {port}: {exc.strerror}; pick another "
                           "--port or 0 for any free one") from None
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: a normal way to stop the simulator
        return 0
    return 0


def _physics(path: str | None, profile: Profile) -> Physics | None:
    """The physics file, checked against the profile's motors (None: no file)."""
    if not path:
        return None
    try:
        physics = load_physics(path)
        physics.apply(load_motors(profile))
    except PhysicsError as exc:
        raise CommandError(f"--physics: {exc}") from None
    return physics


def _run_avr(args: argparse.Namespace, profile, facelets: str | None, faults: FaultPlan,
             port: int, host: str, cut_tolerance_deg: float | None) -> int:
    if args.queue != 8:
        raise CommandError("--queue: the AVR firmware's queue is fixed by its build "
                           "(8 on the Mega, 6 on the Uno); drop --queue")
    try:
        main_avr(profile, mcu=args.mcu, port=None if args.pty is not None else port,
                 pty_link=args.pty, speed=args.speed, facelets=facelets, log_path=args.log,
                 faults=faults, max_runtime_s=args.max_runtime, host=host, bus=args.bus,
                 endpoints=endpoints_of(args, serve=True) if args.bus else None,
                 trace=args.trace, physics=not args.no_twin,
                 cut_tolerance_deg=cut_tolerance_deg)
    except (ToolchainError, ProfileError) as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"cannot serve on port {port}: {exc.strerror}; pick another "
                           "--port or 0 for any free one") from None
    except KeyboardInterrupt:
        return 0
    return 0


def register_firmware(subparsers: argparse._SubParsersAction) -> None:
    fw = subparsers.add_parser(
        "firmware", help="build the AVR motor firmware from a robot profile, flash it",
        description="The motor firmware for Arduino boards (firmware/ in the repository), "
                    "built with avr-gcc from a robot profile's motors and wiring.")
    sub = fw.add_subparsers(dest="action", required=True)
    for name, text in (("build", "compile firmware.elf/.hex (and the simavr harness) and "
                                 "print flash and RAM use"),
                       ("flash", "build, then write the firmware to a board with avrdude")):
        cmd = sub.add_parser(name, help=text, description=text)
        cmd.add_argument("--profile", default=config.default_profile(),
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
