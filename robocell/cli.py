"""The `robocell` command line: one subcommand per job, each defined next to its code.

Every module listed in COMMAND_MODULES exposes ``register(subparsers)``, which adds one
or more subcommands whose parsers carry ``func`` (called with the parsed arguments; it
returns the exit code). Modules keep their top-level imports light (numba, OpenCV and
ZeroMQ are imported inside the functions that need them) so that `robocell --help` is fast.
A module that is not part of this installation is simply not offered.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
import threading

# Module path of each command group, in the order `robocell --help` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "robocell.common.cube_cli",          # cube apply/check/scramble/invert/simplify/show
    "robocell.services.solver.tables_cli",  # tables build/verify/info
    "robocell.services.solver.solve_cli",   # solve
    "robocell.services.solver.service",     # solver (the service)
    "robocell.services.broker.cli",         # broker, keys
    "robocell.services.broker.bus_cli",     # bus list/echo/hz/pub/record/play/info/export
    "robocell.services.actuator.cli",       # actuator, firmware-sim
    "robocell.services.vision.cli",         # vision detect/resolve/scan/serve
    "robocell.services.monitor.cli",        # monitor
    "robocell.cell.cli",                    # up, demo, cycle, health
    "robocell.sokoban.cli",                 # sokoban parse/graph/solve/verify/generate
)


class CommandError(Exception):
    """A user-facing failure: printed as one line on stderr, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="robocell",
        description="A robot cell that reads, plans and solves puzzles.",
    )
    from robocell import __version__

    parser.add_argument("--version", action="version", version=f"robocell {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        if importlib.util.find_spec(module_name.rsplit(".", 1)[0]) is None:
            continue
        try:
            spec = importlib.util.find_spec(module_name)
        except ModuleNotFoundError:
            spec = None
        if spec is None:
            continue
        module = importlib.import_module(module_name)
        module.register(subparsers)
    return parser


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM (from `robocell up`, Docker or systemd) stops a process like Ctrl-C: the
    services' shutdown paths run instead of the process vanishing mid-message."""
    raise KeyboardInterrupt


THREAD_SWITCH_INTERVAL_S = 0.0005
"""How long a thread may keep the interpreter while another waits for it. A service's bus
I/O thread, command handlers and job threads hand over to each other on every message; at
Python's default (5 ms) a thread woken by a reply could wait that long for its turn."""


def main(argv: list[str] | None = None) -> int:
    import signal

    sys.setswitchinterval(THREAD_SWITCH_INTERVAL_S)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 0 if args.command is None else 2
    from robocell.common.config import ConfigError

    try:
        return int(func(args) or 0)
    except (CommandError, ConfigError) as exc:  # ConfigError: a port variable, from anywhere
        print(f"robocell {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
