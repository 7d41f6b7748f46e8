"""Where the broker listens and how a client socket reaches it: endpoints, CURVE, link watch.

``$ROBOCELL_BUS`` is a base address, default ``tcp://127.0.0.1:7600``; from it port +0 is the
broker's subscribe side (XPUB), +1 its publish side (XSUB), +2 the command channel (ROUTER),
+3 the capture tap. Each can be overridden with ``$ROBOCELL_BUS_SUB``, ``_PUB``, ``_CMD``,
``_TAP``. A remote broker is reached with a CURVE key file (``--curve-key`` /
``$ROBOCELL_BUS_CURVE_KEY``) on its CURVE endpoint: +0 subscribe, +1 publish, +2 commands,
+3 service instances. Remote clients subscribe and, if their key allows it, command; a
service whose key has the service role (``--allow KEY.pub:service:NAME`` on the broker) also
publishes its own topics and registers there. Every remote link carries ZeroMQ heartbeats,
so a link that dies silently is noticed and made again.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import zmq
from zmq.utils.monitor import recv_monitor_message

from robocell.common.bus.keys import CurveKey, load_key
from robocell.common.bus.wire import MAX_MESSAGE_BYTES_ENV, max_message_bytes
from robocell.common.config import bus_address

# --- endpoints ----------------------------------------------------------------------------

DEFAULT_BUS = "tcp://127.0.0.1:7600"
BUS_ENV = "ROBOCELL_BUS"
SUB_ENV, PUB_ENV, CMD_ENV, TAP_ENV = ("ROBOCELL_BUS_SUB", "ROBOCELL_BUS_PUB", "ROBOCELL_BUS_CMD",
                                      "ROBOCELL_BUS_TAP")
CURVE_KEY_ENV = "ROBOCELL_BUS_CURVE_KEY"
SUB_PORT_OFFSET, PUB_PORT_OFFSET, CMD_PORT_OFFSET, TAP_PORT_OFFSET = 0, 1, 2, 3
SERVE_PORT_OFFSET = 3
"""On a remote (CURVE) endpoint, +3 is where service instances register (no tap there)."""
LINK_HEARTBEAT_MS = 1000
LINK_TIMEOUT_MS = 3000
"""ZeroMQ heartbeats of a remote link: a PING every second, the link closed (and made
again) after three seconds without an answer -- a cut cable or a host gone is noticed
instead of leaving a half-open TCP connection for the kernel's two hours."""
ZMQ_NOBLOCK = 1  # zmq.h: ZMQ_DONTWAIT; plain ints, because pyzmq's enum flags are slow
COPY_THRESHOLD = 65536
"""Frames at least this large are sent zero-copy (ZeroMQ takes the Python buffer);
smaller ones are copied, which is cheaper than tracking the buffer."""
CONNECT_WAIT_S = 2.0
LINGER_MS = 200


