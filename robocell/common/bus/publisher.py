"""Publishing: validated, sequenced messages to the broker, bursts coalesced into batch frames.

Pattern: a **publisher** on an XPUB socket connected to the broker's XSUB (it sees the
broker's subscription, so it knows when the link is up). Each declared topic of a publisher
has a route: its frame writer (:class:`robocell.common.bus.wire.FrameWriter`), its generated
payload check, its counters. A burst on one topic (messages under COALESCE_GAP_S apart)
travels in batch frames of up to COALESCE_FRAME_BYTES, sent by the next publish or by the
process's flusher thread. What was sent is reported on ``bus.traffic`` every second by the
process's traffic reporter thread.
"""

from __future__ import annotations

import abc
import os
import secrets
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import zmq

from robocell.common.bus.endpoints import (
    CONNECT_WAIT_S,
    COPY_THRESHOLD,
    LINGER_MS,
    ZMQ_NOBLOCK,
    Endpoints,
    zmq_context,
)
from robocell.common.bus.schema import TOPIC_FAST_CHECKS, topic_spec, validate_payload
from robocell.common.bus.topics import LATCHED_TOPICS, TOPIC_SPECS
from robocell.common.bus.wire import (
    BROKER_SUBSCRIPTION,
    MAX_SOURCE_CHARS,
    SUBSCRIBE_ALL,
    TOPIC_END,
    Envelope,
    FrameWriter,
    MessageError,
    encode,
    encode_payload,
    max_message_bytes,
    split_frame,
)

QUEUE_FULL_BACKOFF_S = 0.0005
"""After ZeroMQ refused a message at the high-water mark, a publisher drops (and counts) its
messages for this long without asking again: each refusal costs pyzmq an exception of a few
microseconds, more than sending; the queue of PUB_HWM messages cannot drain in this time."""
TRAFFIC_TOPIC = "bus.traffic"
TRAFFIC_REPORT_PERIOD_S = 1.0
COALESCE_GAP_S = 200e-6
"""A message published on a topic less than this long after the previous one on that topic
(a rate above 5,000 a second) waits to go out in one batch frame with those that follow it
(see robocell.common.bus.wire). At any robot rate (1 kHz: 1 ms apart) nothing waits."""
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

PUB_HWM = 10_000
"""Messages queued per publisher socket before ZeroMQ drops (never blocks)."""

_wall_clock = time.time
_mono_clock = time.monotonic

class _PublishRoute:
    """One declared topic of one publisher: the constant head of its frames, its payload
    check, and what was sent on it (counted here, reported on ``bus.traffic``)."""

    __slots__ = ("topic", "frame", "batch", "overhead", "check", "latched", "seq", "unsent",
                 "last", "last_stamps", "last_data", "messages", "bytes", "dropped", "counted")

    def __init__(self, topic: str, source: str) -> None:
        self.topic = topic
        writer = FrameWriter(topic, source)
        self.frame = writer.message
        """(seq, wall, mono, payload bytes) -> the message's frame."""
        self.batch = writer.batch
        """(first seq, walls, monos, payloads) -> the batch frame."""
        self.overhead = writer.overhead
        """bytes of an envelope of this topic that are not its payload."""
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
        if not source or len(source) > MAX_SOURCE_CHARS:
            raise ValueError(f"publisher source {source!r} must be 1 to {MAX_SOURCE_CHARS} "
                             "characters")
        self.source = source
        self.instance = f"{source}-{os.getpid()}-{secrets.token_hex(4)}"
        self.endpoints = endpoints or Endpoints.resolve()
        if self.endpoints.publish is None:
            raise ValueError("this broker is remote and read-only for this process: only a "
                             "service publishes there, with a key the broker allows as "
                             "service:NAME (else run the publisher on the cell's host)")
        self.check = check
        self.max_bytes = max_bytes
        self.on_subscription = on_subscription
        self._lock = threading.Lock()
        self._acquire, self._release = self._lock.acquire, self._lock.release
        self._routes: dict[str, _PublishRoute] = {}
        self._pack = encode_payload
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
        self._sock = zmq_context().socket(zmq.XPUB)
        self._send = zmq.backend.Socket.send  # pyzmq's own, without its Python wrapper
        self._again = zmq.Again
        self._sock.sndhwm = hwm
        self._sock.linger = LINGER_MS
        self._sock.setsockopt(zmq.XPUB_VERBOSE, 1)  # see every (re)subscription
        self._sock.setsockopt(zmq.XPUB_NODROP, 1)  # at the HWM: refuse (counted), not drop
        self.endpoints.secure(self._sock)  # a remote broker's publish port: CURVE
        self._sock.connect(self.endpoints.publish)
        _traffic_reporter().add(self)
        self._flusher = _flusher()
        self._flusher.add(self)

    def wait_linked(self, timeout: float = CONNECT_WAIT_S) -> bool:
        """Wait until the broker subscribed to us (the link is up); False on timeout."""
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
                    frame = route.frame(seq, wall, mono, data)
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
        return route.frame(seq, wall, mono, route.last_data)

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
                frame = route.frame(self._pending_seq, walls[0], monos[0], bodies[0])
            else:  # the batch frame, by column (see robocell.common.bus.wire)
                frame = route.batch(self._pending_seq, walls, monos, bodies)
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

