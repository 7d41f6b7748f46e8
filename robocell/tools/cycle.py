"""`robocell cycle`: run one solve cycle on a running cell and follow it on the bus
(`CycleFollower`: its stages, progress and result, and whether the cell and broker are there)."""

from __future__ import annotations

import argparse
import json
import queue
import time
from typing import Any

from robocell.common.bus import CommandFailed, Node
from robocell.common.bus.liveness import HEARTBEAT_PERIOD_S, STALE_AFTER_S
from robocell.common.bus.options import add_remote_options, broker_endpoints
from robocell.errors import CommandError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `cycle` to the subcommands."""
    p = subparsers.add_parser("cycle", help="run one solve cycle on a running cell")
    add_remote_options(p)
    p.add_argument("--timeout", type=float, default=600.0, help="give up after S seconds")
    p.add_argument("--recover", action="store_true",
                   help="the recovery path: e-stop, clear, home every motor, rescan, plan, "
                        "solve (after an e-stop, a jam or a firmware reboot)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_cycle)


BROKER_SILENT_S = 1.5 * HEARTBEAT_PERIOD_S
"""No heartbeat from any service for this long while the cell's is stale: the broker, which
beats every period itself while it lives, is lost, not the cell."""


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
        away (within STALE_AFTER_S of its last heartbeat) or after ``timeout``."""
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
            if now - last_cell_beat > STALE_AFTER_S or now - last_beat > STALE_AFTER_S:
                silent = now - last_beat
                if silent > BROKER_SILENT_S:  # every heartbeat stopped, the cell's among them
                    raise CommandError(
                        f"lost the broker {self.broker}: no heartbeat from any service for "
                        f"{silent:.1f} s during cycle {cycle_id} (stage {stage}); the cell "
                        "may go on and finish it: restart the broker, then `robocell "
                        "history` shows how the cycle ended")
                raise CommandError(f"the cell service went away: no heartbeat for "
                                   f"{now - last_cell_beat:.1f} s during cycle {cycle_id} "
                                   f"(stage {stage}) while other services beat; restart "
                                   "`robocell cell` and start a new cycle")
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
                show_event(env.topic, p)


def _of_cycle(topic: str, p: dict, cycle_id: str, plan_id: str | None) -> bool:
    """Whether a message belongs to the cycle ``cycle_id`` (its scans are named after it;
    its plan answers one of them; its errors come after it started)."""
    if topic in ("actuator.scan_pose", "vision.cube_state", "solver.plan"):
        return str(p.get("scan_id") or "").startswith(cycle_id)
    if topic in ("actuator.progress", "actuator.amended"):
        return plan_id is not None and p["plan_id"] == plan_id
    return topic == "errors"


def show_event(topic: str, p: dict) -> None:
    """Print one event of a cycle for a person following it."""
    if topic == "actuator.scan_pose":
        print(f"    scan pose {p['pose'] + 1}/{p['n_poses']}: face {p['face']} in view",
              flush=True)
    elif topic == "vision.cube_state":
        print(f"    cube read: {p['facelets']} (named by the faces as the robot holds the cube: "
              "turned or relabelled, the same cube as scrambled)", flush=True)
    elif topic == "actuator.progress" and p.get("state") not in (None, "running"):
        print(f"    {p['state']} at step {p['step'] + 1}/{p['n_steps']} ({p['primitive']})",
              flush=True)
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


def scramble_line(scrambled: Any) -> str:
    """What `demo` and `cell scramble` print of the simulator's answer to ``scramble``."""
    if isinstance(scrambled, dict) and "facelets" in scrambled:
        extra = "; ".join(f"{k}: {' '.join(v) if isinstance(v, list) else v}"
                          for k, v in scrambled.items() if k != "facelets" and v)
        return f"twin scrambled: {scrambled['facelets']}" + (f" ({extra})" if extra else "")
    return f"twin scrambled: {json.dumps(scrambled)}"


def follow_cycle(node: object, cycle_id: str, timeout: float, show: bool) -> dict:
    """Wait for the cycle's `cell.result`, printing stages and execution progress (a
    `CycleFollower` made now: subscribe before the start with one to see every event)."""
    return CycleFollower(node).follow(cycle_id, timeout, show)


def print_summary(result: dict) -> None:
    verdict = "SOLVED" if result["ok"] else f"FAILED in {result.get('failed_stage')}"
    print(f"cycle {result['cycle_id']}: {verdict} in {result['total_s']:.2f} s")
    for stage, seconds in result["stages_s"].items():
        print(f"  {stage:<10} {seconds:8.3f} s")
    if result.get("error"):
        print(f"  reason: {result['error']}")


def cmd_cycle(args: argparse.Namespace) -> int:
    endpoints = broker_endpoints(args)
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
