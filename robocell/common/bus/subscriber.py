"""Subscribing: validated messages of chosen topics, checked in one C call per envelope or batch.

Pattern: a **subscriber** on a SUB socket connected to the broker's XPUB. Each frame is
decoded and checked against its topic's declaration by the wire decoder generated in
:mod:`robocell.common.bus.schema` (msgspec), falling back to the explaining checks for
anything unusual; every refusal is counted, none raises. The sequence numbers of each
(source, topic) are followed: repeats dropped, gaps and restarts counted.
"""

from __future__ import annotations

import collections
import itertools
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import zmq

from robocell.common.bus.endpoints import (
    COPY_THRESHOLD,
    ZMQ_NOBLOCK,
    Endpoints,
    zmq_context,
    zmq_module,
)
from robocell.common.bus.schema import (
    TOPIC_WIRE_DECODERS,
    UNSET,
    WireDecoder,
    payload_map,
    topic_spec,
    validate,
)
from robocell.common.bus.topics import TOPIC_SPECS
from robocell.common.bus.wire import (
    ANSWER_MARK,
    BATCH_MARK,
    MAX_BATCH_BYTES,
    MAX_FUTURE_S,
    MAX_SEQ,
    MAX_SEQ_JUMP,
    MAX_TOPIC_BYTES,
    SCHEMA_VERSION,
    TOPIC_END,
    DecodeError,
    Envelope,
    MessageError,
    decode_frame,
    future_stamp,
    max_message_bytes,
    subscription,
    unbatch_frame,
)
from robocell.errors import RobocellError

MAX_SOURCES_PER_TOPIC = 1024
"""Sources a subscriber tracks per topic (a rogue sender must not grow its tables)."""
MAX_OTHER_STREAMS = 4
"""Streams kept per source name beside the current one (see Subscriber._sequence)."""
RECV_BATCH = 1000
"""Messages a receiver takes from its socket in one go (Subscriber.recv_batch, Node)."""
SUB_HWM = 2_000
"""Messages queued for one subscriber (in the broker, and again in the subscriber's socket)
before ZeroMQ drops for that subscriber only. Bounds the memory a stuck subscriber can cost
the broker to SUB_HWM x message size (2,000 x 100 KB images = 200 MB) and still absorbs
two seconds of a 1 kHz burst."""