@dataclass(frozen=True)
class Endpoints:
    """Where the broker listens. Remote (``curve`` set), ``publish`` and ``serve`` are None
    unless the process serves there (its key needs the service role)."""

    subscribe: str
    publish: str | None
    command: str
    tap: str | None = None
    curve: CurveKey | None = None
    serve: str | None = None
    """Where a service instance registers when not on ``command`` (a remote broker)."""

    @property
    def register(self) -> str | None:
        """Where service instances register: the command endpoint locally, the instance
        port remotely; None for a remote process that only watches and commands."""
        return self.serve if self.curve is not None else (self.serve or self.command)

    @classmethod
    def from_base(cls, base: str, curve: CurveKey | None = None, serve: bool = False
                  ) -> Endpoints:
        """Endpoints at ports base+0 (subscribe), +1 (publish), +2 (command), +3 (tap).
        With ``curve`` (a remote broker's CURVE endpoint): subscribe and command, and with
        ``serve`` also publish (+1) and the instance port (+3)."""
        parts = urlsplit(base)
        if parts.scheme != "tcp" or parts.port is None:
            raise ValueError(f"bus address {base!r} must look like tcp://HOST:PORT; for ipc:// "
                             f"or other transports set {SUB_ENV}, {PUB_ENV} and {CMD_ENV}")
        host = parts.hostname or "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"

        def at(offset: int) -> str:
            return f"tcp://{host}:{parts.port + offset}"

        if curve is None:
            return cls(at(SUB_PORT_OFFSET), at(PUB_PORT_OFFSET), at(CMD_PORT_OFFSET),
                       at(TAP_PORT_OFFSET))
        return cls(at(SUB_PORT_OFFSET), at(PUB_PORT_OFFSET) if serve else None,
                   at(CMD_PORT_OFFSET), None, curve, at(SERVE_PORT_OFFSET) if serve else None)

    @classmethod
    def resolve(cls, broker: str | None = None, curve_key: str | Path | None = None,
                serve: bool = False) -> Endpoints:
        """Endpoints from arguments, else the environment (``$ROBOCELL_BUS``, else
        ``$ROBOCELL_BUS_PORT`` on loopback: :func:`robocell.common.config.bus_address`), else
        the loopback default. With a CURVE key the broker is remote: subscribe and command,
        and for a process that serves (``serve``) also publish and register."""
        key_path = curve_key or os.environ.get(CURVE_KEY_ENV) or None
        curve = load_key(key_path, need_broker=True) if key_path else None
        base = cls.from_base(broker or bus_address(), curve, serve)
        if broker or curve:
            return base
        env = os.environ
        return cls(env.get(SUB_ENV, base.subscribe), env.get(PUB_ENV, base.publish),
                   env.get(CMD_ENV, base.command), env.get(TAP_ENV, base.tap))

    def secure(self, sock: Any) -> None:
        """Make ``sock`` a CURVE client of the broker when this is a remote endpoint set."""
        if self.curve is not None:
            sock.curve_secretkey = self.curve.secret.encode("ascii")
            sock.curve_publickey = self.curve.public.encode("ascii")
            sock.curve_serverkey = self.curve.broker.encode("ascii")
            watch_link(sock)


def watch_link(sock: Any) -> None:
    """ZeroMQ heartbeats on ``sock``'s connections (LINK_HEARTBEAT_MS, LINK_TIMEOUT_MS)."""
    sock.heartbeat_ivl = LINK_HEARTBEAT_MS
    sock.heartbeat_timeout = LINK_TIMEOUT_MS
    sock.heartbeat_ttl = LINK_TIMEOUT_MS


class LinkWatch:
    """Watches one socket's connection to the broker (a ZeroMQ socket monitor) so that a
    caller who hears nothing can be told why: the broker refused this CURVE key, the CURVE
    handshake failed, or the broker dropped the connection (what libzmq does to a frame over
    the broker's size limit). Events are read only when asked (:meth:`problem`)."""

    EVENTS = ("EVENT_HANDSHAKE_FAILED_AUTH", "EVENT_HANDSHAKE_FAILED_PROTOCOL",
              "EVENT_HANDSHAKE_FAILED_NO_DETAIL", "EVENT_HANDSHAKE_SUCCEEDED",
              "EVENT_DISCONNECTED")

    def __init__(self, sock: Any, curve: bool) -> None:
        zmq = zmq_module()
        self.curve = curve
        self.auth_refused: int | None = None
        """ZAP status code of the latest refusal of this key (e.g. 400), else None."""
        self.handshake_failed: str | None = None
        """Why the latest CURVE handshake failed (other than a refusal), else None."""
        self.disconnects = 0
        """Times the broker link went down since the watch began."""
        events = 0
        for name in self.EVENTS:
            events |= getattr(zmq, name)
        self.sock = sock
        self.monitor = sock.get_monitor_socket(events)

    def read(self) -> None:
        """Take every queued event into the counters above."""
        zmq = zmq_module()
        while True:
            try:
                event = recv_monitor_message(self.monitor, ZMQ_NOBLOCK)
            except zmq.Again:
                return
            kind, value = event["event"], event["value"]
            if kind == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
                self.auth_refused = value
            elif kind == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL:
                self.handshake_failed = f"protocol error {value}"
            elif kind == zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL:
                self.handshake_failed = f"error {value}"
            elif kind == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.auth_refused = self.handshake_failed = None
            elif kind == zmq.EVENT_DISCONNECTED:
                self.disconnects += 1

    def problem(self, disconnects_before: int | None = None) -> str | None:
        """What is wrong with the link, if the monitor knows: a CURVE refusal or failed
        handshake, or (given the disconnect count when a request went out) a connection the
        broker dropped since."""
        self.read()
        if self.auth_refused is not None:
            return (f"the broker refused this CURVE key (ZAP status {self.auth_refused}): "
                    "ask the cell's operator to allow it (`robocell broker --allow "
                    "KEY.pub[:command]`)")
        if self.handshake_failed is not None:
            return (f"the CURVE handshake with the broker failed ({self.handshake_failed}): "
                    "check that this key file names the broker's current public key")
        if disconnects_before is not None and self.disconnects > disconnects_before:
            return ("the broker dropped the connection after the request was sent: a "
                    "request over the broker's message size limit is dropped that way "
                    f"(this process allows {max_message_bytes()} bytes, see "
                    f"{MAX_MESSAGE_BYTES_ENV}; the broker's may be lower), else the broker "
                    "restarted")
        return None

    def close(self) -> None:
        """Stop watching, then close the monitor. In this order: libzmq's I/O thread writes
        each event to the monitor with a blocking send, so an event (a handshake finishing,
        a disconnect) sent to an already closed monitor would block that thread, and with it
        every socket of the process, for good."""
        try:
            self.sock.disable_monitor()
        except zmq_module().ZMQError:  # the socket is already closed: no more events
            pass
        self.monitor.close(linger=0)


