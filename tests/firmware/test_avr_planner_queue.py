"""The compiled AVR firmware cuts corners itself (in simavr): its planner queue starts a
``MOVE ... ov=<steps>`` at the step after which the perpendicular move before it has that
many steps to go, timed by its own step timer; the sequence ends sooner by what the host's
motion model predicts, and a pair that is not perpendicular never overlaps."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from actuator.conftest import start_firmware
from support.wire import Wire

from robocell.common.facelets import solved
from robocell.common.moves import apply_to_facelets
from robocell.common.notation import parse_moves
from robocell.common.profile import load_profile
from robocell.robot import protocol as proto
from robocell.robot.motion import load_motors

pytestmark = pytest.mark.usefixtures("avr_toolchain")
QUARTER = 200  # six-motor: 800 steps per revolution
CUT = 44       # ov= steps: 19.8 degrees


@pytest.fixture
def six_avr(tmp_path: Path):
    fw = start_firmware(tmp_path, avr=True, speed=1.0, profile="six-motor", name="six")
    wire = Wire(fw.url)
    wire.line("HELLO")
    wire.start = wire.reports("start")[-1]
    yield fw, wire
    wire.close()
    fw.stop()


def run(wire: Wire, texts: list[str], first: int = 1) -> dict[int, tuple[int, int]]:
    """Send numbered lines; each line's (start, end) in µs on the board's clock."""
    for n, text in enumerate(texts, first):
        wire.line(f"N{n} {text}")
    last = first + len(texts) - 1
    done = [r for r in wire.reports(f"done {last}") if r.kind == "done"]
    assert [r.line for r in done] == list(range(first, last + 1))  # line order kept
    return {r.line: proto.motion_span(r) for r in done}


def moving_ms(spans: dict[int, tuple[int, int]], lines: list[int]) -> float:
    return sum(spans[n][1] - spans[n][0] for n in lines) / 1000.0


def test_the_avr_says_it_can_overlap(six_avr):
    _, wire = six_avr
    assert "overlap" in wire.start.fields["caps"].split(",")


def test_an_overlapped_sequence_ends_sooner_by_what_the_model_predicts(six_avr):
    fw, wire = six_avr
    motors = load_motors(load_profile("six-motor"))
    quarter, half = motors["R"].move_ms(90.0), motors["F"].move_ms(180.0)
    cut = motors["R"].time_left_ms(90.0, motors["R"].degrees(CUT))
    back_to_back = run(wire, [f"MOVE R:{QUARTER}", "MARK step=1 U", f"MOVE U:{QUARTER}",
                              "MARK step=2 F", f"MOVE F:{-2 * QUARTER}"])
    overlapped = run(wire, [f"MOVE R:{QUARTER}", "MARK step=1 U", f"MOVE U:{QUARTER} ov={CUT}",
                            "MARK step=2 F", f"MOVE F:{-2 * QUARTER} ov={CUT}"], first=6)
    # each move alone takes what the model says, both ways (the board's clock)
    for spans, first in ((back_to_back, 1), (overlapped, 6)):
        for line, model in ((first, quarter), (first + 2, quarter), (first + 4, half)):
            assert (spans[line][1] - spans[line][0]) / 1000 == pytest.approx(model, abs=0.5)
    # the next move starts in the tail of the one before: the model's cut before its end
    for before, after in ((6, 8), (8, 10)):
        start, end = overlapped[after][0], overlapped[before][1]
        assert overlapped[before][0] < start < end
        assert (end - start) / 1000 == pytest.approx(cut, abs=0.3)
    # the whole sequence, first start to last end, is shorter by the two cuts
    sequence = (overlapped[10][1] - overlapped[6][0]) / 1000
    assert sequence == pytest.approx(moving_ms(back_to_back, [1, 3, 5]) - 2 * cut, abs=1.0)
    assert sequence == pytest.approx(2 * quarter + half - 2 * cut, abs=1.5)
    # the twin, moved by the firmware's pins, took both sequences as one move after another
    executed = fw.wait_executed(10)
    assert executed[-1]["facelets"] == apply_to_facelets(
        solved(3), parse_moves("R U F2 R U F2"), 3)


def test_a_pair_that_is_not_perpendicular_never_overlaps(six_avr):
    # R then L turn one axis (an axial pair), L then L share a motor: ov= or not, each move
    # starts only once the one before has ended
    _, wire = six_avr
    spans = run(wire, [f"MOVE R:{QUARTER}", f"MOVE L:{QUARTER} ov={CUT}",
                       f"MOVE L:{QUARTER} ov={CUT}", f"MOVE U:{QUARTER} D:{QUARTER} ov={CUT}"])
    for before, after in ((1, 2), (2, 3)):
        assert spans[after][0] >= spans[before][1]
    # ... while a perpendicular pair after them does (U and D after L)
    assert spans[3][0] < spans[4][0] < spans[3][1]


def test_a_cut_past_the_cubes_tolerance_jams_the_twin_and_stops_the_avr(tmp_path):
    # the physics file's [cube] is the twin's; the AVR's motors move as it was built
    physics = tmp_path / "cube.toml"
    physics.write_text("[cube]\ncut_tolerance_deg = 12\n")
    fw = start_firmware(tmp_path, "--physics", str(physics), avr=True, speed=1.0,
                        profile="six-motor", name="tight")
    wire = Wire(fw.url)
    try:
        wire.line("HELLO")
        wire.reports("start")
        wire.line(f"N1 MOVE R:{QUARTER}")
        wire.line(f"N2 MOVE U:{QUARTER} ov={CUT}")  # 19.8 degrees from aligned: past 12
        got = wire.reports("fault")
        fault = got[-1]
        # the driver's stall input stopped every motor; R was the line under way
        assert fault.words[0] == "jam" and fault.int_field("line") == 1
        assert not [r for r in got if r.kind == "done"]
        faults = [e for e in fw.log() if e["ev"] == "fault"]
        assert faults and "layer U started while layer R stood" in faults[0]["message"]
    finally:
        wire.close()
        fw.stop()


def test_a_physics_file_that_moves_motors_is_refused_for_the_avr(tmp_path):
    physics = tmp_path / "robot.toml"
    physics.write_text("[defaults]\naccel_scale = 0.5\n[cube]\ncut_tolerance_deg = 12\n")
    with pytest.raises(RuntimeError, match=r"only its \[cube\] applies"):
        start_firmware(tmp_path, "--physics", str(physics), avr=True, profile="six-motor")


def test_an_estop_while_moves_overlap_stops_them_and_clear_starts_afresh(tmp_path):
    # full turns and a deep cut (the firmware alone: no cube to jam), so the e-stop surely
    # falls while U turns, R perhaps still in its tail, F armed behind U
    fw = start_firmware(tmp_path, "--no-twin", avr=True, speed=1.0, profile="six-motor",
                        name="estop")
    wire = Wire(fw.url)
    try:
        wire.line("HELLO")
        wire.reports("start")
        wire.line(f"N1 MOVE R:{4 * QUARTER}")
        wire.line(f"N2 MOVE U:{4 * QUARTER} ov={2 * QUARTER}")
        wire.line(f"N3 MOVE F:{QUARTER} ov={CUT}")
        got: list[proto.Report] = []
        while True:  # until U turns: in R's tail, or just after it
            wire.send(b"?")
            got += wire.reports("status")
            position = proto.parse_positions(got[-1].fields["pos"])
            assert not [r for r in got if r.kind == "done" and r.line == 2], "U ended unseen"
            if position["U"] != 0:
                break
        wire.send(proto.ESTOP_BYTE)
        got += wire.reports("estop")
        assert got[-1].int_field("discarded") >= 2  # U under way and F waiting
        time.sleep(0.5)
        wire.send(b"?")
        status = wire.reports("status")[-1]
        stopped = proto.parse_positions(status.fields["pos"])
        assert status.fields["state"] == "estop" and 0 < stopped["U"] < 4 * QUARTER
        assert stopped["F"] == 0  # armed behind U, never started
        last = int(status.fields["last"])
        wire.line("CLEAR")
        wire.reports("status")
        spans = run(wire, [f"MOVE F:{QUARTER}"], first=last + 1)
        assert (spans[last + 1][1] - spans[last + 1][0]) / 1000 == pytest.approx(
            load_motors(load_profile("six-motor"))["F"].move_ms(90.0), abs=0.5)
    finally:
        wire.close()
        fw.stop()
