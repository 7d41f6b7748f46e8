"""Backpressure: a slow subscriber never blocks a publisher, and what it misses is counted."""

from __future__ import annotations

import threading
import time

import pytest
from support.bus import wait_subscribed

from robocell.common.bus import Endpoints, Publisher, Subscriber
from robocell.services.broker.service import Broker

N_MESSAGES = 10_000
DETAIL_BYTES = 4096  # big enough that kernel socket buffers cannot hide the queue
SMALL_HWM = 100
PUBLISH_GUARD_S = 60  # generous: only guards against a hang, not a speed check


def test_slow_subscriber_does_not_block_the_publisher_and_its_drops_are_counted(
        bus_base: str) -> None:
    endpoints = Endpoints.from_base(bus_base)
    broker = Broker(endpoints, stats_period=0.2, subscriber_hwm=SMALL_HWM)
    broker_thread = threading.Thread(target=broker.run, daemon=True)
    broker_thread.start()
    slow = Subscriber(["cell.status"], endpoints, hwm=SMALL_HWM)  # does not read for now
    fast = Subscriber(["cell.status"], endpoints)
    pub = Publisher("cell", endpoints)
    reader: threading.Thread | None = None
    try:
        assert pub.wait_linked(10)
        wait_subscribed(slow, "cell.status")
        wait_subscribed(fast, "cell.status")
        fast_done = threading.Event()

        def drain_fast() -> None:
            quiet_since = time.monotonic()
            while time.monotonic() - quiet_since < 2.0:
                env = fast.recv(0.2)
                if env is not None:
                    quiet_since = time.monotonic()
                    if env.seq == N_MESSAGES - 1:
                        break
            fast_done.set()

        reader = threading.Thread(target=drain_fast)
        reader.start()
        detail = "x" * DETAIL_BYTES

        def publish_all() -> None:
            for i in range(N_MESSAGES):
                pub.publish("cell.status", {"cycle_id": f"c{i}", "stage": "idle",
                                            "detail": detail})

        publishing = threading.Thread(target=publish_all)
        publishing.start()
        publishing.join(PUBLISH_GUARD_S)
        assert not publishing.is_alive(), "the publisher blocked behind a slow subscriber"
        assert pub.sent == N_MESSAGES
        reader.join(30)
        assert fast.stats.received > 0
        # whatever a subscriber missed is accounted for as a gap, nothing vanishes silently
        assert fast.stats.received + fast.stats.gaps == last_seq(fast) + 1 - first_seq(fast)
        # every message the publisher sent is accounted for by its own report, added up by
        # the broker: taken by ZeroMQ, or dropped at its queue to the broker (rarely one,
        # when a starved broker lets the queue fill: the queue is as deep as the burst)
        deadline = time.monotonic() + 15

        def reported() -> int:
            stats = broker.topics.get("cell.status")
            return stats.messages + stats.gaps if stats else 0

        while reported() < N_MESSAGES and time.monotonic() < deadline:
            time.sleep(0.05)
        assert reported() == N_MESSAGES
        assert broker.topics["cell.status"].gaps == pub.traffic()["cell.status"]["dropped"]
        # The slow subscriber reads its queue now: many messages were dropped for it, and
        # every one of them is counted as a gap.
        while slow.recv(0.5) is not None:
            pass
        # One more message once it keeps up again: drops at the tail of the burst become a
        # visible gap too.
        pub.publish("cell.status", {"cycle_id": "last", "stage": "done"})
        while (env := slow.recv(10.0)) is not None and env.seq < N_MESSAGES:
            pass
        assert last_seq(slow) == N_MESSAGES
        assert slow.stats.received < N_MESSAGES / 2
        assert slow.stats.gaps > N_MESSAGES / 2
        assert slow.stats.received + slow.stats.gaps == N_MESSAGES + 1 - first_seq(slow)
    finally:
        if reader is not None:  # it reads from `fast`: close that only once it has stopped
            reader.join(30)
        for s in (slow, fast, pub):
            s.close()
        broker.stop()
        broker_thread.join(5)


def first_seq(sub: Subscriber) -> int:
    return sub.first_seq[("cell", "cell.status")]


def last_seq(sub: Subscriber) -> int:
    return sub.last_seq[("cell", "cell.status")]