BROKER_ANSWER_S = 3.0
"""How long a command waits for a broker to answer at its address before saying none does."""
HANDSHAKE_FAILED = ("EVENT_HANDSHAKE_FAILED_AUTH", "EVENT_HANDSHAKE_FAILED_PROTOCOL",
                    "EVENT_HANDSHAKE_FAILED_NO_DETAIL")


def broker_problem(endpoints: Endpoints, within_s: float = BROKER_ANSWER_S) -> str | None:
    """None when a broker completes a ZeroMQ handshake on the command port of ``endpoints``
    (a remote service's: the instance port) within ``within_s``; else what is wrong and what
    to do, said for a user: no broker answers there, or it refused this CURVE key."""
    zmq = zmq_module()
    sock = zmq_context().socket(zmq.DEALER)
    sock.linger = 0
    endpoints.secure(sock)
    events = zmq.EVENT_HANDSHAKE_SUCCEEDED
    for name in HANDSHAKE_FAILED:
        events |= getattr(zmq, name)
    monitor = sock.get_monitor_socket(events)
    refused: int | None = None
    port = endpoints.serve or endpoints.command
    try:
        sock.connect(port)
        deadline = time.monotonic() + within_s
        while (left := deadline - time.monotonic()) > 0:
            if not monitor.poll(int(left * 1000) + 1):
                break
            event = recv_monitor_message(monitor)
            if event["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                return None
            if event["event"] == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
                refused = event["value"]
    finally:
        sock.disable_monitor()
        monitor.close(linger=0)
        sock.close()
    if refused is not None:
        role = "service:NAME" if endpoints.serve else "command"
        return (f"the broker at {port} refused this CURVE key (ZAP status "
                f"{refused}): ask the cell's operator to allow it (`robocell broker --allow "
                f"KEY.pub[:{role}]`)")
    kind = "instance" if endpoints.serve else "command"
    return (f"no broker answers at {endpoints.subscribe} (its {kind} port {port}) within "
            f"{within_s:g} s; start one with `robocell broker &` "
            "or the whole cell with `robocell up --sim`, or name another with --broker "
            "tcp://HOST:PORT ($ROBOCELL_BUS, $ROBOCELL_BUS_PORT)")


def zmq_context() -> Any:
    """The process's ZeroMQ context."""
    return zmq_module().Context.instance()


def zmq_module() -> Any:
    """The zmq module, imported on first use (command-line modules import this one)."""
    return zmq


def send_nowait(sock: Any, frames: list[bytes]) -> bool:
    """Send without blocking; False when the socket has no link to send on right now
    (a DEALER with no connected broker). The caller's retry or the dedup cache covers it."""
    try:
        sock.send_multipart(frames, zmq.NOBLOCK)
        return True
    except zmq.Again:
        return False
