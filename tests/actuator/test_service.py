"""The actuator service as a real process on a real broker, driving a real firmware-sim
process (which publishes its twin): plans handed to execute, progress, result, plan/profile
check, scan poses, e-stop, and faults reported on the bus."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
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

from robocell.common.bus import CommandFailed, Endpoints, Node
from robocell.common.facelets import solved
from robocell.common.moves import apply_to_facelets
from robocell.common.profile import load_profile

from .conftest import primitive_inverses

SCRAMBLE = ["R'", "B2", "R'+L2", "F'", "R2+L'", "B'+F'"]
CALL_S = 20.0
ESTOP_TRANSIT_LIMIT_MS = 1000.0
"""Bound on a bus call (answered at once; this only bounds a hang on a loaded machine)."""


class Cell:
    """Broker + firmware-sim + actuator processes and a scripted peer that records topics."""

    def __init__(self, tmp_path: Path, *sim_args: str, speed: float = 50,
                 actuator_args: tuple[str, ...] = ()) -> None:
        self.base = f"tcp://127.0.0.1:{free_base_port()}"
        env = robocell_env(self.base)
        self.procs: list[subprocess.Popen] = []
        self.procs.append(subprocess.Popen(robocell_cmd("broker"), env=env,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        wait_for_broker(Endpoints.from_base(self.base))
        self.log = tmp_path / "fw.jsonl"
        sim = subprocess.Popen(robocell_cmd(
            "firmware-sim", "--port", "0", "--speed", str(speed), "--publish-twin",
            "--log", str(self.log), *sim_args), env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.procs.append(sim)
        self.url = sim.stdout.readline().split()[1]
        self.procs.append(subprocess.Popen(robocell_cmd(
            "actuator", "--serial", self.url, "--profile", "soltvvo-2x2", *actuator_args),
            env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        self.seen: dict[str, list[dict]] = {}
        self.plans: dict[str, dict] = {}
        self.node = Node(f"tester-{uuid.uuid4().hex[:4]}", Endpoints.from_base(self.base))
        topics = ("actuator.progress", "actuator.result", "actuator.scan_pose", "errors",
                  "sim.twin_state")
        for topic in topics:
            self.node.subscribe(topic, lambda env, t=topic: self.seen.setdefault(
                t, []).append(env.payload))
        self.node.start()
        wait_subscribed(self.node.subscriber, *topics)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not {"actuator", "firmware-sim"} <= set(
                self.node.alive()):
            time.sleep(0.1)
        assert {"actuator", "firmware-sim"} <= set(self.node.alive())

    def wait(self, topic: str, predicate, timeout: float = 20.0) -> dict | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for payload in list(self.seen.get(topic, [])):
                if predicate(payload):
                    return payload
            time.sleep(0.02)
        return None

    def make_plan(self, primitives: list[str], profile: str = "soltvvo-2x2",
                  puzzle: str = "2x2x2") -> str:
        """A `solver.plan` payload for these primitives, kept in ``plans`` by its id."""
        plan_id = f"plan-{uuid.uuid4().hex[:6]}"
        self.plans[plan_id] = {
            "plan_id": plan_id, "puzzle": puzzle, "profile": profile, "facelets": "",
            "primitives": primitives, "face_turns": [], "predicted_ms": 1000.0, "search": {}}
        return plan_id

    def close(self) -> None:
        self.node.stop()
        for proc in reversed(self.procs):
            stop_process(proc)


@pytest.fixture
def cell_factory(tmp_path: Path) -> Iterator:
    cells: list[Cell] = []

    def factory(*args: str, **kwargs) -> Cell:
        cells.append(Cell(tmp_path, *args, **kwargs))
        return cells[-1]

    yield factory
    for cell in cells:
        cell.close()


def scrambled_twin(cell: Cell) -> list[str]:
    """Put a known scramble on the twin (by hand) and return the plan that undoes it."""
    profile = load_profile("soltvvo-2x2")
    moves = [m for name in SCRAMBLE for m in profile.primitive(name).moves]
    facelets = apply_to_facelets(solved(2), moves, 2)
    cell.node.call("firmware-sim", "scramble", {"facelets": facelets}, timeout=CALL_S)
    inverses = primitive_inverses(profile)
    return [p for name in reversed(SCRAMBLE) for p in inverses[name]]


def test_plan_from_the_bus_solves_the_twin_with_progress(cell_factory):
    cell = cell_factory()
    plan = scrambled_twin(cell)
    plan_id = cell.make_plan(plan)
    reply = cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
    assert reply["n_steps"] == len(plan)
    result = cell.wait("actuator.result", lambda p: p["plan_id"] == plan_id)
    assert result and result["ok"] and result["executed"] == len(plan)
    steps = [p["step"] for p in cell.seen["actuator.progress"] if p["plan_id"] == plan_id]
    assert steps == list(range(len(plan)))
    assert cell.wait("sim.twin_state", lambda p: p["solved"], timeout=CALL_S)


def test_the_result_names_the_last_line_and_the_boot_the_twin_shows_at_the_end(cell_factory):
    # what the cell verifies a solve by, in the result itself (no status call after it)
    cell = cell_factory()
    plan_id = cell.make_plan(scrambled_twin(cell))
    cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
    result = cell.wait("actuator.result", lambda p: p["plan_id"] == plan_id)
    assert result and result["ok"]
    status = cell.node.call("actuator", "status", {}, timeout=CALL_S)
    assert result["last_line"] > 0 and result["boot_id"]
    assert (result["last_line"], result["boot_id"]) == (status["last_line"], status["boot_id"])
    twin = cell.wait("sim.twin_state", lambda p: p.get("line") == result["last_line"])
    assert twin and twin["boot_id"] == result["boot_id"] and twin["solved"]


def test_a_plan_that_does_not_fit_its_declaration_is_refused_naming_the_field(cell_factory):
    cell = cell_factory()
    plan_id = cell.make_plan(["R'"])
    broken = {k: v for k, v in cell.plans[plan_id].items() if k != "primitives"}
    with pytest.raises(CommandFailed, match=r"plan\.primitives") as refused:
        cell.node.call("actuator", "execute", {"plan": broken}, timeout=CALL_S)
    assert refused.value.code == "invalid_arguments"


def test_plan_for_another_robot_is_refused_with_the_reason(cell_factory):
    cell = cell_factory()
    plan_id = cell.make_plan(["R'"], profile="six-motor", puzzle="3x3x3")
    with pytest.raises(CommandFailed, match="puzzle 3x3x3"):
        cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
    plan_id = cell.make_plan(["R'"], profile="htm")
    with pytest.raises(CommandFailed, match="profile 'htm'"):
        cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)


def test_scan_publishes_one_pose_per_face_and_keeps_the_cube(cell_factory):
    cell = cell_factory()
    scrambled_twin(cell)
    before = cell.wait("sim.twin_state", lambda p: not p["solved"])["facelets"]
    reply = cell.node.call("actuator", "scan", {"scan_id": "s1"}, timeout=20)
    assert reply["poses"] == 6
    # the reply and the last pose event travel separately: give the event its moment

    def poses_of_s1() -> list[dict]:
        return [p for p in cell.seen.get("actuator.scan_pose", []) if p["scan_id"] == "s1"]
    cell.wait("actuator.scan_pose", lambda p: len(poses_of_s1()) >= 6, timeout=10)
    poses = poses_of_s1()
    assert sorted(p["face"] for p in poses) == sorted("URFDLB")
    assert [p["pose"] for p in poses] == list(range(6))
    # the twin's last state may still be on its way behind the reply
    deadline = time.monotonic() + 10
    while cell.seen["sim.twin_state"][-1]["facelets"] != before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert cell.seen["sim.twin_state"][-1]["facelets"] == before


def test_estop_stops_the_plan_and_reports_it(cell_factory):
    cell = cell_factory(speed=1)
    plan_id = cell.make_plan(["R2", "B2"] * 20)
    cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
    assert cell.wait("actuator.progress", lambda p: p["plan_id"] == plan_id)  # it moves
    commanded = time.time()
    cell.node.call("actuator", "estop", {}, timeout=CALL_S)
    result = cell.wait("actuator.result", lambda p: p["plan_id"] == plan_id)
    assert result and not result["ok"] and "emergency stop" in result["error"]
    assert result["executed"] < 40
    stop = cell.wait("errors", lambda e: e["code"] == "estop", timeout=10)["detail"]
    # Firmware time (speed 1) from the byte's arrival to standstill: the firmware's part of
    # the 50 ms the issue bounds the whole e-stop by.
    transit_ms = (stop["rx_wall"] - commanded) * 1000.0
    stop_ms = stop["stopped_ms"] - stop["received_ms"]
    print(f"\ne-stop over the bus: {transit_ms:.1f} ms to the firmware, {stop_ms:.1f} ms to "
          f"standstill")
    assert 0 <= stop_ms <= 50.0
    # Real time from the bus command to the byte's arrival crosses three processes: a few ms
    # on an idle machine (bench/actuator_timing.py measures the whole path against the 50 ms
    # target), any preemption on a loaded one. Here it shows that the e-stop did not wait
    # for the plan (seconds more at speed 1) nor for anything else.
    assert 0 < transit_ms < ESTOP_TRANSIT_LIMIT_MS


def test_disconnect_is_reported_on_the_bus_and_the_plan_still_solves(cell_factory):
    cell = cell_factory("--disconnect-after", "25")
    plan = scrambled_twin(cell)
    plan_id = cell.make_plan(plan)
    cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
    result = cell.wait("actuator.result", lambda p: p["plan_id"] == plan_id)
    assert result and result["ok"]
    codes = [e["code"] for e in cell.seen.get("errors", [])]
    assert "serial_disconnected" in codes and "serial_reconnected" in codes
    assert cell.wait("sim.twin_state", lambda p: p["solved"], timeout=CALL_S)


def test_line_noise_is_reported_on_the_bus_and_the_plan_still_solves(cell_factory):
    cell = cell_factory("--drop-rate", "0.003", "--corrupt-rate", "0.003", "--fault-seed", "4")
    plan = scrambled_twin(cell)
    plan_id = cell.make_plan(plan)
    cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
    result = cell.wait("actuator.result", lambda p: p["plan_id"] == plan_id)
    assert result and result["ok"]
    assert cell.wait("errors", lambda e: e["code"] == "serial_noise", timeout=10)
    assert cell.wait("sim.twin_state", lambda p: p["solved"], timeout=CALL_S)


def test_stall_is_reported_on_the_bus_and_the_plan_still_solves(cell_factory):
    cell = cell_factory("--stall-after", "20", "--stall-ms", "50000")
    plan = scrambled_twin(cell)
    plan_id = cell.make_plan(plan)
    cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
    result = cell.wait("actuator.result", lambda p: p["plan_id"] == plan_id)
    assert result and result["ok"]
    codes = [e["code"] for e in cell.seen.get("errors", [])]
    assert "serial_stall" in codes and "serial_recovered" in codes
    assert cell.wait("sim.twin_state", lambda p: p["solved"], timeout=CALL_S)


def test_firmware_reset_ends_the_plan_with_cube_state_unknown(cell_factory):
    cell = cell_factory("--reset-after", "15")
    plan_id = cell.make_plan(["R'", "B'"] * 10)
    cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
    result = cell.wait("actuator.result", lambda p: p["plan_id"] == plan_id)
    assert result and not result["ok"] and result["cube_state_known"] is False
    assert "rescan" in result["error"]
    assert cell.wait("errors", lambda e: e["code"] == "firmware_reset", timeout=10)


def test_random_scrambles_solved_with_real_solver_plans_through_the_bus(cell_factory):
    """The twin is scrambled by hand (random face turns), a scripted solver peer plans with
    the real 2x2 solver for the twin's state, the actuator executes, the twin confirms."""
    from robocell.common.notation import format_moves
    from robocell.services.solver.api import solve

    cell = cell_factory(speed=2000)
    for seed in range(5):
        scrambled = cell.node.call("firmware-sim", "scramble", {"seed": seed}, timeout=CALL_S)
        plan = solve(scrambled["facelets"], "soltvvo-2x2")
        plan_id = f"solve-{seed}"
        cell.node.call("actuator", "execute", {"plan": {
            "plan_id": plan_id, "puzzle": "2x2x2", "profile": "soltvvo-2x2",
            "facelets": scrambled["facelets"], "primitives": plan.primitives,
            "face_turns": format_moves(plan.moves).split(), "predicted_ms": plan.cost_ms,
            "search": {}}}, timeout=CALL_S)
        result = cell.wait("actuator.result", lambda p, i=plan_id: p["plan_id"] == i)
        assert result and result["ok"] and result["executed"] == len(plan.primitives)
        states = cell.seen["sim.twin_state"]
        deadline = time.monotonic() + 10  # the twin's last state may still be on its way
        while not (states and states[-1]["solved"]) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert any(s["facelets"] == scrambled["facelets"] for s in states), "scramble unseen"
        assert states[-1]["solved"], "the twin is not solved after the plan"
        states.clear()


