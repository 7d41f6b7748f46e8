"""The serial line protocol between the actuator (host) and the motor firmware: framing,
checksums and parsing of every line in both directions.

Line-based ASCII in the spirit of 3D-printer and CNC firmware (Marlin's numbered lines with
checksums and resend requests; GRBL's real-time bytes). Full description with examples:
docs/serial-protocol.md. In short:

Host -> firmware
    ``N<line> <COMMAND> [ARGS]*<crc>\\n`` — a queued motion command. Line numbers start at 1
    and increase by one; ``crc`` is CRC-16/CCITT-FALSE of every byte before ``*``, written as
    four upper-case hex digits. Commands: ``MOVE m:steps ...`` (steppers, moved together),
    ``SERVO s:deg ...`` (servos, moved together), ``MARK text`` (no motion; labels the log),
    ``DWELL ms``, ``HOME [motor ...]`` (motors to their reference positions).
    ``HELLO*<crc>\\n`` — handshake (not queued, not numbered).
    ``CLEAR*<crc>\\n`` — leave the fault/e-stop state; the queue stays empty.
    ``?`` — real-time byte: status report at once.
    ``0x85`` — real-time byte: EMERGENCY STOP, acted on immediately (motors stopped, queue
    discarded, state ``estop``).

Firmware -> host (every line ends in ``*<crc>``)
    ``start fw=<name> version=<v> proto=<p> boot=<id> queue=<n> caps=<a,b> motors=<m,..>``
        — sent at boot and in answer to HELLO; also ``last=<line>``.
    ``ok <line> free=<slots>`` — line accepted into the queue (also re-sent for a duplicate).
    ``done <line> t=<sim ms> start=<us> end=<us>`` — the motion of that line has finished;
        protocol 2 adds when it started and ended on the firmware's clock (µs since boot).
    ``rs <line> <reason>`` — resend request: the firmware expects ``<line>`` next.
    ``busy <line>`` — queue full, line not taken (a host keeping flow control never sees it).
    ``status state=<s> boot=<id> last=<executed> accepted=<line> queue=<depth> pos=<m:v,..>``
    ``estop t=<sim ms> stopped=<sim ms>`` — e-stop acted on (command time, motors stopped).
    ``fault <code> <text>`` — a physical fault (jam, dropped cube); motion refused until CLEAR.
    ``err <line> <text>`` — a command that cannot run (unknown motor, bad argument).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from robocell.errors import RobocellError

PROTOCOL_VERSION = 2
SUPPORTED_PROTOCOLS = (1, 2)
"""Protocol 1 has no ``start=``/``end=`` in its ``done`` reports; the host speaks both."""
ESTOP_BYTE = b"\x85"
"""Real-time e-stop byte. Outside printable ASCII, so a single bit flip of a printable
character can never forge it."""
STATUS_BYTE = b"?"
REALTIME_BYTES = frozenset(ESTOP_BYTE + STATUS_BYTE)
CHECKSUM_SEPARATOR = "*"
CRC_DIGITS = 4
MAX_LINE_LENGTH = 200
QUEUED_COMMANDS = ("MOVE", "SERVO", "MARK", "DWELL", "HOME")
IMMEDIATE_COMMANDS = ("HELLO", "CLEAR")
FIRMWARE_REPORTS = ("start", "ok", "done", "rs", "busy", "status", "estop", "fault", "err")


MAX_STEPS = 1_000_000
"""Largest relative move in steps (``MOVE m:steps``)."""
SERVO_RANGE_DEG = (-360.0, 360.0)
DWELL_RANGE_MS = (0.0, 60_000.0)
_INTEGER = re.compile(r"-?[0-9]{1,10}")
_DECIMAL = re.compile(r"-?[0-9]{1,10}(\.[0-9]{1,9})?")
"""The only number syntax on the line (docs/serial-protocol.md, "Numbers"): no exponent,
no ``+``, no nan/inf, no hexadecimal."""


_CLOCK_US = re.compile(r"[0-9]{1,20}")
"""A firmware clock reading in µs since boot (``start=``, ``end=``)."""
CLOCK32_US = 1 << 32
"""A 32-bit µs clock wraps after this many µs (71.6 minutes)."""


class ProtocolError(RobocellError, ValueError):
    """A line that does not follow the protocol (bad checksum, unknown command, bad field)."""


def parse_integer(text: str, what: str, minimum: int | None = None,
                  maximum: int | None = None) -> int:
    """``text`` as an integer of the protocol's syntax and range; ProtocolError naming
    ``what`` (the field) otherwise."""
    if not _INTEGER.fullmatch(text):
        raise ProtocolError(f"{what}: {text!r} is not a whole number")
    value = int(text)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ProtocolError(f"{what}: {text} is out of range {minimum}..{maximum}")
    return value


def parse_decimal(text: str, what: str, minimum: float | None = None,
                  maximum: float | None = None) -> float:
    """``text`` as a decimal number (``-12.5``) of the protocol's syntax and range;
    ProtocolError naming ``what`` otherwise."""
    if not _DECIMAL.fullmatch(text):
        raise ProtocolError(f"{what}: {text!r} is not a decimal number")
    value = float(text)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ProtocolError(f"{what}: {text} is out of range {minimum:g}..{maximum:g}")
    return value


def format_decimal(value: float, digits: int = 3) -> str:
    """A number as the protocol writes it: fixed point, no exponent, no trailing zeros."""
    text = f"{value:.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF): detects every burst up to 16 bits."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def _crc_fast(data: bytes) -> int:
    crc = 0xFFFF
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ _TABLE[((crc >> 8) ^ byte) & 0xFF]
    return crc


def _make_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
        table.append(crc)
    return table


_TABLE = _make_table()


def checksum(body: str) -> str:
    """The four hex digits that follow ``*`` for a line body."""
    return f"{_crc_fast(body.encode('ascii')):0{CRC_DIGITS}X}"


def frame(body: str) -> bytes:
    """A complete line on the wire: body, ``*``, checksum, newline."""
    if CHECKSUM_SEPARATOR in body or "\n" in body:
        raise ProtocolError(f"line body {body!r} may not contain '*' or a newline")
    return f"{body}{CHECKSUM_SEPARATOR}{checksum(body)}\n".encode("ascii")


def unframe(raw: bytes | str) -> str:
    """The body of a received line after checking its checksum; ProtocolError otherwise."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            raise ProtocolError(f"non-ASCII bytes in line {raw!r}") from None
    else:
        text = raw
    text = text.strip("\r\n")
    body, sep, digits = text.rpartition(CHECKSUM_SEPARATOR)
    if not sep:
        raise ProtocolError(f"line {text!r} has no checksum ('*XXXX' at the end)")
    if len(digits) != CRC_DIGITS or checksum(body) != digits:
        raise ProtocolError(f"bad checksum in line {text!r}")
    return body


