"""The cycle's sequence over a scripted bus (the edge of the unit): what counts as evidence of a
solve, what a missing service fails, when the robot is homed first."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from robocell.common.bus import CommandFailed
from robocell.services.cell.cycle import CycleTimeouts, run_cycle

PLAN = {"plan_id": "p1", "primitives": ["R", "F"], "predicted_ms": 100.0}


class ScriptedBus:
    """A cell's view of the bus, scripted: commands answer from ``replies``, topics hold the
    messages a test put there, services are alive unless named in ``dead``; the firmware
    simulator's ``twin`` command answers with the newest twin put on `sim.twin_state`."""

    def __init__(self) -> None:
        self.messages: dict[str, list[dict[str, Any]]] = {}
        self.calls: list[tuple[str, str]] = []
        self.dead: set[str] = set()
        self.status_log: list[tuple[str, str]] = []
        self.actuator = {"last_line": 40, "boot_id": "b1", "cube_state_known": True}
        self.on_execute: Callable[[], None] = lambda: None
        self.lock = threading.Condition()

    def put(self, topic: str, payload: dict[str, Any]) -> None:
        with self.lock:
            self.messages.setdefault(topic, []).append(payload)
            self.lock.notify_all()

    def call(self, service: str, command: str, args: dict[str, Any], timeout: float) -> Any:
        self.calls.append((service, command))
        if service in self.dead:
            raise CommandFailed("unavailable", f"no {service}")
        if (service, command) == ("actuator", "scan"):
            self.put("vision.cube_state", {"scan_id": args["scan_id"], "facelets": "F" * 24})
            return {}
        if (service, command) == ("solver", "solve"):
            return dict(PLAN, scan_id=args["scan_id"])
        if (service, command) == ("actuator", "execute"):
            done = self.result()
            self.on_execute()
            self.put("actuator.result", done)
            return {}
        if (service, command) == ("actuator", "status"):
            return dict(self.actuator)
        if (service, command) == ("firmware-sim", "twin"):
            with self.lock:
                kept = self.messages.get("sim.twin_state")
                if not kept:
                    raise CommandFailed("unavailable", "no firmware-sim")
                return dict(kept[-1])
        if (service, command) == ("actuator", "home"):
            self.actuator["cube_state_known"] = True
            return {"ok": True}
        return {}

    def result(self) -> dict[str, Any]:
        """The actuator's result of the plan: done, at the line and boot the actuator is at
        as the plan starts."""
        return {"plan_id": "p1", "ok": True, "executed": 2, "n_steps": 2,
                "last_line": self.actuator["last_line"], "boot_id": self.actuator["boot_id"]}

    def wait_for(self, topic, match, timeout):
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                for payload in reversed(self.messages.get(topic, [])):
                    if match(payload):
                        return payload
                if time.monotonic() >= deadline:
                    return None
                self.lock.wait(max(0.0, deadline - time.monotonic()))

    def latest(self, topic):
        kept = self.messages.get(topic)
        return kept[-1] if kept else None

    def status(self, cycle_id, stage, detail=""):
        self.status_log.append((stage, detail))

    def errors_since(self, since):
        return []

    def stopped(self):
        return False

    def alive(self, service):
        return service not in self.dead

    def broker_up_s(self):
        return 100.0

    def gone(self, service):
        return service in self.dead


def twin(solved: bool, line: int, boot: str = "b1") -> dict[str, Any]:
    return {"solved": solved, "line": line, "boot_id": boot, "facelets": "x"}


FAST = CycleTimeouts(verify=0.5, compute=1.0)


def test_a_solved_twin_from_before_the_last_motion_is_no_evidence():
    bus = ScriptedBus()
    bus.put("sim.twin_state", twin(True, 12))  # the end of an earlier cycle
    bus.on_execute = lambda: bus.put("sim.twin_state", twin(False, 40))
    result = run_cycle(bus, simulated=True, timeouts=FAST)
    assert not result.ok and result.failed_stage == "verifying"
    assert "not solved" in result.error


def test_a_twin_scrambled_after_the_last_motion_fails_the_cycle():
    bus = ScriptedBus()

    def motion_then_hand() -> None:
        bus.put("sim.twin_state", twin(True, 40))
        bus.put("sim.twin_state", twin(False, 40))  # scrambled by hand, same line

    bus.on_execute = motion_then_hand
    result = run_cycle(bus, simulated=True, timeouts=FAST)
    assert not result.ok and result.failed_stage == "verifying"


def test_the_twin_at_the_last_line_of_this_boot_confirms_the_solve():
    bus = ScriptedBus()
    bus.on_execute = lambda: [bus.put("sim.twin_state", twin(False, 39)),
                              bus.put("sim.twin_state", twin(True, 40))]
    result = run_cycle(bus, simulated=True, timeouts=FAST)
    assert result.ok and result.verified_by == "twin", result.error


def test_the_result_of_the_plan_names_the_motion_to_verify_without_asking_again():
    bus = ScriptedBus()
    bus.on_execute = lambda: [bus.put("sim.twin_state", twin(True, 40)),
                              bus.actuator.update(last_line=90)]  # status: a later line
    result = run_cycle(bus, simulated=True, timeouts=FAST)
    assert result.ok and result.verified_by == "twin", result.error
    after_execute = bus.calls[bus.calls.index(("actuator", "execute")) + 1:]
    assert ("actuator", "status") not in after_execute


def test_a_twin_of_another_boot_is_waited_for_and_then_refused():
    bus = ScriptedBus()
    bus.on_execute = lambda: bus.put("sim.twin_state", twin(True, 90, boot="b0"))
    result = run_cycle(bus, simulated=True, timeouts=FAST)
    assert not result.ok and result.failed_stage == "verifying"
    assert "did not report the end of the motion" in result.error


