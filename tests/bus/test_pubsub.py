"""Publish/subscribe through the broker: delivery, latched state for late joiners, prefixes."""

from __future__ import annotations

import threading
import time

import pytest
import zmq
from support.bus import recv_topic, wait_subscribed

from robocell.common.bus import Endpoints, Node, Publisher, Subscriber
from robocell.services.broker.service import Broker

STATUS = {"cycle_id": "c1", "stage": "scanning"}
PROGRESS = {"plan_id": "p1", "step": 0, "n_steps": 5, "primitive": "R+", "eta_s": 2.0,
            "state": "running"}


def linked_publisher(endpoints: Endpoints, source: str = "cell") -> Publisher:
    pub = Publisher(source, endpoints)
    assert pub.wait_linked(5), "publisher never linked to the broker"
    return pub


def test_messages_flow_through_the_broker_in_order(endpoints: Endpoints) -> None:
    sub = Subscriber(["actuator.progress"], endpoints)
    pub = linked_publisher(endpoints, "actuator")
    try:
        wait_subscribed(sub, "actuator.progress")
        for step in range(50):
            pub.publish("actuator.progress", {**PROGRESS, "step": step})
        steps = []
        while len(steps) < 50:
            env = sub.recv(10)
            assert env is not None, f"only {len(steps)} of 50 messages arrived"
            steps.append(env.payload["step"])
            assert env.source == "actuator"
        assert steps == list(range(50))
        assert sub.stats.gaps == 0
    finally:
        pub.close()
        sub.close()


def test_late_joiner_gets_latched_state_at_once(broker: Broker) -> None:
    endpoints = broker.endpoints
    pub = linked_publisher(endpoints)
    try:
        pub.publish("cell.status", STATUS)
        pub.publish("actuator.progress", PROGRESS)  # an event: not cached
        deadline = time.monotonic() + 10
        while "cell.status" not in broker.cache and time.monotonic() < deadline:
            time.sleep(0.01)
        late = Subscriber(["cell.status", "actuator.progress"], endpoints)
        try:
            # Nothing publishes cell.status again, so what arrives is the broker's answer to
            # the join (however long a loaded machine took to route it).
            env = recv_topic(late, "cell.status")
            assert env is not None, "late joiner did not receive the latched state"
            assert env.payload == STATUS and env.seq == 0
            assert recv_topic(late, "actuator.progress", timeout=0.3) is None
        finally:
            late.close()
    finally:
        pub.close()


def test_latched_answer_for_a_newcomer_reaches_the_newcomer_only(endpoints: Endpoints
                                                                 ) -> None:
    pub = linked_publisher(endpoints)
    first = Subscriber(["cell.status"], endpoints)
    try:
        # (once the broker answered its join, with nothing: so it gets the message once)
        wait_subscribed(first, "cell.status")
        pub.publish("cell.status", STATUS)
        assert recv_topic(first, "cell.status") is not None
        second = Subscriber(["cell.status"], endpoints)
        try:
            assert recv_topic(second, "cell.status") is not None  # the answer
            assert recv_topic(first, "cell.status", timeout=0.3) is None
            assert first.stats.duplicates == 0  # it was not even sent to the first one
        finally:
            second.close()
    finally:
        pub.close()
        first.close()


def test_exact_subscription_ignores_longer_topics_but_prefix_matches(endpoints: Endpoints
                                                                     ) -> None:
    exact = Subscriber(["cell.status"], endpoints)
    prefix = Subscriber([], endpoints)
    prefix.subscribe("cell.", prefix=True)
    pub = linked_publisher(endpoints)
    try:
        wait_subscribed(exact, "cell.status")
        wait_subscribed(prefix, "cell.", prefix=True)
        pub.publish("cell.result", {"cycle_id": "c1", "ok": True, "stages_s": {},
                                    "total_s": 1.0})
        pub.publish("cell.status", STATUS)
        got = [recv_topic(prefix, t) for t in ("cell.result", "cell.status")]
        assert all(env is not None for env in got)
        env = exact.recv(10)
        assert env is not None and env.topic == "cell.status"
    finally:
        for s in (exact, prefix, pub):
            s.close()


