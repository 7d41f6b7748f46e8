"""Plans executed through link -> pyserial socket:// -> a real firmware-sim process: the twin
ends solved and the firmware's log shows every primitive executed exactly once, also under
injected faults; a wrong motor mapping is caught by the twin; e-stop and queue feeding."""

from __future__ import annotations

import importlib.util
import random
import threading
import time

import pytest

from robocell.common.profile import load_profile, parse_profile
from robocell.services.actuator.executor import Compiler, Execution
from robocell.services.actuator.link import FirmwareFault, FirmwareReset, Link
from robocell.services.firmware.simulator import motion_gaps

from .conftest import primitive_inverses, reference_case, start_firmware

N_RANDOM_CUBES = 200
SCRAMBLE_LENGTH = 12
ESTOP_LIMIT_MS = 50.0
ESTOP_TRANSIT_LIMIT_MS = 500.0
"""Real time from the host's write to the firmware's receipt: about a millisecond on an idle
machine (bench/actuator_timing.py measures the whole e-stop against ESTOP_LIMIT_MS); here
only a bound that a loaded machine's preemption stays under."""
IDLE_LIMIT_MS = 5.0


def run_job(link: Link, compiler: Compiler, primitives: list[str]) -> Execution:
    job = compiler.plan(primitives)
    execution = Execution(job)
    result = link.stream(job.texts, lambda i: execution.line_done(i),
                         pause_points=job.pause_points)
    assert result.outcome == "completed"
    assert execution.finished and execution.steps_done == len(primitives)
    return execution


def marks(log: list[dict]) -> list[str]:
    """The primitives the firmware executed, in order, from its MARK lines."""
    return [entry["text"].split(" ", 3)[3] for entry in log
            if entry["ev"] == "exec" and " MARK step=" in entry["text"]]


def assert_exactly_once(fw, expected_primitives: list[str]) -> None:
    executed = fw.executed()
    settle = time.monotonic() + 5.0  # a done may still be on its way behind a status report
    while marks(executed) != expected_primitives and time.monotonic() < settle:
        time.sleep(0.05)
        executed = fw.executed()
    lines = [entry["line"] for entry in executed]
    assert lines == list(range(1, len(lines) + 1)), "a line ran twice or was skipped"
    assert marks(executed) == expected_primitives


def solver_available(profile) -> bool:
    """The plan comes from the real solver when the solver for this puzzle exists."""
    module = {"2x2": "robocell.services.solver.cube2.solver",
              "3x3": "robocell.services.solver.cube3.solver"}[profile.puzzle]
    return importlib.util.find_spec(module) is not None


def solve_random_cubes(fw, profile, n_cubes: int, seed: int, events=None) -> None:
    """Scramble the twin physically with random primitives, plan (solver, else the reference
    inverse), execute, and check the twin is solved and every line ran exactly once."""
    compiler = Compiler(profile)
    inverses = primitive_inverses(profile)
    use_solver = solver_available(profile)
    rng = random.Random(seed)
    link = Link(fw.url, on_event=(lambda kind, msg: events.append(kind)) if events is not None
                else None)
    link.open()
    expected: list[str] = []
    scrambled = 0
    for _ in range(n_cubes):
        scramble, plan = reference_case(profile, rng, SCRAMBLE_LENGTH, inverses)
        run_job(link, compiler, scramble)
        state = fw.wait_executed(link.next_line - 1)[-1]
        scrambled += not state["solved"]
        if use_solver:
            from robocell.services.solver.api import solve

            plan = solve(state["facelets"], profile.name, timeout=0.05).primitives
        run_job(link, compiler, plan)
        expected += scramble + plan
        assert fw.wait_executed(link.next_line - 1)[-1]["solved"], \
            f"twin not solved after plan {plan}"
    link.close()
    assert scrambled >= n_cubes * 0.8, "the scrambles should leave the twin unsolved"
    assert_exactly_once(fw, expected)


@pytest.mark.parametrize("name", ["soltvvo-2x2", "six-motor", "tilt-spin"])
@pytest.mark.slow
def test_random_cubes_are_solved_by_the_twin_exactly_once(firmware_factory, name):
    fw = firmware_factory(profile=name, speed=20000)
    solve_random_cubes(fw, load_profile(name), N_RANDOM_CUBES, seed=1)


FAULTS = {
    "noise": ("--drop-rate", "0.002", "--corrupt-rate", "0.002", "--fault-seed", "7"),
    "disconnect": ("--disconnect-after", "40", "--disconnect-after", "150"),
    "stall": ("--stall-after", "60", "--stall-ms", "500000"),
}
AVR_FAULTS = {  # one cube through the AVR firmware: the same faults, sooner
    "noise": ("--drop-rate", "0.002", "--corrupt-rate", "0.002", "--fault-seed", "7"),
    "disconnect": ("--disconnect-after", "10", "--disconnect-after", "30"),
    "stall": ("--stall-after", "20", "--stall-ms", "500000"),
}


