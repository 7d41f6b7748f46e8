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

