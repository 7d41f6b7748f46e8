"""The last-value cache under load: a late joiner gets the newest latched message first.

A publisher keeps publishing on several latched topics (now and then in bursts, so batch
frames are cached too) while late subscribers join one after another, some to the latched
topics by name, some to everything. What "newest" means is what a subscriber that was there
all along had received just before the late one subscribed: the proxy forwarded it, so the
cache holds it or something newer.
"""

from __future__ import annotations

import threading
import time

from robocell.common.bus import Node, Subscriber
from robocell.services.broker.service import Broker

TRIALS = 1_000
TRIAL_TIMEOUT_S = 10.0  # only bounds a trial whose joiner misses a topic (on a loaded machine,
# an answer can take seconds)
TIME_LIMIT_S = 60.0
PUBLISH_PERIOD_S = 0.002
BURST_EVERY = 150  # publications between two bursts on cell.status
BURST = 60  # messages a burst: they travel in batch frames
SOURCE = "cell"
PAYLOADS = {
    "cell.status": lambda i: {"cycle_id": "c1", "stage": "scanning", "detail": str(i)},
    "cell.result": lambda i: {"cycle_id": f"c{i}", "ok": True, "stages_s": {"scan": 1.0},
                              "total_s": 1.0},
    "actuator.result": lambda i: {"plan_id": f"p{i}", "ok": True, "executed": i,
                                  "n_steps": i, "duration_s": 0.1, "last_line": i,
                                  "boot_id": "b1"},
}
TOPICS = tuple(PAYLOADS)


def _publish_until(node: Node, stop: threading.Event) -> None:
    i = 0
    while not stop.is_set():
        topic = TOPICS[i % len(TOPICS)]
        node.publish(topic, PAYLOADS[topic](i))
        i += 1
        if i % BURST_EVERY == 0:
            for j in range(BURST):
                node.publish("cell.status", PAYLOADS["cell.status"](i * 1000 + j))
        time.sleep(PUBLISH_PERIOD_S)


def _first_seqs(sub: Subscriber, deadline: float) -> dict[str, int]:
    """Sequence number of the first message from SOURCE of each of TOPICS accepted."""
    first: dict[str, int] = {}
    while len(first) < len(TOPICS):
        remaining = deadline - time.monotonic()
        env = sub.recv(remaining) if remaining > 0 else None
        if env is None:
            break
        if env.topic in PAYLOADS and env.source == SOURCE:
            first.setdefault(env.topic, env.seq)
    return first


def test_a_late_joiner_gets_the_newest_latched_message_first_while_a_publisher_runs(
        broker: Broker) -> None:
    endpoints = broker.endpoints
    stop = threading.Event()
    watcher = Subscriber(TOPICS, endpoints)
    with Node(SOURCE, endpoints) as node:
        publisher = threading.Thread(target=_publish_until, args=(node, stop), daemon=True)
        publisher.start()
        wrong: list[str] = []
        missing = 0
        started = time.monotonic()
        try:
            while len(watcher.last_seq) < len(TOPICS):  # every topic has a current value
                assert watcher.recv(10) is not None, "the publisher's messages do not arrive"
            for trial in range(TRIALS):
                while watcher.recv_batch(0):  # what the proxy forwarded so far
                    pass
                current = {topic: watcher.last_seq[(SOURCE, topic)] for topic in TOPICS}
                # every other one to everything: the subscription publishers see as b"\x01"
                late = Subscriber([""] if trial % 2 else TOPICS, endpoints)
                try:
                    first = _first_seqs(late, time.monotonic() + TRIAL_TIMEOUT_S)
                finally:
                    late.close()
                missing += len(TOPICS) - len(first)
                wrong += [f"trial {trial}: {topic} seq {seq} first, {current[topic]} was "
                          "current" for topic, seq in first.items() if seq < current[topic]]
        finally:
            stop.set()
            publisher.join(5)
            watcher.close()
        elapsed = time.monotonic() - started
    print(f"\nlate joiners: {len(wrong)} of {TRIALS} trials x {len(TOPICS)} latched topics "
          f"got an older message first, {missing} got none, in {elapsed:.1f} s")
    assert not wrong, f"{len(wrong)} older first messages, e.g. {wrong[:5]}"
    assert missing == 0
    assert elapsed < TIME_LIMIT_S


def test_a_subscriber_to_everything_ignores_the_latched_answers_meant_for_another(
        broker: Broker) -> None:
    """The broker answers a late joiner on the joiner's own channel; a subscription to every
    topic matches that channel too. Such an answer is someone else's mail: not a bad message,
    not a delivery."""
    endpoints = broker.endpoints
    everything = Subscriber([""], endpoints)
    try:
        with Node(SOURCE, endpoints) as node:
            node.publish("cell.result", PAYLOADS["cell.result"](1))
            first = everything.recv(10.0)
            while first is not None and first.topic != "cell.result":
                first = everything.recv(10.0)
            assert first is not None
            deadline = time.monotonic() + 10
            while "cell.result" not in broker.cache and time.monotonic() < deadline:
                time.sleep(0.01)  # cached by the broker
            late = Subscriber(["cell.result"], endpoints)
            try:
                answer = late.recv(10.0)
                assert answer is not None and answer.topic == "cell.result"
                time.sleep(0.3)
                while (env := everything.recv(0.2)) is not None:
                    assert env.topic != "cell.result", "someone else's answer delivered"
            finally:
                late.close()
        assert not everything.stats.rejected, everything.stats.rejected
    finally:
        everything.close()