@dataclass
class ReceiveStats:
    """What a subscriber saw: accepted, refused by reason, duplicates, sequence gaps."""

    received: int = 0
    rejected: collections.Counter[str] = field(default_factory=collections.Counter)
    duplicates: int = 0
    gaps: int = 0
    restarts: int = 0
    seq_jumps: int = 0
    """Sequence numbers more than MAX_SEQ_JUMP past the last one (taken as restarts)."""

    def as_health(self) -> dict[str, Any]:
        return {"received": self.received, "rejected": dict(self.rejected),
                "duplicates": self.duplicates, "dropped": self.gaps,
                "seq_jumps": self.seq_jumps}


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
    judged on its own, see robocell.common.bus.wire); should a sender send several frames in
    one ZeroMQ message, each is judged as a message of its own. A message that is not newer
    (sequence number and send time) than the last one accepted from its source on its topic
    is dropped as a repeat: the broker's latched answer may be older than what a subscriber
    already got straight through the proxy, and a publisher resends its latched state to a
    restarted broker. Sequence gaps count as ``stats.gaps``; a smaller sequence number sent
    later is a restart of the source. Stamps cannot pin a stream: a wall time more than
    MAX_FUTURE_S ahead of this host's clock is refused (reason ``stamp``), and a sequence
    number more than MAX_SEQ_JUMP past the last is a restart (``stats.seq_jumps``), not a gap.

    Latched state: each subscription is followed by a second one on this subscriber's own
    answer channel (``answer_channel`` + the topic's subscription); the broker answers that
    with the newest message of each latched topic it matches, on the channel, so only this
    subscriber receives it (a subscription to every topic matches the other subscribers'
    channels too: their answers are dropped unseen, neither delivered nor counted as bad).
    It is asked after the topic's own subscription has passed the proxy, so the answer is at
    least as new as anything forwarded before this subscriber joined; what comes after
    arrives directly. (An answer sent to everyone instead could
    still be on its way when someone else joins and a newer message passes: that one would
    get the older message first.)
    """

    def __init__(self, topics: Iterable[str] = (), endpoints: Endpoints | None = None, *,
                 hwm: int = SUB_HWM, check: bool = True, max_bytes: int | None = None,
                 on_reject: Callable[[Rejection], None] | None = None) -> None:
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
        self._horizon = 0.0
        """Wall times up to this are not in the future (refreshed from the clock only when a
        stamp passes it: a stale horizon is too early, never too late)."""
        self.sock = zmq_context().socket(zmq.SUB)
        self._recv = zmq.backend.Socket.recv  # pyzmq's own, without its Python wrapper
        self.sock.rcvhwm = hwm
        self.sock.linger = 0
        self.endpoints.secure(self.sock)
        self.sock.connect(self.endpoints.subscribe)
        for topic in topics:
            self.subscribe(topic)

    def subscribe(self, topic: str, prefix: bool = False) -> None:
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
        except zmq_module().Again:  # (evaluated only when raised)
            pass
        zmq = zmq_module()
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
        except zmq_module().Again:  # (evaluated only when raised)
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
        declaration in C (a WireDecoder generated from topics.py), the sequence check,
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
            if end == 0 and frame.startswith(ANSWER_MARK):
                return None  # another subscriber's answer (a subscription to "" matches it)
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
            if size > MAX_BATCH_BYTES:
                return self._handle_slow(frame)  # refused there, unread
            return self._handle_batch(frame, end, route)
        try:  # decoded and checked against the declaration in C (a large frame unsliced)
            env = wire.decode(frame[end + 1:] if size < COPY_THRESHOLD
                              else memoryview(frame)[end + 1:])
        except Exception:  # msgspec's errors, or an extension type refused
            return self._handle_slow(frame)
        payload = payload_map(env.payload)
        for optional in wire.optional:
            if payload[optional] is UNSET:
                del payload[optional]
        if wire.python_check is not None and not wire.python_check(payload):
            return self._handle_slow(frame)
        source, seq, wall = env.source, env.seq, env.wall_time
        stream = streams.get(source)
        if stream is not None and seq == stream[0] + 1 and wall <= self._horizon:  # the next
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
        payloads = list(map(payload_map, batch.payloads))  # as one message alone: nested
        for optional in wire.optional:  # declared types stay typed, absent fields left out
            for payload in payloads:
                if payload[optional] is UNSET:
                    del payload[optional]
        python_check = wire.python_check
        if python_check is not None and not all(map(python_check, payloads)):
            return self._handle_slow(frame)
        size = (len(frame) - end - 1) // count  # a share of the frame each
        source, first, walls = batch.source, batch.seq, batch.walls
        accepted = self._backlog
        queued = len(accepted)
        stream = streams.get(source)
        if stream is not None and first == stream[0] + 1 and max(walls) <= self._horizon:
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
        """Sequence bookkeeping of an accepted message; False for a repeat, or for a stamp
        too far in the future (refused, counted). A stream is [latest sequence number, its
        send time, the others]: the others are the streams last seen under the same source
        name (a second process started with the same name, or the one before a restart), so
        that two publishers interleaved are neither gaps nor restarts -- each number is
        checked against the stream it follows."""
        if wall > self._horizon:
            now = time.time()
            self._horizon = now + MAX_FUTURE_S
            if wall > self._horizon:
                self._refuse(future_stamp(topic, source, wall, now), topic, 0)
                return False
        if stream is None:
            self.first_seq[(source, topic)] = seq
            if len(streams) < MAX_SOURCES_PER_TOPIC:
                streams[source] = [seq, wall, []]
            return True
        last, last_wall, others = stream
        if seq == last + 1:
            stream[0], stream[1] = seq, wall
            return True
        for i, other in enumerate(others):
            if seq == other[0] + 1:  # the next one of another publisher of this name
                others[i] = [last, last_wall]
                stream[0], stream[1] = seq, wall
                return True
        if seq <= last and wall <= last_wall:
            # the same message again, or an older one: a latched value sent again by
            # the broker to a new subscriber, or by a publisher to a restarted broker
            self.stats.duplicates += 1
            return False
        below = [o for o in others if o[0] < seq]
        nearest = max(below, key=lambda o: o[0]) if below else None
        if seq - last > MAX_SEQ_JUMP and (nearest is None or seq - nearest[0] > MAX_SEQ_JUMP):
            # no publisher sends that many unseen: a restart, or another of this name
            self.stats.seq_jumps += 1
            self.stats.restarts += 1
            others.insert(0, [last, last_wall])
            del others[MAX_OTHER_STREAMS:]
        elif seq > last + 1 and (nearest is None or nearest[0] < last):
            self.stats.gaps += seq - last - 1
        elif nearest is not None:  # a later message of another publisher, some missed
            self.stats.gaps += seq - nearest[0] - 1
            others.remove(nearest)
            others.insert(0, [last, last_wall])
        elif seq <= last:  # a smaller number, sent later: a restart, or a second publisher
            self.stats.restarts += 1
            others.insert(0, [last, last_wall])
            del others[MAX_OTHER_STREAMS:]
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