def test_node_callbacks_receive_and_broker_counts_per_topic(broker: Broker) -> None:
    received: list[int] = []
    done = threading.Event()

    def on_progress(env) -> None:
        received.append(env.payload["step"])
        if len(received) == 20:
            done.set()

    with Node("monitor", broker.endpoints) as monitor, \
            Node("actuator", broker.endpoints) as actuator:
        monitor.subscribe("actuator.progress", on_progress)
        wait_subscribed(monitor.subscriber, "actuator.progress")
        for step in range(20):
            actuator.publish("actuator.progress", {**PROGRESS, "step": step})
        assert done.wait(10), f"callbacks saw {len(received)} of 20"
    assert received == list(range(20))
    # Counted by the publisher, reported on bus.traffic when it closed, added up by the broker.
    deadline = time.monotonic() + 10
    while "actuator.progress" not in broker.topics and time.monotonic() < deadline:
        time.sleep(0.02)
    stats = broker.topics["actuator.progress"]
    assert stats.messages == 20 and stats.bytes > 20 * 50
    assert stats.publishers == {"actuator"}


def test_bus_stats_report_rates_and_publishers(endpoints: Endpoints) -> None:
    pub = linked_publisher(endpoints, "actuator")
    sub = Subscriber(["bus.stats"], endpoints)
    try:
        for step in range(30):
            pub.publish("actuator.progress", {**PROGRESS, "step": step})
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            env = recv_topic(sub, "bus.stats")
            assert env is not None
            topic = env.payload["topics"].get("actuator.progress")
            # (the count of unchecked frames may include one on its way to the check tap
            # when the count is made: the broker's own messages keep coming)
            if topic and topic["messages"] == 30 and env.payload["unchecked"] == 0:
                break
        assert topic["publishers"] == ["actuator"]
        assert topic["kind"] == "event" and topic["type"] == "ActuatorProgress"
        assert env.payload["messages"] >= 30
        # The proxy counts frames (libzmq's own count): the 30 messages went out at once, so
        # in batch frames of up to COALESCE_FRAME_BYTES, and a trickle like this one is
        # checked in full.
        assert env.payload["forwarded"] >= 1
        assert env.payload["unchecked"] == 0 and env.payload["checked"] >= 1
    finally:
        pub.close()
        sub.close()


@pytest.mark.parametrize("count", [1, 500])  # 500: the newest one left in a batch frame
def test_publisher_resends_latched_state_when_the_broker_restarts(bus_base: str,
                                                                  count: int) -> None:
    endpoints = Endpoints.from_base(bus_base)

    def start() -> tuple[Broker, threading.Thread]:
        deadline = time.monotonic() + 15
        while True:  # the old broker's ports are released asynchronously
            try:
                b = Broker(endpoints, stats_period=0.2)
                break
            except zmq.ZMQError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        t = threading.Thread(target=b.run, daemon=True)
        t.start()
        return b, t

    broker, thread = start()
    pub = linked_publisher(endpoints)
    try:
        for i in range(count):
            pub.publish("cell.status", {**STATUS, "detail": str(i)})
        time.sleep(0.2)
        broker.stop()
        thread.join(5)
        broker, thread = start()  # a fresh broker with an empty cache
        sub = Subscriber(["cell.status"], endpoints)
        try:
            deadline = time.monotonic() + 15
            env = None
            while env is None and time.monotonic() < deadline:
                pub.check_link()  # the publisher notices the new broker (Node: every beat)
                env = recv_topic(sub, "cell.status", timeout=0.2)
            assert env is not None and env.payload == {**STATUS, "detail": str(count - 1)}
            assert env.seq == count - 1 and env.source == pub.source
        finally:
            sub.close()
    finally:
        pub.close()
        broker.stop()
        thread.join(5)


