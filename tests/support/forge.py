"""Helpers for hostile-input tests: a local process's own socket on the broker's publish port,
and hand-made frames with whatever stamps a test chooses (a forger's tools)."""

from __future__ import annotations

import threading
import time

import zmq

from robocell.common.bus import Endpoints
from robocell.common.bus.wire import Envelope, encode_frame, subscription

from .bus import RECV_TIMEOUT_S


def raw_publisher(endpoints: Endpoints, topic: str) -> zmq.Socket:
    """A local process's own socket on the broker's publish port, once a subscription to
    ``topic`` has reached it (so nothing it sends is dropped for want of one)."""
    sock = zmq.Context.instance().socket(zmq.XPUB)
    sock.linger = 0
    sock.connect(endpoints.publish)
    wanted = b"\x01" + subscription(topic)
    deadline = time.monotonic() + RECV_TIMEOUT_S
    while time.monotonic() < deadline:
        if sock.poll(200) and sock.recv().startswith(wanted):
            return sock
    sock.close()
    raise AssertionError(f"no subscription to {topic} reached the publisher")


def heartbeat(source: str, seq: int) -> bytes:
    """A well-formed heartbeat frame of ``source`` with sequence number ``seq``."""
    return encode_frame(Envelope("heartbeat", source, seq, time.time(), time.monotonic(), {
        "service": source, "state": "ready", "health": {}, "period_s": 1.0, "pid": 1,
        "host": "h", "uptime_s": 1.0, "commands": []}))


FORGED_SEQ = 2**64 - 10
"""A sequence number no real source reaches: it would pin a stream that took it."""
FORGED_LINE = 10**9
"""A firmware line past any real one."""
FUTURE_S = 1e6
"""How far ahead of now a forged status is stamped (about 11 days)."""


def forged_frames(boot_id: str, seq: int) -> list[bytes]:
    """One round of lies: a solved twin under the firmware simulator's name and boot id with
    a sequence number near 2^64 and a wall time in 2096, the same twin replayed, and a
    finished `cell.status` stamped 10^6 s ahead under the cell's name and another's."""
    now = time.time()
    twin = {"puzzle": "2x2x2", "facelets": "U" * 4 + "R" * 4 + "F" * 4 + "D" * 4 + "L" * 4
            + "B" * 4, "solved": True, "grips": {}, "arm_angles": {}, "boot_id": boot_id,
            "line": FORGED_LINE}
    status = {"cycle_id": "forged", "stage": "done", "detail": "forged"}
    return [encode_frame(Envelope(topic, source, s, wall, time.monotonic(), payload))
            for topic, source, s, wall, payload in (
                ("sim.twin_state", "firmware-sim", FORGED_SEQ, 4e9, twin),
                ("sim.twin_state", "replay:firmware-sim", seq, now, twin),
                ("cell.status", "cell", FORGED_SEQ, now + FUTURE_S, status),
                ("cell.status", "intruder", seq, now + FUTURE_S, status))]


class Forger:
    """A local process's own socket publishing :func:`forged_frames` every ``period`` s on a
    thread until closed (the pattern: a hostile publisher beside the cell)."""

    def __init__(self, endpoints: Endpoints, boot_id: str, period: float = 0.05) -> None:
        self.sock = raw_publisher(endpoints, "cell.status")
        self.boot_id = boot_id
        self.period = period
        self.sent = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="forger", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        seq = 0
        while not self._done.wait(self.period):  # ends when closed
            for frame in forged_frames(self.boot_id, seq):
                self.sock.send(frame)
                self.sent += 1
            seq += 1

    def close(self) -> None:
        self._done.set()
        self._thread.join()
        self.sock.close()
