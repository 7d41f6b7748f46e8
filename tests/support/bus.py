"""Helpers for the bus tests: free ports, subprocess commands, a scripted service, waiting for
messages, and waiting for readiness instead of sleeping: a subscription that has reached the
broker (`wait_subscribed`, `wait_raw_subscribed`, `wait_for_new_subscription` for another
process's), a service registered for its commands (`wait_registered`). A fixed sleep before
publishing or calling is outlasted on a loaded machine; these cost milliseconds on an idle
one. A scripted service answers a declared command with `declared_result` (its caller checks
the result against the declaration)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import zmq

from robocell.common.bus import Endpoints, Subscriber
from robocell.common.bus.schema import command_spec
from robocell.common.bus.topics import MESSAGE_TYPES, F
from robocell.common.bus.wire import ANSWER_MARK, TOPIC_END, subscription
from robocell.common.config import free_port_block

REPO = Path(__file__).resolve().parents[2]
N_PORTS = 4  # subscribe, publish, command, tap
BROKER_START_TIMEOUT_S = 10.0
SUBSCRIBED_TIMEOUT_S = 10.0
"""Bound on a subscription's way to the broker: it only bounds a hang (a loaded machine takes
a while; an idle one, milliseconds)."""
RECV_TIMEOUT_S = 10.0
"""Bound on waiting for a message that should come (it only bounds a hang)."""
SCRIPTED_SERVICE = Path(__file__).with_name("scripted_service.py")
"""A bus service whose behaviour a test scripts (run it with ``python``)."""


def declared_result(service: str, command: str, **fields: Any) -> dict[str, Any]:
    """A result that fits the declaration of ``service.command``: every required field with
    the plainest value of its type (``""``, 0, [], the first of an enum, null when nullable),
    ``fields`` in place of those."""
    spec = command_spec(service, command)
    assert spec is not None and spec.result is not None, f"{service}.{command} declares none"
    return {**_plainest(spec.result), **fields}


def _plainest(fields: tuple[F, ...]) -> dict[str, Any]:
    return {f.name: _plainest_value(f.type) for f in fields if not f.optional}


def _plainest_value(text: str) -> Any:
    if text.endswith("?"):
        return None
    if text.startswith("enum("):
        return text[5:-1].split(",")[0]
    if text in MESSAGE_TYPES:
        return _plainest(MESSAGE_TYPES[text])
    if text.startswith("list["):
        return []
    return {"str": "", "int": 0, "float": 0.0, "bool": False, "bytes": b""}.get(text, {})


def free_base_port() -> int:
    """A port P such that P..P+3 are free on 127.0.0.1 right now."""
    return free_port_block(N_PORTS)


def robocell_env(bus_base: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["ROBOCELL_BUS"] = bus_base
    for name in ("ROBOCELL_BUS_SUB", "ROBOCELL_BUS_PUB", "ROBOCELL_BUS_CMD", "ROBOCELL_BUS_TAP",
                 "ROBOCELL_BUS_CURVE_KEY"):
        env.pop(name, None)
    return env


def robocell_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "robocell", *args]


def wait_for_broker(endpoints: Endpoints, timeout: float = BROKER_START_TIMEOUT_S,
                    proc: subprocess.Popen | None = None) -> None:
    """Wait until the broker answers (its latched bus.stats arrives). Given the broker's
    process, a broker that exits instead fails at once with its exit code and what it wrote
    to stderr (when that is a pipe), not after the timeout with no reason."""
    sub = Subscriber(["bus.stats"], endpoints)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sub.recv(0.2) is not None:
                return
            if proc is not None and proc.poll() is not None:
                said = proc.stderr.read() if proc.stderr is not None else ""
                raise AssertionError(f"broker at {endpoints.subscribe} exited with "
                                     f"{proc.returncode} instead of starting: {said.strip()}")
        raise AssertionError(f"broker at {endpoints.subscribe} did not start within "
                             f"{timeout} s")
    finally:
        sub.close()


def wait_subscribed(sub: Subscriber, *topics: str, prefix: bool = False,
                    timeout: float = SUBSCRIBED_TIMEOUT_S) -> None:
    """Until ``sub``'s subscriptions to ``topics`` have reached the broker, so that whatever
    is published on them from now on reaches ``sub``, and the broker has answered them from
    its cache (a fixed sleep instead is outlasted on a loaded machine). The broker passes
    every subscription on to the publishers, where a plain XPUB sees it (the broker's own
    subscriptions are replayed to each new publisher, so ones that arrived before it connected
    are seen too). Of each topic, the one awaited is the request for its latched state on
    ``sub``'s own answer channel, which the subscriber makes after the topic's own
    subscription. (The answer itself, if the cache held one, may still be on its way.)"""
    wait_forwarded(sub.endpoints, [sub.answer_channel + subscription(t, prefix) for t in topics],
                   timeout)
    wait_broker_answered(sub.endpoints, timeout)


def wait_raw_subscribed(sock: zmq.Socket, endpoints: Endpoints,
                        timeout: float = SUBSCRIBED_TIMEOUT_S) -> None:
    """Until the subscriptions made so far by a plain SUB socket connected to the broker
    have reached it (see wait_subscribed): it subscribes to a marker of its own no message
    starts with, which passes the broker after them."""
    marker = b"\x00ready " + secrets.token_hex(8).encode()
    sock.subscribe(marker)
    wait_forwarded(endpoints, [marker], timeout)
    wait_broker_answered(endpoints, timeout)


def wait_forwarded(endpoints: Endpoints, subscriptions: Iterable[bytes],
                   timeout: float = SUBSCRIBED_TIMEOUT_S) -> None:
    """Until the broker has passed each of ``subscriptions`` on to the publishers."""
    wanted = {b"\x01" + s for s in subscriptions}
    sock = zmq.Context.instance().socket(zmq.XPUB)
    sock.linger = 0
    sock.connect(endpoints.publish)
    try:
        deadline = time.monotonic() + timeout
        while wanted and (remaining := deadline - time.monotonic()) > 0:
            if sock.poll(int(remaining * 1000) + 1):
                wanted.discard(sock.recv())
        assert not wanted, (f"subscriptions {sorted(wanted)} did not reach the broker at "
                            f"{endpoints.publish} in {timeout} s")
    finally:
        sock.close()


def wait_broker_answered(endpoints: Endpoints, timeout: float = SUBSCRIBED_TIMEOUT_S) -> None:
    """Until the broker has answered every subscription forwarded so far from its cache: it
    reads them in the order the proxy forwarded them, so once it answers a later request for
    ``bus.stats`` (which it publishes itself), it has answered the earlier ones. Asked again on
    a fresh channel each second, in case its first ``bus.stats`` had not yet been cached."""
    sock = zmq.Context.instance().socket(zmq.SUB)
    sock.linger = 0
    sock.connect(endpoints.subscribe)
    try:
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            channel = ANSWER_MARK + secrets.token_hex(8).encode() + TOPIC_END
            sock.subscribe(channel + subscription("bus.stats"))
            if sock.poll(int(min(remaining, 1.0) * 1000) + 1):
                return
            sock.unsubscribe(channel + subscription("bus.stats"))
        raise AssertionError(f"the broker at {endpoints.subscribe} did not answer a request for "
                             f"its latched bus.stats in {timeout} s")
    finally:
        sock.close()


def subscription_watcher(endpoints: Endpoints) -> zmq.Socket:
    """A plain XPUB socket on the broker's publish side: the broker passes every subscription
    on to the publishers, so this sees each subscriber's as it arrives (and, at once, those
    already there)."""
    sock = zmq.Context.instance().socket(zmq.XPUB)
    sock.linger = 0
    sock.connect(endpoints.publish)
    return sock


def known_subscriptions(watcher: zmq.Socket, quiet_s: float = 0.3) -> list[bytes]:
    """What a new subscription_watcher sees until a lull: the subscriptions already there."""
    frames = []
    while watcher.poll(int(quiet_s * 1000)):
        frames.append(watcher.recv())
    return frames


def wait_for_new_subscription(sock: zmq.Socket, known: list[bytes], topic: bytes,
                              timeout: float = SUBSCRIBED_TIMEOUT_S) -> None:
    """Until a subscriber not in ``known`` has asked the broker for ``topic``'s latched state
    (its last subscription message: after that one, everything it subscribed to is in place).
    For a subscriber in another process, whose answer channel is not known here."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sock.poll(100):
            frame = sock.recv()
            if frame not in known and frame[:1] == b"\x01" and frame.endswith(topic) \
                    and frame.startswith(ANSWER_MARK, 1):
                return
    raise AssertionError(f"no new subscription to {topic!r} reached the broker in {timeout} s")


