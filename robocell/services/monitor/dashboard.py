"""The dashboard's picture of the cell, kept from bus messages and coalesced per view (pure core).

Pattern: **last-value coalescing**. Every bus message is *ingested* in constant time: the
latest message of its kind replaces the previous one and the view it feeds is marked dirty;
events that make a history (cycle results, errors) go into bounded deques. Nothing is
rendered per message. At most every update period the server *takes the changes*: each dirty
view is built once from the latest data and sent to the browsers. However fast the bus runs,
a browser receives at most one update per view per period, and memory is bounded by the
number of views and the history lengths -- never by the message rate.

Views (the keys of an update, each a JSON-able value or None when cleared):

``services``   every service heard, its lifecycle state, health, age and staleness
``bus``        the broker's statistics: per-topic rates, sizes and drops
``monitor``    what this monitor received: per-topic counts and rates, drops, coalescing
``cube``       the cube state read by vision          ``twin``      the digital twin (sim)
``scan``       the scan in progress (pose i of n)     ``face.X``    the result of face X
               (from ``vision.face``, or from ``vision.scan_faces`` when started after it)
``plan``       the current plan                        ``progress``  its execution
``actuator``   the last plan execution result          ``cell``      the cycle stage now
``cycles``     finished cycles with stage durations   ``errors``    the latest errors
``sokoban``    the Sokoban level the solver last solved (its graph: ``/api/sokoban/graph``)

Replayed messages (``bus play``: source ``replay:...``) are shown, marked ``replayed`` in
every view they feed (the page labels them), and counted in ``monitor.replay``; replayed
heartbeats are ignored (they say nothing about who is alive now).
"""

from __future__ import annotations

import base64
import collections
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from robocell.common.bus import Liveness, is_replayed
from robocell.common.bus.schema import payload_maps
from robocell.common.bus.topics import FACES
from robocell.common.bus.views import jsonable
from robocell.common.bus.wire import Envelope

UPDATE_PERIOD_S = 0.1
"""Shortest interval between two updates of the same view to a browser."""
SERVICES_REFRESH_S = 0.5
"""The services view is rebuilt at least this often (ages grow, peers go stale)."""
MONITOR_STATS_PERIOD_S = 1.0
"""Window of the monitor's own receive statistics."""
REPLAY_ACTIVE_S = 5.0
"""A replay is shown as going on this long after its latest message."""
MAX_CYCLES = 20
MAX_ERRORS = 25
MAX_TOPICS_SHOWN = 64
FACE_VIEWS = tuple(f"face.{face}" for face in FACES)

Clock = Callable[[], float]



@dataclass
class TopicCounter:
    """Messages of one topic seen by the monitor, in total and in the current window."""

    messages: int = 0
    window: int = 0
    rate_hz: float = 0.0


@dataclass
class _Latest:
    """The latest envelope of each kind, and which views need rebuilding."""

    by_topic: dict[str, Envelope] = field(default_factory=dict)
    faces: dict[str, Envelope] = field(default_factory=dict)
    scan_id: str | None = None
    heartbeats: dict[str, Envelope] = field(default_factory=dict)
    cycles: collections.deque[Envelope] = field(
        default_factory=lambda: collections.deque(maxlen=MAX_CYCLES))
    errors: collections.deque[dict[str, Any]] = field(
        default_factory=lambda: collections.deque(maxlen=MAX_ERRORS))
    dirty: set[str] = field(default_factory=set)


# topic -> view it feeds directly (last value wins)
_LAST_VALUE_VIEWS = {
    "bus.stats": "bus",
    "vision.cube_state": "cube",
    "sim.twin_state": "twin",
    "actuator.scan_pose": "scan",
    "solver.plan": "plan",
    "actuator.progress": "progress",
    "actuator.result": "actuator",
    "cell.status": "cell",
    "solver.sokoban_result": "sokoban",
}