# --- host -> firmware ------------------------------------------------------------------------

@dataclass(frozen=True)
class Command:
    """A queued command as the firmware parses it: line number, verb and arguments."""

    line: int
    verb: str
    args: tuple[str, ...] = ()

    @property
    def body(self) -> str:
        return " ".join((f"N{self.line}", self.verb, *self.args))

    def encode(self) -> bytes:
        return frame(self.body)

    def targets(self) -> dict[str, float]:
        """``name:value`` arguments of MOVE/SERVO as a mapping."""
        return parse_targets(self.args)


def parse_targets(args: tuple[str, ...] | list[str]) -> dict[str, float]:
    """``("R:-200", "L:-200")`` -> ``{"R": -200.0, "L": -200.0}``; ProtocolError if malformed."""
    targets: dict[str, float] = {}
    for arg in args:
        name, sep, value = arg.partition(":")
        if not sep or not name:
            raise ProtocolError(f"argument {arg!r} is not name:value")
        if name in targets:
            raise ProtocolError(f"motor {name!r} named twice")
        targets[name] = parse_decimal(value, f"argument {name}")
    if not targets:
        raise ProtocolError("no motor targets given")
    return targets


def parse_host_line(body: str) -> Command | str:
    """A checked line body from the host: a numbered `Command`, or the name of an immediate
    command (HELLO, CLEAR). ProtocolError for anything else."""
    parts = body.split()
    if not parts:
        raise ProtocolError("empty line")
    if parts[0] in IMMEDIATE_COMMANDS and len(parts) == 1:
        return parts[0]
    head = parts[0]
    if not head.startswith("N") or not head[1:].isdigit():
        raise ProtocolError(f"line {body!r} does not start with N<line number>")
    if len(parts) < 2:
        raise ProtocolError(f"line {body!r} has no command")
    verb = parts[1]
    if verb not in QUEUED_COMMANDS:
        raise ProtocolError(f"unknown command {verb!r}; known: {', '.join(QUEUED_COMMANDS)}")
    return Command(int(head[1:]), verb, tuple(parts[2:]))