@pytest.mark.parametrize("fault", ["noise", "disconnect", "stall"])
@pytest.mark.parametrize("name", ["soltvvo-2x2", pytest.param("six-motor", marks=pytest.mark.slow),
                                  "tilt-spin"])
def test_faults_leave_twin_solved_and_every_primitive_run_once(any_firmware, name, fault):
    faults = (AVR_FAULTS if any_firmware.avr else FAULTS)[fault]
    fw = any_firmware(*faults, profile=name, speed=500)
    events: list[str] = []
    solve_random_cubes(fw, load_profile(name), 1 if any_firmware.avr else 6, seed=2,
                       events=events)
    injected = [e for e in fw.log() if e["ev"] == "inject"]
    if fault == "disconnect":
        assert len(injected) == 2 and events.count("reconnected") == 2
    if fault == "stall":
        assert injected and "stall" in events and "recovered" in events


def test_noise_causes_resends_that_are_counted(any_firmware, soltvvo):
    fw = any_firmware("--drop-rate", "0.003", "--corrupt-rate", "0.003", speed=500)
    link = Link(fw.url)
    link.open()
    run_job(link, Compiler(soltvvo), ["R'", "B'", "R2", "F'"] * 10)
    assert link.events.resends + link.events.bad_lines > 0
    assert_exactly_once(fw, ["R'", "B'", "R2", "F'"] * 10)


def test_firmware_reset_is_detected_and_nothing_more_is_sent(any_firmware, soltvvo):
    fw = any_firmware("--reset-after", "20", speed=200)
    link = Link(fw.url)
    link.open()
    with pytest.raises(FirmwareReset, match="cube state is unknown"):
        run_job(link, Compiler(soltvvo), ["R'", "B'"] * 20)
    time.sleep(0.2)
    boots = {e["boot"] for e in fw.executed()}
    assert len(boots) == 1, "no line may run after the reset"
    if any_firmware.avr:  # a real reboot of the microcontroller drew a new boot id
        assert len({e["boot"] for e in fw.log() if e["ev"] == "boot"}) == 2


def wrong_profile(swap: tuple[str, str] | None = None, drop_release: bool = False):
    text = soltvvo_text()
    if swap:
        text = text.replace(f'"{swap[0]}"', "@@").replace(f'"{swap[1]}"', f'"{swap[0]}"')
        text = text.replace("@@", f'"{swap[1]}"')
    if drop_release:
        text = text.replace('"release gB gF", ', "")
    return parse_profile(text, "soltvvo-2x2.toml")


def soltvvo_text() -> str:
    return load_profile("soltvvo-2x2").path.read_text()


@pytest.mark.parametrize("swap", [("turn R:-90", "turn R:90"), ("turn B:-90", "turn R:-90")],
                         ids=["motor-reversed", "wrong-arm"])
def test_wrong_motor_mapping_leaves_the_twin_unsolved(any_firmware, soltvvo, swap):
    # the host's mapping is wrong (a reversed motor; R' wired to the B arm): every plan still
    # "solves" on paper, but the twin is moved by what the motors really do
    broken = wrong_profile(swap=swap)
    fw = any_firmware(speed=2000)
    link = Link(fw.url)
    link.open()
    inverses = primitive_inverses(soltvvo)
    rng = random.Random(5)
    for _ in range(3):
        scramble, plan = reference_case(soltvvo, rng, 6, inverses)
        if "R'" not in scramble + plan:
            scramble.append("R'")
            plan = inverses["R'"] + plan
        run_job(link, Compiler(broken), scramble)
        try:
            run_job(link, Compiler(broken), plan)
        except FirmwareFault as fault:
            assert fault.fault_code == "jam"
            return
        assert not fw.executed()[-1]["solved"]


def test_missing_release_makes_the_twin_jam(any_firmware):
    broken = wrong_profile(drop_release=True)
    fw = any_firmware(speed=2000)
    link = Link(fw.url)
    link.open()
    with pytest.raises(FirmwareFault, match="jam"):
        run_job(link, Compiler(broken), ["R'", "B'"])
    assert [e["code"] for e in fw.log() if e["ev"] == "fault"] == ["jam"]


def wait_done(execution: Execution, lines: int = 1, timeout: float = 10.0) -> None:
    """Until ``lines`` lines of the job have run (the stream is under way)."""
    deadline = time.monotonic() + timeout
    while execution.done_lines < lines:
        assert time.monotonic() < deadline, f"{execution.done_lines} lines ran in {timeout} s"
        time.sleep(0.005)