class Dashboard:
    """The coalescing store between the bus (many messages) and the browsers (few updates).

    :meth:`ingest` may be called from the bus thread while :meth:`take_changes` and
    :meth:`snapshot` are called from the server's thread; a lock guards the state.
    """

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self.liveness = Liveness()
        self._lock = threading.Lock()
        self._latest = _Latest()
        self._counters: dict[str, TopicCounter] = collections.defaultdict(TopicCounter)
        self.ingested = 0
        self.views_sent = 0
        self.updates_taken = 0
        self.build_errors = 0
        self.receive_health: Callable[[], dict[str, Any]] = dict
        """Set by the server: the bus subscriber's receive statistics (drops, rejects)."""
        self._window_start = clock()
        self._services_built = -1e9
        self._stale_seen: dict[str, bool] = {}
        self.replayed = 0
        """Replayed messages ingested (bus play)."""
        self._replayed_last = -1e9

    # -- the bus side: constant work per message ---------------------------------------------

    def ingest(self, env: Envelope) -> None:
        """Take one accepted bus message into the picture (cheap; no rendering)."""
        now = self.clock()
        with self._lock:
            self.ingested += 1
            counter = self._counters[env.topic]
            counter.messages += 1
            counter.window += 1
            latest = self._latest
            if is_replayed(env.source):
                if now - self._replayed_last >= REPLAY_ACTIVE_S:
                    latest.dirty.add("monitor")  # a replay starts: say so at once
                self.replayed += 1
                self._replayed_last = now
                if env.topic == "heartbeat":
                    return
            if env.topic == "actuator.amended":
                self._amend_plan(env)
                return
            view = _LAST_VALUE_VIEWS.get(env.topic)
            if view is not None:
                latest.by_topic[env.topic] = env
                latest.dirty.add(view)
                if env.topic == "actuator.scan_pose":
                    self._start_scan(env.payload["scan_id"])
                elif env.topic == "actuator.result" and not env.payload["ok"]:
                    self._add_error(env, "execute", "execution_failed",
                                    env.payload.get("error") or "plan execution stopped",
                                    "" if env.payload.get("cube_state_known", True)
                                    else "the cube state is unknown: rescan")
                return
            if env.topic == "heartbeat":
                self.liveness.update(env, now)
                latest.heartbeats[env.payload["service"]] = env
                latest.dirty.add("services")
            elif env.topic == "vision.face":
                self._start_scan(env.payload["scan_id"])
                face = env.payload["face"]
                latest.faces[face] = env
                latest.dirty.add(f"face.{face}")
                if not env.payload["ok"]:
                    self._add_error(env, "scan", "face_not_read",
                                    f"face {face}: {env.payload.get('error') or 'not read'}",
                                    f"rescan face {face}")
            elif env.topic == "vision.scan_faces":
                self._take_scan_faces(env)
            elif env.topic == "cell.result":
                latest.cycles.append(env)
                latest.dirty.add("cycles")
                if not env.payload["ok"]:
                    self._add_error(env, env.payload.get("failed_stage") or "cycle",
                                    "cycle_failed", env.payload.get("error") or "cycle failed")
            elif env.topic == "cell.history":
                # the cell's cycle log: the list after a restart of the monitor or the cell
                latest.cycles.clear()
                latest.cycles.extend(_logged_cycle(env, c) for c in env.payload["cycles"])
                latest.dirty.add("cycles")
            elif env.topic == "errors":
                p = env.payload
                self._add_error(env, p["stage"], p["code"], p["message"], p.get("action", ""))
            elif env.topic == "diagnostics" and env.payload["level"] != "info":
                p = env.payload
                self._add_error(env, p.get("topic") or "bus", p["code"], p["message"],
                                level=p["level"])

    def _amend_plan(self, env: Envelope) -> None:
        """The running plan's rest was replaced: show the plan as it now stands (the plan
        as the solver found it otherwise; its face turns no longer describe it)."""
        latest, amended = self._latest, env.payload
        found = latest.by_topic.get("solver.plan")
        if found is None or found.payload.get("plan_id") != amended["plan_id"]:
            return
        latest.by_topic["solver.plan"] = msgspec.structs.replace(found, payload={
            **found.payload, "primitives": list(amended["primitives"]),
            "predicted_ms": amended["predicted_ms"], "face_turns": []})
        latest.dirty.add("plan")

    def _take_scan_faces(self, env: Envelope) -> None:
        """The latest scan's faces as the broker kept them (for a monitor started after the
        scan): each face as its own vision.face message, unless that face is held already;
        an older scan than the faces held is left alone."""
        latest, scan_id = self._latest, env.payload["scan_id"]
        if scan_id != latest.scan_id:
            if any(face.wall_time > env.wall_time for face in latest.faces.values()):
                return
            self._start_scan(scan_id)
        for face in payload_maps(env.payload["faces"]):
            if face["face"] not in latest.faces:
                latest.faces[face["face"]] = Envelope("vision.face", env.source, env.seq,
                                                      env.wall_time, env.mono_time, face)
                latest.dirty.add(f"face.{face['face']}")

    def _start_scan(self, scan_id: str) -> None:
        latest = self._latest
        if scan_id != latest.scan_id:
            latest.scan_id = scan_id
            latest.dirty.update(f"face.{face}" for face in latest.faces)
            latest.faces.clear()

    def _add_error(self, env: Envelope, stage: str, code: str, message: str,
                   action: str = "", level: str = "error") -> None:
        self._latest.errors.append({
            "time": env.wall_time, "service": env.source, "stage": stage, "code": code,
            "message": message, "action": action or "", "level": level, "topic": env.topic,
            "replayed": is_replayed(env.source)})
        self._latest.dirty.add("errors")

    def last_sokoban_level(self) -> str | None:
        """XSB text of the Sokoban level the solver last solved (None before any)."""
        with self._lock:
            env = self._latest.by_topic.get("solver.sokoban_result")
            return None if env is None else env.payload["level"]

    def note_error(self, service: str, stage: str, code: str, message: str,
                   action: str = "") -> None:
        """Record an error found by the monitor itself (e.g. a refused command)."""
        with self._lock:
            self._latest.errors.append({
                "time": time.time(), "service": service, "stage": stage, "code": code,
                "message": message, "action": action, "level": "error", "topic": ""})
            self._latest.dirty.add("errors")

    # -- the browser side: work per update period --------------------------------------------

    def take_changes(self) -> dict[str, Any]:
        """The views changed since the last call, each built once from the latest data."""
        now = self.clock()
        with self._lock:
            self._refresh(now)
            dirty, self._latest.dirty = self._latest.dirty, set()
            views = {name: self._build_safely(name, now) for name in sorted(dirty)}
            if views:
                self.updates_taken += 1
                self.views_sent += len(views)
            return views

    def snapshot(self) -> dict[str, Any]:
        """Every view as it is now (for a browser that just connected)."""
        now = self.clock()
        with self._lock:
            self._refresh(now)
            names = {"services", "monitor", "errors", "cycles", *_LAST_VALUE_VIEWS.values(),
                     *FACE_VIEWS}
            return {name: self._build_safely(name, now) for name in sorted(names)}

    def _refresh(self, now: float) -> None:
        """Time-driven changes: staleness, ages, the monitor's own rates."""
        if now - self._services_built >= SERVICES_REFRESH_S:
            self._latest.dirty.add("services")
        stale = {name: s.stale for name, s in self.liveness.peers(now).items()}
        if stale != self._stale_seen:
            self._stale_seen = stale
            self._latest.dirty.add("services")
        elapsed = now - self._window_start
        if elapsed >= MONITOR_STATS_PERIOD_S:
            for counter in self._counters.values():
                counter.rate_hz = counter.window / elapsed
                counter.window = 0
            self._window_start = now
            self._latest.dirty.add("monitor")

    def _build_safely(self, name: str, now: float) -> Any:
        """The view, or a view that says why it cannot be shown: one odd message must not
        stop the dashboard."""
        try:
            return self._build(name, now)
        except Exception as exc:
            self.build_errors += 1
            return {"unavailable": f"view {name!r} cannot be built: "
                                   f"{type(exc).__name__}: {exc}"}

    def _build(self, name: str, now: float) -> Any:
        latest = self._latest
        if name == "services":
            self._services_built = now
            return self._services_view(now)
        if name == "monitor":
            return self._monitor_view(now)
        if name == "cycles":
            return [_cycle_view(env) for env in reversed(latest.cycles)]
        if name == "errors":
            return list(reversed(latest.errors))
        if name.startswith("face."):
            env = latest.faces.get(name[len("face."):])
            return None if env is None else _face_view(env)
        topic = next(t for t, v in _LAST_VALUE_VIEWS.items() if v == name)
        env = latest.by_topic.get(topic)
        if env is None:
            return None
        view = jsonable(env.payload)
        view["source"] = env.source
        view["time"] = env.wall_time
        view["replayed"] = is_replayed(env.source)
        if name == "bus":
            view = _bus_view(view)
        return view

    def _services_view(self, now: float) -> list[dict[str, Any]]:
        services = []
        stats = self._latest.by_topic.get("bus.stats")
        instances = stats.payload.get("instances", {}) if stats is not None else {}
        for name, status in sorted(self.liveness.peers(now).items()):
            if status.stale and status.state == "stopping":
                continue  # it said it was ending, and it ended: a normal exit, no alarm
            beat = self._latest.heartbeats[name].payload
            age = now - status.last_seen
            services.append({
                "service": name, "state": status.state, "stale": status.stale,
                "age_s": round(age, 2), "period_s": status.period_s, "pid": status.pid,
                "host": status.host, "uptime_s": round(beat["uptime_s"] + age, 1),
                "commands": status.commands, "health": jsonable(status.health),
                "instances": [{"id": i["id"], "pid": i["pid"], "host": i["host"],
                               "outstanding": i["outstanding"], "key": i.get("key")}
                              for i in instances.get(name, ())]})
        return services

    def _monitor_view(self, now: float) -> dict[str, Any]:
        topics = {topic: {"messages": c.messages, "rate_hz": round(c.rate_hz, 1)}
                  for topic, c in sorted(self._counters.items())}
        return {"ingested": self.ingested, "views_sent": self.views_sent,
                "updates": self.updates_taken, "topics": topics,
                "replay": {"messages": self.replayed,
                           "active": now - self._replayed_last < REPLAY_ACTIVE_S},
                "receive": jsonable(self.receive_health())}