def wait_registered(broker: Any, service: str, commands: Iterable[str] = (),
                    timeout: float = SUBSCRIBED_TIMEOUT_S) -> None:
    """Until an instance of ``service`` has registered with the broker offering
    ``commands``: requests now reach it. ``broker`` is an in-process Broker (its routing
    table is read), or the Endpoints of one in another process (its bus.stats are read)."""
    wanted = set(commands)
    deadline = time.monotonic() + timeout
    sub = Subscriber(["bus.stats"], broker) if isinstance(broker, Endpoints) else None
    try:
        while True:
            if sub is not None:
                env = recv_topic(sub, "bus.stats", max(0.0, deadline - time.monotonic()))
                described = env.payload.get("instances", {}).get(service, []) if env else []
                offered = [set(i.get("commands", ())) for i in described]
            else:
                try:
                    offered = [set(i.commands) for i in broker.instances.get(service, {}).values()]
                except RuntimeError:  # changed while read (the broker's thread): read again
                    offered = []
            if any(wanted <= c for c in offered):
                return
            assert time.monotonic() < deadline, (
                f"no instance of {service!r} offering {sorted(wanted)} registered in {timeout} s")
            if sub is None:
                time.sleep(0.02)
    finally:
        if sub is not None:
            sub.close()


def recv_topic(sub: Subscriber, topic: str, timeout: float = RECV_TIMEOUT_S):
    """The next message of ``topic`` within ``timeout`` s, skipping others; None if none."""
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        env = sub.recv(remaining)
        if env is not None and env.topic == topic:
            return env
    return None


def stop_process(proc: subprocess.Popen) -> None:
    """Terminate (then kill) ``proc`` and close its pipes."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
