"""`robocell up | demo | cycle | cell [scramble] | health`: run the cell and talk to it."""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import time
from pathlib import Path
from typing import Any

from robocell.common.bus import CommandClient, CommandFailed, Endpoints, Liveness, Node, Subscriber
from robocell.errors import CommandError
from robocell.services.cell.compose import ComposeError
from robocell.services.cell.launcher import Launcher, LaunchError
from robocell.services.cell.service import CellService


def register(subparsers: argparse._SubParsersAction) -> None:
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
    p.add_argument("--firmware", choices=("python", "avr"), default=None,
                   help="in simulation, the firmware behind the serial line: python (the "
                        "simulator) or avr (the real firmware/ in simavr); sets "
                        "$ROBOCELL_FIRMWARE")
    p.add_argument("--compose", type=Path, metavar="FILE",
                   help="compose file to read (default ./docker-compose.yml, else the copy "
                        "shipped with robocell)")
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
    p.add_argument("--firmware", choices=("python", "avr"), default=None,
                   help="in simulation, the firmware behind the serial line: python (the "
                        "simulator) or avr (the real firmware/ in simavr); sets "
                        "$ROBOCELL_FIRMWARE")
    p.add_argument("--compose", type=Path, metavar="FILE",
                   help="compose file to read (default ./docker-compose.yml, else the copy "
                        "shipped with robocell)")
    p.set_defaults(func=cmd_demo)

    p = subparsers.add_parser("cycle", help="run one solve cycle on a running cell")
    p.add_argument("--broker", help="broker base address (default $ROBOCELL_BUS or "
                   "tcp://127.0.0.1:$ROBOCELL_BUS_PORT)")
    p.add_argument("--timeout", type=float, default=600.0, help="give up after S seconds")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_cycle)

    p = subparsers.add_parser("cell", help="run the cycle coordinator service",
                              description="Without a subcommand: run the cycle coordinator "
                                          "service. `robocell cell scramble` scrambles the "
                                          "twin of a running simulated cell.")
    p.add_argument("--broker", help="broker base address (default $ROBOCELL_BUS or "
                   "tcp://127.0.0.1:$ROBOCELL_BUS_PORT)")
    p.set_defaults(func=cmd_cell)
    cell_sub = p.add_subparsers(dest="cell_command", metavar="SUBCOMMAND")
    s = cell_sub.add_parser("scramble", help="scramble the twin of a running simulated cell",
                            description="Scramble the digital twin of a cell started with "
                                        "`robocell up --sim` (the cell.scramble command); "
                                        "then `robocell cycle` solves it.")
    s.add_argument("--seed", type=int, help="random seed (the same seed, the same scramble)")
    s.add_argument("--moves", type=int, help="number of random moves (default: the "
                   "simulator's)")
    s.add_argument("--broker", dest="broker", default=argparse.SUPPRESS,
                   help="broker base address (as for `robocell cell`)")
    s.set_defaults(func=cmd_scramble)

    p = subparsers.add_parser("health", help="exit 0 when SERVICE's heartbeat is current")
    p.add_argument("service", metavar="SERVICE")
    p.add_argument("--broker", help="broker base address (default $ROBOCELL_BUS or "
                   "tcp://127.0.0.1:$ROBOCELL_BUS_PORT)")
    p.add_argument("--wait", type=float, default=3.5, help="seconds to listen (default 3.5)")
    p.set_defaults(func=cmd_health)


def _env_with(args: argparse.Namespace) -> dict[str, str]:
    env = dict(os.environ)
    if getattr(args, "profile", None):
        env["ROBOCELL_PROFILE"] = args.profile
    if getattr(args, "speed", None):
        env["ROBOCELL_SPEED"] = str(args.speed)
    if getattr(args, "firmware", None):
        env["ROBOCELL_FIRMWARE"] = args.firmware
    return env


def cmd_up(args: argparse.Namespace) -> int:
    try:
        launcher = Launcher("sim" if args.sim else "hardware", _env_with(args),
                            compose_file=args.compose)
    except ComposeError as exc:
        raise CommandError(str(exc)) from None
    with launcher:
        try:
            launcher.start(on_ready=lambda name: launcher.log("up", f"{name} is alive"))
        except LaunchError as exc:
            raise CommandError(str(exc)) from None
        launcher.log("up", "the cell is up; Ctrl-C stops it")
        return launcher.watch()


def cmd_health(args: argparse.Namespace) -> int:
    liveness = Liveness()
    sub = Subscriber(["heartbeat"], Endpoints.resolve(args.broker))
    deadline = time.monotonic() + args.wait
    try:
        while time.monotonic() < deadline:
            env = sub.recv(timeout=0.2)
            if env is not None:
                liveness.update(env)
                peer = liveness.peers().get(args.service)
                if peer is not None and peer.alive and env.payload["service"] == args.service:
                    if env.payload["state"] in ("error", "stopping", "starting"):
                        # starting: not healthy yet (e.g. the actuator before its firmware
                        # answered)
                        print(f"{args.service}: {env.payload['state']} "
                              f"{env.payload['health']}", file=sys.stderr)
                        return 1
                    if env.payload["commands"]:
                        return _commands_route(args.service, sub.endpoints,
                                               env.payload["state"],
                                               max(0.5, deadline - time.monotonic()))
                    print(f"{args.service}: {env.payload['state']}")
                    return 0
    finally:
        sub.close()
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


def cmd_cell(args: argparse.Namespace) -> int:
    speed = float(os.environ.get("ROBOCELL_SPEED", "1") or 1)
    with Node("cell", Endpoints.resolve(args.broker)) as node:
        CellService(node, speed).start()
        node.wait()
    return 0