def test_pause_and_resume_over_the_bus(cell_factory):
    cell = cell_factory(speed=1)  # the plan takes seconds: the pause lands in its middle
    plan = ["R'", "B'"] * 6
    plan_id = cell.make_plan(plan)

    def progress() -> int:
        return len([p for p in cell.seen.get("actuator.progress", [])
                    if p["plan_id"] == plan_id])

    cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
    assert cell.wait("actuator.progress", lambda p: p["plan_id"] == plan_id)  # it moves
    assert cell.node.call("actuator", "pause", {}, timeout=CALL_S)["paused"]
    # what was queued up to the boundary finishes; then progress holds
    held, since = progress(), time.monotonic()
    deadline = since + 20
    while time.monotonic() - since < 1.0 and time.monotonic() < deadline:
        time.sleep(0.05)
        if progress() != held:
            held, since = progress(), time.monotonic()
    time.sleep(1.0)
    assert progress() == held
    assert held < len(plan)
    cell.node.call("actuator", "resume", {}, timeout=CALL_S)
    result = cell.wait("actuator.result", lambda p: p["plan_id"] == plan_id)
    assert result and result["ok"] and result["executed"] == len(plan)


def test_the_result_measures_each_primitive_on_the_robots_clock(cell_factory, tmp_path):
    # a robot slower than its profile: the measurement shows it, the prediction does not
    physics = tmp_path / "slow.toml"
    physics.write_text("[defaults]\nspeed_scale = 0.5\nsettle_ms = 20\n")
    cell = cell_factory("--physics", str(physics))
    plan = scrambled_twin(cell)
    plan_id = cell.make_plan(plan)
    cell.node.call("actuator", "execute", {"plan": cell.plans[plan_id]}, timeout=CALL_S)
    result = cell.wait("actuator.result", lambda p: p["plan_id"] == plan_id)
    assert result and result["ok"]
    assert len(result["primitive_ms"]) == len(plan)
    assert result["measured_ms"] == pytest.approx(sum(result["primitive_ms"]), abs=0.01)
    assert all(ms > 20 for ms in result["primitive_ms"])
    assert result["measured_ms"] > 1.2 * result["predicted_ms"]
