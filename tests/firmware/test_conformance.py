"""Protocol conformance of the compiled AVR firmware alone, running in simavr: raw lines over
pyserial's socket:// to `robocell firmware-sim --avr`, the answers checked against
docs/serial-protocol.md (resend, duplicates, queue full, real-time bytes, number syntax,
HOME, boot ids), and its pins checked in the harness's trace."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from actuator.conftest import start_firmware
from support.wire import Wire

from robocell.robot import protocol as proto

pytestmark = pytest.mark.usefixtures("avr_toolchain")
QUARTER = 400  # soltvvo-2x2: 1600 steps per revolution


@pytest.fixture
def avr(tmp_path: Path):
    fw = start_firmware(tmp_path, "--no-twin", "--trace", str(tmp_path / "trace.txt"), avr=True,
                        speed=1.0, name="avr")
    wire = Wire(fw.url)
    wire.line("HELLO")
    start = wire.reports("start")[-1]
    wire.start = start
    yield fw, wire
    wire.close()
    fw.stop()


def texts(reports: list[proto.Report]) -> list[str]:
    return [f"{r.kind} {r.text()}".strip() for r in reports]


def r_position(status: proto.Report) -> int:
    return int(status.fields["pos"].split(",")[0].split(":")[1])


def poll_until_moving(wire: Wire, timeout: float = 30.0) -> tuple[list[proto.Report], bool]:
    """Status every 20 ms until one shows R part way (the simulated board keeps real time
    only as far as a loaded machine lets it: a fixed pause may find it not started yet, or
    done); the reports read meanwhile, and whether line 1 was done before that."""
    got: list[proto.Report] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        wire.send(b"?")
        got += wire.reports("status")
        status = got[-1]
        if status.fields["state"] == "run" and 0 < r_position(status):
            return got, False
        if "done 1" in texts(got):
            return got, True
        time.sleep(0.02)
    raise AssertionError(f"R did not move within {timeout} s: {texts(got)}")


def test_start_names_the_firmware_its_boot_id_and_motors(avr):
    _, wire = avr
    fields = wire.start.fields
    assert fields["fw"] == "robocell-avr" and fields["proto"] == "2"
    assert len(fields["boot"]) == 8 and int(fields["boot"], 16) >= 0
    assert fields["motors"] == "R,B,L,F,gR,gB,gL,gF"
    assert fields["queue"] == "8" and fields["last"] == "0" and fields["accepted"] == "0"


def test_a_bad_crc_is_answered_with_a_resend_and_the_line_is_not_run(avr):
    fw, wire = avr
    good = proto.Command(1, "MOVE", ("R:400",)).encode()
    wire.send(good[:-3] + (b"00" if good[-3:-1] != b"00" else b"11") + b"\n")
    assert texts(wire.reports("rs")) [-1] == "rs 1 bad-line"
    wire.send(good)
    got = texts(wire.reports("done 1"))
    assert got[0] == "ok 1" and got[-1] == "done 1"


def test_a_replayed_line_is_answered_ok_dup_and_runs_once(avr):
    fw, wire = avr
    wire.send(proto.Command(1, "MOVE", ("R:400",)).encode())
    wire.reports("done 1")
    wire.send(proto.Command(1, "MOVE", ("R:400",)).encode())
    assert texts(wire.reports("ok 1")) == ["ok 1 dup"]
    wire.send(b"?")
    status = wire.reports("status")[-1]
    assert status.fields["pos"].startswith("R:400,") and status.fields["last"] == "1"


def test_a_skipped_number_asks_once_for_the_expected_line(avr):
    _, wire = avr
    wire.send(proto.Command(3, "MARK", ("x",)).encode())
    wire.send(proto.Command(4, "MARK", ("y",)).encode())
    wire.send(b"?")
    got = texts(wire.reports("status"))
    assert got[0] == "rs 1 skipped" and got.count("rs 1 skipped") == 1


def test_a_full_queue_answers_busy(avr):
    _, wire = avr
    for n in range(1, 10):
        wire.send(proto.Command(n, "DWELL", ("2000",)).encode())
    got = wire.reports("busy")
    assert [r.kind for r in got] == ["ok"] * 8 + ["busy"]
    assert texts(got)[-1] == "busy 9" and got[-2].fields["free"] == "0"


def test_status_byte_mid_motion_reports_the_motion_under_way(avr):
    _, wire = avr
    wire.send(proto.Command(1, "MOVE", ("R:1600",)).encode())
    wire.reports("ok 1")
    got, done = poll_until_moving(wire)
    assert not done, f"the motion ended before a status showed it under way: {texts(got)}"
    status = got[-1]
    assert status.fields["state"] == "run" and 0 < r_position(status) < 1600
    assert texts(wire.reports("done 1"))[-1] == "done 1"


def test_estop_byte_inside_a_line_stops_at_once_and_the_line_goes_on(avr):
    fw, wire = avr
    wire.send(proto.Command(1, "MOVE", ("R:3200", "L:-3200")).encode())
    wire.reports("ok 1")
    _, done = poll_until_moving(wire)  # under way
    assert not done
    line = proto.Command(2, "MOVE", ("B:400",)).encode()
    wire.send(line[:6] + proto.ESTOP_BYTE + line[6:])
    got = wire.reports("rs")
    estop = next(r for r in got if r.kind == "estop")
    assert estop.int_field("discarded") == 1
    assert 0 < estop.float_field("stopped") - estop.float_field("t") < 50
    # the line around the e-stop byte arrived whole (its checksum held: not "bad-line"); the
    # e-stop discarded line 1, so the firmware expects 1 again
    assert texts(got)[-1] == "rs 1 skipped"
    time.sleep(0.2)
    wire.send(b"?")
    status = wire.reports("status")[-1]
    assert status.fields["state"] == "estop" and 0 < r_position(status) < 3200
    assert status.fields["last"] == "0" and status.fields["accepted"] == "0"
    wire.line("CLEAR")
    assert wire.reports("status")[-1].fields["state"] == "idle"
    wire.send(proto.Command(1, "MARK", ("after",)).encode())
    assert texts(wire.reports("done 1"))[-1] == "done 1"


@pytest.mark.parametrize("command, field", [
    ("MOVE R:nan", "MOVE R: nan is not a whole number of steps"),
    ("MOVE R:inf", "MOVE R: inf is not a whole number of steps"),
    ("MOVE R:1e308", "MOVE R: 1e308 is not a whole number of steps"),
    ("MOVE R:12.5", "MOVE R: 12.5 is not a whole number of steps"),
    ("MOVE R:2000000", "MOVE R: 2000000 is out of range -1000000..1000000 steps"),
    ("DWELL -5", "DWELL: -5 is out of range 0..60000 ms"),
    ("DWELL 1e3", "DWELL: 1e3 is not a number of ms"),
    ("SERVO gR:abc", "SERVO gR: abc is not a number of degrees"),
    ("SERVO gR:400", "SERVO gR: 400 is out of range -360..360 degrees"),
    ("MOVE X:10", "MOVE: no stepper named X"),
    ("MOVE gR:10", "MOVE: no stepper named gR"),
    ("MOVE R:1 R:2", "MOVE R: named twice"),
    ("HOME X", "HOME: no motor named X"),
])
def test_malformed_numbers_are_refused_naming_the_field(avr, command, field):
    _, wire = avr
    verb, *args = command.split()
    wire.send(proto.Command(1, verb, tuple(args)).encode())
    assert texts(wire.reports("err 1"))[-1] == f"err 1 {field}"
    wire.send(proto.Command(2, "MARK", ("next",)).encode())  # the number was used up
    assert texts(wire.reports("done 2"))[-1] == "done 2"


def test_home_turns_steppers_to_the_nearest_quarter_then_servos_home(avr):
    _, wire = avr
    for n, body in enumerate(["MOVE R:150 B:-250 L:200", "SERVO gR:90", "HOME"], start=1):
        verb, *args = body.split()
        wire.send(proto.Command(n, verb, tuple(args)).encode())
    wire.reports("done 3")
    wire.send(b"?")
    pos = proto.parse_positions(wire.reports("status")[-1].fields["pos"])
    # 150 -> 0, -250 -> -400, 200 (a tie) -> 400 (the higher multiple)
    assert pos["R"] == 0 and pos["B"] == -QUARTER and pos["L"] == QUARTER and pos["F"] == 0
    assert pos["gR"] == 50


def test_home_is_refused_while_estopped_until_clear(avr):
    _, wire = avr
    wire.send(proto.ESTOP_BYTE)
    wire.reports("estop")
    wire.send(proto.Command(1, "HOME").encode())
    assert texts(wire.reports("err 1"))[-1] == "err 1 estop send CLEAR first"
    wire.line("CLEAR")
    wire.reports("status")
    wire.send(proto.Command(1, "HOME", ("R",)).encode())
    assert texts(wire.reports("done 1"))[-1] == "done 1"


def test_servo_angles_become_pulse_widths_on_the_pwm_pins(avr, tmp_path):
    fw, wire = avr
    wire.send(proto.Command(1, "SERVO", ("gR:90", "gF:0")).encode())
    wire.reports("done 1")
    widths: dict[int, int] = {}
    deadline = time.monotonic() + 30  # the trace's rows may still be on their way to the file
    while not {0, 3} <= set(widths) and time.monotonic() < deadline:
        time.sleep(0.05)
        text = (tmp_path / "trace.txt").read_text()
        for row in text[:text.rfind("\n") + 1].splitlines():  # whole rows only
            t, kind, *rest = row.split()
            if kind == "W":
                widths[int(rest[0])] = int(rest[1])
    # 500 us at 0 degrees, 2500 us at 180 (gR is the first servo, gF the fourth)
    assert abs(widths[0] - 1500) <= 2 and abs(widths[3] - 500) <= 2


def test_every_boot_draws_a_new_boot_id(tmp_path):
    ids = set()
    for n in range(2):
        fw = start_firmware(tmp_path, avr=True, speed=1.0, name=f"boot{n}")
        ids.add(fw.log()[0]["boot"])
        fw.stop()
    assert len(ids) == 2


def test_done_reports_each_motions_start_and_end_on_the_boards_clock(avr):
    # the AVR times its motion with its own step timer: measured here, not assumed
    _, wire = avr
    wire.line(f"N1 MOVE R:{QUARTER}")
    wire.line("N2 SERVO gR:10")
    wire.line(f"N3 MOVE R:{-2 * QUARTER}")
    done = [r for r in wire.reports("done 3") if r.kind == "done"]
    spans = [proto.motion_span(r) for r in done]
    assert [r.line for r in done] == [1, 2, 3] and None not in spans
    for report, (_, end) in zip(done, spans, strict=True):
        assert end == round(1000 * report.float_field("t"))  # t= is the end, in ms
    quarter_ms, half_ms = ((end - start) / 1000 for start, end in (spans[0], spans[2]))
    assert spans[1][0] >= spans[0][1] and spans[2][0] >= spans[1][1]  # one after another
    assert 10 < quarter_ms < half_ms < 2 * quarter_ms  # a trapezoid: a half turn is cheaper
