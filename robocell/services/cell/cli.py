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
from robocell.services.cell.history import (
    DB_NAME,
    HISTORY_ENV,
    CycleLog,
    HistoryError,
    parse_since,
    summary,
)
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
    p.add_argument("--recover", action="store_true",
                   help="the recovery path: e-stop, clear, home every motor, rescan, plan, "
                        "solve (after an e-stop, a jam or a firmware reboot)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_cycle)

    p = subparsers.add_parser(
        "history", help="the cycle log: every cycle the cell ran, with summary statistics",
        description="Read the cell's cycle log (SQLite, kept across restarts): the cycles, "
                    "the success rate and the percentiles of cycle and stage times.")
    p.add_argument("--since", help="only cycles started since: 30m, 2h, 7d, or a date/time "
                   "such as 2026-12-01T09:30")
    p.add_argument("--limit", type=int, default=20, help="cycles listed (default 20; the "
                   "statistics cover every cycle since --since)")
    p.add_argument("--db", type=Path, metavar="FILE",
                   help=f"the cycle log (default ${HISTORY_ENV}, else {DB_NAME} in the data "
                        "directory)")
    p.add_argument("--json", action="store_true", help="cycles and statistics as JSON")
    p.set_defaults(func=cmd_history)

    p = subparsers.add_parser("cell", help="run the cycle coordinator service",
                              description="Without a subcommand: run the cycle coordinator "
                                          "service. `robocell cell scramble` scrambles the "
                                          "twin of a running simulated cell.")
    p.add_argument("--broker", help="broker base address (default $ROBOCELL_BUS or "
                   "tcp://127.0.0.1:$ROBOCELL_BUS_PORT)")
    p.add_argument("--history", type=Path, metavar="FILE",
                   help=f"the cycle log (SQLite; default ${HISTORY_ENV}, else "
                        f"{DB_NAME} in the data directory)")
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


STARTING_GRACE_S = 1.5
"""How long `health` waits past a "starting" beat for the next (a heartbeat period and some):
a state change is announced at once, and the beat before it may be the one cached."""


def cmd_health(args: argparse.Namespace) -> int:
    liveness = Liveness()
    sub = Subscriber(["heartbeat"], Endpoints.resolve(args.broker))
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
                    if env.payload["commands"]:
                        return _commands_route(args.service, sub.endpoints,
                                               env.payload["state"],
                                               max(0.5, deadline - time.monotonic()))
                    print(f"{args.service}: {env.payload['state']}")
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


def cmd_cell(args: argparse.Namespace) -> int:
    speed = float(os.environ.get("ROBOCELL_SPEED", "1") or 1)
    try:
        log = CycleLog(args.history)
    except HistoryError as exc:
        raise CommandError(str(exc)) from None
    with Node("cell", Endpoints.resolve(args.broker)) as node:
        service = CellService(node, speed, log)
        service.start()
        node.wait()
        service.stop()
    log.close()
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


STALE_S = 3.0
"""A heartbeat older than this (three missed beats, as `Liveness` counts) means its sender
is gone."""


class CycleFollower:
    """Follows one cycle on the bus: its stages and progress (only this cycle's: the latched
    messages of the one before are left out), its `cell.result`, and whether the cell and
    the broker are still there. Subscribe (construct) before starting the cycle."""

    TOPICS = ("cell.status", "cell.result", "actuator.progress", "actuator.amended",
              "actuator.scan_pose", "vision.cube_state", "solver.plan", "errors", "heartbeat")

    def __init__(self, node: Any, broker: str = "") -> None:
        self.node = node
        self.broker = broker or getattr(getattr(node, "endpoints", None), "subscribe", "")
        self.events: queue.Queue = queue.Queue()
        for topic in self.TOPICS:
            node.subscribe(topic, self._arrived)

    def _arrived(self, env: Any) -> None:
        self.events.put((time.monotonic(), env))

    def follow(self, cycle_id: str, timeout: float, show: bool) -> dict:
        """The cycle's `cell.result` payload; CommandError when the cell or the broker goes
        away (within STALE_S of its last heartbeat) or after ``timeout``."""
        began = time.monotonic()
        deadline = began + timeout
        last_beat = last_cell_beat = began
        cell_pid: int | None = None
        stage, plan_id = "starting", None
        while True:
            now = time.monotonic()
            if now >= deadline:
                raise CommandError(f"no result for cycle {cycle_id} within {timeout:.0f} s "
                                   f"(last stage: {stage})")
            if now - last_beat > STALE_S:
                raise CommandError(f"the broker {self.broker} went away: no heartbeat from "
                                   f"any service for {now - last_beat:.1f} s during cycle "
                                   f"{cycle_id} (stage {stage}); restart the broker, then "
                                   "`robocell history` shows how the cycle ended")
            if now - last_cell_beat > STALE_S:
                raise CommandError(f"the cell service went away: no heartbeat for "
                                   f"{now - last_cell_beat:.1f} s during cycle {cycle_id} "
                                   f"(stage {stage}); restart `robocell cell` and start a "
                                   "new cycle")
            try:
                arrived, env = self.events.get(timeout=0.25)
            except queue.Empty:
                continue
            p = env.payload
            if env.topic == "heartbeat":
                if arrived < began:
                    continue  # heard before this cycle: says nothing of now
                last_beat = arrived
                if p["service"] == "cell":
                    if cell_pid is not None and p["pid"] != cell_pid:
                        raise CommandError(f"the cell service restarted (pid {cell_pid} -> "
                                           f"{p['pid']}) during cycle {cycle_id} (stage "
                                           f"{stage}): the cycle was lost; start a new one")
                    cell_pid, last_cell_beat = p["pid"], arrived
                continue
            if env.topic == "cell.result" and p["cycle_id"] == cycle_id:
                return p
            if env.topic == "cell.status" and p["cycle_id"] == cycle_id:
                stage = p["stage"]
                if show:
                    detail = f" ({p['detail']})" if p.get("detail") else ""
                    print(f"  stage: {stage}{detail}", flush=True)
            elif not _of_cycle(env.topic, p, cycle_id, plan_id):
                continue
            elif env.topic == "solver.plan":
                plan_id = p["plan_id"]
                if show:
                    print(f"    plan: {len(p['primitives'])} primitives, predicted "
                          f"{p['predicted_ms']:.0f} ms: {' '.join(p['primitives'])}",
                          flush=True)
            elif show:
                _show(env.topic, p)


def _of_cycle(topic: str, p: dict, cycle_id: str, plan_id: str | None) -> bool:
    """Whether a message belongs to the cycle ``cycle_id`` (its scans are named after it;
    its plan answers one of them; its errors come after it started)."""
    if topic in ("actuator.scan_pose", "vision.cube_state", "solver.plan"):
        return str(p.get("scan_id") or "").startswith(cycle_id)
    if topic in ("actuator.progress", "actuator.amended"):
        return plan_id is not None and p["plan_id"] == plan_id
    return topic == "errors"


def _show(topic: str, p: dict) -> None:
    if topic == "actuator.scan_pose":
        print(f"    scan pose {p['pose'] + 1}/{p['n_poses']}: face {p['face']} in view",
              flush=True)
    elif topic == "vision.cube_state":
        print(f"    cube read: {p['facelets']}", flush=True)
    elif topic == "actuator.progress":
        print(f"    step {p['step'] + 1}/{p['n_steps']} {p['primitive']:<8} "
              f"eta {p['eta_s']:.1f}s", flush=True)
    elif topic == "actuator.amended":
        rest = p["primitives"][p["at_step"]:]
        print(f"    rest searched again while the robot moves: from step {p['at_step'] + 1}, "
              f"{len(rest)} primitives, plan now predicted {p['predicted_ms']:.0f} ms: "
              f"{' '.join(rest)}", flush=True)
    elif topic == "errors":
        print(f"    error from {p['service']} ({p['stage']}): {p['message']}", flush=True)


def follow_cycle(node: object, cycle_id: str, timeout: float, show: bool) -> dict:
    """Wait for the cycle's `cell.result`, printing stages and execution progress (a
    `CycleFollower` made now: subscribe before the start with one to see every event)."""
    return CycleFollower(node).follow(cycle_id, timeout, show)


def cmd_history(args: argparse.Namespace) -> int:
    try:
        since = parse_since(args.since) if args.since else None
        log = CycleLog(args.db, readonly=True)
    except HistoryError as exc:
        raise CommandError(str(exc)) from None
    try:
        records = log.cycles(since=since)
    except HistoryError as exc:
        raise CommandError(str(exc)) from None
    finally:
        log.close()
    stats = summary(records)
    shown = records[-args.limit:] if args.limit > 0 else []
    if args.json:
        print(json.dumps({"path": str(log.path), "summary": stats,
                          "cycles": [r.as_dict() for r in shown]}))
        return 0
    print_history(log.path, stats, shown)
    return 0


def print_history(path: Path, stats: dict, shown: list) -> None:
    print(f"cycle log {path}")
    for r in shown:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started_wall))
        total = "" if r.total_s is None else f"{r.total_s:7.2f} s"
        why = f"  {r.failed_stage or ''}: {r.error}" if r.error else ""
        print(f"  {when}  {r.cycle_id}  {r.result:<11} {total:>9}  {r.profile or ''}{why}")
    rate = stats["success_rate"]
    print(f"cycles {stats['cycles']}: {stats['solved']} solved, {stats['failed']} not "
          f"solved, {stats['running']} running; success rate "
          f"{'-' if rate is None else f'{rate:.1%}'}")
    if stats["failed_by_stage"]:
        print("  not solved, by stage: " + ", ".join(
            f"{k} {v}" for k, v in sorted(stats["failed_by_stage"].items())))
    rows = [("cycle", stats["cycle_s"]), *sorted(stats["stages_s"].items())]
    print(f"  {'seconds':<10} {'n':>5} {'p50':>9} {'p90':>9} {'p99':>9}")
    for name, spread in rows:
        if spread["n"]:
            print(f"  {name:<10} {spread['n']:>5} {spread['p50']:>9.3f} {spread['p90']:>9.3f} "
                  f"{spread['p99']:>9.3f}")


