"""The `robocell` command line: a static table of subcommands, each one's code imported only
when that subcommand runs.

COMMANDS names every subcommand with its one-line help and the ``"module:function"`` that
registers it: ``function(subparsers)`` adds the subcommand's parser, whose ``func`` (called
with the parsed arguments) returns the exit code. `robocell --help` reads the table alone, so
it imports none of the command modules (and so neither numba, OpenCV nor ZeroMQ); running a
subcommand imports its one module. A module that is not part of this installation is
reported as such when its subcommand is asked for. Nothing imports this module except the
entry point (`robocell` and `python -m robocell`).
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from robocell import __version__
from robocell.common.config import ConfigError
from robocell.errors import CommandError


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, its line in `robocell --help`, and where its parser is made."""

    name: str
    help: str
    register: str
    """``"module:function"``; the function adds the subcommand to the subparsers it is given."""


# In the order `robocell --help` lists them; the help lines are what each register() says.
COMMANDS: tuple[Command, ...] = (
    Command("cube", "cube model tools: apply, check, scramble, invert, simplify, show",
            "robocell.cube_cli:register"),
    Command("tables", "build, verify and describe solver tables",
            "robocell.services.solver.cli:register"),
    Command("solve", "plan the fastest solution of a cube for a robot profile",
            "robocell.services.solver.cli:register"),
    Command("solver", "run the solver service on the bus",
            "robocell.services.solver.cli:register"),
    Command("broker", "run the bus broker (pub/sub proxy, last-value cache, commands)",
            "robocell.services.broker.cli:register"),
    Command("keys", "CURVE keys for remote bus access",
            "robocell.services.broker.cli:register"),
    Command("bus", "inspect, record and replay the bus",
            "robocell.tools.bus_cli:register"),
    Command("firmware-sim", "simulated motor firmware + digital twin on TCP or a pty",
            "robocell.services.firmware.cli:register"),
    Command("firmware", "build the AVR motor firmware from a robot profile, flash it",
            "robocell.services.firmware.cli:register"),
    Command("calibrate", "fit a robot profile to the robot (--overlap: its safe corner cut)",
            "robocell.services.firmware.calibrate_cli:register"),
    Command("actuator", "the actuator service: plans from the bus -> motor commands",
            "robocell.services.actuator.cli:register"),
    Command("vision", "read cube faces from images, resolve colours to a cube state",
            "robocell.services.vision.cli:register"),
    Command("monitor", "live web dashboard of the cell (aiohttp + WebSocket)",
            "robocell.services.monitor.cli:register"),
    Command("foxglove", "the running cell live in Foxglove (Foxglove WebSocket protocol)",
            "robocell.services.foxglove.cli:register"),
    Command("up", "start the whole cell as local processes (from docker-compose.yml)",
            "robocell.deploy.cli:register"),
    Command("demo", "the main job: simulated cell, scramble the twin, one solve cycle",
            "robocell.deploy.cli:register"),
    Command("cycle", "run one solve cycle on a running cell",
            "robocell.tools.cycle:register"),
    Command("cell", "run the cycle coordinator service", "robocell.services.cell.cli:register"),
    Command("history", "the cycle log: every cycle the cell ran, with summary statistics",
            "robocell.services.cell.cli:register"),
    Command("health", "exit 0 when SERVICE's heartbeat is current",
            "robocell.tools.health:register"),
    Command("sokoban", "Sokoban levels: parse, graph, solve, verify, generate",
            "robocell.sokoban.cli:register"),
)


def resolve(command: Command) -> Callable[[argparse._SubParsersAction], None]:
    """The register function of ``command``; CommandError if its module is not installed."""
    module_name, _, function = command.register.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module_name.startswith(exc.name):
            raise  # a dependency of the module is missing: the traceback says which
        raise CommandError(f"{module_name} is not part of this installation") from None
    return getattr(module, function)


class _OnlyOne:
    """Subparsers seen by a register function: the wanted subcommand is added for real; the
    others that the same function registers are left out (their table entries stand)."""

    def __init__(self, subparsers: argparse._SubParsersAction, wanted: str) -> None:
        self._subparsers = subparsers
        self._wanted = wanted

    def add_parser(self, name: str, **kwargs: object) -> argparse.ArgumentParser:
        if name == self._wanted:
            return self._subparsers.add_parser(name, **kwargs)
        return argparse.ArgumentParser(prog=name, add_help=False)


def _chosen(argv: list[str]) -> str | None:
    """The subcommand named by ``argv``: its first word that is not an option."""
    for word in argv:
        if not word.startswith("-"):
            return word
    return None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv``: the subcommand it names is registered by its own module, every
    other subcommand is a table entry (name and help line)."""
    parser = argparse.ArgumentParser(
        prog="robocell",
        description="A robot cell that reads, plans and solves puzzles.",
    )
    parser.add_argument("--version", action="version", version=f"robocell {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = _chosen(sys.argv[1:] if argv is None else argv)
    for command in COMMANDS:
        if command.name == wanted:
            resolve(command)(_OnlyOne(subparsers, wanted))  # type: ignore[arg-type]
        else:
            subparsers.add_parser(command.name, help=command.help)
    return parser


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM (from `robocell up`, Docker or systemd) stops a process like Ctrl-C: the
    services' shutdown paths run instead of the process vanishing mid-message."""
    raise KeyboardInterrupt


def _stacks_on_sigusr1() -> None:
    """`kill -USR1 PID` prints every thread's stack to stderr and the process goes on: what a
    process that hangs is doing, without a debugger."""
    try:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    except (AttributeError, OSError, ValueError):  # stderr without a file descriptor
        pass


THREAD_SWITCH_INTERVAL_S = 0.0005
"""How long a thread may keep the interpreter while another waits for it. A service's bus
I/O thread, command handlers and job threads hand over to each other on every message; at
Python's default (5 ms) a thread woken by a reply could wait that long for its turn."""


EXIT_READER_LEFT = 128 + signal.SIGPIPE
"""Exit status when the reader of our output went away (`robocell ... --json | head`): what
a shell reports for a command stopped by SIGPIPE."""


def _reader_left() -> int:
    """The reader of stdout has closed the pipe: stop quietly. Stdout is pointed at
    /dev/null so that the interpreter's final flush does not fail (and print a traceback)
    again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout without a file descriptor (captured in a test)
        pass
    return EXIT_READER_LEFT


def main(argv: list[str] | None = None) -> int:
    sys.setswitchinterval(THREAD_SWITCH_INTERVAL_S)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
        _stacks_on_sigusr1()
    try:
        parser = build_parser(argv)
    except (CommandError, ConfigError) as exc:  # a default read from a malformed variable
        print(f"robocell: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr if args.command is None else sys.stdout)
        return 2
    try:
        status = int(func(args) or 0)
        sys.stdout.flush()  # here, not at exit: a closed pipe is then caught below
        return status
    except BrokenPipeError:
        return _reader_left()
    except (CommandError, ConfigError) as exc:  # ConfigError: a port variable, from anywhere
        print(f"robocell {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
