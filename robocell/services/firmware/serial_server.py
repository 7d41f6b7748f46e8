"""The firmware simulator's serial line: `serve` runs a `FirmwareCore` behind a TCP socket or
a pty, keeps the simulated clock (real time times ``--speed``) and injects the faults of a
`FaultPlan` (byte drops and corruption, disconnects, stalls, resets).

Pattern: one select loop that owns the listening socket (or pty), the client connection, the
clock and the fault injection; it ends after ``max_runtime_s`` or on KeyboardInterrupt. The
bus adapter reaches the core through a `ControlQueue`, whose self-pipe wakes that select.
"""

from __future__ import annotations

import os
import queue
import random
import select
import socket
import time
import tty
from collections.abc import Callable
from typing import IO

from robocell.robot import protocol as proto
from robocell.services.firmware.simulator import FaultPlan, FirmwareCore


class _LineNoise:
    """Seeded byte drops and single-bit corruption on a stream."""

    def __init__(self, plan: FaultPlan, salt: int) -> None:
        self.plan = plan
        self.rng = random.Random(plan.seed * 2 + salt)
        self.dropped = 0
        self.corrupted = 0

    def apply(self, data: bytes) -> bytes:
        if not (self.plan.drop_rate or self.plan.corrupt_rate):
            return data
        out = bytearray()
        for byte in data:
            if self.rng.random() < self.plan.drop_rate:
                self.dropped += 1
                continue
            if self.rng.random() < self.plan.corrupt_rate:
                self.corrupted += 1
                byte ^= 1 << self.rng.randrange(7)
            out.append(byte)
        return bytes(out)


class _Clock:
    def __init__(self, speed: float) -> None:
        self.speed = speed
        self.t0 = time.monotonic()

    def sim(self) -> float:
        return (time.monotonic() - self.t0) * 1000.0 * self.speed

    def real_delay(self, sim_ms: float) -> float:
        return max(0.0, sim_ms - self.sim()) / 1000.0 / self.speed


def _open_line(port: int | None, pty_link: str | None, host: str
               ) -> tuple[socket.socket | None, int | None, str]:
    """The firmware's end of the serial line: (TCP listener or None, the pty's file
    descriptor or None, the URL a client opens)."""
    if pty_link is None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port or 0))
        listener.listen(1)
        return listener, None, f"socket://{host}:{listener.getsockname()[1]}"
    master, slave = os.openpty()
    tty.setraw(slave)
    device = os.ttyname(slave)
    if pty_link:
        if os.path.lexists(pty_link):
            os.unlink(pty_link)
        os.symlink(device, pty_link)
    return None, master, device


class FirmwareLine:
    """The firmware's end of the serial line, shared by both firmwares (the Python simulator
    and the AVR firmware in simavr): a TCP listener that takes one host at a time, or a pty;
    every byte in and out passes the line-noise faults. ``on_connect`` runs when a host
    connects, ``on_drop`` when it goes away (or a send to it fails)."""

    def __init__(self, port: int | None, pty_link: str | None, host: str, faults: FaultPlan,
                 on_connect: Callable[[], None], on_drop: Callable[[], None]) -> None:
        self.listener, self.fd, self.url = _open_line(port, pty_link, host)
        self.sock: socket.socket | None = None
        self.rx_noise, self.tx_noise = _LineNoise(faults, 1), _LineNoise(faults, 2)
        self.on_connect, self.on_drop = on_connect, on_drop

    def watch(self) -> list[int]:
        """The descriptor to wait on: the connected host's, else the listener's."""
        if self.fd is not None:
            return [self.fd]
        return [] if self.listener is None else [self.listener.fileno()]

    def send(self, data: bytes) -> None:
        if self.fd is None or not data:
            return  # nobody listens: the bytes are lost, as on a real line
        data = self.tx_noise.apply(data)
        try:
            if self.sock is not None:
                self.sock.sendall(data)
            else:
                os.write(self.fd, data)
        except OSError:
            self.drop()

    def drop(self) -> None:
        """Forget the connected host (a pty has none to forget)."""
        if self.sock is not None:
            self.sock.close()
            self.sock = self.fd = None
            self.on_drop()

    def service(self, readable: list[int]) -> bytes | None:
        """After a select on `watch`: accept a waiting host, or read what it sent. The bytes
        that arrived (through the noise), or None when there are none to feed."""
        if self.listener is not None and self.fd is None and self.listener.fileno() in readable:
            self.sock, _ = self.listener.accept()
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.fd = self.sock.fileno()
            self.on_connect()
            return None
        if self.fd is None or self.fd not in readable:
            return None
        try:
            chunk = self.sock.recv(4096) if self.sock is not None else os.read(self.fd, 4096)
        except OSError:
            chunk = b""
        if not chunk:
            self.drop()
            return None
        return self.rx_noise.apply(chunk)

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()


