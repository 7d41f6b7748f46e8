"""`robocell up` and `robocell demo`: the cell of docker-compose.yml started as local processes;
the demo also scrambles the simulated twin and follows one solve cycle."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from robocell.common import config
from robocell.common.bus import CommandFailed, Endpoints, Node
from robocell.common.bus.keys import KeyFileError, load_key, parse_allow
from robocell.common.profile import ProfileError, load_profile
from robocell.deploy.compose import ComposeError
from robocell.deploy.launcher import Launcher, LaunchError
from robocell.errors import CommandError
from robocell.robot.physics import PhysicsError, load_physics
from robocell.tools.cycle import CycleFollower, print_summary, scramble_line


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `up` and `demo` to the subcommands."""
    p = subparsers.add_parser(
        "up", help="start the whole cell as local processes (from docker-compose.yml)",
        description="Start broker, solver, vision, actuator, cell coordinator, monitor and "
                    "Foxglove bridge (and the firmware simulator with --sim) as local "
                    "processes, with the "
                    "commands and environment of docker-compose.yml. Ctrl-C stops them all; "
                    "the exit status is non-zero if a service dies.")
    p.add_argument("--sim", action="store_true", help="simulated cell (compose profile sim)")
    p.add_argument("--profile", help="robot profile (sets $ROBOCELL_PROFILE)")
    p.add_argument("--speed", type=float, help="simulation speed factor ($ROBOCELL_SPEED)")
    p.add_argument("--physics", metavar="FILE", default=None,
                   help="in simulation, how the robot really moves where it differs from its "
                        "profile (TOML, docs/robot-physics.md); sets $ROBOCELL_PHYSICS")
    p.add_argument("--firmware", choices=("python", "avr"), default=None,
                   help="in simulation, the firmware behind the serial line: python (the "
                        "simulator) or avr (the real firmware/ in simavr); sets "
                        "$ROBOCELL_FIRMWARE")
    p.add_argument("--compose", type=Path, metavar="FILE",
                   help="compose file to read (default ./docker-compose.yml, else the copy "
                        "shipped with robocell)")
    p.add_argument("--without", action="append", default=[], metavar="SERVICE",
                   help="leave this service out (repeatable), e.g. --without solver on a "
                        "robot host whose solver runs on a compute host (docs/hosts.md)")
    p.add_argument("--remote", metavar="tcp://HOST:PORT",
                   help="open the broker's CURVE endpoint for peers on other hosts (sets "
                        f"${config.BROKER_REMOTE_ENV}; needs --curve-key and --allow)")
    p.add_argument("--curve-key", metavar="FILE",
                   help=f"the broker's key file (sets ${config.BROKER_KEY_ENV})")
    p.add_argument("--allow", action="append", default=[], metavar="FILE.pub[:ROLE]",
                   help="a peer's public key and its role (read, command or "
                        f"service:NAME), repeatable (sets ${config.BROKER_ALLOW_ENV})")
    p.add_argument("--table-budget", type=float, metavar="MB", default=None,
                   help="the most tables the solver maps, in MB (sets "
                        f"${config.TABLE_BUDGET_ENV}; `robocell solver --help`)")
    p.set_defaults(func=cmd_up)

    p = subparsers.add_parser(
        "demo", help="the main job: simulated cell, scramble the twin, one solve cycle",
        description="Start the cell in simulation, scramble the digital twin, run one full "
                    "cycle (scan, solve, execute, verify) with a progress display, print the "
                    "summary and shut everything down. Exit 0 when the twin is solved.")
    p.add_argument("--profile", default=None,
                   help="robot profile (default $ROBOCELL_PROFILE or soltvvo-2x2)")
    p.add_argument("--seed", type=int, default=None, help="scramble seed")
    p.add_argument("--speed", type=float, default=None, help="simulation speed factor")
    p.add_argument("--verbose", action="store_true", help="show every service's output")
    p.add_argument("--physics", metavar="FILE", default=None,
                   help="in simulation, how the robot really moves where it differs from its "
                        "profile (TOML, docs/robot-physics.md); sets $ROBOCELL_PHYSICS")
    p.add_argument("--firmware", choices=("python", "avr"), default=None,
                   help="in simulation, the firmware behind the serial line: python (the "
                        "simulator) or avr (the real firmware/ in simavr); sets "
                        "$ROBOCELL_FIRMWARE")
    p.add_argument("--compose", type=Path, metavar="FILE",
                   help="compose file to read (default ./docker-compose.yml, else the copy "
                        "shipped with robocell)")
    p.set_defaults(func=cmd_demo)


