"""Malformed traffic is refused and counted, while good traffic keeps flowing."""

from __future__ import annotations

import os
import threading
import time

import msgpack
import zmq
from support.bus import declared_result, recv_topic, wait_registered, wait_subscribed

from robocell.common.bus import Endpoints, Node, Publisher, Subscriber
from robocell.common.bus.wire import SCHEMA_VERSION, TOPIC_END, Envelope, encode
from robocell.services.broker.service import Broker

STATUS = {"cycle_id": "c1", "stage": "idle"}
N_ROUNDS = 20


def frame(topic: bytes, data: bytes) -> bytes:
    """A message frame as the bus sends it: topic, zero byte, envelope."""
    return topic + TOPIC_END + data


def bad_frames(round_: int) -> list[list[bytes]]:
    """One of each kind of bad message that reaches the broker, different every round (each
    a ZeroMQ message: a list of frames)."""
    good = encode(Envelope.now("cell.status", "rogue", round_, STATUS))
    wrong_version = msgpack.packb([SCHEMA_VERSION + 9, "cell.status", "rogue", round_, 1.0,
                                   1.0, STATUS])
    wrong_types = msgpack.packb([SCHEMA_VERSION, "cell.status", "rogue", round_, 1.0, 1.0,
                                 {"cycle_id": 42, "stage": "idle"}])
    unknown = msgpack.packb([SCHEMA_VERSION, "cell.gossip", "rogue", round_, 1.0, 1.0, {}])
    return [
        [frame(b"cell.status", os.urandom(40 + round_))],  # random bytes
        [frame(b"cell.status", wrong_version)],           # wrong schema version
        [frame(b"cell.status", wrong_types)],             # wrong field types
        [frame(b"cell.gossip", unknown)],                 # undeclared topic
        [frame(b"cell.result", good)],                    # frame and envelope topics disagree
        [frame(b"cell.status", os.urandom(30)), b"extra"],  # two frames
        [b"cell.status"],                                 # a topic and nothing else
    ]


# What a cell.status subscriber sees of bad_frames() (ZeroMQ filters cell.gossip, cell.result
# and the bare topic by their first bytes): random bytes, and each frame of the two-frame
# message (judged on its own) are "decode", then one each of schema_version and invalid.
RECEIVER_REFUSALS = {"decode": 3 * N_ROUNDS, "schema_version": N_ROUNDS, "invalid": N_ROUNDS}
# What the broker's check tap counts: all seven kinds.
TAP_REFUSALS = {"decode": 4 * N_ROUNDS, "schema_version": N_ROUNDS, "invalid": N_ROUNDS,
                "unknown_topic": N_ROUNDS}


def raw_publisher(endpoints: Endpoints) -> zmq.Socket:
    sock = zmq.Context.instance().socket(zmq.XPUB)
    sock.linger = 500
    sock.connect(endpoints.publish)
    assert sock.poll(10000), "broker never subscribed to the raw publisher"
    sock.recv()
    return sock


