"""The line protocol: checksums catch damage, lines round-trip, bad lines name the problem."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from robocell.robot import protocol as proto


def test_crc_is_ccitt_false():
    # the standard check value of CRC-16/CCITT-FALSE
    assert proto.crc16(b"123456789") == 0x29B1
    assert proto.checksum("123456789") == "29B1"


def test_command_round_trip():
    command = proto.Command(12, "MOVE", ("R:-400", "L:-800"))
    body = proto.unframe(command.encode())
    assert proto.parse_host_line(body) == command
    assert proto.parse_host_line(body).targets() == {"R": -400.0, "L": -800.0}


def test_report_round_trip():
    report = proto.report("status", state="run", last=7, pos="R:-90,L:0")
    parsed = proto.parse_report(proto.unframe(report.encode()))
    assert parsed.kind == "status" and parsed.int_field("last") == 7
    assert proto.parse_positions(parsed.fields["pos"]) == {"R": -90.0, "L": 0.0}


@given(st.integers(0, 200), st.integers(0, 6), st.integers(1, 3000))
def test_any_single_bit_flip_is_detected(position, bit, line):
    wire = bytearray(proto.Command(line, "SERVO", ("gR:50", "gL:50")).encode())
    position %= len(wire) - 1  # not the newline
    wire[position] ^= 1 << bit
    with pytest.raises(proto.ProtocolError):
        proto.parse_host_line(proto.unframe(bytes(wire[:-1])))


@given(st.integers(0x20, 0x7E), st.integers(0, 7))
def test_no_bit_flip_of_a_printable_byte_forges_the_estop(byte, bit):
    assert bytes([byte ^ (1 << bit)]) != proto.ESTOP_BYTE


@pytest.mark.parametrize("body, message", [
    ("N5 JUMP R:1", "unknown command"),
    ("X5 MOVE R:1", "does not start with N"),
    ("N5", "no command"),
])
def test_bad_host_lines_are_named(body, message):
    with pytest.raises(proto.ProtocolError, match=message):
        proto.parse_host_line(body)


def test_bad_targets_are_named():
    with pytest.raises(proto.ProtocolError, match="not a decimal number"):
        proto.parse_targets(["R:fast"])
    with pytest.raises(proto.ProtocolError, match="named twice"):
        proto.parse_targets(["R:1", "R:2"])


def test_unframe_rejects_missing_checksum():
    with pytest.raises(proto.ProtocolError, match="no checksum"):
        proto.unframe(b"ok 1")
