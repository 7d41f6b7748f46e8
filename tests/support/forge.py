"""Helpers for hostile-input tests: a local process's own socket on the broker's publish port,
and hand-made frames with whatever stamps a test chooses (a forger's tools)."""

from __future__ import annotations

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
