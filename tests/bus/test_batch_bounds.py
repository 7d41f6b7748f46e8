"""A batch frame is bounded in bytes and in messages: a 6 MB frame of 2,000,000 one-byte bad
messages on `heartbeat` is refused whole, unread, and the messages after it arrive at once
(it once silenced every service's heartbeat for two minutes). Real ZeroMQ through a broker."""

from __future__ import annotations

import struct
import time

import msgpack
from support.bus import RECV_TIMEOUT_S, wait_subscribed
from support.forge import heartbeat, raw_publisher

from robocell.common.bus import Endpoints, Subscriber
from robocell.common.bus.wire import BATCH_HEAD, SCHEMA_VERSION, TOPIC_END

N_BAD = 2_000_000


def first_from(sub: Subscriber, source: str) -> float | None:
    """Seconds until a message of ``source`` arrives (others, the broker's own beats, are
    passed over); None if none does in RECV_TIMEOUT_S."""
    began = time.monotonic()
    while time.monotonic() - began < RECV_TIMEOUT_S:
        env = sub.recv(0.2)
        if env is not None and env.source == source:
            return time.monotonic() - began
    return None


def bomb(count: int) -> bytes:
    """A batch frame of ``count`` one-byte messages (wall, monotonic and payload each one
    byte: nothing a message may be)."""
    column = b"\xdd" + struct.pack(">I", count) + b"\x00" * count
    return (b"heartbeat" + TOPIC_END + BATCH_HEAD + msgpack.packb(SCHEMA_VERSION)
            + msgpack.packb("heartbeat") + msgpack.packb("rogue") + msgpack.packb(0)
            + column + column + column)


def test_a_six_megabyte_batch_frame_is_refused_whole_and_what_follows_arrives_at_once(
        endpoints: Endpoints) -> None:
    sub = Subscriber(["heartbeat"], endpoints)
    wait_subscribed(sub, "heartbeat")
    pub = raw_publisher(endpoints, "heartbeat")
    frame = bomb(N_BAD)
    assert len(frame) > 6_000_000
    pub.send(frame)
    pub.send(heartbeat("after", 0))
    waited = first_from(sub, "after")
    assert waited is not None and waited < 2.0, f"the bad batch held the receiver up {waited}"
    assert sub.stats.rejected["oversize"] == 1
    assert sum(sub.stats.rejected.values()) == 1
    sub.close()
    pub.close()


def test_a_small_batch_claiming_too_many_messages_is_refused_whole(endpoints: Endpoints
                                                                   ) -> None:
    sub = Subscriber(["heartbeat"], endpoints)
    wait_subscribed(sub, "heartbeat")
    pub = raw_publisher(endpoints, "heartbeat")
    pub.send(bomb(20_000))  # 60 KB: under the byte bound, over the count bound
    pub.send(heartbeat("after", 0))
    assert first_from(sub, "after") is not None
    assert dict(sub.stats.rejected) == {"oversize": 1}
    sub.close()
    pub.close()