def cmd_scramble(args: argparse.Namespace) -> int:
    if args.moves is not None and args.moves < 1:
        raise CommandError(f"--moves must be at least 1, not {args.moves}")
    request = {k: v for k, v in (("seed", args.seed), ("moves", args.moves)) if v is not None}
    with Node("scramble-cli", Endpoints.resolve(args.broker), track_peers=False) as node:
        try:
            scrambled = node.call("cell", "scramble", request, timeout=10.0)
        except CommandFailed as exc:
            hint = (" (is the cell running? `robocell up --sim`)"
                    if exc.code == "unavailable" else "")
            raise CommandError(f"cannot scramble the twin: {exc}{hint}") from None
    print(_scramble_line(scrambled))
    return 0


def _scramble_line(scrambled: Any) -> str:
    """What `cell scramble` prints of the simulator's answer."""
    if isinstance(scrambled, dict) and "facelets" in scrambled:
        extra = ", ".join(f"{k} {v}" for k, v in scrambled.items() if k != "facelets")
        return f"twin scrambled: {scrambled['facelets']}" + (f" ({extra})" if extra else "")
    return f"twin scrambled: {json.dumps(scrambled)}"


def follow_cycle(node: object, cycle_id: str, timeout: float, show: bool) -> dict:
    """Wait for the cycle's `cell.result`, printing stages and execution progress."""
    events: queue.Queue = queue.Queue()
    for topic in ("cell.status", "cell.result", "actuator.progress", "actuator.scan_pose",
                  "vision.cube_state", "solver.plan", "errors"):
        node.subscribe(topic, events.put)  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            env = events.get(timeout=0.5)
        except queue.Empty:
            continue
        p = env.payload
        if env.topic == "cell.result" and p["cycle_id"] == cycle_id:
            return p
        if not show:
            continue
        if env.topic == "cell.status" and p["cycle_id"] == cycle_id:
            print(f"  stage: {p['stage']}", flush=True)
        elif env.topic == "actuator.scan_pose":
            print(f"    scan pose {p['pose'] + 1}/{p['n_poses']}: face {p['face']} in view",
                  flush=True)
        elif env.topic == "vision.cube_state":
            print(f"    cube read: {p['facelets']}", flush=True)
        elif env.topic == "solver.plan":
            print(f"    plan: {len(p['primitives'])} primitives, predicted "
                  f"{p['predicted_ms']:.0f} ms: {' '.join(p['primitives'])}", flush=True)
        elif env.topic == "actuator.progress":
            print(f"    step {p['step'] + 1}/{p['n_steps']} {p['primitive']:<8} "
                  f"eta {p['eta_s']:.1f}s", flush=True)
        elif env.topic == "errors":
            print(f"    error from {p['service']} ({p['stage']}): {p['message']}", flush=True)
    raise CommandError(f"no result for cycle {cycle_id} within {timeout:.0f} s")


def print_summary(result: dict) -> None:
    verdict = "SOLVED" if result["ok"] else f"FAILED in {result.get('failed_stage')}"
    print(f"cycle {result['cycle_id']}: {verdict} in {result['total_s']:.2f} s")
    for stage, seconds in result["stages_s"].items():
        print(f"  {stage:<10} {seconds:8.3f} s")
    if result.get("error"):
        print(f"  reason: {result['error']}")


def cmd_cycle(args: argparse.Namespace) -> int:
    with Node("cycle-cli", Endpoints.resolve(args.broker), track_peers=False) as node:
        try:
            started = node.call("cell", "start", {}, timeout=5.0)
        except CommandFailed as exc:
            raise CommandError(f"cannot start a cycle: {exc}") from None
        result = follow_cycle(node, started["cycle_id"], args.timeout, show=not args.json)
    if args.json:
        print(json.dumps(result))
    else:
        print_summary(result)
    return 0 if result["ok"] else 1


def cmd_demo(args: argparse.Namespace) -> int:
    env = _env_with(args)
    env.setdefault("ROBOCELL_PROFILE", "soltvvo-2x2")
    firmware = ("the AVR firmware in simavr" if env.get("ROBOCELL_FIRMWARE") == "avr"
                else "the firmware simulator")
    print(f"robocell demo: starting the simulated cell (profile {env['ROBOCELL_PROFILE']}, "
          f"{firmware}); a first run builds the solver tables", flush=True)
    try:
        launcher = Launcher("sim", env, compose_file=args.compose, quiet=None if args.verbose
                            else {"broker", "solver", "firmware-sim", "actuator-sim",
                                  "vision-sim", "cell", "monitor", "foxglove"})
    except ComposeError as exc:
        raise CommandError(str(exc)) from None
    with launcher:
        try:
            launcher.start(on_ready=lambda name: print(f"  {name} is up", flush=True))
        except LaunchError as exc:
            raise CommandError(str(exc)) from None
        bus = launcher.services[0].environment.get("ROBOCELL_BUS")
        with Node("demo", Endpoints.resolve(bus), track_peers=False) as node:
            try:
                scrambled = node.call("cell", "scramble",
                                      {} if args.seed is None else {"seed": args.seed},
                                      timeout=10.0)
                print(f"twin scrambled: {scrambled}", flush=True)
                started = node.call("cell", "start", {}, timeout=5.0)
            except CommandFailed as exc:
                raise CommandError(f"the cell refused: {exc}") from None
            print(f"cycle {started['cycle_id']} started", flush=True)
            result = follow_cycle(node, started["cycle_id"], 600.0, show=True)
        print_summary(result)
    return 0 if result["ok"] else 1
