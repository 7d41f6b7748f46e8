"""The bus client every service uses: publish, subscribe, commands, heartbeats, liveness.

A service is a :class:`Node`; it connects to the broker, publishes validated messages,
calls back on subscribed topics, answers commands, beats every second and knows who is
alive::

    from robocell.common.bus import Node

    def on_pose(msg):                              # msg: robocell.common.envelope.Envelope
        print("pose", msg.payload["pose"], "face", msg.payload["face"])

    def rescan(args, ctx):                         # runs in a worker thread
        return {"started": True}                   # -> the reply's result

    with Node("vision") as node:                   # endpoints from $ROBOCELL_BUS*
        node.subscribe("actuator.scan_pose", on_pose)
        node.serve("rescan", rescan)
        node.set_state("ready")
        node.publish("vision.cube_state", {...})   # validated against messages.py
        plan = node.call("solver", "solve", {"facelets": f}, timeout=2.0)  # or CommandFailed
        node.peers()                               # {"solver": PeerStatus(...), ...}
        node.wait()                                # until stop() or Ctrl-C

Lower-level pieces for tools and single-threaded code: :class:`Publisher`,
:class:`Subscriber` (``recv(timeout)``, ``recv_batch(timeout)``), :class:`CommandClient`,
:class:`Liveness`.

Pub/sub: a message is one frame, topic + zero byte + msgpack envelope (see
:mod:`robocell.common.envelope`); a burst on one topic (messages under COALESCE_GAP_S apart)
travels in batch frames of up to COALESCE_FRAME_BYTES. Publishers stamp and
encode with a constant prefix per (source, topic) and one struct call, count what they send
per topic and report it on ``bus.traffic``; receivers decode and check each envelope (each
batch) in one C call generated from :mod:`robocell.common.messages` (msgspec), falling back
to the explaining checks for anything unusual.

Endpoints (see :class:`Endpoints`): ``$ROBOCELL_BUS`` is a base address, default
``tcp://127.0.0.1:7600``; from it port +0 is the broker's subscribe side (XPUB), +1 its
publish side (XSUB), +2 the command channel (ROUTER), +3 the capture tap. Each can be
overridden with ``$ROBOCELL_BUS_SUB``, ``_PUB``, ``_CMD``, ``_TAP``. A remote broker is
reached with a CURVE key file (``--curve-key`` / ``$ROBOCELL_BUS_CURVE_KEY``); remote
clients can subscribe and, if their key allows it, command -- never publish.

Commands -- pattern: **broker-routed request/reply** (a simplified Majordomo). The broker
binds one ROUTER. Each service connects a DEALER whose routing id is ``s:<service>``;
clients connect DEALERs with a random routing id. A client sends
``[REQUEST, service, request]``; the broker forwards ``[REQUEST, client_id, request]`` to the
service's DEALER, the service answers ``[REPLY, client_id, reply]`` and the broker routes
it back. If no such service is connected the broker itself answers ``unavailable`` at once.
The client retries on silence like the guide's **Lazy Pirate** (same request id, resent until
the deadline); the service keeps a **dedup cache** of request ids, so a retry of a request
that is running or done is answered from the cache and never executed twice. Every call
ends in a result or an explicit error: ``unknown_command``, ``invalid_arguments``, ``busy``,
``timeout``, ``unavailable``, ``forbidden`` or ``failed``.

Threading: :meth:`Node.publish` and :meth:`Node.call` may be used from any thread.
Subscription callbacks run on the node's I/O thread (keep them short, hand long work to
your own thread); command handlers run on a small worker pool.
"""

from __future__ import annotations

import abc
import collections
import itertools
import os
import secrets
import socket as socketlib
import struct
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgpack
import msgspec

from robocell.common.config import bus_address
from robocell.common.curve_keys import CurveKey, load_key
from robocell.common.envelope import (
    BATCH_MARK,
    MAX_MESSAGE_BYTES_ENV,
    MAX_SEQ,
    MAX_SOURCE_CHARS,
    MAX_TOPIC_CHARS,
    N_ENVELOPE_FIELDS,
    SCHEMA_VERSION,
    TOPIC_END,
    DecodeError,
    Envelope,
    MessageError,
    array_header,
    batch_prefix,
    decode,
    decode_frame,
    encode,
    max_message_bytes,
    split_frame,
    subscription,
    unbatch_frame,
)
from robocell.common.messages import (
    COMMAND_ERRORS,
    LATCHED_TOPICS,
    LIFECYCLE_STATES,
    TOPIC_FAST_CHECKS,
    TOPIC_SPECS,
    TOPIC_WIRE_DECODERS,
    UNSET,
    WireDecoder,
    command_spec,
    topic_spec,
    validate,
    validate_args,
    validate_payload,
)
from robocell.common.messages import payload_map as _payload_map
from robocell.common.messages import payload_maps as _payload_maps
from robocell.errors import RobocellError

# --- endpoints ----------------------------------------------------------------------------

DEFAULT_BUS = "tcp://127.0.0.1:7600"
BUS_ENV = "ROBOCELL_BUS"
SUB_ENV, PUB_ENV, CMD_ENV, TAP_ENV = ("ROBOCELL_BUS_SUB", "ROBOCELL_BUS_PUB", "ROBOCELL_BUS_CMD",
                                      "ROBOCELL_BUS_TAP")
CURVE_KEY_ENV = "ROBOCELL_BUS_CURVE_KEY"
SUB_PORT_OFFSET, PUB_PORT_OFFSET, CMD_PORT_OFFSET, TAP_PORT_OFFSET = 0, 1, 2, 3

# --- wire constants of the command channel -------------------------------------------------

REQUEST = b"\x01"
REPLY = b"\x02"
HELLO = b"\x03"
"""service instance -> broker, every heartbeat: "I serve commands" (+ a msgpack map: commands,
retry_safe, period_s, pid, host). It registers the instance, again after a broker restart."""
BYE = b"\x04"
"""service instance -> broker when it stops: route nothing more to it."""
WELCOME = b"\x05"
"""broker -> service instance, in answer to its first HELLO: requests now reach it."""
SERVICE_ID_PREFIX = b"s:"
"""Routing ids of service instances: ``s:<service>#<instance token>``."""
INSTANCE_MARK = b"#"
"""Between the service name and the instance token in a service routing id."""
CLIENT_ID_PREFIX = b"c:"

# --- wire constants of the publish side ------------------------------------------------------

SUBSCRIBE_ALL = b"\x01"
"""The subscription to everything: the broker's, and that of any subscriber to every topic
(``bus record``, ``bus echo ''``); a publisher sees both alike."""
BROKER_SUBSCRIPTION = b"\x01\x00robocell-broker"
"""A subscription only the broker makes (no topic starts with a zero byte, so it matches no
message): its XSUB sends it to every publisher that (re)connects. A publisher that sees it
gives the broker its latched state (again): the broker came (back) and may have missed it.
Subscriptions to everything from subscribers pass the publishers too, and mean nothing to
them."""
REPLAY_PREFIX = "replay:"
"""``bus play`` sends each recorded message with this in front of its source: replayed
state is never taken for live state (the broker's cache prefers live messages, Liveness
ignores replayed heartbeats, the monitor shows them as replayed)."""


def is_replayed(source: str) -> bool:
    """True for the source of a message ``bus play`` sent (see REPLAY_PREFIX)."""
    return source.startswith(REPLAY_PREFIX)


ANSWER_MARK = b"\x00answer:"
"""How the channel of one subscriber's latched answers starts (see Subscriber): the broker
answers a subscription ``b"\x01" + channel + topic subscription``, where the channel is
``ANSWER_MARK + token + b"\x00"``, with the newest message of each latched topic it
matches, the channel in front, so that only that subscriber receives it. (No topic starts
with a zero byte: nobody else subscribes to it by chance.)"""

ZMQ_NOBLOCK = 1  # zmq.h: ZMQ_DONTWAIT; plain ints, because pyzmq's enum flags are slow
COPY_THRESHOLD = 65536
"""Frames at least this large are sent zero-copy (ZeroMQ takes the Python buffer);
smaller ones are copied, which is cheaper than tracking the buffer."""

# --- the fixed-width head of a published frame (see robocell.common.envelope) ---------------

ENVELOPE_HEAD = bytes([0x90 + N_ENVELOPE_FIELDS]) + msgpack.packb(SCHEMA_VERSION)
"""msgpack array header of the envelope, then the schema version."""
MSGPACK_UINT64 = 0xCF  # msgpack type byte of a 64-bit unsigned integer
MSGPACK_FLOAT64 = 0xCB  # msgpack type byte of a 64-bit float
STAMPS_FORMAT = "BQBdBd"  # struct format: seq (uint 64), wall_time, mono_time (float 64)
MAX_TOPIC_BYTES = 4 * MAX_TOPIC_CHARS + 1
"""How far into a frame the end of the topic is looked for (UTF-8: up to 4 bytes a char)."""
MAX_SOURCES_PER_TOPIC = 1024
"""Sources a subscriber tracks per topic (a rogue sender must not grow its tables)."""
RECV_BATCH = 1000
"""Messages a receiver takes from its socket in one go (Subscriber.recv_batch, Node)."""
QUEUE_FULL_BACKOFF_S = 0.0005
"""After ZeroMQ refused a message at the high-water mark, a publisher drops (and counts) its
messages for this long without asking again: each refusal costs pyzmq an exception of a few
microseconds, more than sending; the queue of PUB_HWM messages cannot drain in this time."""
TRAFFIC_TOPIC = "bus.traffic"
TRAFFIC_REPORT_PERIOD_S = 1.0
COALESCE_GAP_S = 200e-6
"""A message published on a topic less than this long after the previous one on that topic
(a rate above 5,000 a second) waits to go out in one batch frame with those that follow it
(see robocell.common.envelope). At any robot rate (1 kHz: 1 ms apart) nothing waits."""
COALESCE_WINDOW_S = 0.002
"""The longest a message waits in a batch: then the batch is sent, by the next publish or
by the process's flusher thread."""
COALESCE_FRAME_BYTES = 32 * 1024
"""A batch is sent as soon as its messages hold this many bytes (about 300 small state
messages): large enough that a hop's cost per frame is small beside its cost per byte,
small enough that the high-water marks, counted in frames, still bound memory (PUB_HWM x
33 KiB = 330 MB at the very worst)."""
COALESCE_MESSAGE_BYTES = 512
"""Larger messages always go alone (a batch saves per-message costs, not per-byte ones)."""

