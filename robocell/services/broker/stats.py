"""The broker's statistics: what every publisher reports on ``bus.traffic``, added up per
topic into the rows of ``bus.stats``.

Every publisher counts what it sends per topic (messages, bytes, drops at its high-water
mark) and reports the cumulative counts every second while it sends; the broker keeps the
latest report of each publisher instance and adds them up. Rates come from the difference
of the totals between two ``bus.stats`` reports."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

from robocell.common.bus.topics import TOPIC_SPECS
from robocell.common.bus.wire import Envelope

MAX_INSTANCES = 1_000
"""Publisher instances whose traffic reports are kept apart; older ones are folded into
one total (a rogue sender must not grow the broker's tables)."""


@dataclass(slots=True)
class TopicStats:
    """What the publishers reported on one topic, added up."""

    messages: int = 0
    bytes: int = 0
    gaps: int = 0
    """messages dropped before the broker (refused at a publisher's high-water mark)."""
    publishers: set[str] = field(default_factory=set)
    reported_messages: int = 0
    reported_bytes: int = 0


@dataclass(slots=True)
class _Instance:
    """The latest traffic report of one publisher instance."""

    source: str
    topics: dict[str, tuple[int, int, int]]  # topic -> (messages, bytes, dropped)


class TrafficStats:
    """The latest report of every publisher instance, and their sum per topic."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicStats] = {}
        """topic -> what the publishers reported, added up (rebuilt on every report)."""
        self._instances: collections.OrderedDict[str, _Instance] = collections.OrderedDict()
        self._retired: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
        """topic -> [messages, bytes, dropped] of instances folded away (MAX_INSTANCES)."""
        self._retired_sources: dict[str, set[str]] = collections.defaultdict(set)

    def add_report(self, env: Envelope) -> None:
        """Keep the latest cumulative report of a publisher instance; add all up."""
        p = env.payload
        topics = {}
        for topic, counts in p["topics"].items():
            if topic in TOPIC_SPECS:
                topics[topic] = (counts.get("messages", 0), counts.get("bytes", 0),
                                 counts.get("dropped", 0))
        instance = p["instance"]
        self._instances[instance] = _Instance(env.source, topics)
        self._instances.move_to_end(instance)
        while len(self._instances) > MAX_INSTANCES:
            _, old = self._instances.popitem(last=False)
            for topic, counts in old.topics.items():
                retired = self._retired[topic]
                for i, value in enumerate(counts):
                    retired[i] += value
                self._retired_sources[topic].add(old.source)
        self._aggregate()

    def _aggregate(self) -> None:
        topics: dict[str, TopicStats] = {}
        for topic, counts in self._retired.items():
            topics[topic] = TopicStats(counts[0], counts[1], counts[2],
                                       set(self._retired_sources[topic]))
        for instance in self._instances.values():
            for topic, (messages, nbytes, dropped) in instance.topics.items():
                stats = topics.get(topic)
                if stats is None:
                    stats = topics[topic] = TopicStats()
                stats.messages += messages
                stats.bytes += nbytes
                stats.gaps += dropped
                stats.publishers.add(instance.source)
        for topic, stats in topics.items():  # rates continue from the previous totals
            old = self.topics.get(topic)
            if old is not None:
                stats.reported_messages, stats.reported_bytes = (old.reported_messages,
                                                                 old.reported_bytes)
        self.topics = topics

    @property
    def gaps(self) -> int:
        """Messages dropped between publishers and the broker, in all."""
        return sum(s.gaps for s in self.topics.values())

    def rows(self, window: float) -> dict[str, Any]:
        """The per-topic rows of ``bus.stats`` for a report ``window`` seconds after the
        last one (0: the first report), and the totals; the window starts again."""
        topics: dict[str, Any] = {}
        for name, s in sorted(self.topics.items()):
            spec = TOPIC_SPECS.get(name)
            topics[name] = {
                "messages": s.messages, "bytes": s.bytes, "gaps": s.gaps,
                "rate_hz": (s.messages - s.reported_messages) / window if window else 0.0,
                "bytes_per_s": (s.bytes - s.reported_bytes) / window if window else 0.0,
                "type": spec.type_name if spec else "?",
                "kind": spec.kind.value if spec else "?",
                "publishers": sorted(s.publishers),
            }
            s.reported_messages, s.reported_bytes = s.messages, s.bytes
        return {"topics": topics, "messages": sum(s.messages for s in self.topics.values()),
                "bytes": sum(s.bytes for s in self.topics.values()), "gaps": self.gaps}
