"""The host's end of a serial line to a firmware, byte-exact: framed lines out, parsed reports
in (pyserial, any URL it opens: ``socket://`` of a firmware simulator or simavr)."""

from __future__ import annotations

import time

import serial

from robocell.robot import protocol as proto


class Wire:
    """The host's end of the line, byte-exact."""

    def __init__(self, url: str) -> None:
        self.port = serial.serial_for_url(url, timeout=0.05)
        self.buffer = b""

    def send(self, data: bytes) -> None:
        self.port.write(data)

    def line(self, body: str) -> None:
        self.send(proto.frame(body))

    def reports(self, until: str | None = None, timeout: float = 30.0) -> list[proto.Report]:
        """Reports until one starts with ``until`` (or the timeout passes)."""
        out: list[proto.Report] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.buffer += self.port.read(4096)
            while b"\n" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\n", 1)
                report = proto.parse_report(proto.unframe(raw))
                out.append(report)
                if until and f"{report.kind} {report.text()}".startswith(until):
                    return out
            if until is None and out and not self.buffer:
                time.sleep(0.2)
                self.buffer += self.port.read(4096)
                if not self.buffer:
                    return out
        if until:
            raise AssertionError(f"no {until!r} within {timeout} s; got {out}")
        return out

    def close(self) -> None:
        self.port.close()
