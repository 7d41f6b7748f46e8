"""The firmware core on its own: garbage never crashes it, numbering rules hold, the queue
is bounded, e-stop discards the queue."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from robocell.robot import protocol as proto
from robocell.services.firmware.simulator import FirmwareCore


def reports(data: list[bytes]) -> list[proto.Report]:
    return [proto.parse_report(proto.unframe(raw)) for raw in data]


def line(n: int, text: str) -> bytes:
    return proto.frame(f"N{n} {text}")[:-1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=80), max_size=20))
def test_garbage_lines_never_crash_the_firmware(soltvvo, junk):
    core = FirmwareCore(soltvvo)
    for raw in junk:
        for out in core.line(raw.replace(b"\n", b""), 0.0):
            assert proto.parse_report(proto.unframe(out)).kind in ("rs", "ok", "err", "busy",
                                                                  "start", "status")
    assert core.executed == 0 and core.twin.fault is None


def test_skipped_number_asks_for_a_resend_once_and_duplicates_are_not_queued(soltvvo):
    core = FirmwareCore(soltvvo)
    assert reports(core.line(line(1, "MARK a"), 0.0))[0].kind == "ok"
    skipped = reports(core.line(line(3, "MARK c"), 0.0))
    assert [(r.kind, r.line) for r in skipped] == [("rs", 2)]
    assert core.line(line(4, "MARK d"), 0.0) == []  # quiet until line 2 arrives
    duplicate = reports(core.line(line(1, "MARK a"), 0.0))
    assert (duplicate[0].kind, duplicate[0].words) == ("ok", ("1", "dup"))
    assert reports(core.line(line(2, "MARK b"), 0.0))[0].kind == "ok"
    assert core.expected == 3


def test_queue_is_bounded_and_estop_discards_it(soltvvo):
    core = FirmwareCore(soltvvo, queue_size=3)
    kinds = []
    for n in range(1, 6):
        kinds += [r.kind for r in reports(core.line(line(n, "MOVE R:400"), 0.0))
                  if r.kind in ("ok", "busy")]
    assert kinds == ["ok", "ok", "ok", "busy"]
    stop = reports(core.realtime(proto.ESTOP_BYTE, 10.0, 0.0))[0]
    assert stop.kind == "estop" and stop.int_field("discarded") == 3
    assert core.state == "estop" and core.expected == 1
    refused = reports(core.line(line(1, "MOVE R:400"), 20.0))[0]
    assert refused.kind == "err"


def test_unknown_motor_is_refused_with_its_name(soltvvo):
    core = FirmwareCore(soltvvo)
    err = reports(core.line(line(1, "MOVE Z:100"), 0.0))[0]
    assert err.kind == "err" and "Z" in err.text()
