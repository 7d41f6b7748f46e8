"""The host side of the serial line under faults a real host meets: a firmware that reboots
(its new boot id is accepted and the next job runs), a firmware that stalls (probes back off;
an e-stop still ends the job at once), a firmware that sends nonsense with a good checksum
(a protocol error naming the field, motion stopped), and a line that cannot be opened (the
reason in words, at once)."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from robocell.common.profile import PROFILE_DIR
from robocell.robot import protocol as proto
from robocell.services.actuator.executor import Compiler, Execution
from robocell.services.actuator.link import (
    EStopNotSentError,
    FirmwareProtocolError,
    FirmwareReset,
    Link,
    SerialOpenError,
    SerialUrlError,
    open_port,
)

BANNER = ("start fw=scripted version=0 proto=1 boot=b00710ad queue=4 caps=move,home "
          "motors=R,B,L,F,gR,gB,gL,gF last=0 accepted=0")


class ScriptedFirmware:
    """A firmware at the edge of the unit: a real TCP socket that answers HELLO with a good
    banner, then either stays silent (stalled) or answers every ``?`` with ``status``
    (a line with a valid checksum, contents chosen by the test). Records every byte."""

    def __init__(self, status: str | None = None) -> None:
        self.status = status
        self.received = bytearray()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"socket://127.0.0.1:{self.server.getsockname()[1]}"
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.server.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            conn.settimeout(0.05)
            with conn:
                while not self._stop.is_set():
                    try:
                        data = conn.recv(4096)
                    except TimeoutError:
                        continue
                    if not data:
                        break
                    self.received += data
                    if b"HELLO" in data:
                        conn.sendall(proto.frame(BANNER))
                    if self.status is not None and proto.STATUS_BYTE in data:
                        conn.sendall(proto.frame(self.status))

    def wait_for(self, data: bytes, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while data not in self.received and time.monotonic() < deadline:
            time.sleep(0.01)
        return data in self.received

    def probes(self) -> int:
        return self.received.count(proto.STATUS_BYTE)

    def close(self) -> None:
        self._stop.set()
        self.thread.join(2)
        self.server.close()


@pytest.fixture
def scripted():
    made: list[ScriptedFirmware] = []

    def factory(status: str | None = None) -> ScriptedFirmware:
        made.append(ScriptedFirmware(status))
        return made[-1]

    yield factory
    for fw in made:
        fw.close()


def run(link: Link, compiler: Compiler, primitives: list[str]):
    job = compiler.plan(primitives)
    execution = Execution(job)
    return link.stream(job.texts, execution.line_done, pause_points=job.pause_points)


def switch_profile(tmp_path: Path) -> str:
    """soltvvo-2x2 with a home switch on every arm: HOME realigns even after a reboot."""
    text = (PROFILE_DIR / "soltvvo-2x2.toml").read_text()
    for arm in "RBLF":
        text = text.replace(f"[motors.{arm}]\n",
                            f"[motors.{arm}]\nhome_switch = \"sw{arm}\"\nhome_dir = 1\n")
    (tmp_path / "profiles").mkdir()
    path = tmp_path / "profiles" / "soltvvo-2x2.toml"
    path.write_text(text)
    return str(path)


def test_after_a_reboot_the_new_boot_id_is_accepted_and_the_next_job_runs(
        firmware_factory, soltvvo, tmp_path):
    fw = firmware_factory("--reset-after", "12", speed=200, profile=switch_profile(tmp_path))
    link = Link(fw.url)
    link.open()
    compiler = Compiler(soltvvo)
    started = time.monotonic()
    with pytest.raises(FirmwareReset, match="home and rescan"):
        run(link, compiler, ["R'", "B'"] * 10)
    # (at once: seconds at most on a loaded machine, not the 30 s reconnect give-up)
    assert time.monotonic() - started < 15.0, "the reboot ends the job at once"
    assert link.events.reboots == 1
    # the next jobs reach the rebooted firmware (before: FirmwareReset for ever); HOME first
    # squares an arm the reboot left part-turned
    assert link.stream(["HOME"], lambda i: None).outcome == "completed"
    for _ in range(2):
        link.close()
        link.open()
        assert run(link, compiler, ["R'", "B'"]).outcome == "completed"
    boots = [e["boot"] for e in fw.executed()]
    assert len(set(boots)) == 2 and boots[-1] != boots[0]


def test_an_estop_that_never_reached_a_firmware_that_then_rebooted_stops_nothing_after(
        firmware_factory):
    """The firmware dies; the cell sends an e-stop into the dead line; the firmware comes
    back (a new boot: nothing of the old motion survives). The e-stop is over: the next job
    (HOME, as the cell sends after a reboot) runs, not stopped by the e-stop left pending.
    Before, it was stopped at once ("emergency stop during homing")."""
    fw = firmware_factory(speed=200)
    port = fw.url.rsplit(":", 1)[1]
    link = Link(fw.url)
    link.open()
    fw.process.kill()
    fw.process.wait(5)
    try:
        link.estop()  # into the dead line: written to a closed socket, or refused
    except EStopNotSentError:
        pass
    for _ in range(20):  # the port may be held for a moment after the kill
        try:
            firmware_factory("--port", port, speed=200)
            break
        except RuntimeError:
            time.sleep(0.5)
    # the idle watcher (`poll`) reads what is left on the dead line, then reconnects to the
    # new boot
    deadline = time.monotonic() + 15.0
    with pytest.raises(FirmwareReset):
        while time.monotonic() < deadline:
            link.poll()
    assert link.stream(["HOME"], lambda i: None).outcome == "completed"


def test_a_report_with_a_good_checksum_and_a_bad_number_is_a_protocol_error(scripted):
    fw = scripted("status state=run boot=b00710ad last=notanumber accepted=1 queue=1 pos=")
    link = Link(fw.url)
    link.open()
    with pytest.raises(FirmwareProtocolError, match="status report field last: 'notanumber'"):
        link.stream(["MOVE R:400"], lambda i: None)
    assert fw.wait_for(proto.ESTOP_BYTE), "the host stops the motion"


@pytest.mark.slow
def test_a_stalled_firmware_is_probed_with_backoff(scripted):
    fw = scripted(status=None)
    link = Link(fw.url, stall_give_up_s=3.0)
    link.open()
    started = time.monotonic()
    with pytest.raises(Exception, match="silent for 3 s"):
        link.stream(["MOVE R:400"], lambda i: None)
    elapsed = time.monotonic() - started
    rate = fw.probes() / elapsed
    print(f"\nstalled firmware: {fw.probes()} probes in {elapsed:.2f} s = {rate:.1f}/s")
    # 100 ms doubling to 1 s: 0.1, 0.3, 0.7, 1.5, 2.5, 3.5 -> about 6 (was ~190 a second)
    assert 3 <= fw.probes() <= 10


def test_an_estop_during_a_stall_ends_the_job_at_once(scripted):
    fw = scripted(status=None)
    link = Link(fw.url)
    link.open()
    events: list[tuple[str, str]] = []
    link.on_event = lambda kind, message: events.append((kind, message))
    threading.Timer(0.6, link.estop).start()
    started = time.monotonic()
    result = link.stream(["MOVE R:400"], lambda i: None)
    assert result.outcome == "estop" and result.estop is None
    assert time.monotonic() - started < 10.0, "not the 30 s stall give-up"
    assert "estop_unconfirmed" in [kind for kind, _ in events]
    assert fw.wait_for(proto.ESTOP_BYTE)


@pytest.mark.slow
def test_a_missing_device_is_named_with_what_to_check_at_once(tmp_path: Path):
    device = str(tmp_path / "ttyUSB9")
    events: list[tuple[str, float]] = []
    started = time.monotonic()
    link = Link(device, reconnect_give_up_s=3.0,
                on_event=lambda kind, message: events.append((message, time.monotonic())))
    with pytest.raises(SerialOpenError, match="no such device"):
        link.open()
    message, at = events[0]
    assert at - started < 2.0  # at the first failure, not at the give-up 3 s later
    assert device in message and "exists" in message and "cable" in message


def test_a_device_held_by_another_program_is_named(tmp_path: Path):
    controller, worker = os.openpty()
    try:
        held = open_port(os.ttyname(worker))
        try:
            events: list[str] = []
            link = Link(os.ttyname(worker), reconnect_give_up_s=0.3,
                        on_event=lambda kind, message: events.append(message))
            with pytest.raises(SerialOpenError, match="another program holds it"):
                link.open()
            assert "fuser" in events[0]
        finally:
            held.close()
    finally:
        os.close(controller)
        os.close(worker)


def test_an_unknown_url_scheme_is_a_clear_error_not_a_traceback():
    with pytest.raises(SerialUrlError, match="unknown scheme 'bogus'"):
        Link("bogus://x").open()
