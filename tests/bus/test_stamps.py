"""Stamps that cannot pin a stream: a wall time far in the future is refused by every receiver
and by the broker's cache, a sequence number far past the last is a restart (counted and
reported), never 2^64 lost messages; real messages that follow are accepted. Real ZeroMQ on
loopback through a broker."""

from __future__ import annotations

import time

from support.bus import RECV_TIMEOUT_S, wait_subscribed
from support.forge import heartbeat, raw_publisher

from robocell.common.bus import Endpoints, Node, Subscriber
from robocell.common.bus.wire import (
    MAX_FUTURE_S,
    MAX_SEQ,
    MAX_SEQ_JUMP,
    Envelope,
    encode_frame,
)

STATUS = "cell.status"


def status(source: str, seq: int, wall: float, stage: str = "idle") -> bytes:
    return encode_frame(Envelope(STATUS, source, seq, wall, time.monotonic(),
                                 {"cycle_id": "c", "stage": stage}))


def received(sub: Subscriber, count: int) -> list[Envelope]:
    out: list[Envelope] = []
    deadline = time.monotonic() + RECV_TIMEOUT_S
    while len(out) < count and time.monotonic() < deadline:
        env = sub.recv(0.2)
        if env is not None:
            out.append(env)
    return out


def test_a_future_wall_time_is_refused_and_later_real_messages_still_count(
        endpoints: Endpoints) -> None:
    sub = Subscriber([STATUS], endpoints)
    wait_subscribed(sub, STATUS)
    pub = raw_publisher(endpoints, STATUS)
    now = time.time()
    pub.send(status("cell", 5, now, "scanning"))
    pub.send(status("cell", 2**64 - 10, 4e9, "done"))          # a forgery
    pub.send(status("cell", 6, now + MAX_FUTURE_S * 3, "done"))  # the next seq, in the future
    pub.send(status("cell", 6, now + 0.01, "solving"))
    pub.send(status("cell", 7, now + 0.02, "executing"))
    got = received(sub, 3)
    assert [e.payload["stage"] for e in got] == ["scanning", "solving", "executing"]
    assert sub.stats.rejected["stamp"] == 2
    # and the broker's cache serves a late joiner the real state, not the forgery
    late = Subscriber([STATUS], endpoints)
    latest = received(late, 1)
    assert latest and latest[0].payload["stage"] == "executing", latest
    late.close()
    sub.close()
    pub.close()


def test_a_sequence_jump_is_a_restart_not_a_gap_and_does_not_pin_the_stream(
        endpoints: Endpoints) -> None:
    sub = Subscriber([STATUS], endpoints)
    wait_subscribed(sub, STATUS)
    pub = raw_publisher(endpoints, STATUS)
    now = time.time()
    pub.send(status("cell", 0, now, "scanning"))
    pub.send(status("cell", MAX_SEQ, now + 0.01, "done"))
    pub.send(status("cell", 1, now + 0.02, "solving"))
    pub.send(status("cell", 2 + MAX_SEQ_JUMP, now + 0.03, "executing"))  # just past it
    got = received(sub, 4)
    assert [e.payload["stage"] for e in got] == ["scanning", "done", "solving", "executing"]
    assert sub.stats.gaps == 0
    assert sub.stats.seq_jumps == 2
    sub.close()
    pub.close()


def test_heartbeats_at_both_ends_of_the_sequence_leave_every_node_beating(
        endpoints: Endpoints) -> None:
    """Two sources, seq 0 then 2^64-1 each: the gap counter once overflowed uint64 and every
    heartbeat after was refused; now each jump is a restart, counted and reported."""
    with Node("watched", endpoints, heartbeat_period=0.2):
        watcher = Subscriber(["heartbeat", "diagnostics"], endpoints)
        wait_subscribed(watcher, "heartbeat", "diagnostics")
        pub = raw_publisher(endpoints, "heartbeat")
        for source in ("rogue-a", "rogue-b"):
            pub.send(heartbeat(source, 0))
            pub.send(heartbeat(source, MAX_SEQ))
        beats, jumps = [], []
        deadline = time.monotonic() + RECV_TIMEOUT_S
        while time.monotonic() < deadline and (len(beats) < 3 or not jumps):
            env = watcher.recv(0.2)
            if env is None or env.source != "watched":
                continue
            if env.topic == "heartbeat" and env.payload["health"]["bus"]["seq_jumps"] == 2:
                beats.append(env)
            elif env.topic == "diagnostics" and env.payload["code"] == "sequence_jump":
                jumps.append(env)
        assert len(beats) >= 3, "the node stopped beating after the rogue heartbeats"
        assert beats[-1].payload["health"]["bus"]["dropped"] == 0
        assert jumps, "no sequence_jump diagnostic"
        watcher.close()
        pub.close()