def test_a_restarted_publisher_is_heard_although_it_reuses_sequence_numbers():
    from robocell.common.bus import Subscriber
    from robocell.common.bus.wire import Envelope, encode_frame

    sub = Subscriber(["cell.status"], check=True)
    try:
        def frame(wall: float) -> bytes:
            env = Envelope(topic="cell.status", source="cell", seq=1, wall_time=wall,
                           mono_time=1.0, payload={"cycle_id": "c", "stage": "idle"})
            return encode_frame(env)

        first = frame(100.0)
        assert sub.handle_frame(first) is not None
        assert sub.handle_frame(first) is None          # the same message again: a duplicate
        assert sub.handle_frame(frame(200.0)) is not None   # same seq, new process: delivered
    finally:
        sub.close()


def test_older_repeats_are_dropped_and_a_restarted_source_is_accepted(
        endpoints: Endpoints) -> None:
    """The broker's cached replay may reach a subscriber after newer messages came straight
    through the proxy: a message not newer than the last accepted one is dropped."""
    from robocell.common.bus.wire import Envelope, encode_frame

    sub = Subscriber(["cell.status"], endpoints)
    rogue = zmq.Context.instance().socket(zmq.XPUB)
    rogue.linger = 500
    rogue.connect(endpoints.publish)
    try:
        assert rogue.poll(10000)
        rogue.recv()
        wait_subscribed(sub, "cell.status")
        first = Envelope("cell.status", "cell", 0, 100.0, 1.0, {"cycle_id": "a", "stage": "idle"})
        second = Envelope("cell.status", "cell", 1, 101.0, 2.0,
                          {"cycle_id": "b", "stage": "idle"})
        restarted = Envelope("cell.status", "cell", 0, 200.0, 0.5,
                             {"cycle_id": "c", "stage": "idle"})
        for env in (first, second, first, second, restarted):
            rogue.send(encode_frame(env))
        got = []
        while len(got) < 3 and (env := sub.recv(10)) is not None:
            got.append(env.payload["cycle_id"])
        assert sub.recv(0.5) is None  # and nothing more
        assert got == ["a", "b", "c"]
        assert sub.stats.duplicates == 2 and sub.stats.restarts == 1 and sub.stats.gaps == 0
    finally:
        rogue.close()
        sub.close()


def test_bus_stats_add_up_the_traffic_reports_of_several_publishers(broker: Broker) -> None:
    endpoints = broker.endpoints
    first, second = linked_publisher(endpoints, "cell"), linked_publisher(endpoints, "monitor")
    try:
        for i in range(5):
            first.publish("cell.status", {**STATUS, "detail": f"first {i}"})
        for i in range(7):
            second.publish("cell.status", {**STATUS, "detail": f"second {i}"})
        deadline = time.monotonic() + 15  # reports come within a second (on an idle machine)
        while time.monotonic() < deadline:
            stats = broker.topics.get("cell.status")
            if stats is not None and stats.messages == 12:
                break
            time.sleep(0.05)
        assert stats is not None and stats.messages == 12
        assert stats.publishers == {"cell", "monitor"} and stats.gaps == 0
        assert stats.bytes == sum(r.traffic()["cell.status"]["bytes"] for r in (first, second))
    finally:
        first.close()
        second.close()


def test_two_publishers_under_one_source_name_are_not_lost_messages(
        endpoints: Endpoints) -> None:
    """A second `robocell actuator` started beside a running one: its sequence numbers start
    again at 0 while the first one's go on. Interleaved, neither is a gap."""
    sub = Subscriber(["actuator.progress"], endpoints)
    first = linked_publisher(endpoints, "actuator")
    second = None
    try:
        wait_subscribed(sub, "actuator.progress")
        for step in range(300):
            first.publish("actuator.progress", {**PROGRESS, "step": step})
        second = linked_publisher(endpoints, "actuator")
        for step in range(300, 400):
            first.publish("actuator.progress", {**PROGRESS, "step": step})
            second.publish("actuator.progress", {**PROGRESS, "step": -step})
        got = 0
        while got < 500 and sub.recv(10) is not None:
            got += 1
        assert got == 500
        assert sub.stats.gaps == 0 and sub.stats.duplicates == 0
    finally:
        first.close()
        if second is not None:
            second.close()
        sub.close()
