"""Liveness: who is alive on the bus, from the heartbeats every service publishes.

Each service publishes ``heartbeat`` every HEARTBEAT_PERIOD_S; a peer is stale after
STALE_AFTER_BEATS missed beats.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from robocell.common.bus.wire import Envelope, is_replayed

HEARTBEAT_PERIOD_S = 1.0
STALE_AFTER_BEATS = 3
STALE_AFTER_S = HEARTBEAT_PERIOD_S * STALE_AFTER_BEATS
"""A heartbeat older than this (three missed beats) means its sender is gone."""
ECHO_STALE_S = 2.5
"""A node's own heartbeat not back through the broker for this long: the broker is away."""
MISSED_BEAT_S = 1.5
"""Our heartbeat back this long after a service's last one: the broker was there when that
service should have beaten again."""
PEERS_HEARD_S = 2.0
"""After the broker came back: how long before a service not heard again counts as gone."""


@dataclass
class PeerStatus:
    """The latest heartbeat of one service, and whether it is stale."""

    service: str
    state: str
    health: dict[str, Any]
    last_seen: float  # time.monotonic() of the receiver
    period_s: float
    pid: int
    host: str
    commands: list[str]
    stale: bool = False

    @property
    def alive(self) -> bool:
        return not self.stale


class Liveness:
    """Tracks heartbeats: a peer is stale after STALE_AFTER_BEATS missed beats. A replayed
    heartbeat (``bus play``: source ``replay:...``) says nothing about who is alive now and
    is ignored."""

    def __init__(self, stale_after_beats: int = STALE_AFTER_BEATS) -> None:
        self.stale_after_beats = stale_after_beats
        self._peers: dict[str, PeerStatus] = {}
        self._lock = threading.Lock()

    def update(self, env: Envelope, now: float | None = None) -> None:
        if is_replayed(env.source):
            return
        p = env.payload
        status = PeerStatus(p["service"], p["state"], p["health"],
                            time.monotonic() if now is None else now, float(p["period_s"]),
                            p["pid"], p["host"], list(p["commands"]))
        with self._lock:
            self._peers[status.service] = status

    def peers(self, now: float | None = None) -> dict[str, PeerStatus]:
        """Every service ever heard, with ``stale`` computed for ``now``."""
        now = time.monotonic() if now is None else now
        with self._lock:
            for status in self._peers.values():
                status.stale = now - status.last_seen > self.stale_after_beats * status.period_s
            return dict(self._peers)

    def alive(self, now: float | None = None) -> list[str]:
        """Names of the services whose heartbeats are current."""
        return sorted(name for name, s in self.peers(now).items() if not s.stale)

    def is_alive(self, service: str, now: float | None = None) -> bool:
        status = self.peers(now).get(service)
        return status is not None and not status.stale


class BrokerPresence:
    """Whether the broker is there, from a node's own heartbeat coming back through it, and
    whether a service is gone (not merely unheard while the broker was away). Thread-safe;
    `on_own_heartbeat` is called with each of the node's own beats seen on the bus."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._created = time.monotonic()
        self._echo_last: float | None = None
        self._echo_since = self._created

    def on_own_heartbeat(self) -> None:
        now = time.monotonic()
        with self._lock:
            if self._echo_last is None or now - self._echo_last > ECHO_STALE_S:
                self._echo_since = now
            self._echo_last = now

    def broker_up_s(self) -> float:
        """Seconds the broker has been there without a break; negative: seconds it has
        been away (or, never heard, since this tracker was made)."""
        now = time.monotonic()
        with self._lock:
            last, since = self._echo_last, self._echo_since
        if last is None or now - last > ECHO_STALE_S:
            return -(now - (last if last is not None else self._created))
        return now - since

    def never_heard(self) -> bool:
        """Whether the node's own heartbeat has never come back (no broker yet)."""
        with self._lock:
            return self._echo_last is None

    def gone(self, peer: PeerStatus | None) -> bool:
        """Whether the service ``peer`` (None: never heard) is gone: its heartbeat is stale,
        our own came back well after its last one (it missed a beat the broker would have
        carried), and the broker has been back long enough for every live service to be
        heard again."""
        if peer is not None and not peer.stale:
            return False
        last_heard = peer.last_seen if peer is not None else self._created
        with self._lock:
            echo = self._echo_last
        return (echo is not None and echo > last_heard + MISSED_BEAT_S
                and self.broker_up_s() >= PEERS_HEARD_S)
