"""Recovery through the actuator's bus commands, with real processes: after an e-stop in the
middle of a turn, ``home`` squares the twin and the next plan solves; after a firmware reboot
the plan in progress fails at once with the cube state unknown, ``home`` realigns the arms
(from the home switches of the profile) and the next plan solves."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from support.bus import (
    free_base_port,
    robocell_cmd,
    robocell_env,
    stop_process,
    wait_for_broker,
    wait_subscribed,
)

from robocell.common.bus import Endpoints, Node
from robocell.common.profile import PROFILE_DIR

from .test_link_faults import ScriptedFirmware
from .test_service import cell_factory, scrambled_twin  # noqa: F401 - the fixture

__all__ = ["cell_factory"]
CALL_S = 20.0
"""Bound on a bus call (answered at once, or when homing is done; this only bounds a hang
on a loaded machine)."""


def switch_profile(tmp_path: Path) -> Path:
    """soltvvo-2x2 with a home switch on every arm (same name: plans for it still fit)."""
    text = (PROFILE_DIR / "soltvvo-2x2.toml").read_text()
    for arm in "RBLF":
        text = text.replace(f"[motors.{arm}]\n",
                            f"[motors.{arm}]\nhome_switch = \"sw{arm}\"\nhome_dir = -1\n")
    folder = tmp_path / "profiles"
    folder.mkdir()
    path = folder / "soltvvo-2x2.toml"
    path.write_text(text)
    return path


@pytest.mark.slow
def test_home_after_an_estop_mid_plan_squares_the_twin_and_the_next_plan_solves(
        cell_factory):  # noqa: F811 - the fixture
    cell = cell_factory(speed=1)
    plan_id = cell.make_plan(["R2", "B2"] * 20)
    cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
    assert cell.wait("actuator.progress", lambda p: p["plan_id"] == plan_id)  # it moves
    cell.node.call("actuator", "estop", {}, timeout=CALL_S)
    result = cell.wait("actuator.result", lambda p: p["plan_id"] == plan_id, timeout=20)
    assert result and not result["ok"] and result["cube_state_known"] is False
    homed = cell.node.call("actuator", "home", {}, timeout=CALL_S)
    assert homed["ok"] and homed["cleared"] is True
    assert homed["status"]["state"] == "idle"
    since = time.monotonic()
    twin = cell.wait("sim.twin_state", lambda p: not p["misaligned"] and not p["fault"]
                     and set(p["grips"].values()) == {"closed"}, timeout=15)
    assert twin, cell.seen.get("sim.twin_state", [])[-1:]
    assert time.monotonic() - since < 15
    plan = scrambled_twin(cell)
    plan_id = cell.make_plan(plan)
    cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
    result = cell.wait("actuator.result", lambda p: p["plan_id"] == plan_id, timeout=30)
    assert result and result["ok"], result
    assert cell.wait("sim.twin_state", lambda p: p["solved"], timeout=15)


@pytest.mark.parametrize("switches", [False, True], ids=["step-counts", "home-switches"])
@pytest.mark.slow
def test_after_a_firmware_reboot_home_and_the_next_plan_succeed(
        cell_factory, tmp_path, switches):  # noqa: F811
    sim_profile = str(switch_profile(tmp_path)) if switches else "soltvvo-2x2"
    cell = cell_factory("--reset-after", "15", "--profile", sim_profile)
    plan_id = cell.make_plan(["R'", "B'"] * 10)
    started = time.monotonic()
    cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
    result = cell.wait("actuator.result", lambda p: p["plan_id"] == plan_id, timeout=20)
    assert result and not result["ok"] and result["cube_state_known"] is False
    # (at once: seconds on a loaded machine, far from the 30 s reconnect give-up)
    assert time.monotonic() - started < 15.0, "reported at once, not after 30 s"
    assert cell.wait("errors", lambda e: e["code"] == "firmware_reset"
                     and "home" in e["action"], timeout=10)
    status = cell.node.call("actuator", "status", {}, timeout=CALL_S)
    assert status["cube_state_known"] is False and status["link"]["reboots"] == 1
    homed = cell.node.call("actuator", "home", {}, timeout=CALL_S)
    assert homed["ok"] and homed["boot_id"] == status["boot_id"]
    assert cell.wait("sim.twin_state", lambda p: not p["misaligned"] and not p["fault"],
                     timeout=15)
    for _ in range(2):
        plan = scrambled_twin(cell)
        plan_id = cell.make_plan(plan)
        cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
        result = cell.wait("actuator.result", lambda p, i=plan_id: p["plan_id"] == i,
                           timeout=30)
        assert result and result["ok"], result


def test_home_names_unknown_motors_and_is_refused_while_busy(cell_factory):  # noqa: F811
    cell = cell_factory(speed=1)
    try:
        cell.node.call("actuator", "home", {"motors": ["Z"]}, timeout=CALL_S)
    except Exception as exc:  # noqa: BLE001 - the bus reports the failure as an exception
        assert "no motor(s) Z" in str(exc)
    else:
        raise AssertionError("home of an unknown motor was accepted")
    plan_id = cell.make_plan(["R2", "B2"] * 10)
    cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
    try:
        cell.node.call("actuator", "home", {}, timeout=CALL_S)
    except Exception as exc:  # noqa: BLE001
        assert "running a plan" in str(exc)
    else:
        raise AssertionError("home was accepted during a plan")


@pytest.mark.slow
def test_a_firmware_killed_and_restarted_while_idle_is_noticed_at_once_and_homing_recovers(
        tmp_path):
    """The issue's case: the simulator process is killed and started again; the actuator
    reports the reboot within seconds without a job, accepts the new boot id, homes, and the
    next plans run (before: every later job failed until the actuator was restarted)."""
    base = f"tcp://127.0.0.1:{free_base_port()}"
    env = robocell_env(base)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sim_cmd = robocell_cmd("firmware-sim", "--port", str(port), "--speed", "50",
                           "--publish-twin", "--max-runtime", "300")
    procs: list[subprocess.Popen] = []
    seen: dict[str, list[dict]] = {}
    node = Node(f"tester-{uuid.uuid4().hex[:4]}", Endpoints.from_base(base))
    try:
        procs.append(subprocess.Popen(robocell_cmd("broker"), env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for_broker(Endpoints.from_base(base))
        sim = subprocess.Popen(sim_cmd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
        procs.append(sim)
        assert sim.stdout.readline().startswith("listening")
        procs.append(subprocess.Popen(robocell_cmd(
            "actuator", "--serial", f"socket://127.0.0.1:{port}"), env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        node.subscribe("errors", lambda e: seen.setdefault("errors", []).append(e.payload))
        node.subscribe("actuator.result",
                       lambda e: seen.setdefault("result", []).append(e.payload))
        node.start()
        wait_subscribed(node.subscriber, "errors", "actuator.result")
        wait_until(lambda: node.call("actuator", "status", {}, timeout=2)["boot_id"], 20)
        first_boot = node.call("actuator", "status", {}, timeout=CALL_S)["boot_id"]
        sim.kill()
        sim.wait(5)
        sim = subprocess.Popen(sim_cmd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
        procs.append(sim)
        assert sim.stdout.readline().startswith("listening")
        restarted = time.monotonic()
        reset = wait_until(lambda: [e for e in seen.get("errors", [])
                                    if e["code"] == "firmware_reset"], 20)
        print(f"\nreboot reported {time.monotonic() - restarted:.2f} s after the restart")
        status = node.call("actuator", "status", {}, timeout=CALL_S)
        assert status["cube_state_known"] is False and status["boot_id"] != first_boot
        assert "home" in reset[0]["action"]
        assert node.call("actuator", "home", {}, timeout=CALL_S)["ok"]
        for n in range(2):
            plan_id = f"plan-{n}-{uuid.uuid4().hex[:4]}"
            plan = {"plan_id": plan_id, "puzzle": "2x2x2", "profile": "soltvvo-2x2",
                    "facelets": "", "primitives": ["R'", "B'", "R2"], "face_turns": [],
                    "predicted_ms": 1000.0, "search": {}}
            node.call("actuator", "execute", {"plan": plan}, timeout=CALL_S)
            result = wait_until(lambda i=plan_id: [r for r in seen.get("result", [])
                                                   if r["plan_id"] == i], 20)
            assert result[0]["ok"], result
    finally:
        node.stop()
        for proc in reversed(procs):
            stop_process(proc)


def wait_until(condition, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = condition()
        except Exception:  # noqa: BLE001 - not there yet (the service is still starting)
            value = None
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s")


@pytest.mark.slow
def test_a_firmware_killed_mid_plan_ends_the_plan_within_seconds(cell_factory):  # noqa: F811
    cell = cell_factory(speed=1)
    plan_id = cell.make_plan(["R2", "B2"] * 20)
    cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
    assert cell.wait("actuator.progress", lambda p: p["plan_id"] == plan_id)  # it moves
    cell.procs[1].kill()  # the firmware simulator
    killed = time.monotonic()
    result = cell.wait("actuator.result", lambda p: p["plan_id"] == plan_id, timeout=20)
    took = time.monotonic() - killed
    print(f"\nplan reported {took:.2f} s after the firmware was killed")
    assert result and not result["ok"] and result["cube_state_known"] is False
    assert took < 15.0, "the stream gives up after 1 s, not the 30 s reconnect give-up"
    assert cell.wait("errors", lambda e: e["code"] == "serial_open", timeout=10)


@pytest.mark.slow
def test_a_scan_on_a_stalled_firmware_ends_at_the_estop(cell_factory):  # noqa: F811
    """The firmware stops answering mid-scan (for 40 s); the e-stop ends the scan at once
    (before: the scan ran on to the 30 s stall give-up)."""
    cell = cell_factory("--stall-after", "4", "--stall-ms", "2000000", speed=50)
    outcome: dict[str, object] = {}

    def scan() -> None:
        try:
            outcome["reply"] = cell.node.call("actuator", "scan", {}, timeout=60)
        except Exception as exc:  # noqa: BLE001 - the failure is what the test looks at
            outcome["error"] = str(exc)
        outcome["at"] = time.monotonic()

    worker = threading.Thread(target=scan)
    worker.start()
    assert cell.wait("errors", lambda e: e["code"] == "serial_stall", timeout=15)
    stopped = time.monotonic()
    cell.node.call("actuator", "estop", {}, timeout=CALL_S)
    worker.join(30)
    took = outcome["at"] - stopped
    print(f"\nscan on a stalled firmware ended {took:.2f} s after the e-stop")
    # (at once: seconds on a loaded machine, far from the 30 s stall give-up)
    assert "emergency stop" in str(outcome.get("error")) and took < 10.0
    assert cell.wait("errors", lambda e: e["code"] == "serial_estop_unconfirmed", timeout=10)


def test_a_report_with_a_bad_number_is_reported_on_errors_and_stops_the_plan():
    """`status ... last=notanumber` with a good checksum: the plan fails naming the field,
    `errors` says so, and the e-stop byte went out (before: a bare ValueError, nothing on
    errors, no stop)."""
    firmware = ScriptedFirmware(
        "status state=run boot=b00710ad last=notanumber accepted=1 queue=1 pos=")
    base = f"tcp://127.0.0.1:{free_base_port()}"
    env = robocell_env(base)
    procs: list[subprocess.Popen] = []
    seen: dict[str, list[dict]] = {}
    node = Node(f"tester-{uuid.uuid4().hex[:4]}", Endpoints.from_base(base))
    try:
        procs.append(subprocess.Popen(robocell_cmd("broker"), env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for_broker(Endpoints.from_base(base))
        procs.append(subprocess.Popen(robocell_cmd("actuator", "--serial", firmware.url),
                                      env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        node.subscribe("errors", lambda e: seen.setdefault("errors", []).append(e.payload))
        node.subscribe("actuator.result",
                       lambda e: seen.setdefault("result", []).append(e.payload))
        node.start()
        wait_subscribed(node.subscriber, "errors", "actuator.result")
        wait_until(lambda: node.call("actuator", "status", {}, timeout=2)["boot_id"], 20)
        firmware.status = firmware.status.replace("state=run", "state=idle", 1)
        plan = {"plan_id": "plan-nan", "puzzle": "2x2x2", "profile": "soltvvo-2x2",
                "facelets": "", "primitives": ["R'"], "face_turns": [], "predicted_ms": 1.0,
                "search": {}}
        node.call("actuator", "execute", {"plan": plan}, timeout=CALL_S)
        result = wait_until(lambda: seen.get("result"), 10)[0]
        assert not result["ok"] and result["cube_state_known"] is False
        assert "status report field last: 'notanumber'" in result["error"]
        error = wait_until(lambda: [e for e in seen.get("errors", [])
                                    if e["code"] == "protocol"], 5)[0]
        assert "last" in error["message"] and "motion stopped" in error["message"]
        assert firmware.wait_for(b"\x85")
    finally:
        node.stop()
        for proc in reversed(procs):
            stop_process(proc)
        firmware.close()