def test_estop_stops_motion_within_50_ms(firmware_factory, soltvvo):
    speed = 1.0
    fw = firmware_factory(speed=speed)
    link = Link(fw.url)
    link.open()
    job = Compiler(soltvvo).plan(["R2", "B2"] * 10)
    execution = Execution(job)
    results = []
    worker = threading.Thread(target=lambda: results.append(
        link.stream(job.texts, execution.line_done, pause_points=job.pause_points)))
    worker.start()
    wait_done(execution)  # moving, with lines queued behind
    link.estop()
    worker.join(10)
    result = results[0]
    assert result.outcome == "estop"
    report = result.estop
    # the firmware's part, from receipt to standstill (simulated time: what the firmware
    # decides), within the whole e-stop's limit; the line's part is real time
    assert 0 <= report.stop_after_receipt_ms <= ESTOP_LIMIT_MS
    assert 0 <= (report.rx_wall - report.sent_wall) * 1000.0 * speed < ESTOP_TRANSIT_LIMIT_MS
    stop = [e for e in fw.log() if e["ev"] == "estop"][0]
    assert stop["discarded"] > 0
    assert not execution.finished
    # nothing runs after the e-stop until CLEAR
    executed_before = len(fw.executed())
    time.sleep(0.3)
    assert len(fw.executed()) == executed_before


@pytest.mark.slow
def test_queue_is_kept_fed_between_primitives(any_firmware, soltvvo):
    fw = any_firmware(speed=1.0)
    link = Link(fw.url)
    link.open()
    plan = ["R'", "B'+F'", "R2+L'", "F'", "R'+L2", "B2"] * 2
    run_job(link, Compiler(soltvvo), plan)
    gaps, boundaries = motion_gaps(fw.executed())
    assert len(boundaries) == len(plan) - 1
    assert max(gaps) < IDLE_LIMIT_MS, f"motors idled {max(gaps):.2f} ms between motions"


@pytest.mark.slow
def test_pause_holds_at_a_primitive_boundary_and_resume_finishes(firmware_factory, soltvvo):
    fw = firmware_factory(speed=2)  # the job takes about a second: the pause lands inside
    link = Link(fw.url)
    link.open()
    plan = ["R'", "B'"] * 6
    job = Compiler(soltvvo).plan(plan)
    execution = Execution(job)
    done = []
    worker = threading.Thread(target=lambda: done.append(
        link.stream(job.texts, execution.line_done, pause_points=job.pause_points)))
    link.pause()
    worker.start()
    time.sleep(0.3)
    assert execution.done_lines == 0
    link.resume()
    wait_done(execution)
    link.pause()
    held, since = execution.done_lines, time.monotonic()
    while time.monotonic() - since < 1.0:  # what was queued runs; then nothing more
        time.sleep(0.02)
        if execution.done_lines != held:
            held, since = execution.done_lines, time.monotonic()
    assert not done  # the stream holds, unfinished
    assert 0 < held < len(job.lines)
    assert job.lines[held].starts_step, "paused in the middle of a primitive"
    link.resume()
    worker.join(10)
    assert done[0].outcome == "completed"
    assert_exactly_once(fw, plan)


def test_the_same_link_drives_the_firmware_over_a_pty(tmp_path, soltvvo):
    # a pseudo-terminal is a real serial device to pyserial: the device-path code path
    link_path = tmp_path / "ttyROBOT"
    fw = start_firmware(tmp_path, "--pty", str(link_path), speed=2000, name="pty")
    try:
        assert fw.url.startswith("/dev/")
        link = Link(str(link_path))
        link.open()
        plan = ["R'", "B2", "R'+L'", "F'"]
        run_job(link, Compiler(soltvvo), plan)
        link.close()
        assert_exactly_once(fw, plan)
    finally:
        fw.stop()


@pytest.mark.parametrize("transport", ["socket", "pty"])
def test_reports_are_read_whole_not_a_byte_at_a_time(firmware_factory, soltvvo, transport):
    """Each wait for the firmware takes all that has arrived: over socket:// (whose
    in_waiting only says 0 or 1) and a pty alike, a plan costs about one read per report
    burst, not one per byte."""
    fw = firmware_factory(*(("--pty",) if transport == "pty" else ()), profile="soltvvo-2x2",
                          speed=20000)
    link = Link(fw.url)
    link.open()
    reads = 0
    read_reports = link._read_reports

    def counted() -> list:
        nonlocal reads
        reads += 1
        return read_reports()

    link._read_reports = counted
    compiler = Compiler(soltvvo)
    primitives = [p.name for p in soltvvo.primitives][:6] * 4
    job = compiler.plan(primitives)
    run_job(link, compiler, primitives)
    link.close()
    # every line gets an "ok" and a "done" report (about 25 bytes each)
    assert reads <= 3 * len(job.texts), (reads, len(job.texts))