_encode_payload = msgspec.msgpack.Encoder().encode
"""payload -> msgpack bytes (str as str, bytes as bin: the same encoding as msgpack's; a
float always as float 64)."""
_seq_head = struct.Struct(">BQ").pack
"""(UINT64, seq) -> a sequence number as msgpack uint 64."""


# --- tuning ---------------------------------------------------------------------------------

PUB_HWM = 10_000
"""Messages queued per publisher socket before ZeroMQ drops (never blocks)."""
SUB_HWM = 2_000
"""Messages queued for one subscriber (in the broker, and again in the subscriber's socket)
before ZeroMQ drops for that subscriber only. Bounds the memory a stuck subscriber can cost
the broker to SUB_HWM x message size (2,000 x 100 KB images = 200 MB) and still absorbs
two seconds of a 1 kHz burst."""
HEARTBEAT_PERIOD_S = 1.0
STALE_AFTER_BEATS = 3
DEFAULT_TIMEOUT_S = 5.0
MAX_RETRY_INTERVAL_S = 1.0
DEDUP_CAPACITY = 4096
MAX_REQUEST_ID_CHARS = 128
"""Longest request id a service accepts (it keeps DEDUP_CAPACITY of them with their
replies: unbounded ids would let a caller fill its memory)."""
DEDUP_TTL_S = 300.0
CONNECT_WAIT_S = 2.0
DIAGNOSTIC_MIN_INTERVAL_S = 1.0
LINGER_MS = 200


@dataclass(frozen=True)
class Endpoints:
    """Where the broker listens. ``publish`` is None for a remote (read-only) broker."""

    subscribe: str
    publish: str | None
    command: str
    tap: str | None = None
    curve: CurveKey | None = None

    @classmethod
    def from_base(cls, base: str, curve: CurveKey | None = None) -> Endpoints:
        """Endpoints at ports base+0 (subscribe), +1 (publish), +2 (command), +3 (tap)."""
        parts = urlsplit(base)
        if parts.scheme != "tcp" or parts.port is None:
            raise ValueError(f"bus address {base!r} must look like tcp://HOST:PORT; for ipc:// "
                             f"or other transports set {SUB_ENV}, {PUB_ENV} and {CMD_ENV}")
        host = parts.hostname or "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"

        def at(offset: int) -> str:
            return f"tcp://{host}:{parts.port + offset}"

        return cls(at(SUB_PORT_OFFSET), None if curve else at(PUB_PORT_OFFSET),
                   at(CMD_PORT_OFFSET), None if curve else at(TAP_PORT_OFFSET), curve)

    @classmethod
    def resolve(cls, broker: str | None = None, curve_key: str | Path | None = None
                ) -> Endpoints:
        """Endpoints from arguments, else the environment (``$ROBOCELL_BUS``, else
        ``$ROBOCELL_BUS_PORT`` on loopback: :func:`robocell.common.config.bus_address`), else
        the loopback default. With a CURVE key the broker is remote: subscribe and command
        only."""
        key_path = curve_key or os.environ.get(CURVE_KEY_ENV) or None
        curve = load_key(key_path, need_broker=True) if key_path else None
        base = cls.from_base(broker or bus_address(), curve)
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


class LinkWatch:
    """Watches one socket's connection to the broker (a ZeroMQ socket monitor) so that a
    caller who hears nothing can be told why: the broker refused this CURVE key, the CURVE
    handshake failed, or the broker dropped the connection (what libzmq does to a frame over
    the broker's size limit). Events are read only when asked (:meth:`problem`)."""

    EVENTS = ("EVENT_HANDSHAKE_FAILED_AUTH", "EVENT_HANDSHAKE_FAILED_PROTOCOL",
              "EVENT_HANDSHAKE_FAILED_NO_DETAIL", "EVENT_HANDSHAKE_SUCCEEDED",
              "EVENT_DISCONNECTED")

    def __init__(self, sock: Any, curve: bool) -> None:
        zmq = _zmq()
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
        self.monitor = sock.get_monitor_socket(events)

    def read(self) -> None:
        """Take every queued event into the counters above."""
        from zmq.utils.monitor import recv_monitor_message

        zmq = _zmq()
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
        self.monitor.close(linger=0)


def _context() -> Any:
    return _zmq().Context.instance()


def _zmq() -> Any:
    """The zmq module, imported on first use (command-line modules import this one)."""
    import zmq

    return zmq


_wall_clock = time.time
_mono_clock = time.monotonic

# --- publishing -----------------------------------------------------------------------------


class _PublishRoute:
    """One declared topic of one publisher: the constant head of its frames, its payload
    check, and what was sent on it (counted here, reported on ``bus.traffic``)."""

    __slots__ = ("topic", "prefix", "head", "topic_head", "batch_head", "overhead", "check",
                 "latched", "seq", "unsent", "last", "last_stamps", "last_data", "messages",
                 "bytes", "dropped", "counted")

    def __init__(self, topic: str, source: str) -> None:
        self.topic = topic
        topic_bytes = topic.encode()
        # the envelope up to the sequence number, which never changes for this (source,
        # topic): msgpack array header, version, topic, source.
        self.topic_head = topic_bytes + TOPIC_END
        """what a frame of this topic starts with, before the envelope (or the batch)."""
        self.prefix = (self.topic_head + ENVELOPE_HEAD + msgpack.packb(topic)
                       + msgpack.packb(source))
        self.head = struct.Struct(f">{len(self.prefix)}s{STAMPS_FORMAT}").pack
        """(prefix, UINT64, seq, FLOAT64, wall, FLOAT64, mono) -> the frame up to the
        payload: seq as msgpack uint 64, the stamps as msgpack float 64, in one call."""
        self.overhead = len(self.prefix) - len(self.topic_head) + struct.calcsize(
            f">{STAMPS_FORMAT}")
        """bytes of an envelope of this topic that are not its payload."""
        self.batch_head = self.topic_head + batch_prefix(topic, source)
        """what a batch frame of this topic and source starts with (see envelope)."""
        self.last = -1.0
        """monotonic time of the latest message published on it."""
        self.last_stamps = (0, 0.0, 0.0)
        self.last_data: bytes | None = None
        """(seq, wall, mono) and encoded payload of the latest message (of a latched topic
        only), sent again to a broker that comes back."""
        self.check = TOPIC_FAST_CHECKS[topic]
        self.latched = topic in LATCHED_TOPICS
        self.seq = 0
        self.unsent = 0
        """sequence numbers used up by Publisher.envelope (made, not sent)"""
        self.messages = self.bytes = self.dropped = 0
        self.counted = int(topic != TRAFFIC_TOPIC)
        """1 when a message on it counts in ``Publisher.sent`` (the publisher's own traffic
        reports do not)."""