def _env_with(args: argparse.Namespace) -> dict[str, str]:
    """The environment of the launch: the options over the variables, each checked here,
    before anything starts (CommandError naming the one at fault)."""
    env = dict(os.environ)
    if getattr(args, "profile", None):
        env[config.PROFILE_ENV] = args.profile
    speed = getattr(args, "speed", None)
    if speed is not None:
        if not speed > 0:
            raise CommandError(f"--speed {speed:g}: give a factor above 0 (1 is real time, 10 "
                               "ten times faster)")
        env[config.SPEED_ENV] = str(speed)
    if getattr(args, "firmware", None):
        env[config.FIRMWARE_ENV] = args.firmware
    if getattr(args, "physics", None):
        if not getattr(args, "sim", True):
            raise CommandError("--physics describes a simulated robot: add --sim")
        try:
            load_physics(args.physics)
        except PhysicsError as exc:
            raise CommandError(f"--physics: {exc}") from None
        env[config.PHYSICS_ENV] = str(Path(args.physics).resolve())
    config.speed(env)  # a malformed $ROBOCELL_SPEED is named now, not by a service
    _remote_env(args, env)
    try:
        load_profile(config.default_profile(env))
    except ProfileError as exc:
        raise CommandError(f"{exc} (robot profiles: `robocell solve --list-profiles`)") from None
    return env


def _remote_env(args: argparse.Namespace, env: dict[str, str]) -> None:
    """The broker's remote options and the table budget of `up`, as the variables the
    broker and the solver read (key files made absolute: the services start elsewhere)."""
    budget = getattr(args, "table_budget", None)
    if budget is not None:
        if not budget > 0:
            raise CommandError(f"--table-budget {budget:g}: give the megabytes of tables the "
                               "solver may map (e.g. 128)")
        env[config.TABLE_BUDGET_ENV] = f"{budget:g}"
    remote = getattr(args, "remote", None)
    if remote is None:
        if getattr(args, "curve_key", None) or getattr(args, "allow", None):
            raise CommandError("--curve-key and --allow go with --remote tcp://0.0.0.0:PORT "
                               "(the broker's CURVE endpoint for other hosts)")
        return
    if not args.curve_key or not args.allow:
        raise CommandError("--remote needs --curve-key BROKER.key and at least one --allow "
                           "PEER.pub:ROLE (e.g. compute.pub:service:solver); make keys with "
                           "`robocell keys generate`")
    try:  # checked here, before anything starts, as the broker will read them
        load_key(args.curve_key)
        for spec in args.allow:
            parse_allow(spec)
    except KeyFileError as exc:
        raise CommandError(f"{exc} (make keys with `robocell keys generate NAME`)") from None
    env[config.BROKER_REMOTE_ENV] = remote
    env[config.BROKER_KEY_ENV] = str(Path(args.curve_key).resolve())
    env[config.BROKER_ALLOW_ENV] = " ".join(
        ":".join([str(Path(spec.split(":", 1)[0]).resolve()), *spec.split(":", 1)[1:]])
        for spec in args.allow)


def ready_line(name: str, env: dict[str, str]) -> str:
    """What `up` and `demo` say when a service is up: with where to open the dashboard and
    Foxglove."""
    if name == "monitor":
        return f"monitor is up: http://{config.monitor_http(env)}/"
    if name == "foxglove":
        return f"foxglove is up: ws://{config.LOOPBACK}:{config.foxglove_port(env)}"
    return f"{name} is up"


def cmd_up(args: argparse.Namespace) -> int:
    try:
        launcher = Launcher("sim" if args.sim else "hardware", _env_with(args),
                            compose_file=args.compose, without=set(args.without))
    except (ComposeError, LaunchError) as exc:
        raise CommandError(str(exc)) from None
    with launcher:
        try:
            launcher.start(on_ready=lambda name: launcher.log("up", ready_line(name,
                                                                              launcher.env)))
        except LaunchError as exc:
            raise CommandError(str(exc)) from None
        launcher.log("up", "the cell is up; Ctrl-C stops it")
        return launcher.watch()


def cmd_demo(args: argparse.Namespace) -> int:
    env = _env_with(args)
    env.setdefault(config.PROFILE_ENV, config.DEFAULT_PROFILE)
    firmware = ("the AVR firmware in simavr" if env.get("ROBOCELL_FIRMWARE") == "avr"
                else "the firmware simulator")
    print(f"robocell demo: starting the simulated cell (profile {env['ROBOCELL_PROFILE']}, "
          f"{firmware}); a first run builds the solver tables", flush=True)
    try:
        launcher = Launcher("sim", env, compose_file=args.compose, quiet=None if args.verbose
                            else {"broker", "solver", "firmware-sim", "actuator-sim",
                                  "vision-sim", "cell", "monitor", "foxglove"},
                            talking={"solver"})
    except ComposeError as exc:
        raise CommandError(str(exc)) from None
    with launcher:
        try:
            launcher.start(on_ready=lambda name: print(f"  {ready_line(name, launcher.env)}",
                                                       flush=True))
        except LaunchError as exc:
            raise CommandError(str(exc)) from None
        bus = launcher.services[0].environment.get("ROBOCELL_BUS")
        with Node("demo", Endpoints.resolve(bus), track_peers=False) as node:
            follower = CycleFollower(node, bus or "")
            try:
                scrambled = node.call("cell", "scramble",
                                      {} if args.seed is None else {"seed": args.seed},
                                      timeout=10.0)
                print(scramble_line(scrambled), flush=True)
                started = node.call("cell", "start", {}, timeout=5.0)
            except CommandFailed as exc:
                raise CommandError(f"the cell refused: {exc}") from None
            print(f"cycle {started['cycle_id']} started", flush=True)
            result = follower.follow(started["cycle_id"], 600.0, show=True)
        print_summary(result)
    return 0 if result["ok"] else 1
