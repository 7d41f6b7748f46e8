"""Batch frames: a burst goes out in few frames, and nothing about the messages changes."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import hypothesis.strategies as st
import msgpack
import pytest
import zmq
from hypothesis import given, settings
from support.bus import (
    recv_topic,
    robocell_cmd,
    robocell_env,
    stop_process,
    subscription_watcher,
    wait_for_new_subscription,
    wait_raw_subscribed,
    wait_subscribed,
)

from robocell.common.bus import Endpoints, Publisher, Subscriber
from robocell.common.bus.publisher import COALESCE_FRAME_BYTES, COALESCE_MESSAGE_BYTES
from robocell.common.bus.wire import (
    BATCH_MARK,
    TOPIC_END,
    DecodeError,
    Envelope,
    batch_frame,
    decode,
    decode_frame,
    encode,
    is_batch_frame,
    last_of_batch,
    unbatch_frame,
)
from robocell.services.broker.service import Broker
from robocell.tools.recording import read_messages

STATUS = {"cycle_id": "c1", "stage": "executing"}
BURST = 1000
HEAD = b"cell.status" + TOPIC_END


def linked(endpoints: Endpoints, source: str = "cell") -> Publisher:
    pub = Publisher(source, endpoints)
    assert pub.wait_linked(10)
    return pub


def raw_listener(endpoints: Endpoints, topic: bytes = HEAD) -> zmq.Socket:
    """A plain SUB socket: sees the frames as they travel."""
    sock = zmq.Context.instance().socket(zmq.SUB)
    sock.linger = 0
    sock.subscribe(topic)
    sock.connect(endpoints.subscribe)
    return sock


def drain_frames(sock: zmq.Socket, quiet_s: float = 1.0,
                 first_s: float | None = None) -> list[bytes]:
    """The frames ``sock`` receives until a lull of ``quiet_s``; the first one is awaited
    ``first_s`` (default: ``quiet_s``)."""
    frames = []
    while sock.poll(int((quiet_s if frames or first_s is None else first_s) * 1000)):
        frames.append(sock.recv())
    return frames


def test_a_burst_travels_in_batch_frames_and_arrives_whole_and_in_order(
        endpoints: Endpoints) -> None:
    sub = Subscriber(["cell.status"], endpoints)
    raw = raw_listener(endpoints)
    pub = linked(endpoints)
    try:
        wait_subscribed(sub, "cell.status")
        wait_raw_subscribed(raw, endpoints)
        before = time.time()
        for i in range(BURST):
            pub.publish("cell.status", {**STATUS, "detail": f"step {i}"})
        after = time.time()
        got = []
        deadline = time.monotonic() + 10
        while len(got) < BURST and time.monotonic() < deadline:
            got += sub.recv_batch(0.5)
        frames = drain_frames(raw)
    finally:
        pub.close()
        sub.close()
        raw.close()
    assert [e.payload["detail"] for e in got] == [f"step {i}" for i in range(BURST)]
    assert [e.seq for e in got] == list(range(BURST))
    assert sub.stats.gaps == 0 and not sub.stats.rejected
    # Wall times inside a batch follow the monotonic clock from its first message. Each
    # batch reads both clocks afresh, so between batches their difference may move by as
    # long as the process was preempted between the two readings.
    walls, monos = [e.wall_time for e in got], [e.mono_time for e in got]
    assert before <= walls[0] and walls[-1] <= after + 0.001  # (a clock slewed by NTP)
    assert monos == sorted(monos)
    by_seq = {e.seq: e.wall_time - e.mono_time for e in got}
    for f in frames:
        offsets = [by_seq[decode_frame(one).seq] for one in unbatch_frame(f)]
        assert max(offsets) - min(offsets) < 1e-6
    offsets = list(by_seq.values())
    assert max(offsets) - min(offsets) < 0.05
    # The burst went out in batch frames: far fewer frames than messages, each decodable
    # into the same envelopes the subscriber accepted.
    assert any(is_batch_frame(f) for f in frames)
    assert len(frames) < BURST / 4
    carried = [decode_frame(one).seq for f in frames for one in unbatch_frame(f)]
    assert carried == list(range(BURST))
    # at most COALESCE_FRAME_BYTES of messages, and a batch is smaller than they would be
    assert max(map(len, frames)) < COALESCE_FRAME_BYTES + COALESCE_MESSAGE_BYTES
    assert pub.traffic()["cell.status"]["messages"] == BURST


def test_a_message_after_a_pause_goes_alone_and_a_bursts_tail_is_sent_without_more_traffic(
        endpoints: Endpoints) -> None:
    raw = raw_listener(endpoints)
    pub = linked(endpoints)
    try:
        wait_raw_subscribed(raw, endpoints)
        pub.publish("cell.status", STATUS)
        first = drain_frames(raw, 0.5, first_s=10)
        # a short burst, then nothing: the flusher thread sends what was gathered
        for i in range(5):
            pub.publish("cell.status", {**STATUS, "detail": str(i)})
        tail = drain_frames(raw, 1.0, first_s=10)
    finally:
        pub.close()
        raw.close()
    assert len(first) == 1 and not is_batch_frame(first[0])
    assert [decode_frame(one).payload.get("detail") for f in tail for one in unbatch_frame(f)] \
        == [str(i) for i in range(5)]


def test_a_late_joiner_gets_only_the_newest_message_of_a_latched_burst(
        broker: Broker) -> None:
    endpoints = broker.endpoints
    pub = linked(endpoints)
    try:
        for i in range(200):
            pub.publish("cell.status", {**STATUS, "detail": str(i)})
        # the flusher sent the tail; the cache holds the newest frame
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and (
                "cell.status" not in broker.cache
                or decode_frame(broker.cache["cell.status"]).seq != 199):
            time.sleep(0.02)
        late = Subscriber(["cell.status"], endpoints)
        try:
            env = recv_topic(late, "cell.status")
            assert env is not None and env.payload["detail"] == "199" and env.seq == 199
            assert late.recv(0.5) is None  # nothing older follows
        finally:
            late.close()
    finally:
        pub.close()


def test_batch_frames_with_bad_envelopes_are_judged_envelope_by_envelope(
        broker: Broker) -> None:
    endpoints = broker.endpoints
    sub = Subscriber(["cell.status"], endpoints)
    sock = zmq.Context.instance().socket(zmq.XPUB)
    sock.linger = 500
    sock.connect(endpoints.publish)
    try:
        assert sock.poll(10000)
        sock.recv()  # the broker's subscription: the link is up
        wait_subscribed(sub, "cell.status")
        good = [encode(Envelope.now("cell.status", "rogue", i, STATUS)) for i in (0, 2, 3)]
        invalid = msgpack.packb([1, "cell.status", "rogue", 1, 1.0, 1.0, {"cycle_id": 42}])
        sock.send(batch_frame(HEAD, [good[0], invalid, good[1], good[2]]))
        sock.send(HEAD + bytes([BATCH_MARK, 0, 5]) + os.urandom(20))  # garbage after the head
        sock.send(HEAD + bytes([BATCH_MARK, 0, 0]))  # an empty batch
        got = []
        deadline = time.monotonic() + 15
        while (len(got) < 3 or sum(sub.stats.rejected.values()) < 3) \
                and time.monotonic() < deadline:  # the bad frames come after the good ones
            got += sub.recv_batch(0.2)
        deadline = time.monotonic() + 15
        while sum(broker.rejected.values()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        sock.close()
        sub.close()
    assert [e.seq for e in got] == [0, 2, 3]
    assert sub.stats.rejected == {"invalid": 1, "decode": 2}
    assert broker.rejected == {"invalid": 1, "decode": 2}


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_taking_a_batch_apart_raises_only_decode_errors(data: bytes) -> None:
    frame = HEAD + bytes([BATCH_MARK]) + data
    try:
        parts = unbatch_frame(frame)
    except DecodeError:
        return
    assert parts and all(p.startswith(HEAD) for p in parts)


def test_a_batch_writes_what_its_messages_share_once_and_is_refused_if_its_columns_disagree(
        broker: Broker) -> None:
    envs = [encode(Envelope.now("cell.status", "cell", i, STATUS)) for i in range(10)]
    frame = batch_frame(HEAD, envs)
    # version, topic and source once, one sequence number: 19 bytes less a message here
    assert len(frame) <= sum(len(HEAD + e) for e in envs) - 10 * 19
    with pytest.raises(ValueError, match="consecutive"):
        batch_frame(HEAD, [envs[0], envs[2]])
    with pytest.raises(ValueError, match="another version, topic or source"):
        batch_frame(HEAD, [envs[0], encode(Envelope.now("cell.status", "other", 1, STATUS))])
    walls = [1.0] * 3
    short = HEAD + bytes([BATCH_MARK, 0, 7]) + b"".join(msgpack.packb(v) for v in (
        1, "cell.status", "cell", 0, walls, walls[:2], [STATUS] * 3))
    with pytest.raises(DecodeError, match="2 monotonic times and 3 payloads"):
        unbatch_frame(short)
    past_the_end = HEAD + bytes([BATCH_MARK, 0, 7]) + b"".join(msgpack.packb(v) for v in (
        1, "cell.status", "cell", 2**64 - 1, walls[:2], walls[:2], [STATUS] * 2))
    with pytest.raises(DecodeError, match="not all between 0 and"):
        unbatch_frame(past_the_end)
    sub = Subscriber(["cell.status"], broker.endpoints)
    sock = zmq.Context.instance().socket(zmq.XPUB)
    sock.linger = 500
    sock.connect(broker.endpoints.publish)
    try:
        assert sock.poll(10000)
        sock.recv()
        wait_subscribed(sub, "cell.status")
        sock.send(short)
        sock.send(past_the_end)
        sock.send(frame)
        sock.send(frame)  # the same batch again: ten repeats, none delivered twice
        got = []
        deadline = time.monotonic() + 15
        while (len(got) < 10 or sub.stats.duplicates < 10) and time.monotonic() < deadline:
            got += sub.recv_batch(0.2)
    finally:
        sock.close()
        sub.close()
    assert [e.seq for e in got] == list(range(10))
    assert [e.payload for e in got] == [STATUS] * 10
    assert sub.stats.rejected == {"decode": 2} and sub.stats.duplicates == 10


def test_batch_helpers_round_trip() -> None:
    envs = [encode(Envelope.now("cell.status", "cell", i, STATUS)) for i in range(4)]
    frame = batch_frame(HEAD, envs)
    assert is_batch_frame(frame)
    assert unbatch_frame(frame) == [HEAD + e for e in envs]
    assert last_of_batch(frame) == HEAD + envs[-1]
    single = batch_frame(HEAD, envs[:1])
    assert not is_batch_frame(single) and unbatch_frame(single) == [single]
    assert decode(envs[2]).seq == 2


def test_a_recorded_burst_is_stored_message_by_message(broker_process, bus_base: str,
                                                       tmp_path: Path) -> None:
    _, endpoints = broker_process
    recording = tmp_path / "burst.mcap"
    watcher = subscription_watcher(endpoints)
    known = drain_frames(watcher, 0.3)  # the subscriptions already there, re-sent on connect
    recorder = subprocess.Popen(
        robocell_cmd("bus", "record", str(recording), "cell.status", "--count", "300"),
        env=robocell_env(bus_base), stderr=subprocess.PIPE, text=True)
    pub = linked(endpoints)
    try:
        assert "recording" in recorder.stderr.readline()
        # the burst starts once the recorder's subscription has passed the broker (on a busy
        # host that can take longer than any fixed sleep)
        wait_for_new_subscription(watcher, known, b"cell.status" + TOPIC_END, timeout=30)
        for i in range(300):
            pub.publish("cell.status", {**STATUS, "detail": str(i)})
        assert recorder.wait(15) == 0
    finally:
        pub.close()
        watcher.close()
        stop_process(recorder)
    recorded = [decode(m.data) for m in read_messages(recording)]
    assert [e.payload["detail"] for e in recorded] == [str(i) for i in range(300)]


@pytest.mark.parametrize("count", [1, 2, 600])
def test_a_closed_publisher_sends_what_it_gathered(endpoints: Endpoints, count: int) -> None:
    sub = Subscriber(["cell.status"], endpoints)
    pub = linked(endpoints)
    wait_subscribed(sub, "cell.status")
    for i in range(count):
        pub.publish("cell.status", {**STATUS, "detail": str(i)})
    pub.close()
    try:
        got = []
        deadline = time.monotonic() + 15
        while len(got) < count and time.monotonic() < deadline:
            got += sub.recv_batch(0.5)
    finally:
        sub.close()
    assert [e.payload["detail"] for e in got] == [str(i) for i in range(count)]


def test_a_batch_decodes_to_payload_maps_without_absent_fields_and_with_bytes_kept() -> None:
    face = {"scan_id": "s1", "pose": 2, "face": "F", "size": 3, "jpeg": b"\xff\xd8 tiny",
            "grid": [[10.0, 20.0]] * 9, "colors": [[200, 30, 40]] * 9,
            "confidence": [0.97] * 9, "ok": True}
    envs = [encode(Envelope.now("vision.face", "vision", i, face)) for i in range(3)]
    envs += [encode(Envelope.now("vision.face", "vision", 3, {**face, "jpeg": b""}))]
    statuses = [encode(Envelope.now("cell.status", "cell", i, payload)) for i, payload in
                enumerate([STATUS, {**STATUS, "detail": "d"}, STATUS])]
    for head, batch, payloads in (
            (b"vision.face" + TOPIC_END, envs, [face] * 3 + [{**face, "jpeg": b""}]),
            (HEAD, statuses, [STATUS, {**STATUS, "detail": "d"}, STATUS])):
        sub = Subscriber([head[:-1].decode()], Endpoints.from_base("tcp://127.0.0.1:1"))
        try:
            first = sub.handle_frame(batch_frame(head, batch))
            got = [first] + [sub.recv(0) for _ in payloads[1:]]  # the rest, queued
        finally:
            sub.close()
        assert [e.payload for e in got] == payloads
        assert all(type(e.payload.get("jpeg", b"")) is bytes for e in got)