class Publisher:
    """Validated, sequenced publishing to the broker; thread-safe.

    The socket is an XPUB connected to the broker's XSUB: it behaves like a PUB and also
    tells us when the broker's subscription arrived, i.e. when the link is up -- so messages
    sent at start-up are not lost. It never blocks: with ZMQ_XPUB_NODROP and a non-blocking
    send, a message that would exceed the high-water mark is refused by ZeroMQ and counted
    here as dropped, per topic. What was sent (messages, bytes, drops per topic) is
    published on ``bus.traffic`` every second while there is traffic and when the publisher
    closes; the broker adds these reports up into ``bus.stats``.

    ``on_subscription`` (the broker's own publisher) is called with every subscription
    message that passes by on its way from the subscribers to the publishers.
    """

    def __init__(self, source: str, endpoints: Endpoints | None = None, *,
                 hwm: int = PUB_HWM, check: bool = True, max_bytes: int | None = None,
                 on_subscription: Callable[[bytes], None] | None = None) -> None:
        import zmq

        if not source or len(source) > MAX_SOURCE_CHARS:
            raise ValueError(f"publisher source {source!r} must be 1 to {MAX_SOURCE_CHARS} "
                             "characters")
        self.source = source
        self.instance = f"{source}-{os.getpid()}-{secrets.token_hex(4)}"
        self.endpoints = endpoints or Endpoints.resolve()
        if self.endpoints.publish is None:
            raise ValueError("this broker is remote and read-only: publishing is not allowed "
                             "(run the publisher on the cell's host)")
        self.check = check
        self.max_bytes = max_bytes
        self.on_subscription = on_subscription
        self._lock = threading.Lock()
        self._acquire, self._release = self._lock.acquire, self._lock.release
        self._routes: dict[str, _PublishRoute] = {}
        self._pack = _encode_payload
        self._limit = max_message_bytes() if max_bytes is None else max_bytes
        self._latched: dict[str, bytes | _PublishRoute] = {}
        """topic -> its latest envelope: as sent (send_frame), or kept by its route"""
        self._linked = False
        self._full_until = 0.0  # mono time until which the queue is taken to be full
        self._seen: list[bytes] = []  # subscriptions for on_subscription
        self._closed = False
        # the batch being gathered (one topic, consecutive sequence numbers), by column
        self._pending: list[bytes] = []  # encoded payloads
        self._walls: list[float] = []
        self._monos: list[float] = []
        self._pending_route: _PublishRoute | None = None
        self._pending_seq = 0  # sequence number of its first message
        self._pending_since = 0.0  # mono time of its first message
        self._pending_bytes = 0  # what its messages would be alone
        self._wall_offset = 0.0  # wall minus monotonic time at its first message
        self._reported = -1  # messages sent (bus.traffic excluded) at the last report
        self._replayed = 0  # frames sent as they were (send_frame)
        self.sent_before_link = 0
        self._sock = _context().socket(zmq.XPUB)
        self._send = zmq.backend.Socket.send  # pyzmq's own, without its Python wrapper
        self._again = zmq.Again
        self._sock.sndhwm = hwm
        self._sock.linger = LINGER_MS
        self._sock.setsockopt(zmq.XPUB_VERBOSE, 1)  # see every (re)subscription
        self._sock.setsockopt(zmq.XPUB_NODROP, 1)  # at the HWM: refuse (counted), not drop
        self._sock.connect(self.endpoints.publish)
        _traffic_reporter().add(self)
        self._flusher = _flusher()
        self._flusher.add(self)

    def wait_linked(self, timeout: float = CONNECT_WAIT_S) -> bool:
        """Wait until the broker subscribed to us (the link is up); False on timeout."""
        import zmq

        deadline = time.monotonic() + timeout
        with self._lock:
            self._drain_subscriptions()
            while not self._linked:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._sock.poll(int(remaining * 1000) + 1, zmq.POLLIN):
                    return self._linked
                self._drain_subscriptions()
        return True

    def check_link(self) -> bool:
        """Notice a (re)connected broker and give it our latched state again; call this now
        and then (Node does, every heartbeat). True when the link is up."""
        with self._lock:
            self._drain_subscriptions()
            linked = self._linked
            seen, self._seen = self._seen, []
        for frame in seen:  # outside the lock: the callback may send
            self.on_subscription(frame)  # type: ignore[misc]
        return linked

    @property
    def socket(self) -> Any:
        """The XPUB socket (to poll for subscriptions; use check_link() to read them)."""
        return self._sock

    def _drain_subscriptions(self) -> None:
        import zmq

        while True:
            try:
                frame = self._sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            if self.on_subscription is not None:
                self._seen.append(frame)  # handed to on_subscription by check_link()
            # The broker subscribes to everything and makes BROKER_SUBSCRIPTION when it
            # attaches; the subscriptions of its subscribers pass by here too (a subscriber
            # to everything looks like the broker's b"\x01") and mean nothing to us.
            if frame == BROKER_SUBSCRIPTION:
                # the broker came (back): give it our latched state, which it may have missed
                self._flush()
                for topic, data in self._latched.items():
                    self._send_frame(topic.encode() + TOPIC_END + data
                                     if type(data) is bytes else self._latest(data))
                self._linked = True
            elif frame == SUBSCRIBE_ALL:
                self._linked = True

    def _route(self, topic: str) -> _PublishRoute:
        """The route of a declared topic, made once."""
        route = self._routes.get(topic)
        if route is None:
            topic_spec(topic)  # raises UnknownTopicError with the list of declared topics
            route = self._routes[topic] = _PublishRoute(topic, self.source)
        return route

    def envelope(self, topic: str, payload: dict[str, Any]) -> Envelope:
        """The next envelope of ``topic`` from this source (validated when ``check``);
        the sequence number is used up."""
        route = self._route(topic)
        if self.check and not route.check(payload):
            validate_payload(topic, payload)
        with self._lock:
            seq = route.seq
            route.seq = seq + 1
            route.unsent += 1
        return Envelope.now(topic, self.source, seq, payload)

    def publish(self, topic: str, payload: dict[str, Any]) -> int:
        """Validate, stamp, encode and send; the message's sequence number (the envelope
        is ``Envelope(topic, source, seq, ...)``; :meth:`envelope` makes one without
        sending). Raises MessageError (ValidationError,
        UnknownTopicError, OversizeError) when the message is refused (then no sequence
        number is used up). A message ZeroMQ refuses at the high-water mark is counted as
        dropped (the sequence number is used up: receivers see the gap).

        A message published less than COALESCE_GAP_S after the previous one on its topic
        joins a batch frame with those that follow (sent when full, when another topic or a
        slower message comes, or after COALESCE_WINDOW_S by the flusher thread): a burst
        costs every hop one frame per batch instead of one per message.

        This is the hot path of every publisher, written out: one dict lookup for the
        topic's route, the generated payload check, one struct call for the constant head
        and the stamps, one msgpack call for the payload, one socket send (or a list
        append)."""
        route = self._routes.get(topic)
        if route is None:
            route = self._route(topic)
        if self.check and not route.check(payload):
            validate_payload(topic, payload)  # raises, saying what is wrong
        try:
            data = self._pack(payload)
        except (TypeError, ValueError, OverflowError):
            self._explain(route, payload)  # raises the explanatory DecodeError
            raise
        size = len(data) + route.overhead
        if size > self._limit:
            self._explain(route, payload)  # raises the explanatory OversizeError
        self._acquire()  # (the lock's own methods: a with statement costs twice as much)
        try:
            seq = route.seq
            route.seq = seq + 1
            mono = _mono_clock()
            burst = mono - route.last < COALESCE_GAP_S and size <= COALESCE_MESSAGE_BYTES
            route.last = mono
            pending = self._pending
            if pending:
                if (burst and self._pending_route is route
                        and mono - self._pending_since < COALESCE_WINDOW_S):
                    # It joins the batch: the hot path of a burst. The wall time follows
                    # the monotonic clock from the batch's first message (at most
                    # COALESCE_WINDOW_S earlier); its latched copy is kept by _flush.
                    pending.append(data)
                    self._walls.append(mono + self._wall_offset)
                    self._monos.append(mono)
                    self._pending_bytes += size
                    if self._pending_bytes >= COALESCE_FRAME_BYTES:
                        self._flush()
                    return seq
                self._flush()
            wall = _wall_clock()
            if not self._linked:
                self._drain_subscriptions()
                if not self._linked:
                    self.sent_before_link += 1
            if burst:  # the first of a batch
                pending.append(data)
                self._walls.append(wall)
                self._monos.append(mono)
                self._pending_route, self._pending_since = route, mono
                self._pending_seq, self._pending_bytes = seq, size
                self._wall_offset = wall - mono
                if self._flusher.idle:  # (read after the append: see _Flusher)
                    self._flusher.wake()
            else:
                if route.latched:
                    self._latched[topic] = route
                    route.last_stamps, route.last_data = (seq, wall, mono), data
                if mono >= self._full_until:
                    frame = route.head(route.prefix, MSGPACK_UINT64, seq, MSGPACK_FLOAT64,
                                       wall, MSGPACK_FLOAT64, mono) + data
                    try:
                        self._send(self._sock, frame, ZMQ_NOBLOCK, size < COPY_THRESHOLD)
                        route.messages += 1
                        route.bytes += len(frame)
                    except self._again:  # the queue to the broker is full
                        route.dropped += 1
                        self._full_until = mono + QUEUE_FULL_BACKOFF_S
                else:
                    route.dropped += 1
        finally:
            self._release()
        return seq

    def _explain(self, route: _PublishRoute, payload: dict[str, Any]) -> None:
        """Raise the explanatory error of a payload that cannot be sent (encode says why)."""
        encode(Envelope(route.topic, self.source, route.seq, 0.0, 0.0, payload),
               self.max_bytes)

    @staticmethod
    def _latest(route: _PublishRoute) -> bytes:
        """The frame of the latest message published on ``route`` (a latched topic)."""
        seq, wall, mono = route.last_stamps
        return route.head(route.prefix, MSGPACK_UINT64, seq, MSGPACK_FLOAT64, wall,
                          MSGPACK_FLOAT64, mono) + route.last_data

    @property
    def sent(self) -> int:
        """Messages published and replayed through this publisher (whether ZeroMQ took them
        or they were dropped), its own ``bus.traffic`` reports excluded: counted by the
        routes' sequence numbers, not on the hot path."""
        return self._replayed + sum(route.seq - route.unsent
                                    for route in list(self._routes.values()) if route.counted)

    def flush(self) -> None:
        """Send the batch being gathered, if any (the flusher thread calls this)."""
        with self._lock:
            if self._pending and not self._closed:
                self._flush()

    def _flush(self) -> None:
        """Send the pending batch (lock held); counted and dropped as one message is."""
        route, bodies, walls, monos = (self._pending_route, self._pending, self._walls,
                                       self._monos)
        self._pending, self._walls, self._monos = [], [], []
        if route is None or not bodies:
            return
        n = len(bodies)
        if route.latched:  # its newest message, to send again to a broker that comes back
            self._latched[route.topic] = route
            route.last_stamps = (self._pending_seq + n - 1, walls[-1], monos[-1])
            route.last_data = bodies[-1]
        mono = _mono_clock()
        if mono >= self._full_until:
            if n == 1:
                frame = route.head(route.prefix, MSGPACK_UINT64, self._pending_seq,
                                   MSGPACK_FLOAT64, walls[0], MSGPACK_FLOAT64,
                                   monos[0]) + bodies[0]
            else:  # the batch frame, by column (see robocell.common.envelope)
                parts = [route.batch_head, _seq_head(MSGPACK_UINT64, self._pending_seq),
                         _encode_payload(walls), _encode_payload(monos), array_header(n)]
                parts += bodies
                frame = b"".join(parts)
            try:
                self._send(self._sock, frame, ZMQ_NOBLOCK, len(frame) < COPY_THRESHOLD)
                route.messages += n
                route.bytes += len(frame)
                return
            except self._again:
                self._full_until = mono + QUEUE_FULL_BACKOFF_S
        route.dropped += n

    def send_frame(self, frame: bytes, count: bool = True, latch: bool = True) -> None:
        """Send an already encoded message frame as is (replay of a recording, the
        broker's last-value cache); counted under its topic like published ones unless
        ``count`` is False (the broker's replays: someone else's messages, counted once).
        A latched topic's frame is kept to be sent again to a broker that comes back,
        unless ``latch`` is False (the broker's cache answers: by then they may be old)."""
        # (the broker's answers carry a subscriber's channel in front: not counted, not kept)
        topic, data = split_frame(frame) if count or latch else ("", b"")
        with self._lock:
            if self._pending:
                self._flush()  # what was published before goes first
            if not self._linked:
                self._drain_subscriptions()
                if not self._linked:
                    self.sent_before_link += 1
            if latch and topic in LATCHED_TOPICS:
                self._latched[topic] = data
            route = self._routes.get(topic) if count and topic in TOPIC_SPECS else None
            if self._send_frame(frame) and count:
                if route is None and topic in TOPIC_SPECS:
                    route = self._route(topic)
                if route is not None:
                    route.messages += 1
                    route.bytes += len(frame)
            elif route is not None:
                route.dropped += 1
            self._replayed += 1

    def _send_frame(self, frame: bytes) -> bool:
        try:
            self._send(self._sock, frame, ZMQ_NOBLOCK, len(frame) < COPY_THRESHOLD)
            return True
        except self._again:
            return False

    def traffic(self) -> dict[str, dict[str, int]]:
        """What was sent so far, per topic: messages, bytes, dropped."""
        with self._lock:
            if self._pending and not self._closed:
                self._flush()
            return {t: {"messages": r.messages, "bytes": r.bytes, "dropped": r.dropped}
                    for t, r in self._routes.items() if t != TRAFFIC_TOPIC}

    def report_traffic(self, force: bool = False) -> bool:
        """Publish ``bus.traffic`` if anything was sent since the last report (or
        ``force``); True if a report was sent. The reporter thread calls this every
        second, close() once more."""
        with self._lock:
            if self._closed:
                return False
            traffic_route = self._routes.get(TRAFFIC_TOPIC)
            sent = self.sent
            if sent == self._reported and not force:
                return False
            self._reported = sent
            reports_dropped = traffic_route.dropped if traffic_route else 0
        payload = {"instance": self.instance, "topics": self.traffic(),
                   "before_link": self.sent_before_link}
        try:
            self.publish(TRAFFIC_TOPIC, payload)
        except MessageError as exc:  # e.g. a source name that makes the message too big
            print(f"{self.source}: traffic report refused: {exc}", file=sys.stderr)
            return False
        with self._lock:
            if self._routes[TRAFFIC_TOPIC].dropped > reports_dropped:
                # the report met a full queue: the next tick sends it again
                self._reported = -1
                return False
        return True

    def close(self) -> None:
        _traffic_reporter().discard(self)
        self._flusher.discard(self)
        if not self._closed:
            self.flush()
            self.report_traffic()
        with self._lock:
            self._closed = True
            self._sock.close()