@pytest.mark.slow
def test_a_node_that_falls_behind_reports_its_drops(bus_base: str) -> None:
    from robocell.common.bus import Node

    endpoints = Endpoints.from_base(bus_base)
    broker = Broker(endpoints, stats_period=0.2, subscriber_hwm=SMALL_HWM)
    broker_thread = threading.Thread(target=broker.run, daemon=True)
    broker_thread.start()
    reports: list[dict] = []
    try:
        with Node("slowpoke", endpoints) as slow, Node("watcher", endpoints) as watcher:
            slow.subscribe("cell.status", lambda env: time.sleep(0.002))  # 500 msgs/s at most
            watcher.subscribe("diagnostics", lambda env: reports.append(env.payload))
            wait_subscribed(slow.subscriber, "cell.status")
            wait_subscribed(watcher.subscriber, "diagnostics")
            # What queues between the broker and a slow node (its high-water marks and the
            # kernel's socket buffers, which grow to tens of megabytes on loopback) held
            # 2,400 to 3,700 of these messages when measured: the burst is well past that.
            detail = "x" * DETAIL_BYTES
            for i in range(N_MESSAGES):
                slow.publish("cell.status", {"cycle_id": f"c{i}", "stage": "idle",
                                             "detail": detail})
            # Drops at the tail of a burst show as a gap only when a later message arrives.
            time.sleep(0.5)
            slow.publish("cell.status", {"cycle_id": "last", "stage": "done"})
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not any(
                    r["code"] == "dropped_messages" and r["service"] == "slowpoke"
                    for r in reports):
                time.sleep(0.05)
            drop = next(r for r in reports if r["code"] == "dropped_messages")
            assert drop["count"] > 0 and "missed" in drop["message"]
            assert slow.subscriber.stats.gaps > 0
    finally:
        broker.stop()
        broker_thread.join(5)


def test_a_publisher_whose_queue_is_full_drops_counts_and_reports_per_topic(
        bus_base: str) -> None:
    """A broker that takes nothing (a real XSUB that never reads): the publisher never
    blocks, refuses what does not fit at its high-water mark, and counts it per topic."""
    import zmq

    endpoints = Endpoints.from_base(bus_base)
    stuck = zmq.Context.instance().socket(zmq.XSUB)
    stuck.rcvhwm = SMALL_HWM
    stuck.linger = 0
    stuck.bind(endpoints.publish)
    pub = Publisher("cell", endpoints, hwm=SMALL_HWM)
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            stuck.send(b"\x01")  # subscribe to everything, as the broker does; never read
            if pub.wait_linked(0.2):
                break
        assert pub.wait_linked(0)
        detail = "x" * (16 * DETAIL_BYTES)
        started = time.monotonic()
        for i in range(N_MESSAGES // 5):
            pub.publish("cell.status", {"cycle_id": f"c{i}", "stage": "idle",
                                        "detail": detail})
        assert time.monotonic() - started < PUBLISH_GUARD_S
        sent = pub.traffic()["cell.status"]
        assert sent["dropped"] > 0 and sent["messages"] > 0
        assert sent["messages"] + sent["dropped"] == N_MESSAGES // 5
        assert sent["bytes"] >= sent["messages"] * len(detail)
    finally:
        pub.close()
        stuck.close()


def test_a_traffic_report_that_meets_a_full_queue_is_sent_again(endpoints: Endpoints) -> None:
    pub = Publisher("cell", endpoints)
    try:
        pub.publish("cell.status", {"cycle_id": "c0", "stage": "idle"})
        # the queue to the broker refuses everything for a moment (its back-off window)
        pub._full_until = float("inf")
        assert pub.report_traffic() is False
        pub._full_until = 0.0
        # nothing new was sent, yet the report that was lost goes out on the next tick
        assert pub.report_traffic() is True
        assert pub.report_traffic() is False
    finally:
        pub.close()


def test_the_publishers_own_traffic_reports_are_not_counted_as_sent(
        endpoints: Endpoints) -> None:
    pub = Publisher("cell", endpoints)
    try:
        for i in range(3):
            pub.publish("cell.status", {"cycle_id": f"c{i}", "stage": "idle"})
        # the reporter thread may report at any moment, as it did during a long burst
        assert pub.report_traffic(force=True) is True
        assert pub.report_traffic(force=True) is True
        assert pub.sent == 3
        assert pub.report_traffic() is False  # nothing new since the last report
    finally:
        pub.close()