def wait_until(condition, timeout: float = 15.0) -> bool:
    """Wait for ``condition``; whether it came true."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def test_bad_messages_are_refused_and_counted_by_receiver_and_broker_while_good_ones_flow(
        broker: Broker) -> None:
    """The broker forwards without decoding; the receiver refuses and counts every bad
    message, the broker's tap counts them too, and good traffic arrives complete, in order."""
    endpoints = broker.endpoints
    sub = Subscriber(["cell.status"], endpoints)
    diagnostics = Subscriber(["diagnostics"], endpoints)
    rogue = raw_publisher(endpoints)
    good = Publisher("cell", endpoints)
    assert good.wait_linked(10)
    try:
        wait_subscribed(sub, "cell.status")
        wait_subscribed(diagnostics, "diagnostics")
        for round_ in range(N_ROUNDS):
            for frames in bad_frames(round_):
                rogue.send_multipart(frames)
            good.publish("cell.status", {**STATUS, "detail": f"round {round_}"})
        details = []
        while len(details) < N_ROUNDS:
            env = recv_topic(sub, "cell.status")
            assert env is not None, f"good traffic stopped after {len(details)} messages"
            assert env.source == "cell", "a bad message was accepted"
            details.append(env.payload["detail"])
        assert details == [f"round {i}" for i in range(N_ROUNDS)]
        assert sub.recv(0.5) is None  # drains what is left: only bad messages
        assert sub.stats.rejected == RECEIVER_REFUSALS
        assert sub.stats.gaps == 0
        wait_until(lambda: sum(broker.rejected.values()) >= sum(TAP_REFUSALS.values()))
        assert broker.rejected == TAP_REFUSALS
        # A trickle like this is checked in full (the count is made with each bus.stats; in
        # frames: the good messages, published in a quick loop, may travel in batch frames).
        # (the broker's own messages keep coming: the frame just forwarded when a count is
        # made may be on its way to the tap, so one count of zero is what shows it)
        assert wait_until(lambda: broker.checked >= 7 * N_ROUNDS + 1
                          and broker.unchecked == 0)
        # Per-topic statistics come from the publishers' own reports: the rogue never
        # reports, the good publisher does (within a second).
        wait_until(lambda: "cell.status" in broker.topics)
        assert broker.topics["cell.status"].messages == N_ROUNDS
        assert broker.topics["cell.status"].gaps == 0
        assert "rogue" not in broker.topics["cell.status"].publishers
        # The broker reports what it saw on diagnostics: once per reason and topic (rate
        # limited), naming the reason and the sender when the envelope names one.
        reports: list[dict] = []

        def invalid() -> list[dict]:
            # (the reason, not the word: a decode error of random bytes may say "invalid" too)
            return [r for r in reports if "(invalid:" in r["message"]]

        def unknown() -> list[dict]:
            return [r for r in reports if r["topic"] is None and "unknown_topic" in r["message"]]

        deadline = time.monotonic() + 15
        while True:  # until both reports came (or the deadline), then what else is queued
            waiting = not (invalid() and unknown()) and time.monotonic() < deadline
            env = diagnostics.recv(1.0 if waiting else 0.5)
            if env is None and not waiting:
                break
            if env is not None and env.source == "broker":
                reports.append(env.payload)
        assert all(r["code"] == "bad_message" for r in reports)
        invalid = invalid()
        assert invalid and invalid[0]["topic"] == "cell.status"
        assert invalid[0]["peer"] == "rogue"
        assert unknown()
        assert len(reports) <= 6  # (reason, topic) pairs, not one per bad message
    finally:
        rogue.close()
        good.close()
        sub.close()
        diagnostics.close()


def test_oversize_frames_are_refused_by_the_broker_and_by_receivers(broker: Broker) -> None:
    endpoints = broker.endpoints
    sub = Subscriber(["cell.status"], endpoints)
    small = Subscriber(["cell.status"], endpoints, max_bytes=1000)  # a stricter receiver
    good = Publisher("cell", endpoints)
    assert good.wait_linked(10)
    rogue = raw_publisher(endpoints)
    try:
        wait_subscribed(sub, "cell.status")
        wait_subscribed(small, "cell.status")
        # Over the broker's 8 MiB limit: ZeroMQ refuses the frame and drops the connection.
        rogue.send(frame(b"cell.status", b"\x00" * (9 * 1024 * 1024)))
        good.publish("cell.status", {**STATUS, "detail": "small"})
        good.publish("cell.status", {**STATUS, "detail": "x" * 2000})
        env = recv_topic(sub, "cell.status")
        assert env is not None and env.payload["detail"] == "small"
        env = recv_topic(sub, "cell.status")
        assert env is not None and len(env.payload["detail"]) == 2000
        assert recv_topic(sub, "cell.status", timeout=0.5) is None  # the 9 MiB never came
        assert sub.stats.rejected == {}
        env = recv_topic(small, "cell.status")
        assert env is not None and env.payload["detail"] == "small"
        assert recv_topic(small, "cell.status", timeout=0.5) is None
        assert small.stats.rejected == {"oversize": 1}
    finally:
        rogue.close()
        good.close()
        sub.close()
        small.close()


