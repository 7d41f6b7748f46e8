"""The host side of the serial line: pyserial transport (device path or URL such as
``socket://127.0.0.1:PORT``), handshake, line numbers, resend, flow control, status probes,
reconnect with backoff and resume after the last accepted line, boot-id change detection,
and the real-time e-stop.

One code path for real and simulated hardware: `serial.serial_for_url` opens both.
`Link.stream` sends numbered lines while keeping at most ``queue`` of them unfinished in the
firmware (sliding window, like a Marlin host with ``ok`` flow control) and calls back once
per finished line, in order — never twice, never skipping one, whatever the line does.
"""

from __future__ import annotations

import select
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import serial

from robocell.robot import protocol as proto
from robocell.services.actuator.link_errors import (
    CommandRejectedError,
    EStopNotSentError,
    FirmwareFault,
    FirmwareProtocolError,
    FirmwareReset,
    FirmwareUnreachableError,
    LinkError,
    SerialOpenError,
)
from robocell.services.actuator.port import (
    SerialUrlError,
    check_serial_url,
    describe_open_error,
    open_port,
    port_fd,
)
from robocell.services.actuator.tail import Tail

__all__ = ["CommandRejectedError", "EStopNotSentError", "FirmwareFault", "FirmwareProtocolError",
           "FirmwareReset", "FirmwareUnreachableError", "LinkError", "SerialOpenError",
           "SerialUrlError", "Tail", "check_serial_url", "open_port"]

READ_POLL_S = 0.005
"""Longest a read waits for the first byte before the stream loop looks around again."""
READ_CHUNK = 4096
"""Most bytes taken from the port at once (everything that has arrived, in practice)."""
PROBE_AFTER_S = 0.1
"""Ask for a status report after this long without any report from the firmware."""
PROBE_BACKOFF_MAX_S = 1.0
"""Unanswered probes back off (100 ms doubling) to one a second: a stalled firmware is not
flooded with ``?``."""
ESTOP_CONFIRM_S = 0.5
"""An e-stop the firmware does not confirm within this long (it is stalled) ends the stream
anyway: the job stops at the e-stop, not at the stall give-up."""
IDLE_RECONNECT_GIVE_UP_S = 1.0
"""While idle, one round of reconnecting (`Link.poll`) lasts at most this long."""
STREAM_RECONNECT_GIVE_UP_S = 1.0
"""Mid-job, a connection lost for this long ends the job (reported at once); reconnecting
goes on at the next job."""
STALL_REPORT_S = 0.5
"""Report the firmware as not responding after this long without an answer to probes."""
HANDSHAKE_TIMEOUT_S = 2.0
RECONNECT_BACKOFF_S = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
RECONNECT_GIVE_UP_S = 30.0
STALL_GIVE_UP_S = 30.0
ESTOP_REPEAT_S = 0.02


@dataclass
class FirmwareInfo:
    """What the handshake told us."""

    name: str
    version: str
    protocol: int
    boot_id: str
    queue: int
    capabilities: tuple[str, ...]
    motors: tuple[str, ...]


@dataclass
class EStopReport:
    """The firmware's e-stop report: when it got the byte and when the motors stood still
    (simulated ms), and the wall time of receipt."""

    received_ms: float
    stopped_ms: float
    rx_wall: float
    sent_wall: float

    @property
    def stop_after_receipt_ms(self) -> float:
        return self.stopped_ms - self.received_ms


@dataclass
class StreamResult:
    """How a stream ended: ``completed`` (every line done), ``estop``, or ``paused`` never —
    pause waits inside the stream."""

    outcome: str
    done: int
    estop: EStopReport | None = None


@dataclass
class LinkEvents:
    """Counters of what the line did (reported in the result and on the bus)."""

    resends: int = 0
    bad_lines: int = 0
    reconnects: int = 0
    probes: int = 0
    stalls: int = 0
    reboots: int = 0
    busy: int = 0
    notes: list[str] = field(default_factory=list)