def test_a_lost_cube_state_homes_the_robot_before_the_scan():
    bus = ScriptedBus()
    bus.actuator["cube_state_known"] = False
    bus.on_execute = lambda: bus.put("sim.twin_state", twin(True, 40))
    result = run_cycle(bus, simulated=True, timeouts=FAST)
    assert result.ok and result.homed
    commands = [c for s, c in bus.calls if s == "actuator"]
    assert "estop" not in commands  # nothing was moving
    assert commands.index("home") < commands.index("scan")
    assert list(result.stages_s)[0] == "homing"


def test_the_recovery_stops_a_moving_robot_before_it_homes():
    bus = ScriptedBus()
    bus.actuator["job"] = "plan"
    bus.on_execute = lambda: bus.put("sim.twin_state", twin(True, 40))
    result = run_cycle(bus, simulated=True, timeouts=FAST, home_first=True)
    assert result.ok and result.homed
    commands = [c for s, c in bus.calls if s == "actuator"]
    assert commands.index("estop") < commands.index("home") < commands.index("scan")


def test_an_actuator_that_cannot_home_leaves_the_rescan_to_do_the_recovery():
    bus = ScriptedBus()
    real_call = bus.call

    def no_home(service, command, args, timeout):
        if command == "home":
            raise CommandFailed("unknown_command", "actuator has no command 'home'")
        return real_call(service, command, args, timeout)

    bus.call = no_home
    bus.on_execute = lambda: bus.put("sim.twin_state", twin(True, 40))
    result = run_cycle(bus, simulated=True, timeouts=FAST, home_first=True)
    assert result.ok and not result.homed
    assert ("homing", "the actuator cannot home; rescanning") in bus.status_log


def test_vision_gone_mid_scan_fails_the_scan_at_once():
    bus = ScriptedBus()
    release = threading.Event()
    real_call = bus.call

    def slow_scan(service, command, args, timeout):
        if command == "scan":
            bus.dead.add("vision")  # vision dies while the robot holds a pose
            release.wait(timeout)
            raise CommandFailed("timeout", "scan held")
        return real_call(service, command, args, timeout)

    bus.call = slow_scan
    started = time.monotonic()
    result = run_cycle(bus, simulated=True, timeouts=CycleTimeouts(scan=60.0, compute=60.0))
    release.set()
    assert not result.ok and result.failed_stage == "scanning"
    assert "vision stopped responding" in result.error
    assert time.monotonic() - started < 15.0  # at once: not at the scan's 60 s


def test_a_plan_sent_as_the_broker_went_away_is_followed_or_sent_again():
    for got_it in (True, False):
        bus = ScriptedBus()
        up = {"s": 100.0}
        bus.broker_up_s = lambda up=up: up["s"]
        real_call = bus.call

        sent: list[int] = []

        def lossy_execute(service, command, args, timeout, got_it=got_it, bus=bus, up=up,
                          real_call=real_call, sent=sent):
            if command == "execute":
                sent.append(1)
                if len(sent) > 1:  # sent again: it arrives this time
                    return real_call(service, command, args, timeout)
                up["s"] = 3.0  # the broker went away and is back: the reply was lost
                if got_it:
                    bus.actuator["job"] = "plan"
                    bus.put("sim.twin_state", twin(True, 40))
                    bus.put("actuator.result", bus.result())
                raise CommandFailed("timeout", "no reply within 10 s")
            return real_call(service, command, args, timeout)

        bus.call = lossy_execute
        bus.on_execute = lambda bus=bus: bus.put("sim.twin_state", twin(True, 40))
        result = run_cycle(bus, simulated=True, timeouts=FAST)
        assert result.ok, result.error
        assert len(sent) == (1 if got_it else 2)  # never run twice


class LateSolverBus(ScriptedBus):
    """A robot host whose solver runs elsewhere: no solver instance is connected until
    ``arrives_s`` after the bus is made (None: never)."""

    def __init__(self, arrives_s: float | None) -> None:
        super().__init__()
        self.solver_from = None if arrives_s is None else time.monotonic() + arrives_s
        self.put("sim.twin_state", twin(True, 40))

    def call(self, service, command, args, timeout):
        if service == "solver" and (self.solver_from is None
                                    or time.monotonic() < self.solver_from):
            self.calls.append((service, command))
            raise CommandFailed("unavailable", "no instance of a service named 'solver' is "
                                "connected to the broker")
        return super().call(service, command, args, timeout)


def test_a_cycle_waits_for_a_solver_instance_that_connects_late():
    bus = LateSolverBus(arrives_s=1.0)
    result = run_cycle(bus, simulated=True, timeouts=CycleTimeouts(solve=5.0, verify=0.5,
                                                                   compute=1.0))
    assert result.ok, result.error
    assert bus.calls.count(("solver", "solve")) >= 2
    assert any(stage == "solving" and "waiting for a solver" in detail
               for stage, detail in bus.status_log)


def test_no_solver_instance_within_the_solve_deadline_fails_naming_the_solver_and_the_fix():
    bus = LateSolverBus(arrives_s=None)
    started = time.monotonic()
    result = run_cycle(bus, simulated=True, timeouts=CycleTimeouts(solve=1.5, verify=0.5,
                                                                   compute=1.0))
    assert not result.ok and result.failed_stage == "solving"
    assert 1.4 <= time.monotonic() - started < 10
    assert "no solver instance" in result.error
    assert "robocell solver --broker" in result.error  # the fix: start one on a compute host