class ControlQueue(queue.Queue):
    """``(function, reply_queue)`` pairs for a select loop to run (`run_control`); each put
    also writes a byte to a pipe the loop selects on (the self-pipe pattern), so an idle loop
    answers at once instead of after its poll interval."""

    def __init__(self) -> None:
        super().__init__()
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)

    def fileno(self) -> int:
        return self._wake_read

    def put(self, item: object, block: bool = True, timeout: float | None = None) -> None:
        super().put(item, block, timeout)
        try:
            os.write(self._wake_write, b"!")
        except BlockingIOError:  # the pipe is full of wakes already: the loop will wake
            pass

    def quiet(self) -> None:
        """Read the wakes written so far (before running what was put)."""
        try:
            while os.read(self._wake_read, 4096):
                pass
        except BlockingIOError:
            pass


def control_watch(control: queue.Queue | None) -> list:
    """What a loop selects on for ``control``: its wake pipe, if it has one."""
    return [control] if isinstance(control, ControlQueue) else []


def run_control(control: queue.Queue | None, target: object) -> None:
    """Run the ``(function, reply_queue)`` pairs waiting on ``control`` with ``target`` on
    the calling loop's thread; each reply is the function's result or its exception."""
    if isinstance(control, ControlQueue):
        control.quiet()
    while control is not None and not control.empty():
        function, reply = control.get_nowait()
        try:
            reply.put(function(target))
        except Exception as exc:  # noqa: BLE001 - the caller gets the error
            reply.put(exc)


def _feed(core: FirmwareCore, chunk: bytes, buffer: bytearray, now: float,
          send: Callable[[bytes], None]) -> None:
    """Give the firmware what arrived at simulated time ``now``: real-time bytes at once,
    everything else into ``buffer`` until a newline ends a line."""
    for data in core.advance(now):
        send(data)
    for value in chunk:
        if value in proto.REALTIME_BYTES:
            for data in core.realtime(bytes([value]), now, time.time()):
                send(data)
            continue
        if value == 0x0A:
            if buffer:
                for data in core.line(bytes(buffer), now):
                    send(data)
            buffer.clear()
        elif len(buffer) < proto.MAX_LINE_LENGTH:
            buffer.append(value)


def serve(core: FirmwareCore, *, port: int | None = None, pty_link: str | None = None,
          speed: float = 1.0, faults: FaultPlan | None = None,
          ready: IO[str] | None = None, max_runtime_s: float | None = None,
          host: str = "127.0.0.1", control: queue.Queue | None = None) -> None:
    """Run the firmware until interrupted (or ``max_runtime_s``): over TCP on 127.0.0.1:port
    (port 0 picks a free one) or over a pty (its device path is announced; ``pty_link``
    also gets a symlink to it). Announces ``listening <url>`` on ``ready``. ``control``
    carries ``(function, reply_queue)`` pairs run on this loop's thread with the core (the
    bus adapter's way in, e.g. to scramble the twin)."""
    faults = faults or FaultPlan()
    clock = _Clock(speed)
    disconnects = sorted(faults.disconnect_after)
    stall_done = reset_done = False
    buffer = bytearray()
    started = time.monotonic()

    def connected() -> None:
        core._log("connect", t=clock.sim())
        line.send(core.banner())

    def dropped() -> None:
        core.disconnected(clock.sim())
        buffer.clear()

    line = FirmwareLine(port, pty_link, host, faults, connected, dropped)
    if ready is not None:
        ready.write(f"listening {line.url} boot={core.boot_id}\n")
        ready.flush()
    while max_runtime_s is None or time.monotonic() - started < max_runtime_s:
        run_control(control, core)
        for data in core.advance(clock.sim()):
            line.send(data)
        deadline = core.next_deadline()
        timeout = 0.2 if deadline is None else min(0.2, clock.real_delay(deadline))
        readable, _, _ = select.select([*line.watch(), *control_watch(control)], [], [],
                                       timeout)
        chunk = line.service(readable)
        if chunk is None:
            continue
        _feed(core, chunk, buffer, clock.sim(), line.send)
        count = core.accepted_count
        if disconnects and count >= disconnects[0]:
            disconnects.pop(0)
            core._log("inject", fault="disconnect", after=count)
            line.drop()
        elif faults.stall_after is not None and not stall_done and count >= faults.stall_after:
            stall_done = True
            core._log("inject", fault="stall", after=count, ms=faults.stall_ms)
            time.sleep(faults.stall_ms / 1000.0 / speed)
        elif faults.reset_after is not None and not reset_done and count >= faults.reset_after:
            reset_done = True
            core._log("inject", fault="reset", after=count)
            line.send(core.reset(clock.sim()))
    line.close()