class Link:
    """One firmware on one serial line. Thread-safe for `estop` (any thread) while another
    thread streams."""

    def __init__(self, url: str, *, on_event: Callable[[str, str], None] | None = None,
                 reconnect_give_up_s: float = RECONNECT_GIVE_UP_S,
                 stall_give_up_s: float = STALL_GIVE_UP_S,
                 stream_reconnect_give_up_s: float = STREAM_RECONNECT_GIVE_UP_S) -> None:
        self.url = url
        self.on_event = on_event or (lambda kind, message: None)
        self.reconnect_give_up_s = reconnect_give_up_s
        self.stream_reconnect_give_up_s = stream_reconnect_give_up_s
        self.stall_give_up_s = stall_give_up_s
        self.port = None
        self.info: FirmwareInfo | None = None
        self.next_line = 1
        self.events = LinkEvents()
        self.spans: dict[int, tuple[int, int] | None] = {}  # by index in a stream: µs
        self._buffer = bytearray()
        self._fd: int | None = None
        self._write_lock = threading.Lock()
        self._open_lock = threading.Lock()
        self._estop = threading.Event()
        self._estop_sent_wall = 0.0
        self._estop_sent_mono = 0.0
        self._paused = threading.Event()
        self._resume = threading.Event()

    # --- connection ------------------------------------------------------------------------
    def open(self, give_up_s: float | None = None) -> FirmwareInfo:
        """Connect and shake hands (retrying with backoff until the give-up time). Safe to
        call from several threads: the first connects, the others get its result. Raises
        FirmwareReset (having accepted the new boot id) if the firmware rebooted meanwhile."""
        with self._open_lock:
            if self.info is None or self.port is None:
                self._connect(first=self.info is None, give_up_s=give_up_s)
            assert self.info is not None
            return self.info

    def close(self) -> None:
        if self.port is not None:
            try:
                self.port.close()
            except Exception:  # noqa: BLE001 - closing a dead port must not raise
                pass
            self.port = None

    def _connect(self, first: bool = False, give_up_s: float | None = None) -> proto.Report:
        """(Re)connect and handshake; returns the banner. Raises FirmwareReset if the boot id
        changed since the last handshake (the new one is accepted: the next call succeeds).
        The first failure to open the line is reported at once (``open_failed`` event) with
        what to check; retries go on until ``give_up_s``."""
        give_up_s = self.reconnect_give_up_s if give_up_s is None else give_up_s
        started = time.monotonic()
        attempt = 0
        told = ""
        while True:
            try:
                self.close()
                self.port = open_port(self.url)
                self._fd = port_fd(self.port)
                if self._fd is not None:
                    # wait for input with select on the descriptor, then take all that has
                    # arrived in one non-blocking read (pyserial's socket:// in_waiting says
                    # only 0 or 1, which would read a report a byte at a time)
                    self.port.timeout = 0
                self._buffer.clear()
                banner = self._handshake()
                break
            except (serial.SerialException, OSError, FirmwareUnreachableError) as exc:
                opened = isinstance(exc, FirmwareUnreachableError)
                reason = (f"opened {self.url} but the firmware does not answer HELLO within "
                          f"{HANDSHAKE_TIMEOUT_S:g} s: check that the board runs robocell "
                          "firmware at 115200 baud and is not stuck in its bootloader"
                          if opened else describe_open_error(self.url, exc))
                if reason != told:
                    told = reason
                    self.on_event("open_failed", reason)
                if time.monotonic() - started > give_up_s:
                    self.close()
                    error = FirmwareUnreachableError if opened else SerialOpenError
                    raise error(reason) from None
                delay = RECONNECT_BACKOFF_S[min(attempt, len(RECONNECT_BACKOFF_S) - 1)]
                attempt += 1
                time.sleep(delay)
        boot = banner.fields.get("boot", "")
        try:
            if first or self.info is None:
                info = FirmwareInfo(
                    name=banner.fields.get("fw", "?"), version=banner.fields.get("version", "?"),
                    protocol=banner.int_field("proto"), boot_id=boot,
                    queue=banner.int_field("queue", 1),
                    capabilities=tuple(banner.fields.get("caps", "").split(",")),
                    motors=tuple(m for m in banner.fields.get("motors", "").split(",") if m))
                if info.protocol not in proto.SUPPORTED_PROTOCOLS:
                    raise LinkError(f"firmware {info.name} speaks protocol {info.protocol}, "
                                    f"this host {proto.SUPPORTED_PROTOCOLS}: update one")
                self.next_line = banner.int_field("accepted") + 1
                self.info = info
            elif boot != self.info.boot_id:
                raise self._rebooted(banner)
            else:
                banner.int_field("last")
                banner.int_field("accepted")
        except proto.ProtocolError as exc:
            self.close()
            raise FirmwareProtocolError(f"firmware at {self.url} sent a malformed start "
                                        f"report: {exc}") from None
        if not first and boot == self.info.boot_id:
            self.events.reconnects += 1
            self.on_event("reconnected", f"reconnected to {self.url} after {attempt + 1} "
                          f"attempt(s); firmware executed up to line {banner.fields.get('last')}")
        return banner

    def _handshake(self) -> proto.Report:
        deadline = time.monotonic() + HANDSHAKE_TIMEOUT_S
        self._write(proto.frame("HELLO"))
        next_hello = time.monotonic() + 0.2
        while time.monotonic() < deadline:
            for report in self._read_reports():
                if report.kind == "start":
                    return report
            if time.monotonic() > next_hello:
                self._write(proto.frame("HELLO"))
                next_hello = time.monotonic() + 0.2
        raise FirmwareUnreachableError(
            f"no handshake from {self.url} within {HANDSHAKE_TIMEOUT_S} s")

    # --- low level I/O ---------------------------------------------------------------------
    def _write(self, data: bytes) -> None:
        with self._write_lock:
            if self.port is None:
                raise OSError("port closed")
            self.port.write(data)

    def _read_reports(self) -> list[proto.Report]:
        """Reports that arrived (waits up to the poll interval); damaged lines are counted and
        skipped. Raises SerialException/OSError when the connection is gone."""
        if self.port is None:
            raise serial.SerialException("port closed")
        if self._fd is not None:
            ready, _, _ = select.select([self._fd], [], [], READ_POLL_S)
            data = self.port.read(READ_CHUNK) if ready else b""
        else:
            data = self.port.read(max(1, self.port.in_waiting))
        self._buffer += data
        reports = []
        while True:
            newline = self._buffer.find(b"\n")
            if newline < 0:
                if len(self._buffer) > 4 * proto.MAX_LINE_LENGTH:
                    self._buffer.clear()
                break
            raw = bytes(self._buffer[:newline])
            del self._buffer[:newline + 1]
            try:
                reports.append(proto.parse_report(proto.unframe(raw)))
            except proto.ProtocolError:
                self.events.bad_lines += 1
        return reports

    # --- queries ---------------------------------------------------------------------------
    def status(self, timeout: float = 1.0) -> proto.Report:
        """A status report (probing until one arrives or ``timeout``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._write(proto.STATUS_BYTE)
            end = time.monotonic() + PROBE_AFTER_S
            while time.monotonic() < end:
                for report in self._read_reports():
                    if report.kind == "status":
                        self._check_boot(report)
                        return report
        raise FirmwareUnreachableError(f"no status report from {self.url} within {timeout} s")

    def poll(self) -> None:
        """While no job runs: read what the firmware sent on its own and reconnect a dropped
        line, so that a reboot is noticed when it happens (FirmwareReset, new boot id
        accepted), not at the next job. FirmwareUnreachableError if the line stays down."""
        if self.port is None:
            self._connect(give_up_s=IDLE_RECONNECT_GIVE_UP_S)
            return
        try:
            reports = self._read_reports()
        except (serial.SerialException, OSError) as exc:
            self.close()
            self.on_event("disconnected", f"lost {self.url} while idle ({exc}); reconnecting")
            self._connect(give_up_s=IDLE_RECONNECT_GIVE_UP_S)
            return
        for report in reports:
            if report.kind in ("start", "status"):
                self._check_boot(report)

    def clear(self) -> proto.Report:
        """Leave the e-stop/fault state (a new plan after a rescan). Line numbers continue
        after the last line the firmware accepted."""
        self._estop.clear()
        self._write(proto.frame("CLEAR"))
        report = self.status()
        try:
            self.next_line = report.int_field("accepted") + 1
        except proto.ProtocolError as exc:
            stopped = self._stop_motion()
            raise FirmwareProtocolError(f"firmware at {self.url}: {exc}; {stopped}") from None
        return report

    def _check_boot(self, report: proto.Report) -> None:
        boot = report.fields.get("boot")
        if self.info is not None and boot and boot != self.info.boot_id:
            raise self._rebooted(report)

    def _rebooted(self, report: proto.Report) -> FirmwareReset:
        """The firmware rebooted: accept its new boot id and line numbering (so the next
        command reaches it), drop a pending e-stop (no motion survives a reboot) and return
        the error that ends the job in progress."""
        assert self.info is not None
        old, new = self.info.boot_id, report.fields.get("boot", "")
        self.info.boot_id = new
        # an e-stop still pending (sent into a dead line, never confirmed) was for motion the
        # reboot ended: left set, it would stop the next job (HOME) at its first line
        self._estop.clear()
        try:
            self.next_line = report.int_field("accepted") + 1
        except proto.ProtocolError:
            self.next_line = 1
        self.events.reboots += 1
        return FirmwareReset(f"firmware rebooted (boot id {old} -> {new}): queued motion was "
                             "lost and the cube state is unknown; home and rescan")

    # --- control from other threads --------------------------------------------------------
    def estop(self) -> float:
        """Send the real-time e-stop byte now; returns the wall time it was written. Raises
        EStopNotSentError when it could not be written (the line is closed or broken): the
        streaming stops feeding lines either way."""
        self._estop.set()
        self._estop_sent_wall = time.time()
        self._estop_sent_mono = time.monotonic()
        try:
            self._write(proto.ESTOP_BYTE)
        except OSError as exc:  # pyserial's errors are OSErrors too
            raise EStopNotSentError(f"the e-stop byte was not written to {self.url} ({exc})") \
                from None
        return self._estop_sent_wall

    def _stop_motion(self) -> str:
        """E-stop on the way out of a failed job: what happened, for its error message."""
        try:
            self.estop()
        except EStopNotSentError as exc:
            return f"the e-stop could not be sent: {exc}"
        return "motion stopped (e-stop sent)"

    def pause(self) -> None:
        """Stop feeding new lines at the next allowed boundary (see `stream`)."""
        self._resume.clear()
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()
        self._resume.set()

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    # --- streaming -------------------------------------------------------------------------
    def stream(self, commands: Sequence[str] | Tail, on_done: Callable[[int], None], *,
               pause_points: frozenset[int] = frozenset()) -> StreamResult:
        """Execute ``commands`` (line bodies without numbers) exactly once each, in order.

        ``on_done(i)`` is called once per command index when the firmware reports it
        finished. Pausing holds back command ``i`` only if ``i`` is in ``pause_points`` (e.g.
        the first command of each primitive). A `Tail` (with its own pause points) may also
        hold a command back, and be changed from there on meanwhile. Raises FirmwareReset,
        FirmwareFault, FirmwareUnreachableError, CommandRejectedError; returns with outcome
        ``estop`` after an e-stop.
        """
        if self.info is None:
            self.open()
        assert self.info is not None
        tail = commands if isinstance(commands, Tail) else Tail(commands, None, pause_points)
        return _Sender(self, tail, on_done).run()


class _Sender:
    """The sender side of one stream (docs/serial-protocol.md): a sliding window of numbered
    lines, at most the firmware's queue of them unfinished, resent from where the firmware
    asks; status probes when it is silent, backing off while unanswered; one report at a time
    moving ``done`` on, each finished line called back once, in order. Runs in the thread
    that called `Link.stream`; `Link.estop`, `pause` and `resume` reach it through the link's
    events."""

    def __init__(self, link: Link, tail: Tail, on_done: Callable[[int], None]) -> None:
        assert link.info is not None
        self.link = link
        self.tail = tail
        self.on_done = on_done
        self.first = link.next_line
        """Line number of command 0."""
        self.window = link.info.queue
        self.next_send = self.first
        self.done = self.first - 1
        """The last line the firmware reported finished."""
        self.last_report = time.monotonic()
        self.next_probe = self.last_report + PROBE_AFTER_S
        self.unanswered = 0
        self.stalled = False
        self.estop_wait_since = 0.0

    @property
    def last_line(self) -> int:
        return self.first + len(self.tail.commands) - 1

    def run(self) -> StreamResult:
        """Send, read and follow the reports until every line is done or an e-stop ends the
        stream; faults, resets and a line that stays lost raise."""
        link = self.link
        while self.done < self.last_line or link._estop.is_set():
            try:
                if link._estop.is_set():
                    if (ended := self._repeat_estop()) is not None:
                        return ended
                elif self._send_window():  # paused with nothing running: wait for resume
                    link._resume.wait(0.05)
                    self._heard_from(time.monotonic())
                    continue
                for report in self._read():
                    if (ended := self._follow(report)) is not None:
                        return ended
            except proto.ProtocolError as exc:
                # a report with a good checksum but nonsense fields: stop rather than guess
                stopped = link._stop_motion()
                link._estop.clear()
                raise FirmwareProtocolError(
                    f"firmware at {link.url} sent a malformed report after line {self.done}: "
                    f"{exc}; {stopped}") from None
            except (serial.SerialException, OSError) as exc:
                self._reconnect(exc)
        link.next_line = self.last_line + 1
        return StreamResult("completed", self.done - self.first + 1)

    def _send_window(self) -> bool:
        """Send what the window and the holds allow. True: paused, and nothing runs in the
        firmware."""
        tail = self.tail
        with tail.lock:
            while True:
                index = self.next_send - self.first
                if self.next_send > self.last_line or self.next_send - self.done > self.window:
                    return False
                paused_here = self.link._paused.is_set() and index in tail.pause_points
                if paused_here or index == tail.hold:
                    if self.done < self.next_send - 1:
                        return False
                    if paused_here or index != tail.hold:
                        return True
                    # the robot reached a hold nobody released: run on as planned
                    tail.released_idle.append(index)
                    tail.hold = None
                self.link._write(proto.frame(f"N{self.next_send} {tail.commands[index]}"))
                self.next_send += 1
                tail.sent = max(tail.sent, index + 1)

    def _mark_done(self, upto: int) -> None:
        while self.done < min(upto, self.last_line):
            self.done += 1
            self.on_done(self.done - self.first)

    def _heard_from(self, now: float) -> None:
        self.last_report = now
        self.next_probe = now + PROBE_AFTER_S

    def _repeat_estop(self) -> StreamResult | None:
        """While an e-stop is pending: repeat the byte, and end the stream if the firmware
        does not confirm it in time (it is stalled)."""
        link = self.link
        if time.monotonic() - self.estop_wait_since > ESTOP_REPEAT_S:
            self.estop_wait_since = time.monotonic()
            link._write(proto.ESTOP_BYTE)
        if time.monotonic() - link._estop_sent_mono <= ESTOP_CONFIRM_S:
            return None
        link.on_event("estop_unconfirmed", f"e-stop sent to {link.url} but not confirmed "
                      f"within {ESTOP_CONFIRM_S:g} s: the firmware does not answer; check the "
                      "robot by hand")
        link.next_line = self.done + 1
        link._estop.clear()
        return StreamResult("estop", self.done - self.first + 1, None)

    def _read(self) -> list[proto.Report]:
        """The reports that arrived; with none, a status probe when one is due."""
        reports = self.link._read_reports()
        now = time.monotonic()
        if reports:
            self._heard_from(now)
            self.unanswered = 0
            if self.stalled:
                self.stalled = False
                self.link.on_event("recovered", "the firmware answers again")
        elif now >= self.next_probe:
            self._probe(now)
        return reports

    def _probe(self, now: float) -> None:
        """Ask for a status report; say so once the firmware has been silent too long, and
        give up past the stall give-up time."""
        link = self.link
        link._write(proto.STATUS_BYTE)
        link.events.probes += 1
        self.unanswered += 1
        self.next_probe = now + min(PROBE_AFTER_S * 2 ** self.unanswered, PROBE_BACKOFF_MAX_S)
        silent = now - self.last_report
        if silent > STALL_REPORT_S and not self.stalled:
            self.stalled = True
            link.events.stalls += 1
            link.on_event("stall", f"firmware at {link.url} has not answered for "
                          f"{silent:.2f} s; waiting")
        if silent > link.stall_give_up_s:
            raise FirmwareUnreachableError(
                f"firmware at {link.url} silent for {link.stall_give_up_s:.0f} s after line "
                f"{self.done}; check power and cable")

    def _follow(self, report: proto.Report) -> StreamResult | None:
        """Act on one report; a StreamResult when it ends the stream (an e-stop)."""
        link, kind = self.link, report.kind
        if kind == "done":
            link.spans[report.line - self.first] = proto.motion_span(report)
            self._mark_done(report.line)
        elif kind in ("rs", "busy"):  # a line arrived damaged, or the queue was full
            if kind == "rs":
                link.events.resends += 1
            else:
                link.events.busy += 1
                time.sleep(READ_POLL_S)
            if self.done < report.line <= self.last_line + 1:
                self.next_send = min(self.next_send, report.line)  # send again from there
        elif kind == "status":
            link._check_boot(report)
            self._mark_done(report.int_field("last"))
            accepted = report.int_field("accepted")
            if accepted < self.next_send - 1 and not link._estop.is_set():
                self.next_send = max(accepted + 1, self.done + 1)
            if report.fields.get("state") == "fault":
                raise FirmwareFault("fault", "firmware in fault state", self.done)
        elif kind == "start":
            link._check_boot(report)
        elif kind == "fault":
            line = report.int_field("line") or None
            if line is not None:
                self._mark_done(line - 1)
            raise FirmwareFault(report.words[0] if report.words else "?",
                                " ".join(report.words[1:]), line)
        elif kind == "estop":
            link.next_line = self.done + 1
            link._estop.clear()
            return StreamResult("estop", self.done - self.first + 1, EStopReport(
                report.float_field("t"), report.float_field("stopped"),
                report.float_field("rx_wall"), link._estop_sent_wall))
        elif kind == "err":
            index = report.line - self.first
            text = self.tail.commands[index] if 0 <= index < len(self.tail.commands) else "?"
            raise CommandRejectedError(f"firmware refused line {report.line} ({text}): "
                                       f"{report.text()}")
        return None  # "ok", and kinds this host does not act on

    def _reconnect(self, exc: Exception) -> None:
        """The line dropped: reconnect (give up after the stream's give-up time) and resume
        after the last line the firmware accepted."""
        link = self.link
        if link._estop.is_set():
            raise FirmwareUnreachableError(f"connection lost during e-stop: {exc}") from None
        link.on_event("disconnected", f"lost {link.url} after line {self.done} ({exc}); "
                      "reconnecting")
        banner = link._connect(give_up_s=link.stream_reconnect_give_up_s)
        self._mark_done(banner.int_field("last"))
        self.next_send = max(banner.int_field("accepted") + 1, self.done + 1)
        self._heard_from(time.monotonic())