# --- firmware -> host ------------------------------------------------------------------------

@dataclass(frozen=True)
class Report:
    """A firmware line: its kind (first word), positional words and ``key=value`` fields."""

    kind: str
    words: tuple[str, ...] = ()
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def line(self) -> int:
        """The line number of ok/done/rs/busy/err reports."""
        return int(self.words[0])

    def int_field(self, key: str, default: int = 0) -> int:
        """A non-negative integer field; ProtocolError naming the report and field if the
        firmware sent something else."""
        if key not in self.fields:
            return default
        return parse_integer(self.fields[key], f"{self.kind} report field {key}", minimum=0)

    def float_field(self, key: str, default: float = 0.0) -> float:
        """A decimal field (``t=12.5``); ProtocolError naming the report and field."""
        if key not in self.fields:
            return default
        return parse_decimal(self.fields[key], f"{self.kind} report field {key}")

    def text(self) -> str:
        return " ".join(self.words)

    def encode(self) -> bytes:
        parts = [self.kind, *self.words, *(f"{k}={v}" for k, v in self.fields.items())]
        return frame(" ".join(parts))


def report(kind: str, *words: object, **fields: object) -> Report:
    """Build a firmware report (``report("ok", 12, free=7)``)."""
    return Report(kind, tuple(str(w) for w in words), {k: str(v) for k, v in fields.items()})


def parse_report(body: str) -> Report:
    """A checked line body from the firmware as a `Report`; ProtocolError if unknown."""
    parts = body.split()
    if not parts or parts[0] not in FIRMWARE_REPORTS:
        raise ProtocolError(f"unknown firmware report {body!r}")
    kind = parts[0]
    words: list[str] = []
    fields: dict[str, str] = {}
    for part in parts[1:]:
        key, sep, value = part.partition("=")
        if sep and key:
            fields[key] = value
        else:
            words.append(part)
    if kind in ("ok", "done", "rs", "busy", "err"):
        if not words or not words[0].isdigit():
            raise ProtocolError(f"report {body!r} has no line number")
        parse_integer(words[0], f"{kind} report line number", minimum=0)
    return Report(kind, tuple(words), fields)


def motion_span(report: Report) -> tuple[int, int] | None:
    """A ``done`` report's motion (start, end) in µs on the firmware's clock; None from a
    protocol-1 firmware, which does not say. ProtocolError for an end before its start."""
    if "start" not in report.fields or "end" not in report.fields:
        return None
    start, end = (report.fields[key] for key in ("start", "end"))
    if not _CLOCK_US.fullmatch(start) or not _CLOCK_US.fullmatch(end):
        raise ProtocolError(f"done report of line {report.words[0]}: start={start} end={end} "
                            "are not µs counts")
    first, last = int(start), int(end)
    if last < first and first < CLOCK32_US:
        last += CLOCK32_US  # a microcontroller's 32-bit µs clock wrapped during the motion
    if last < first:
        raise ProtocolError(f"done report of line {report.words[0]}: end={end} before "
                            f"start={start}")
    return first, last


def format_positions(positions: dict[str, float]) -> str:
    """``pos=`` value of a status report: ``R:-90.0,L:0.0``."""
    return ",".join(f"{name}:{format_decimal(value)}" for name, value in positions.items())


def parse_positions(text: str) -> dict[str, float]:
    if not text:
        return {}
    return parse_targets(text.split(","))