def _bus_view(stats: dict[str, Any]) -> dict[str, Any]:
    topics = stats.get("topics", {})
    busiest = sorted(topics.items(), key=lambda item: -float(item[1].get("rate_hz", 0)))
    stats["topics"] = dict(busiest[:MAX_TOPICS_SHOWN])
    return stats


def _face_view(env: Envelope) -> dict[str, Any]:
    p = env.payload
    return {"scan_id": p["scan_id"], "pose": p["pose"], "face": p["face"],
            "rotation": p.get("rotation", 0), "size": p["size"],
            "jpeg": base64.b64encode(p["jpeg"]).decode("ascii"), "grid": p["grid"],
            "colors": p["colors"], "confidence": [round(c, 3) for c in p["confidence"]],
            "ok": p["ok"], "error": p.get("error"), "time": env.wall_time,
            "replayed": is_replayed(env.source)}


def _logged_cycle(env: Envelope, cycle: dict[str, Any]) -> Envelope:
    """A cycle of the `cell.history` list, as the `cell.result` it ended with."""
    result = {"cycle_id": cycle["cycle_id"], "ok": cycle["result"] == "solved",
              "stages_s": cycle.get("stages_s") or {}, "total_s": cycle.get("total_s") or 0.0,
              "result": cycle["result"]}
    for key in ("failed_stage", "error"):
        if cycle.get(key):
            result[key] = cycle[key]
    return Envelope("cell.result", env.source, env.seq, cycle.get("started_wall") or
                    env.wall_time, env.mono_time, result)


def _cycle_view(env: Envelope) -> dict[str, Any]:
    view = jsonable(env.payload)
    view["time"] = env.wall_time
    view["replayed"] = is_replayed(env.source)
    return view