def print_summary(result: dict) -> None:
    verdict = "SOLVED" if result["ok"] else f"FAILED in {result.get('failed_stage')}"
    print(f"cycle {result['cycle_id']}: {verdict} in {result['total_s']:.2f} s")
    for stage, seconds in result["stages_s"].items():
        print(f"  {stage:<10} {seconds:8.3f} s")
    if result.get("error"):
        print(f"  reason: {result['error']}")


def cmd_cycle(args: argparse.Namespace) -> int:
    endpoints = Endpoints.resolve(args.broker)
    with Node("cycle-cli", endpoints, track_peers=False) as node:
        follower = CycleFollower(node, endpoints.subscribe)
        command = "recover" if args.recover else "start"
        try:
            started = node.call("cell", command, {}, timeout=5.0)
        except CommandFailed as exc:
            raise CommandError(f"cannot start a cycle: {exc}") from None
        if started.get("homing") and not args.json:
            print(f"cycle {started['cycle_id']}: stop, clear and home the robot first",
                  flush=True)
        result = follower.follow(started["cycle_id"], args.timeout, show=not args.json)
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
            follower = CycleFollower(node, bus or "")
            try:
                scrambled = node.call("cell", "scramble",
                                      {} if args.seed is None else {"seed": args.seed},
                                      timeout=10.0)
                print(f"twin scrambled: {scrambled}", flush=True)
                started = node.call("cell", "start", {}, timeout=5.0)
            except CommandFailed as exc:
                raise CommandError(f"the cell refused: {exc}") from None
            print(f"cycle {started['cycle_id']} started", flush=True)
            result = follower.follow(started["cycle_id"], 600.0, show=True)
        print_summary(result)
    return 0 if result["ok"] else 1
