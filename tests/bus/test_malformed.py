"""Malformed traffic is refused and counted, while good traffic keeps flowing."""

from __future__ import annotations

import os
import threading
import time

import msgpack
import zmq
from bus_testlib import recv_topic

from robocell.common.bus import Endpoints, Node, Publisher, Subscriber
from robocell.common.envelope import SCHEMA_VERSION, Envelope, encode
from robocell.services.broker.broker import Broker

STATUS = {"cycle_id": "c1", "stage": "idle"}
N_ROUNDS = 20


def bad_frames(round_: int) -> list[list[bytes]]:
    """One of each kind of bad message, different every round."""
    good = encode(Envelope.now("cell.status", "rogue", round_, STATUS))
    wrong_version = msgpack.packb([SCHEMA_VERSION + 9, "cell.status", "rogue", round_, 1.0,
                                   1.0, STATUS])
    wrong_types = msgpack.packb([SCHEMA_VERSION, "cell.status", "rogue", round_, 1.0, 1.0,
                                 {"cycle_id": 42, "stage": "idle"}])
    unknown = msgpack.packb([SCHEMA_VERSION, "cell.gossip", "rogue", round_, 1.0, 1.0, {}])
    return [
        [b"cell.status", os.urandom(40 + round_)],      # random bytes
        [b"cell.status", wrong_version],                  # wrong schema version
        [b"cell.status", wrong_types],                    # wrong field types
        [b"cell.status", b"\x00" * (9 * 1024 * 1024)],  # over the 8 MiB limit
        [b"cell.gossip", unknown],                        # undeclared topic
        [b"cell.result", good],                           # topic frame disagrees
        [b"cell.status", good, b"extra"],                 # three frames
    ]


def raw_publisher(endpoints: Endpoints) -> zmq.Socket:
    sock = zmq.Context.instance().socket(zmq.XPUB)
    sock.linger = 500
    sock.connect(endpoints.publish)
    assert sock.poll(5000), "broker never subscribed to the raw publisher"
    sock.recv()
    return sock


def test_broker_refuses_and_counts_bad_messages_while_good_ones_flow(broker: Broker) -> None:
    endpoints = broker.endpoints
    sub = Subscriber(["cell.status"], endpoints)
    rogue = raw_publisher(endpoints)
    good = Publisher("cell", endpoints)
    assert good.wait_linked(5)
    try:
        time.sleep(0.2)
        for round_ in range(N_ROUNDS):
            for frames in bad_frames(round_):
                rogue.send_multipart(frames)
            good.publish("cell.status", {**STATUS, "detail": f"round {round_}"})
        details = []
        while len(details) < N_ROUNDS:
            env = recv_topic(sub, "cell.status", timeout=5)
            assert env is not None, f"good traffic stopped after {len(details)} messages"
            assert env.source == "cell", "a bad message got through the broker"
            details.append(env.payload["detail"])
        assert details == [f"round {i}" for i in range(N_ROUNDS)]
        assert sub.stats.rejected == {}  # the broker filtered everything
        deadline = time.monotonic() + 3
        while sum(broker.rejected.values()) < 7 * N_ROUNDS and time.monotonic() < deadline:
            time.sleep(0.05)
        assert broker.rejected == {"decode": 3 * N_ROUNDS, "schema_version": N_ROUNDS,
                                   "invalid": N_ROUNDS, "oversize": N_ROUNDS,
                                   "unknown_topic": N_ROUNDS}
    finally:
        rogue.close()
        good.close()
        sub.close()


def test_receiver_refuses_counts_and_reports_bad_messages_and_keeps_running(
        bus_base: str) -> None:
    """With a broker that does not check, the receiving node is the last line of defence."""
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
            assert good.wait_linked(5)
            time.sleep(0.3)
            for round_ in range(N_ROUNDS):
                for frames in bad_frames(round_):
                    rogue.send_multipart(frames)
                good.publish("cell.status", {**STATUS, "detail": f"round {round_}"})
            deadline = time.monotonic() + 5
            while len(received) < N_ROUNDS and time.monotonic() < deadline:
                time.sleep(0.05)
            assert received == [f"round {i}" for i in range(N_ROUNDS)]
            rejected = monitor.subscriber.stats.rejected
            while sum(rejected.values()) < 3 * N_ROUNDS and time.monotonic() < deadline:
                time.sleep(0.05)
            # Even unchecked, the broker drops oversize and wrongly framed messages; the
            # cell.gossip and cell.result frames are not subscribed (ZeroMQ filters them).
            assert rejected == {"decode": N_ROUNDS, "schema_version": N_ROUNDS,
                                "invalid": N_ROUNDS}
            while sum(broker.rejected.values()) < 2 * N_ROUNDS and time.monotonic() < deadline:
                time.sleep(0.05)
            assert broker.rejected == {"oversize": N_ROUNDS, "decode": N_ROUNDS}
            deadline = time.monotonic() + 3
            while not diagnostics and time.monotonic() < deadline:
                time.sleep(0.05)
            reported = [d for d in diagnostics if d["service"] == "monitor"]
            assert reported and reported[0]["code"] == "bad_message"
            assert reported[0]["topic"] == "cell.status"
            # the monitor still answers commands after all that
            assert watcher.call("monitor", "ping", timeout=2)["service"] == "monitor"
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
        time.sleep(0.3)
        cell.publish("cell.status", STATUS)
        cell.publish("cell.status", {**STATUS, "stage": "scanning"})
        deadline = time.monotonic() + 3
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert seen == [0, 1]


def test_garbage_on_the_command_channel_is_counted_and_commands_still_work(
        broker: Broker) -> None:
    from robocell.common.bus import REQUEST

    diagnostics: list[dict] = []
    with Node("solver", broker.endpoints) as solver, Node("watcher", broker.endpoints) as w:
        solver.serve("solve", lambda args, ctx: "planned")
        w.subscribe("diagnostics", lambda env: diagnostics.append(env.payload))
        time.sleep(0.3)
        rogue = zmq.Context.instance().socket(zmq.DEALER)
        rogue.linger = 0
        rogue.connect(broker.endpoints.command)
        try:
            rogue.send_multipart([b"\x07"])  # unknown frame kind
            rogue.send_multipart([REQUEST, b"solver", os.urandom(30)])  # undecodable request
            rogue.send_multipart([REQUEST, b"solver", encode(Envelope.now(
                "cmd.request", "rogue", 0, {"id": 5}))])  # wrong field types
            assert w.call("solver", "solve", {"facelets": "U"}, timeout=3) == "planned"
            deadline = time.monotonic() + 3
            while broker.commands["malformed"] < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert broker.commands["malformed"] == 1
            while len([d for d in diagnostics if d["code"] == "bad_request"]) < 1 \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            bad = [d for d in diagnostics if d["code"] == "bad_request"]
            assert bad and bad[0]["service"] == "solver" and bad[0]["count"] >= 1
        finally:
            rogue.close()