class _PublisherThread(abc.ABC):
    """A daemon thread of this process that works on every open Publisher; a kind of it
    says what the thread does (``_run``)."""

    thread_name = "robocell-bus"

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._publishers: weakref.WeakSet[Publisher] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)

    def add(self, publisher: Publisher) -> None:
        with self._lock:
            self._publishers.add(publisher)

    def discard(self, publisher: Publisher) -> None:
        with self._lock:
            self._publishers.discard(publisher)

    def _each(self, what: str, act: Callable[[Publisher], Any]) -> list[Publisher]:
        """``act`` on every open publisher (a failure is reported, the rest go on); the
        publishers acted on."""
        with self._lock:
            publishers = list(self._publishers)
        for publisher in publishers:
            try:
                act(publisher)
            except Exception as exc:  # a closed socket in a race with close(): go on
                print(f"bus {what} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return publishers

    @abc.abstractmethod
    def _run(self) -> None:
        """The thread's loop (never returns)."""


class _TrafficReporter(_PublisherThread):
    """Asks every open Publisher, once a second, to report its traffic (so that a
    publisher that went quiet is still counted in full)."""

    thread_name = "robocell-bus-traffic"

    def _run(self) -> None:
        while True:
            time.sleep(TRAFFIC_REPORT_PERIOD_S)
            self._each("traffic report", Publisher.report_traffic)


class _Flusher(_PublisherThread):
    """Sends the batches publishers gather: every COALESCE_WINDOW_S it flushes every
    publisher, for as long as any gathers a batch; then it is idle (blocked on its event),
    which is always the case below 1 / COALESCE_GAP_S messages a second per topic. A
    publisher that starts a batch wakes it only when idle (an Event costs more than the rest
    of a publish). No batch is missed: the thread marks itself idle before its last look for
    batches, a publisher looks at the mark after adding to its batch (both under the GIL, in
    that order)."""

    thread_name = "robocell-bus-flush"

    def __init__(self) -> None:
        super().__init__()
        self._event = threading.Event()
        self.wake = self._event.set
        self.idle = True

    def _run(self) -> None:
        while True:
            self._event.wait()
            self._event.clear()
            self.idle = False
            while True:
                time.sleep(COALESCE_WINDOW_S)
                publishers = self._each("batch flush", Publisher.flush)
                self.idle = True
                if not any(publisher._pending for publisher in publishers):
                    break
                self.idle = False


_threads: dict[type, _PublisherThread] = {}
_threads_lock = threading.Lock()


def _per_process(kind: type[_PublisherThread]) -> Any:
    """The process's thread of ``kind``, started on first use (again in a forked child)."""
    with _threads_lock:
        thread = _threads.get(kind)
        if thread is None or thread.pid != os.getpid():
            thread = _threads[kind] = kind()
            thread._thread.start()
        return thread


def _traffic_reporter() -> _TrafficReporter:
    return _per_process(_TrafficReporter)


def _flusher() -> _Flusher:
    return _per_process(_Flusher)


# --- subscribing -----------------------------------------------------------------------------


@dataclass
class ReceiveStats:
    """What a subscriber saw: accepted, refused by reason, duplicates, sequence gaps."""

    received: int = 0
    rejected: collections.Counter[str] = field(default_factory=collections.Counter)
    duplicates: int = 0
    gaps: int = 0
    restarts: int = 0

    def as_health(self) -> dict[str, Any]:
        return {"received": self.received, "rejected": dict(self.rejected),
                "duplicates": self.duplicates, "dropped": self.gaps}


class Rejection(RobocellError):
    """A message that was refused, with the MessageError that explains it."""

    def __init__(self, error: MessageError, topic: str | None, size: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.topic = topic
        self.size = size


class Subscriber:
    """Receives validated messages of chosen topics; for single-threaded use.

    ``subscribe("heartbeat")`` is exact; ``subscribe("vision.", prefix=True)`` or
    ``subscribe("")`` (everything) match by prefix. :meth:`recv` returns the next good
    message; malformed ones are counted in ``stats.rejected`` (and passed to ``on_reject``)
    and never raise. A message is one frame, or one envelope of a batch frame (each is
    judged on its own, see robocell.common.envelope); should a sender send several frames in
    one ZeroMQ message, each is judged as a message of its own. A message that is not newer
    (sequence number and send time) than the last one accepted from its source on its topic
    is dropped as a repeat: the broker's latched answer may be older than what a subscriber
    already got straight through the proxy, and a publisher resends its latched state to a
    restarted broker. Sequence gaps count as ``stats.gaps``; a smaller sequence number sent
    later is a restart of the source.

    Latched state: each subscription is followed by a second one on this subscriber's own
    answer channel (``answer_channel`` + the topic's subscription); the broker answers that
    with the newest message of each latched topic it matches, on the channel, so only this
    subscriber receives it. It is asked after the topic's own subscription has passed the
    proxy, so the answer is at least as new as anything forwarded before this subscriber
    joined; what comes after arrives directly. (An answer sent to everyone instead could
    still be on its way when someone else joins and a newer message passes: that one would
    get the older message first.)
    """

    def __init__(self, topics: Iterable[str] = (), endpoints: Endpoints | None = None, *,
                 hwm: int = SUB_HWM, check: bool = True, max_bytes: int | None = None,
                 on_reject: Callable[[Rejection], None] | None = None) -> None:
        import zmq

        self.endpoints = endpoints or Endpoints.resolve()
        self.check = check
        self.max_bytes = max_bytes
        self._limit = max_message_bytes() if max_bytes is None else max_bytes
        self.on_reject = on_reject
        self.stats = ReceiveStats()
        self.answer_channel = ANSWER_MARK + secrets.token_hex(8).encode() + TOPIC_END
        """What the broker's answers to this subscriber start with (see above)."""
        self._backlog: collections.deque[Envelope] = collections.deque()
        """accepted messages of a batch frame not yet returned (recv returns them first)."""
        self._exact: set[str] = set()
        self._prefixes: set[str] = set()
        self.first_seq: dict[tuple[str, str], int] = {}
        """(source, topic) -> first sequence number received (gaps are counted after it)."""
        self._streams: dict[str, dict[str, list[Any]]] = collections.defaultdict(dict)
        """topic -> source -> [latest sequence number, its send time]."""
        self._routes: dict[bytes, tuple[str, WireDecoder | None, bool,
                                        dict[str, list[Any]]]] = {}
        """topic bytes -> (topic, its decoder, subscribed?, its streams): see _route."""
        self.sock = _context().socket(zmq.SUB)
        self._recv = zmq.backend.Socket.recv  # pyzmq's own, without its Python wrapper
        self.sock.rcvhwm = hwm
        self.sock.linger = 0
        self.endpoints.secure(self.sock)
        self.sock.connect(self.endpoints.subscribe)
        for topic in topics:
            self.subscribe(topic)

    def subscribe(self, topic: str, prefix: bool = False) -> None:
        import zmq

        if prefix or topic == "":
            self._prefixes.add(topic)
        else:
            topic_spec(topic)  # an undeclared topic is a programming error: say so now
            self._exact.add(topic)
        self._routes.clear()  # "subscribed?" may have changed
        self.sock.setsockopt(zmq.SUBSCRIBE, subscription(topic, prefix))
        # then ask for the latched state on our own channel (after the subscription itself)
        self.sock.setsockopt(zmq.SUBSCRIBE, self.answer_channel + subscription(topic, prefix))

    def unsubscribe(self, topic: str) -> None:
        import zmq

        prefix = topic in self._prefixes
        self._exact.discard(topic)
        self._prefixes.discard(topic)
        self._routes.clear()
        self.sock.setsockopt(zmq.UNSUBSCRIBE, subscription(topic, prefix))
        self.sock.setsockopt(zmq.UNSUBSCRIBE, self.answer_channel + subscription(topic, prefix))

    def unwrap(self, frame: bytes) -> bytes:
        """The message frame in ``frame``: itself, or the broker's answer on our channel
        without the channel."""
        if frame[:1] == TOPIC_END and frame.startswith(self.answer_channel):
            return frame[len(self.answer_channel):]
        return frame

    @property
    def last_seq(self) -> dict[tuple[str, str], int]:
        """(source, topic) -> latest sequence number received."""
        return {(source, topic): stream[0] for topic, streams in self._streams.items()
                for source, stream in streams.items()}

    @property
    def last_wall(self) -> dict[tuple[str, str], float]:
        """(source, topic) -> send time of the latest message received."""
        return {(source, topic): stream[1] for topic, streams in self._streams.items()
                for source, stream in streams.items()}

    def wanted(self, topic: str) -> bool:
        return topic in self._exact or any(topic.startswith(p) for p in self._prefixes)

    def recv(self, timeout: float | None = None) -> Envelope | None:
        """The next accepted message, or None when ``timeout`` seconds pass without one."""
        if self._backlog:
            return self._backlog.popleft()
        take = self.take
        try:  # a message already queued: no poll, no clock (the hot path under load)
            env = take(ZMQ_NOBLOCK)
            if env is not None:
                return env
        except _zmq().Again:  # (evaluated only when raised)
            pass
        zmq = _zmq()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                env = take(ZMQ_NOBLOCK)
            except zmq.Again:
                if not self.sock.poll(None if deadline is None else
                                      max(0, int((deadline - time.monotonic()) * 1000))):
                    return None
                continue
            if env is not None:
                return env
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def recv_batch(self, timeout: float | None = None, max_count: int = RECV_BATCH
                   ) -> list[Envelope]:
        """Every accepted message already queued, up to ``max_count``, after waiting up to
        ``timeout`` seconds for the first; [] when none came. For consumers of high rates:
        one Python call per batch instead of several per message."""
        first = self.recv(timeout)
        if first is None:
            return []
        batch = [first]
        backlog = self._backlog
        if backlog:
            batch.extend(backlog)
            backlog.clear()
        append, handle, recv, sock = batch.append, self.handle_frame, self._recv, self.sock
        try:
            while len(batch) < max_count:
                env = handle(recv(sock, ZMQ_NOBLOCK))
                if env is not None:
                    append(env)
                    if backlog:  # the rest of a batch frame
                        batch.extend(backlog)
                        backlog.clear()
        except _zmq().Again:  # (evaluated only when raised)
            pass
        return batch

    def take(self, flags: int = 0) -> Envelope | None:
        """Receive one message from the socket and accept it (the Envelope) or refuse it
        (None: counted, passed to ``on_reject``); raises zmq.Again with ZMQ_NOBLOCK when
        nothing is queued."""
        if self._backlog:
            return self._backlog.popleft()
        return self.handle_frame(self._recv(self.sock, flags))

    def handle(self, frames: list[Any]) -> Envelope | None:
        """Accept or refuse one received ZeroMQ message given as its frames."""
        if len(frames) != 1:
            self._refuse(_frame_count_error(frames), None, sum(map(len, frames)))
            return None
        frame = frames[0]
        return self.handle_frame(frame if isinstance(frame, bytes) else frame.bytes)

    def handle_frame(self, frame: bytes) -> Envelope | None:
        """Decode, validate and sequence-check one message frame: the Envelope, or None
        when refused (counted in ``stats``), not subscribed, or a repeat of a message
        already seen. Of a batch frame the first accepted message is returned and the
        others are queued for :meth:`recv` (``recv_batch`` returns them all).

        The hot path of every receiver, written out: find the topic's end, look its route
        up, one call that decodes the envelope and checks it against the topic's
        declaration in C (a WireDecoder generated from messages.py), the sequence check,
        the Envelope. Anything unusual goes to the slow path, which decodes again with the
        explaining checks. Never raises: should checking a message fail unexpectedly, it is
        refused (reason ``internal``) like any bad message."""
        try:
            return self._handle_frame(frame)
        except Exception as exc:  # a receiver never dies of a message
            self._refuse(InternalError(f"checking the message raised "
                                       f"{type(exc).__name__}: {exc}"), None, len(frame))
            return None

    def _handle_frame(self, frame: bytes) -> Envelope | None:
        """handle_frame without the guard."""
        end = frame.find(TOPIC_END, 0, MAX_TOPIC_BYTES)
        route = self._routes.get(frame[:end]) if end > 0 else None
        if route is None:
            if end == 0 and frame.startswith(self.answer_channel):  # the broker's answer
                return self.handle_frame(frame[len(self.answer_channel):])
            route = self._route(frame, end)
            if route is None:
                return self._handle_slow(frame)  # undeclared topic or no topic at all
        name, wire, wanted, streams = route
        if not wanted:
            return None  # a frame that followed a subscribed one in a multi-frame message
        size = len(frame) - end - 1
        if wire is None or size > self._limit:
            return self._handle_slow(frame)
        if size and frame[end + 1] == BATCH_MARK:
            return self._handle_batch(frame, end, route)
        try:  # decoded and checked against the declaration in C (a large frame unsliced)
            env = wire.decode(frame[end + 1:] if size < COPY_THRESHOLD
                              else memoryview(frame)[end + 1:])
        except Exception:  # msgspec's errors, or an extension type refused
            return self._handle_slow(frame)
        payload = _payload_map(env.payload)
        for optional in wire.optional:
            if payload[optional] is UNSET:
                del payload[optional]
        if wire.python_check is not None and not wire.python_check(payload):
            return self._handle_slow(frame)
        source, seq, wall = env.source, env.seq, env.wall_time
        stream = streams.get(source)
        if stream is not None and seq == stream[0] + 1:  # the usual case: the next one
            stream[0] = seq
            stream[1] = wall
        elif not self._sequence(name, source, seq, wall, streams, stream):
            return None
        self.stats.received += 1
        return Envelope(name, source, seq, wall, env.mono_time, payload, SCHEMA_VERSION, size)

    def _handle_batch(self, frame: bytes, end: int,
                      route: tuple[str, WireDecoder, bool, dict[str, list[Any]]]
                      ) -> Envelope | None:
        """A batch frame: every envelope decoded and checked in one C call, then each one
        sequence-checked as a message of its own; the first accepted one is returned, the
        rest queued. Anything unusual: the slow path, envelope by envelope."""
        name, wire, _, streams = route
        try:
            batch = wire.decode_batch(memoryview(frame)[end + 1:])
        except Exception:
            return self._handle_slow(frame)
        count = wire.batch_count(batch)
        if not count or batch.seq + count - 1 > MAX_SEQ:
            return self._handle_slow(frame)  # refused there: columns of unequal length,
            # or sequence numbers past the largest
        payloads = _payload_maps(batch.payloads)
        python_check = wire.python_check
        if python_check is not None and not all(map(python_check, payloads)):
            return self._handle_slow(frame)
        size = (len(frame) - end - 1) // count  # a share of the frame each
        source, first, walls = batch.source, batch.seq, batch.walls
        accepted = self._backlog
        queued = len(accepted)
        stream = streams.get(source)
        if stream is not None and first == stream[0] + 1:  # the usual case: the next ones
            stream[0] = first + count - 1
            stream[1] = walls[-1]
            accepted.extend(map(Envelope, itertools.repeat(name, count),
                                itertools.repeat(source, count), range(first, first + count),
                                walls, batch.monos, payloads,
                                itertools.repeat(SCHEMA_VERSION, count),
                                itertools.repeat(size, count)))
            received = count
        else:
            received = 0
            for seq, wall, mono, payload in zip(range(first, first + count), walls,
                                                batch.monos, payloads, strict=True):
                if self._sequence(name, source, seq, wall, streams, streams.get(source)):
                    received += 1
                    accepted.append(Envelope(name, source, seq, wall, mono, payload,
                                             SCHEMA_VERSION, size))
        self.stats.received += received
        # the oldest queued message goes back first (the queue is empty but for callers of
        # handle_frame that leave it be)
        return accepted.popleft() if len(accepted) > queued else None

    def _handle_slow(self, frame: bytes) -> Envelope | None:
        """The slow path: decode with the explaining checks; refuse or accept (a batch
        frame: each of its envelopes)."""
        end = frame.find(TOPIC_END, 0, MAX_TOPIC_BYTES)
        if end > 0 and len(frame) > end + 1 and frame[end + 1] == BATCH_MARK:
            try:
                parts = unbatch_frame(frame)
            except MessageError as exc:
                hint = frame[:end].decode("utf-8", "replace")
                self._refuse(exc, hint if hint in TOPIC_SPECS else None, len(frame))
                return None
            accepted = self._backlog
            queued = len(accepted)
            for part in parts:
                env = self._handle_slow_one(part)
                if env is not None:
                    accepted.append(env)
            return accepted.popleft() if len(accepted) > queued else None
        return self._handle_slow_one(frame)

    def _handle_slow_one(self, frame: bytes) -> Envelope | None:
        end = frame.find(TOPIC_END, 0, MAX_TOPIC_BYTES)
        hint = frame[:end].decode("utf-8", "replace") if end > 0 else None
        try:
            env = decode_frame(frame, self.max_bytes)
            if self.check:
                validate(env)
        except MessageError as exc:
            self._refuse(exc, hint if hint in TOPIC_SPECS else exc.topic, len(frame))
            return None
        if not self.wanted(env.topic):
            return None
        streams = self._streams[env.topic] if env.topic in TOPIC_SPECS else {}
        if not self._sequence(env.topic, env.source, env.seq, env.wall_time, streams,
                              streams.get(env.source)):
            return None
        self.stats.received += 1
        return env

    def _sequence(self, topic: str, source: str, seq: int, wall: float,
                  streams: dict[str, list[Any]], stream: list[Any] | None) -> bool:
        """Sequence bookkeeping of an accepted message; False for a repeat."""
        if stream is None:
            self.first_seq[(source, topic)] = seq
            if len(streams) < MAX_SOURCES_PER_TOPIC:
                streams[source] = [seq, wall]
            return True
        last, last_wall = stream
        if seq <= last and wall <= last_wall:
            # the same message again, or an older one: a latched value sent again by
            # the broker to a new subscriber, or by a publisher to a restarted broker
            self.stats.duplicates += 1
            return False
        if seq > last + 1:
            self.stats.gaps += seq - last - 1
        elif seq <= last:  # a smaller number, sent later: the source restarted
            self.stats.restarts += 1
        stream[0], stream[1] = seq, wall
        return True

    def _route(self, frame: bytes, end: int
               ) -> tuple[str, WireDecoder | None, bool, dict[str, list[Any]]] | None:
        """The route of a declared topic seen for the first time (kept: a rogue publisher
        must not grow the table); None for anything else."""
        if end <= 0:
            return None
        name = frame[:end].decode("utf-8", "replace")
        if name not in TOPIC_SPECS:
            return None
        route = (name, TOPIC_WIRE_DECODERS[name] if self.check else None, self.wanted(name),
                 self._streams[name])
        self._routes[frame[:end]] = route
        return route

    def _refuse(self, error: MessageError, topic: str | None, size: int) -> None:
        self.stats.rejected[error.reason] += 1
        if self.on_reject is not None:
            self.on_reject(Rejection(error, topic, size))

    def accept(self, frame: bytes) -> Envelope:
        """Decode and validate one message frame without sequence checks; raises
        Rejection if bad (for tools that look at single messages)."""
        try:
            env = decode_frame(frame, self.max_bytes)
            if self.check:
                validate(env)
        except MessageError as exc:
            raise Rejection(exc, exc.topic, len(frame)) from None
        return env

    def close(self) -> None:
        self.sock.close()


class InternalError(MessageError):
    """Checking a message failed in a way the checks did not foresee (a bug, or input
    beyond what they were written for); the message is refused and counted."""

    reason = "internal"


def _frame_count_error(frames: list[Any]) -> MessageError:
    return DecodeError(f"expected a message of one frame, got {len(frames)} frames")


def _send_nowait(sock: Any, frames: list[bytes]) -> bool:
    """Send without blocking; False when the socket has no link to send on right now
    (a DEALER with no connected broker). The caller's retry or the dedup cache covers it."""
    import zmq

    try:
        sock.send_multipart(frames, zmq.NOBLOCK)
        return True
    except zmq.Again:
        return False


# --- liveness ------------------------------------------------------------------------------


@dataclass
class PeerStatus:
    """The latest heartbeat of one service, and whether it is stale."""

    service: str
    state: str
    health: dict[str, Any]
    last_seen: float  # time.monotonic() of the receiver
    period_s: float
    pid: int
    host: str
    commands: list[str]
    stale: bool = False

    @property
    def alive(self) -> bool:
        return not self.stale


class Liveness:
    """Tracks heartbeats: a peer is stale after STALE_AFTER_BEATS missed beats. A replayed
    heartbeat (``bus play``: source ``replay:...``) says nothing about who is alive now and
    is ignored."""

    def __init__(self, stale_after_beats: int = STALE_AFTER_BEATS) -> None:
        self.stale_after_beats = stale_after_beats
        self._peers: dict[str, PeerStatus] = {}
        self._lock = threading.Lock()

    def update(self, env: Envelope, now: float | None = None) -> None:
        if is_replayed(env.source):
            return
        p = env.payload
        status = PeerStatus(p["service"], p["state"], p["health"],
                            time.monotonic() if now is None else now, float(p["period_s"]),
                            p["pid"], p["host"], list(p["commands"]))
        with self._lock:
            self._peers[status.service] = status

    def peers(self, now: float | None = None) -> dict[str, PeerStatus]:
        """Every service ever heard, with ``stale`` computed for ``now``."""
        now = time.monotonic() if now is None else now
        with self._lock:
            for status in self._peers.values():
                status.stale = now - status.last_seen > self.stale_after_beats * status.period_s
            return dict(self._peers)

    def alive(self, now: float | None = None) -> list[str]:
        """Names of the services whose heartbeats are current."""
        return sorted(name for name, s in self.peers(now).items() if not s.stale)

    def is_alive(self, service: str, now: float | None = None) -> bool:
        status = self.peers(now).get(service)
        return status is not None and not status.stale


# --- commands: the client side -------------------------------------------------------------


class CommandFailed(RobocellError):
    """A command that did not succeed: ``code`` is one of messages.COMMAND_ERRORS."""

    def __init__(self, code: str, message: str, service: str = "", command: str = "") -> None:
        super().__init__(f"{service}.{command}: {code}: {message}" if service else message)
        self.code = code
        self.message = message
        self.service = service
        self.command = command


class Busy(CommandFailed):
    """Raise from a handler when the service cannot take the command now."""

    def __init__(self, message: str = "the service is busy; retry later") -> None:
        super().__init__("busy", message)


@dataclass
class Reply:
    """The answer to one command: ``ok`` with ``result``, or an ``error`` code and message."""

    id: str
    ok: bool
    result: Any = None
    error: str | None = None
    message: str = ""
    service: str = ""
    command: str = ""
    attempts: int = 1

    def unwrap(self) -> Any:
        """The result, or raise CommandFailed."""
        if not self.ok:
            raise CommandFailed(self.error or "failed", self.message, self.service, self.command)
        return self.result


def reply_payload(request_id: str, *, result: Any = None, error: str | None = None,
                  message: str = "") -> dict[str, Any]:
    """The payload of a ``cmd.reply``."""
    if error is not None and error not in COMMAND_ERRORS:
        raise ValueError(f"unknown command error code {error!r}")
    return {"id": request_id, "ok": error is None, "result": result if error is None else None,
            "error": error, "message": message}


class _RequestHead(msgspec.Struct):
    id: str
    service: str
    command: str
    timeout_ms: float
    args: msgspec.Raw


class _ReplyHead(msgspec.Struct):
    id: str


def _head_decoder(payload: type) -> Callable[[Any], Any]:
    envelope = msgspec.defstruct(f"{payload.__name__}Envelope", [
        ("version", int), ("topic", str), ("source", str), ("seq", int), ("wall_time", float),
        ("mono_time", float), ("payload", payload)], array_like=True)
    return msgspec.msgpack.Decoder(envelope).decode


_decode_request_head = _head_decoder(_RequestHead)
_decode_reply_head = _head_decoder(_ReplyHead)


def peek_request(data: bytes) -> _RequestHead | None:
    """The routing facts of an encoded ``cmd.request`` (id, service, command, timeout_ms;
    the arguments left undecoded), or None when ``data`` is not one. For the broker, which
    routes a request without judging its arguments (the service does); never raises."""
    try:
        env = _decode_request_head(data)
    except Exception:  # msgspec's errors, RecursionError on hostile nesting
        return None
    if env.version != SCHEMA_VERSION or env.topic != "cmd.request":
        return None
    return env.payload


def peek_reply_id(data: bytes) -> str | None:
    """The request id an encoded ``cmd.reply`` answers (the result left undecoded), or None
    when ``data`` is not one; never raises."""
    try:
        env = _decode_reply_head(data)
    except Exception:  # msgspec's errors, RecursionError on hostile nesting
        return None
    if env.version != SCHEMA_VERSION or env.topic != "cmd.reply":
        return None
    return env.payload.id


class CommandClient:
    """Sends commands to named services through the broker; for one thread at a time
    (:class:`Node` keeps one per calling thread)."""

    def __init__(self, name: str, endpoints: Endpoints | None = None) -> None:
        import zmq

        self.name = name
        self.endpoints = endpoints or Endpoints.resolve()
        self._seq = itertools.count()
        self.sock = _context().socket(zmq.DEALER)
        self.sock.routing_id = CLIENT_ID_PREFIX + f"{name}-{secrets.token_hex(6)}".encode()
        self.refused_replies = 0
        """Replies refused as malformed (never matched to a request)."""
        self.sock.linger = 0
        self.endpoints.secure(self.sock)
        self.link = LinkWatch(self.sock, self.endpoints.curve is not None)
        """Why the broker may not be answering (read when a request times out)."""
        self.sock.connect(self.endpoints.command)

    def request(self, service: str, command: str, args: dict[str, Any] | None = None,
                timeout: float = DEFAULT_TIMEOUT_S, retry_interval: float | None = None,
                request_id: str | None = None) -> Reply:
        """Send and wait; always returns a Reply (error ``timeout`` when the deadline passes).
        Silence is retried every ``retry_interval`` s with the same request id."""
        args = {} if args is None else args
        request_id = request_id or f"{self.name[:64]}-{secrets.token_hex(8)}"
        if len(request_id) > MAX_REQUEST_ID_CHARS:
            raise ValueError(f"request id {request_id[:40]!r}... is {len(request_id)} "
                             f"characters; services refuse ids over {MAX_REQUEST_ID_CHARS}")
        payload = {"id": request_id, "service": service, "command": command, "args": args,
                   "timeout_ms": timeout * 1000.0}
        validate_payload("cmd.request", payload)
        interval = retry_interval or max(min(timeout / 3, MAX_RETRY_INTERVAL_S), 0.05)
        deadline = time.monotonic() + timeout
        attempts = 0
        self.link.read()
        disconnects = self.link.disconnects
        while True:
            now = time.monotonic()
            if now >= deadline:
                why = self.link.problem(disconnects if attempts else None)
                return Reply(request_id, False, error="timeout",
                             message=f"no reply from {service!r} to {command!r} within "
                                     f"{timeout:.3g} s ({attempts} attempt(s)); "
                                     + (why if why else "is the service running? "
                                        "(`robocell bus list`)"),
                             service=service, command=command, attempts=attempts)
            payload["timeout_ms"] = (deadline - now) * 1000.0
            env = Envelope.now("cmd.request", self.name, next(self._seq), payload)
            # DEALER blocks while no broker link exists: never wait on that, retry instead
            if _send_nowait(self.sock, [REQUEST, service.encode(), encode(env)]):
                attempts += 1
            retry_at = min(deadline, time.monotonic() + interval)
            while (wait := retry_at - time.monotonic()) > 0:
                if not self.sock.poll(int(wait * 1000) + 1):
                    break
                reply = self._read_reply(request_id)
                if reply is not None:
                    reply.service, reply.command, reply.attempts = service, command, attempts
                    return reply

    def call(self, service: str, command: str, args: dict[str, Any] | None = None,
             timeout: float = DEFAULT_TIMEOUT_S) -> Any:
        """The command's result; raises CommandFailed with the error code otherwise."""
        return self.request(service, command, args, timeout).unwrap()

    def _read_reply(self, request_id: str) -> Reply | None:
        frames = self.sock.recv_multipart()
        if len(frames) != 2 or frames[0] != REPLY:
            return None
        try:
            env = validate(decode(frames[1]))
        except Exception:  # a MessageError, or anything unforeseen: not our answer
            self.refused_replies += 1
            return None
        p = env.payload
        if env.topic != "cmd.reply" or p["id"] != request_id:
            return None  # a late answer to an earlier, abandoned request
        return Reply(p["id"], p["ok"], p["result"], p["error"], p["message"])

    def close(self) -> None:
        self.link.close()
        self.sock.close()


# --- the node: a service on the bus ---------------------------------------------------------


Handler = Callable[[dict[str, Any], "CommandContext"], Any]
Callback = Callable[[Envelope], None]


@dataclass
class CommandContext:
    """What a command handler knows about the request it serves."""

    request_id: str
    command: str
    caller: str
    deadline: float  # time.monotonic() after which the caller no longer waits

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline


@dataclass
class _Command:
    handler: Handler
    concurrency: int
    retry_safe: bool = False
    running: int = 0


@dataclass
class _Pending:
    """A request in the dedup cache: running (reply None) or answered."""

    waiters: list[bytes]
    reply: bytes | None = None
    finished: float = 0.0


class Node:
    """One service on the bus: publisher, subscriptions with callbacks, command server,
    heartbeat and peer liveness, run by one I/O thread. Use as a context manager or call
    start()/stop()."""

    def __init__(self, name: str, endpoints: Endpoints | None = None, *,
                 heartbeat_period: float = HEARTBEAT_PERIOD_S, workers: int = 4,
                 track_peers: bool = True, check: bool = True) -> None:
        import zmq

        self.name = name
        self.endpoints = endpoints or Endpoints.resolve()
        self.heartbeat_period = heartbeat_period
        self.state = "starting"
        self.health: dict[str, Any] = {}
        self.liveness = Liveness()
        self.started = time.monotonic()
        self._callbacks: dict[str, list[tuple[bool, Callback]]] = collections.defaultdict(list)
        self._commands: dict[str, _Command] = {"ping": _Command(self._ping, 1_000_000, True)}
        self._pending: collections.OrderedDict[bytes, _Pending] = collections.OrderedDict()
        """the dedup cache: (caller, request id) -> running or answered request; two callers
        may pick the same id, a caller's retry carries its own again."""
        self._diag_last: dict[tuple[str, str], float] = {}
        self._diag_count: collections.Counter[tuple[str, str]] = collections.Counter()
        self._gaps_reported = 0
        self.refused_requests = 0
        """Command messages refused before a handler saw them (malformed, hostile)."""
        self._lock = threading.RLock()
        self._clients = threading.local()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.registered = threading.Event()
        """set when the broker has registered this instance (its commands route to it)"""
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"{name}-cmd")
        ctx = _context()
        self.publisher = (Publisher(name, self.endpoints, check=check)
                          if self.endpoints.publish else None)
        self.subscriber = Subscriber((), self.endpoints, check=check,
                                     on_reject=self._report_rejection)
        self._server = ctx.socket(zmq.DEALER)
        # one routing id per instance: several instances of a service may serve at once
        self.instance = secrets.token_hex(4)
        self._server.routing_id = (SERVICE_ID_PREFIX + name.encode() + INSTANCE_MARK
                                   + self.instance.encode())
        self._server.linger = LINGER_MS
        self.endpoints.secure(self._server)
        self._server.connect(self.endpoints.command)
        wake = f"inproc://robocell-node-{name}-{id(self)}"
        self._inbox = ctx.socket(zmq.PULL)
        self._inbox.bind(wake)
        self._outbox = ctx.socket(zmq.PUSH)  # guarded by self._lock
        self._outbox.connect(wake)
        if track_peers:
            self.subscribe("heartbeat", self.liveness.update)

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> Node:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, wait_linked: float = CONNECT_WAIT_S) -> Node:
        """Start the I/O thread; wait up to ``wait_linked`` s for the broker link."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"{self.name}-bus",
                                            daemon=True)
            self._thread.start()
            if self.publisher is not None and wait_linked > 0:
                deadline = time.monotonic() + wait_linked
                self.publisher.wait_linked(wait_linked)
                # a service is ready only once its commands reach it
                self.registered.wait(max(0.0, deadline - time.monotonic()))
        return self

    def stop(self) -> None:
        """Announce ``stopping``, stop the I/O thread and close every socket."""
        if self._thread is None:
            return
        self.set_state("stopping")
        self._beat()
        self._stop.set()
        self._wake(b"stop")
        self._thread.join(timeout=5)
        self._thread = None
        _send_nowait(self._server, [BYE])  # the I/O thread is gone: this thread owns it
        self._pool.shutdown(wait=False, cancel_futures=True)
        for sock in (self._server, self._inbox, self._outbox):
            sock.close()
        self.subscriber.close()
        if self.publisher is not None:
            self.publisher.close()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until stop() (from another thread) or Ctrl-C; True if stopped."""
        try:
            return self._stop.wait(timeout)
        except KeyboardInterrupt:
            return True

    def set_state(self, state: str, **health: Any) -> None:
        """Set the lifecycle state (starting, ready, busy, error, stopping) and merge
        ``health`` details; announced with the next heartbeat (and at once on change)."""
        if state not in LIFECYCLE_STATES:
            raise ValueError(f"lifecycle state {state!r} is not one of "
                             f"{', '.join(LIFECYCLE_STATES)}")
        changed = state != self.state
        self.state = state
        self.health.update(health)
        if changed and self._thread is not None:
            self._wake(b"beat")

    # -- pub/sub -----------------------------------------------------------------------------

    def publish(self, topic: str, payload: dict[str, Any]) -> int:
        """Publish from any thread (its sequence number); raises MessageError if the
        message is refused."""
        if self.publisher is None:
            raise ValueError("connected to a remote, read-only broker: cannot publish")
        return self.publisher.publish(topic, payload)

    def subscribe(self, topic: str, callback: Callback, prefix: bool = False) -> None:
        """Call ``callback(envelope)`` on the I/O thread for each message of ``topic``
        (exact name; ``prefix=True`` or ``""`` for a prefix). Latched topics deliver their
        current value at once."""
        if not (prefix or topic == ""):
            topic_spec(topic)
        with self._lock:
            self._callbacks[topic].append((prefix or topic == "", callback))
        self._wake(b"sub" + topic.encode(), b"1" if prefix else b"0")

    def peers(self) -> dict[str, PeerStatus]:
        """Every service heard on the heartbeat topic, with staleness."""
        return self.liveness.peers()

    def alive(self) -> list[str]:
        """Names of services whose heartbeats are current."""
        return self.liveness.alive()

    # -- commands ----------------------------------------------------------------------------

    def serve(self, command: str, handler: Handler, concurrency: int = 1,
              retry_safe: bool | None = None) -> None:
        """Answer ``command`` with ``handler(args, ctx)`` (its return value is the result;
        raise CommandFailed/Busy for an explicit error). More than ``concurrency``
        simultaneous requests are answered ``busy``. Arguments are validated first.
        ``retry_safe`` (default: the command's declaration in messages.py) lets the broker
        hand a request that was in flight on a dead instance to another instance."""
        if retry_safe is None:
            spec = command_spec(self.name, command)
            retry_safe = spec is not None and spec.retry_safe
        with self._lock:
            self._commands[command] = _Command(handler, concurrency, retry_safe)
        self._wake(b"hello")

    def call(self, service: str, command: str, args: dict[str, Any] | None = None,
             timeout: float = DEFAULT_TIMEOUT_S) -> Any:
        """Send a command and return its result; raises CommandFailed (from any thread)."""
        return self.request(service, command, args, timeout).unwrap()

    def request(self, service: str, command: str, args: dict[str, Any] | None = None,
                timeout: float = DEFAULT_TIMEOUT_S) -> Reply:
        """Like call() but returns the Reply instead of raising."""
        client = getattr(self._clients, "client", None)
        if client is None:
            client = self._clients.client = CommandClient(self.name, self.endpoints)
        return client.request(service, command, args, timeout)

    # -- the I/O thread ----------------------------------------------------------------------

    def _wake(self, *frames: bytes) -> None:
        with self._lock:
            self._outbox.send_multipart(list(frames))

    def _loop(self) -> None:
        """Poll subscriptions, commands and the inbox until stop(); beat on time."""
        import zmq

        poller = zmq.Poller()
        for sock in (self.subscriber.sock, self._server, self._inbox):
            poller.register(sock, zmq.POLLIN)
        self._hello()
        next_beat = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_beat:
                self._beat()
                self._hello()  # registers this instance again after a broker restart
                next_beat = now + self.heartbeat_period
            ready = dict(poller.poll(max(0, int((next_beat - now) * 1000)) + 1))
            if self._inbox in ready:
                self._drain_inbox()
            if self.subscriber.sock in ready:
                # a bounded batch, then look at the other sockets
                for env in self.subscriber.recv_batch(0, RECV_BATCH):
                    self._dispatch(env)
                if self.subscriber.stats.gaps > self._gaps_reported:
                    self._report_drops()
            if self._server in ready:
                for _ in range(RECV_BATCH):  # bounded too: a flood must not starve the rest
                    try:
                        frames = self._server.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    try:
                        self._on_request(frames)
                    except Exception as exc:  # the I/O thread never dies of a request
                        self._diagnose("bad_request", "cmd.request",
                                       f"handling a command request raised "
                                       f"{type(exc).__name__}: {exc}", level="error")

    def _drain_inbox(self) -> None:
        import zmq

        while True:
            try:
                frames = self._inbox.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            kind = frames[0]
            if kind.startswith(b"sub"):
                self.subscriber.subscribe(kind[3:].decode(), prefix=frames[1] == b"1")
            elif kind == b"done":
                command = self._commands.get(frames[1].decode())
                if command is not None:
                    command.running -= 1
                self._deliver(frames[2], frames[3])
            elif kind == b"beat":
                self._beat()
            elif kind == b"hello":
                self._hello()

    def _dispatch(self, env: Envelope) -> None:
        with self._lock:
            targets = [cb for topic, entries in self._callbacks.items()
                       for prefix, cb in entries
                       if topic == env.topic or (prefix and env.topic.startswith(topic))]
        for callback in targets:
            try:
                callback(env)
            except Exception as exc:  # a bad callback must not kill the node
                self._diagnose("callback_failed", env.topic,
                               f"callback {getattr(callback, '__name__', callback)!r} for "
                               f"topic {env.topic!r} raised {type(exc).__name__}: {exc}",
                               level="error")

    def _hello(self) -> None:
        """Tell the broker this instance serves commands (every heartbeat: the broker drops
        an instance that stays silent for STALE_AFTER_BEATS periods)."""
        with self._lock:
            commands = sorted(self._commands)
            retry_safe = sorted(n for n, c in self._commands.items() if c.retry_safe)
        _send_nowait(self._server, [HELLO, msgpack.packb({
            "commands": commands, "retry_safe": retry_safe, "period_s": self.heartbeat_period,
            "pid": os.getpid(), "host": socketlib.gethostname()})])

    def _beat(self) -> None:
        if self.publisher is None:
            return
        self.publisher.check_link()
        health = dict(self.health)
        health["bus"] = self.subscriber.stats.as_health()
        health["bus"]["refused_requests"] = self.refused_requests
        try:
            self.publish("heartbeat", {
                "service": self.name, "state": self.state, "health": health,
                "period_s": self.heartbeat_period, "pid": os.getpid(),
                "host": socketlib.gethostname(), "uptime_s": time.monotonic() - self.started,
                "commands": sorted(self._commands),
            })
        except MessageError as exc:  # e.g. a health value msgpack cannot carry
            print(f"{self.name}: heartbeat refused: {exc}", file=sys.stderr)

    def _report_drops(self) -> None:
        stats = self.subscriber.stats
        new = stats.gaps - self._gaps_reported
        self._gaps_reported = stats.gaps
        self._diagnose("dropped_messages", "",
                       f"{self.name} missed {new} message(s) (sequence gaps; {stats.gaps} in "
                       "all): it is too slow for its subscriptions or the broker is "
                       "overloaded", count=stats.gaps)

    def _report_rejection(self, rejection: Rejection) -> None:
        error = rejection.error
        self._diagnose("bad_message", rejection.topic or "",
                       f"refused a message on topic {rejection.topic!r} from "
                       f"{error.source or 'unknown source'} ({rejection.size} bytes): "
                       f"{error.reason}: {error}", peer=error.source)

    def _diagnose(self, code: str, topic: str, message: str, *, level: str = "warning",
                  peer: str | None = None, count: int | None = None) -> None:
        """Publish a diagnostic, at most one per (code, topic) per second, with a count."""
        key = (code, topic)
        self._diag_count[key] = self._diag_count[key] + 1 if count is None else count
        now = time.monotonic()
        if now - self._diag_last.get(key, -1e9) < DIAGNOSTIC_MIN_INTERVAL_S:
            return
        self._diag_last[key] = now
        if self.publisher is None:
            print(f"{self.name}: {message}", file=sys.stderr)
            return
        payload: dict[str, Any] = {"service": self.name, "level": level, "code": code,
                                   "message": message, "topic": topic or None,
                                   "count": self._diag_count[key]}
        if peer:
            payload["peer"] = peer
        try:
            self.publish("diagnostics", payload)
        except MessageError as exc:
            print(f"{self.name}: diagnostic refused: {exc}", file=sys.stderr)

    # -- the command server (runs on the I/O thread; handlers on the pool) -----------------

    def _ping(self, args: dict[str, Any], ctx: CommandContext) -> dict[str, Any]:
        return {"service": self.name, "state": self.state}

    def _on_request(self, frames: list[bytes]) -> None:
        if frames == [WELCOME]:
            self.registered.set()
            return
        if len(frames) != 3 or frames[0] != REQUEST:
            self.refused_requests += 1
            self._diagnose("bad_request", "cmd.request",
                           f"refused a command message of {len(frames)} frame(s): expected "
                           "REQUEST, the caller and the envelope")
            return
        _, client, data = frames
        try:
            env = validate(decode(data))
            if env.topic != "cmd.request":
                raise MessageError(f"expected a cmd.request, got topic {env.topic!r}")
            if len(env.payload["id"]) > MAX_REQUEST_ID_CHARS:
                raise MessageError(f"request id of {len(env.payload['id'])} characters; "
                                   f"at most {MAX_REQUEST_ID_CHARS}")
        except MessageError as exc:
            self.refused_requests += 1
            self._diagnose("bad_request", "cmd.request", f"refused a command request: {exc}")
            return
        p = env.payload
        request_id, command = p["id"], p["command"]
        key = client + b"\x00" + request_id.encode()
        self._expire_pending()
        pending = self._pending.get(key)
        if pending is not None:  # a retry: never execute twice
            if pending.reply is not None:
                _send_nowait(self._server, [REPLY, client, pending.reply])
            elif client not in pending.waiters:
                pending.waiters.append(client)
            return
        spec = self._commands.get(command)
        deadline = time.monotonic() + p["timeout_ms"] / 1000.0
        error: tuple[str, str] | None = None
        if spec is None:
            error = ("unknown_command", f"service {self.name!r} has no command {command!r}; "
                     f"it offers: {', '.join(sorted(self._commands))}")
        elif p["timeout_ms"] <= 0:
            error = ("timeout", f"request {request_id} arrived after its deadline")
        else:
            try:
                validate_args(self.name, command, p["args"])
            except MessageError as exc:
                error = ("invalid_arguments", str(exc))
        if error is None and spec is not None and spec.running >= spec.concurrency:
            error = ("busy", f"{self.name}.{command} is already running "
                     f"({spec.running} of {spec.concurrency} allowed); retry later")
        self._pending[key] = _Pending([client])
        if error is not None:
            self._finish(key, reply_payload(request_id, error=error[0], message=error[1]))
            return
        assert spec is not None
        spec.running += 1
        ctx = CommandContext(request_id, command, env.source, deadline)
        self._pool.submit(self._run, spec, p["args"], ctx, key)

    def _run(self, spec: _Command, args: dict[str, Any], ctx: CommandContext,
             key: bytes) -> None:
        try:
            result = spec.handler(args, ctx)
            payload = reply_payload(ctx.request_id, result=result)
        except CommandFailed as exc:
            code = exc.code if exc.code in COMMAND_ERRORS else "failed"
            payload = reply_payload(ctx.request_id, error=code, message=exc.message)
        except Exception as exc:
            payload = reply_payload(ctx.request_id, error="failed",
                                    message=f"{self.name}.{ctx.command} raised "
                                            f"{type(exc).__name__}: {exc}")
        self._finish(key, payload, command=ctx.command)

    def _finish(self, key: bytes, payload: dict[str, Any], command: str | None = None
                ) -> None:
        """Send the reply to the request ``key`` (caller + id) to every waiter and cache it;
        ``command`` is set when called from a worker, which hands over to the I/O thread
        (owner of the sockets and the cache)."""
        try:
            data = encode(Envelope.now("cmd.reply", self.name, 0, payload))
        except MessageError as exc:
            data = encode(Envelope.now("cmd.reply", self.name, 0, reply_payload(
                payload["id"], error="failed", message=f"the result cannot be sent: {exc}")))
        if command is not None:
            self._wake(b"done", command.encode(), key, data)
            return
        self._deliver(key, data)

    def _deliver(self, key: bytes, data: bytes) -> None:
        pending = self._pending.get(key)
        if pending is None:
            return
        pending.reply = data
        pending.finished = time.monotonic()
        for client in pending.waiters:
            _send_nowait(self._server, [REPLY, client, data])
        pending.waiters.clear()

    def _expire_pending(self) -> None:
        now = time.monotonic()
        while self._pending:
            oldest_id, oldest = next(iter(self._pending.items()))
            too_many = len(self._pending) > DEDUP_CAPACITY
            if oldest.reply is not None and (too_many or now - oldest.finished > DEDUP_TTL_S):
                del self._pending[oldest_id]
            elif too_many:
                self._pending.move_to_end(oldest_id)  # still running: keep it
                break
            else:
                break
