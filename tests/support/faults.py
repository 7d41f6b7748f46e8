"""Faults as a real host sees them, injected into a running simulated cell, with what followed.

`FaultyCell` drives a launched cell (`support.cell.running_cell`) over its bus: it starts a
cycle, waits for the stage a fault is meant to hit, injects the fault (SIGKILL of one service
and a restart of that one only, a firmware reboot with the cube left where it is, an e-stop
mid-turn, a broker restart), and measures the time from the fault to a report (the cycle's
failed result, or `robocell cycle`'s word that the cell or the broker went away) and to the
next solved cycle, checking every reported solve against the twin. Used by the fault suite
(tests/integration/test_cell_faults.py) and bench/cell_faults.py.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from robocell.common.bus import CommandFailed, Endpoints, Node
from robocell.deploy.launcher import Launcher
from robocell.errors import CommandError
from robocell.services.cell.history import HISTORY_ENV, CycleLog, summary
from robocell.tools.cycle import CycleFollower
from support.bus import wait_subscribed

KILLABLE = ("broker", "solver", "firmware-sim", "actuator-sim", "vision-sim", "cell", "monitor")
"""The seven services of the simulated cell, by their compose names."""
BUS_NAMES = {"actuator-sim": "actuator", "vision-sim": "vision"}
KILL_AT = {"broker": "executing", "solver": "scanning", "firmware-sim": "executing",
           "actuator-sim": "executing", "vision-sim": "scanning", "cell": "executing",
           "monitor": "executing"}
"""The stage each service is killed in: the one where losing it matters (the solver is
killed while the robot scans, so the cycle finds it gone when it plans)."""
FAULTS = (*(f"kill {name}" for name in KILLABLE), "firmware reboot", "e-stop mid-turn",
          "broker restart")
CYCLE_TIMEOUT_S = 120.0
RESTART_TIMEOUT_S = 120.0


@dataclass
class FaultOutcome:
    """What one fault did: the report (cycle result or the follower's error), how long it
    took, and the next cycle."""

    fault: str
    cycle_ok: bool | None = None
    failed_stage: str | None = None
    report: str = ""
    report_s: float | None = None
    next_ok: bool = False
    next_solved_s: float | None = None
    next_result: dict = field(default_factory=dict)
    wrong: int = 0
    """cycles reported solved while the twin was not"""
    cycle_ids: list[str] = field(default_factory=list)


class FaultyCell:
    """A running simulated cell and a bus node to drive it, with fault injection."""

    def __init__(self, launcher: Launcher, seed: int = 0) -> None:
        self.launcher = launcher
        self.bus = launcher.services[0].environment["ROBOCELL_BUS"]
        self.endpoints = Endpoints.resolve(self.bus)
        self.rng = random.Random(seed)
        self.node = Node("fault-driver", self.endpoints).start()
        self.follower = CycleFollower(self.node, self.bus)
        self.stages: queue.Queue = queue.Queue()
        self.node.subscribe("cell.status", self.stages.put)
        wait_subscribed(self.node.subscriber, "cell.status")  # no stage is missed
        self.cycle_ids: list[str] = []
        self.solved_ids: list[str] = []

    def close(self) -> None:
        self.node.stop()

    # --- plain cycles ---------------------------------------------------------------------
    def twin(self) -> dict:
        """The twin as the firmware simulator holds it now, asked with its `twin` command:
        the truth a wrong result is judged by, which no publisher on the bus can forge."""
        return self.node.call("firmware-sim", "twin", {}, timeout=30.0)

    def start(self, command: str = "start") -> str:
        deadline = time.monotonic() + 30
        while True:
            try:
                cycle_id = self.node.call("cell", command, {}, timeout=30.0)["cycle_id"]
                self.cycle_ids.append(cycle_id)
                return cycle_id
            except CommandFailed as exc:  # e.g. busy: the last cycle is still reporting
                if time.monotonic() > deadline:
                    raise AssertionError(f"cell.{command} refused for 30 s: {exc}") from None
                time.sleep(0.5)

    def cycle(self, scramble_seed: int | None = None, command: str = "start") -> tuple[dict, int]:
        """One whole cycle (after scrambling the twin if asked): its result and 1 if it was
        reported solved while the twin is not (a wrong result), else 0."""
        if scramble_seed is not None:
            self.node.call("cell", "scramble", {"seed": scramble_seed}, timeout=30.0)
        cycle_id = self.start(command)
        result = self.follower.follow(cycle_id, CYCLE_TIMEOUT_S, show=False)
        wrong = int(bool(result["ok"]) and not self.twin()["solved"])
        if result["ok"]:
            self.solved_ids.append(cycle_id)
        return result, wrong

    def wait_stage(self, cycle_id: str, stage: str, timeout: float = 60.0) -> bool:
        """Wait until the cycle enters ``stage``; False if it ended first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                p = self.stages.get(timeout=0.5).payload
            except queue.Empty:
                continue
            if p["cycle_id"] != cycle_id:
                continue
            if p["stage"] == stage:
                return True
            if p["stage"] in ("done", "failed"):
                return False
        raise AssertionError(f"cycle {cycle_id} did not reach {stage} in {timeout} s")

    # --- services -------------------------------------------------------------------------
    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        child = self.launcher.children[name]
        try:
            os.killpg(child.process.pid, sig)
        except ProcessLookupError:
            pass
        child.process.wait(timeout=30)

    def restart(self, name: str, keep_cube: dict | None = None) -> None:
        """Start the service ``name`` again (only it); for the firmware simulator, with the
        cube ``keep_cube`` (a twin state) where it was: a reboot leaves the cube in place."""
        service = self.launcher.children[name].service
        if keep_cube is not None:
            service = dataclasses.replace(
                service, argv=(*service.argv, "--cube", keep_cube["facelets"]))
        bus_name = BUS_NAMES.get(name, name)
        deadline = time.monotonic() + RESTART_TIMEOUT_S
        child = self.launcher.start_service(service)
        while time.monotonic() < deadline:
            peer = self.node.peers().get(bus_name)
            if (peer is not None and peer.alive and peer.pid == child.process.pid
                    and peer.state in ("ready", "busy")):
                return
            if child.process.poll() is not None:
                # e.g. a port still held for a moment: as a supervisor would, start it
                # again (the ports are outside the ephemeral range, `free_port_block`, so
                # no client's reconnect can hold one as its own)
                if time.monotonic() + 1.0 >= deadline:
                    raise AssertionError(f"{name} exited with {child.process.returncode} on "
                                         f"restart: {child.output_tail[-10:]}")
                time.sleep(1.0)
                child = self.launcher.start_service(service)
            time.sleep(0.1)
        raise AssertionError(f"{name} not alive within {RESTART_TIMEOUT_S} s of its restart")

    # --- faults ---------------------------------------------------------------------------
    def inject(self, fault: str, scramble_seed: int) -> FaultOutcome:
        """Run a cycle with ``fault`` in it, then the next cycle; what happened."""
        out = FaultOutcome(fault)
        self.node.call("cell", "scramble", {"seed": scramble_seed}, timeout=30.0)
        victim = fault.removeprefix("kill ") if fault.startswith("kill ") else None
        stage = KILL_AT[victim] if victim else (
            "scanning" if fault == "broker restart" else "executing")
        cycle_id = self.start()
        reached = self.wait_stage(cycle_id, stage)
        cube = self.twin() if victim == "firmware-sim" or fault == "firmware reboot" else None
        injected = time.monotonic()
        if fault == "e-stop mid-turn":
            self.node.call("cell", "estop", {}, timeout=30.0)
        elif fault == "firmware reboot":
            self.kill("firmware-sim")
            self.restart("firmware-sim", keep_cube=cube)  # back at once: a power blip
        elif fault == "broker restart":
            self.kill("broker", signal.SIGTERM)
        else:
            self.kill(victim)
        try:
            result = self.follower.follow(cycle_id, CYCLE_TIMEOUT_S, show=False)
            out.report_s = time.monotonic() - injected
            out.cycle_ok, out.failed_stage = result["ok"], result.get("failed_stage")
            out.report = result.get("error") or "solved"
            if result["ok"]:
                out.wrong += int(not self.twin()["solved"])
        except CommandError as exc:  # the cell or the broker went away: said by the follower
            out.report_s = time.monotonic() - injected
            out.report = str(exc)
        if not reached:
            out.report = f"(the cycle ended before {stage}) {out.report}"
        reported = time.monotonic()
        if victim is not None and victim != "firmware-sim":
            self.restart(victim)
        elif victim == "firmware-sim":
            self.restart("firmware-sim", keep_cube=cube)
        elif fault == "broker restart":
            self.restart("broker")
        if fault in ("broker restart", "kill broker"):
            # the result of the cycle that ran across the outage comes once the broker is back
            try:
                late = self.follower.follow(cycle_id, CYCLE_TIMEOUT_S, show=False)
                out.cycle_ok, out.failed_stage = late["ok"], late.get("failed_stage")
                out.report += f"; then the cell's result: {late.get('error') or 'solved'}"
                if late["ok"]:
                    out.wrong += int(not self.twin()["solved"])
            except CommandError as exc:
                out.report += f"; no result from the cell after the broker came back: {exc}"
        command = "recover" if fault == "e-stop mid-turn" else "start"
        try:
            result, wrong = self.cycle(command=command)
        except CommandError as exc:
            result, wrong = {"ok": False, "error": str(exc)}, 0
        out.wrong += wrong
        out.next_ok, out.next_result = bool(result["ok"]), result
        out.next_solved_s = time.monotonic() - reported if result["ok"] else None
        out.cycle_ids = list(self.cycle_ids)
        return out

    def history(self) -> dict:
        """The cycle log as `robocell history --json` reads it: summary and every cycle."""
        log = CycleLog(Path(self.launcher.env[HISTORY_ENV]), readonly=True)
        try:
            records = log.cycles()
        finally:
            log.close()
        return {"summary": summary(records), "cycles": [r.as_dict() for r in records]}
