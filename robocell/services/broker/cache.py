"""The broker's last-value cache: the newest message of every latched topic, handed to each
new subscriber on its own answer channel.

The cache reads every latched frame in the order the proxy forwarded it (not a ZMQ_CONFLATE
socket per topic: the broker's own answers pass the proxy too, and one in flight when a
newer message passes would be the last value there). A subscriber asks for the current state
by subscribing on its answer channel (see :class:`robocell.common.bus.Subscriber`); the
broker answers on that channel only, so no other subscriber sees an old value again."""

from __future__ import annotations

import time

import zmq

from robocell.common.bus import is_replayed
from robocell.common.bus.endpoints import ZMQ_NOBLOCK
from robocell.common.bus.wire import (
    ANSWER_MARK,
    MAX_FUTURE_S,
    TOPIC_END,
    MessageError,
    decode_frame,
    last_of_batch,
    subscription,
)

CACHE_HWM = 10_000
"""Latched frames queued for the cache between two reads (state: a few a second)."""
SUBSCRIBE_MARK = b"\x01"  # first byte of a subscription message (b"\x00": unsubscribe)


class LastValueCache:
    """The newest message per latched topic, read from ``reader`` (a SUB socket subscribed
    to every latched topic on the proxy's internal feed)."""

    def __init__(self, reader: zmq.Socket, latched: list[str], max_bytes: int) -> None:
        self.reader = reader
        self.latched = latched
        self.max_bytes = max_bytes
        self.frames: dict[str, bytes] = {}
        """latched topic -> its newest message (a plain frame)."""
        self._stamps: dict[str, tuple[str, int, float]] = {}
        """latched topic -> (source, seq, wall time) of the message in ``frames``."""
        self.subscriptions = 0
        """Subscriptions seen (a topic's own, not its answer channel's)."""

    def read(self) -> None:
        """Read every latched frame queued so far; keep per topic the newest message."""
        recv, sock = zmq.backend.Socket.recv, self.reader
        while True:
            try:
                frame = recv(sock, ZMQ_NOBLOCK)
            except zmq.Again:
                return
            self.keep(frame)

    def keep(self, frame: bytes) -> None:
        """Keep the newest message of ``frame`` (of a batch: its last) unless the cache holds
        a newer one of its topic: a repeat (the broker's own answer coming back, a
        publisher's resend) is not newer than what it repeats. Of two sources, the later
        send time wins. A replayed message (``bus play``, source ``replay:...``) never
        replaces a live one; a live one always replaces a replayed one. A frame that cannot
        be decoded is left to the check tap, and so is one stamped more than MAX_FUTURE_S
        ahead of this host's clock (kept, it would outrank every real message until then;
        receivers refuse it too)."""
        one = last_of_batch(frame)
        try:
            env = decode_frame(one, self.max_bytes)
        except MessageError:
            return
        if env.wall_time > time.time() + MAX_FUTURE_S:
            return
        held = self._stamps.get(env.topic)
        if held is not None:
            source, seq, wall = held
            replayed = is_replayed(env.source)
            if replayed != is_replayed(source):
                if replayed:
                    return  # the live state stays
            elif env.wall_time <= wall and (env.source != source or env.seq <= seq):
                return  # not newer (a smaller seq sent later is a restarted source)
        self.frames[env.topic] = one
        self._stamps[env.topic] = (env.source, env.seq, env.wall_time)

    def answers(self, frame: bytes) -> list[bytes]:
        """The frames that answer a subscription on its way from a subscriber to the
        publishers: for a subscribe on a subscriber's answer channel, the newest message of
        every latched topic it matches, on that channel; nothing for anything else."""
        if frame[:1] != SUBSCRIBE_MARK:
            return []
        if not frame.startswith(ANSWER_MARK, 1):
            self.subscriptions += 1  # the topic's own subscription: its answer is asked next
            return []
        end = frame.find(TOPIC_END, 1 + len(ANSWER_MARK))
        if end < 0:
            return []
        channel, prefix = frame[1:end + 1], frame[end + 1:]
        matches = [topic for topic in self.latched if subscription(topic).startswith(prefix)]
        if not matches:
            return []
        self.read()  # everything forwarded before the subscription passed the proxy
        return [channel + self.frames[topic] for topic in matches if topic in self.frames]