def test_receiver_refuses_counts_and_reports_bad_messages_and_keeps_running(
        bus_base: str) -> None:
    """Even with the broker's checks off, the receiving node refuses, counts and reports."""
    endpoints = Endpoints.from_base(bus_base)
    broker = Broker(endpoints, stats_period=0.2, check=False)
    thread = threading.Thread(target=broker.run, daemon=True)
    thread.start()
    received: list[str] = []
    diagnostics: list[dict] = []
    try:
        with Node("monitor", endpoints) as monitor, Node("watcher", endpoints) as watcher:
            monitor.subscribe("cell.status", lambda env: received.append(env.payload["detail"]))
            watcher.subscribe("diagnostics", lambda env: diagnostics.append(env.payload))
            rogue = raw_publisher(endpoints)
            good = Publisher("cell", endpoints)
            assert good.wait_linked(10)
            wait_subscribed(monitor.subscriber, "cell.status")
            wait_subscribed(watcher.subscriber, "diagnostics")
            for round_ in range(N_ROUNDS):
                for frames in bad_frames(round_):
                    rogue.send_multipart(frames)
                good.publish("cell.status", {**STATUS, "detail": f"round {round_}"})
            wait_until(lambda: len(received) >= N_ROUNDS)
            assert received == [f"round {i}" for i in range(N_ROUNDS)]
            rejected = monitor.subscriber.stats.rejected
            wait_until(lambda: sum(rejected.values()) >= sum(RECEIVER_REFUSALS.values()))
            assert rejected == RECEIVER_REFUSALS
            # Without its check tap the broker decodes nothing: all of it is unchecked.
            wait_until(lambda: broker.unchecked >= 8 * N_ROUNDS)
            assert broker.rejected == {}
            assert broker.checked == 0 and broker.unchecked >= 8 * N_ROUNDS
            wait_until(lambda: any(d["service"] == "monitor" for d in diagnostics))
            reported = [d for d in diagnostics if d["service"] == "monitor"]
            assert reported and reported[0]["code"] == "bad_message"
            assert reported[0]["topic"] == "cell.status"
            # the monitor still answers commands after all that
            assert watcher.call("monitor", "ping", timeout=10)["service"] == "monitor"
            rogue.close()
            good.close()
    finally:
        broker.stop()
        thread.join(5)


def test_callback_that_raises_does_not_stop_the_node(endpoints: Endpoints) -> None:
    seen: list[int] = []

    def fragile(env) -> None:
        seen.append(env.seq)
        if env.seq == 0:
            raise ValueError("boom")

    with Node("monitor", endpoints) as monitor, Node("cell", endpoints) as cell:
        monitor.subscribe("cell.status", fragile)
        wait_subscribed(monitor.subscriber, "cell.status")
        cell.publish("cell.status", STATUS)
        cell.publish("cell.status", {**STATUS, "stage": "scanning"})
        deadline = time.monotonic() + 10
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert seen == [0, 1]


def test_garbage_on_the_command_channel_is_counted_and_commands_still_work(
        broker: Broker) -> None:
    from robocell.common.bus.commands import REQUEST

    diagnostics: list[dict] = []
    with Node("solver", broker.endpoints) as solver, Node("watcher", broker.endpoints) as w:
        plan = declared_result("solver", "solve", facelets="U")
        solver.serve("solve", lambda args, ctx: plan)
        w.subscribe("diagnostics", lambda env: diagnostics.append(env.payload))
        wait_registered(broker, "solver", ["solve"])
        wait_subscribed(w.subscriber, "diagnostics")
        rogue = zmq.Context.instance().socket(zmq.DEALER)
        rogue.linger = 0
        rogue.connect(broker.endpoints.command)
        try:
            rogue.send_multipart([b"\x07"])  # unknown frame kind
            rogue.send_multipart([REQUEST, b"solver", os.urandom(30)])  # undecodable request
            rogue.send_multipart([REQUEST, b"solver", encode(Envelope.now(
                "cmd.request", "rogue", 0, {"id": 5}))])  # wrong field types
            assert w.call("solver", "solve", {"facelets": "U"}, timeout=10) == plan
            deadline = time.monotonic() + 10
            # the broker reads each request's id and target before routing it: all three
            # are refused there, counted, and reported; the service never sees them
            while broker.commands["malformed"] < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert broker.commands["malformed"] == 3
            while len([d for d in diagnostics if d["code"] == "bad_request"]) < 1 \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            bad = [d for d in diagnostics if d["code"] == "bad_request"]
            assert bad and bad[0]["service"] == "broker" and bad[0]["count"] >= 1
        finally:
            rogue.close()
