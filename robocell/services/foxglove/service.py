"""The bus as Foxglove channels: each bus message logged on its topic's channel and on the views
derived from it.

Channels (all on one ``foxglove.Context``, which the WebSocket server reads):

=====================  ===========================  =========================================
channel                schema                       from
=====================  ===========================  =========================================
``<bus topic>``        robocell's JSON Schema        every pub/sub topic of topics.py (JSON;
                       (``payload_json_schema``)     bytes as base64)
``/vision.face/image`` ``foxglove.CompressedImage``  each scanned face's camera frame
``/cube/scene``        ``foxglove.SceneUpdate``      ``vision.cube_state``: the cube as read
``/twin/scene``        ``foxglove.SceneUpdate``      ``sim.twin_state``: the twin, turning
``/plan/progress``     JSON (``PLAN_PROGRESS``)      ``solver.plan``, ``actuator.progress``,
                                                     ``actuator.result``, ``actuator.amended``
``/services``          JSON (``SERVICES``)           ``heartbeat``: each service's state
``/log``               ``foxglove.Log``              ``errors`` (and warnings/errors of
                                                     ``diagnostics``)
=====================  ===========================  =========================================

``/vision.face/image`` is the channel `robocell bus export --json` writes, so one layout
serves a live cell and an exported recording.

Foxglove keeps no last value: a client that subscribes late would not see the cube, the plan
or a latched topic until it changes. :meth:`CellChannels.replay` logs the last message of a
state channel again when a client subscribes to it.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from foxglove import Channel, Context, Schema
from foxglove.channels import CompressedImageChannel, LogChannel, SceneUpdateChannel
from foxglove.messages import CompressedImage, Log, LogLevel, SceneUpdate, Timestamp

from robocell.common.bus.liveness import STALE_AFTER_BEATS
from robocell.common.bus.schema import payload_json_schema
from robocell.common.bus.topics import TOPICS
from robocell.common.bus.views import IMAGE_CHANNEL
from robocell.common.bus.wire import Envelope
from robocell.services.foxglove.scene import CubeLabel, cube_scene, find_turns

NS_PER_S = 1_000_000_000
COMMAND_TOPICS = ("cmd.request", "cmd.reply")
"""Declared topics that travel on the command channel, never on pub/sub: no channel."""
CUBE_SCENE = "/cube/scene"
TWIN_SCENE = "/twin/scene"
PLAN_PROGRESS = "/plan/progress"
SERVICES = "/services"
LOG = "/log"
CUBE_LABEL = CubeLabel("cube", "cube as read", offset=(0.0, 0.1, 0.0))
TWIN_LABEL = CubeLabel("twin", "twin")
TURN_FRAMES = 8
"""Frames drawn through one turn of the twin (the final state is the last)."""
TURN_S = 0.3
"""How long a turn of the twin takes in Foxglove (the twin publishes once per motion)."""
LOG_LEVELS = {"info": LogLevel.Info, "warning": LogLevel.Warning, "error": LogLevel.Error}

PLAN_PROGRESS_SCHEMA: dict[str, Any] = {
    "title": "robocell.PlanProgress",
    "description": "The current plan and how far the actuator has executed it.",
    "type": "object",
    "properties": {
        "plan_id": {"type": "string"}, "profile": {"type": "string"},
        "state": {"type": "string", "enum": ["planned", "running", "paused", "stopped",
                                             "done", "failed"]},
        "step": {"type": "integer", "description": "primitives executed so far"},
        "n_steps": {"type": "integer"},
        "percent": {"type": "number"},
        "primitive": {"type": "string", "description": "the primitive now executing"},
        "eta_s": {"type": "number"}, "predicted_ms": {"type": "number"},
        "executed": {"type": "array", "items": {"type": "string"}},
        "remaining": {"type": "array", "items": {"type": "string"}},
        "face_turns": {"type": "array", "items": {"type": "string"}},
        "error": {"type": "string"},
    },
}
SERVICES_SCHEMA: dict[str, Any] = {
    "title": "robocell.ServiceStates",
    "description": "Every service heard on the heartbeat topic, with its lifecycle state.",
    "type": "object",
    "properties": {
        "alive": {"type": "integer"},
        "services": {"type": "array", "items": {"type": "object", "properties": {
            "service": {"type": "string"}, "state": {"type": "string"},
            "stale": {"type": "boolean"}, "age_s": {"type": "number"},
            "uptime_s": {"type": "number"}, "pid": {"type": "integer"},
            "host": {"type": "string"}}}},
    },
}


def _json_schema(name: str, schema: dict[str, Any]) -> Schema:
    return Schema(name=name, encoding="jsonschema", data=json.dumps(schema).encode())


def _stamp(ns: int) -> Timestamp:
    return Timestamp(sec=ns // NS_PER_S, nsec=ns % NS_PER_S)


def _ns(env: Envelope) -> int:
    return int(env.wall_time * NS_PER_S)


@dataclass
class _Latest:
    """The last message of a state channel, to log again for a client that subscribes late."""

    channel: Any
    message: Any
    log_time: int


class PlanProgress:
    """The plan and its execution, folded from solver.plan and actuator.* (pure)."""

    def __init__(self) -> None:
        self.view: dict[str, Any] | None = None
        self._primitives: list[str] = []

    def plan(self, payload: dict[str, Any]) -> dict[str, Any]:
        self._primitives = list(payload["primitives"])
        self.view = {"plan_id": payload["plan_id"], "profile": payload["profile"],
                     "state": "planned", "step": 0, "n_steps": len(self._primitives),
                     "percent": 0.0, "primitive": "", "eta_s": payload["predicted_ms"] / 1000,
                     "predicted_ms": payload["predicted_ms"], "executed": [],
                     "remaining": list(self._primitives),
                     "face_turns": list(payload["face_turns"]), "error": ""}
        return self.view

    def _for(self, plan_id: str, n_steps: int) -> dict[str, Any]:
        if self.view is None or self.view["plan_id"] != plan_id:  # a plan we did not see
            self._primitives = []
            self.view = {"plan_id": plan_id, "profile": "", "state": "running", "step": 0,
                         "n_steps": n_steps, "percent": 0.0, "primitive": "", "eta_s": 0.0,
                         "predicted_ms": 0.0, "executed": [], "remaining": [],
                         "face_turns": [], "error": ""}
        return self.view

    def _at(self, view: dict[str, Any], step: int) -> None:
        view["step"] = step
        view["percent"] = round(100.0 * step / view["n_steps"], 1) if view["n_steps"] else 100.0
        if self._primitives:
            view["executed"] = self._primitives[:step]
            view["remaining"] = self._primitives[step:]

    def amended(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The running plan's rest replaced (actuator.amended): the plan as it now stands."""
        view = self._for(payload["plan_id"], len(payload["primitives"]))
        self._primitives = list(payload["primitives"])
        view.update(n_steps=len(self._primitives), predicted_ms=payload["predicted_ms"],
                    face_turns=[])
        self._at(view, view["step"])
        return view

    def progress(self, payload: dict[str, Any]) -> dict[str, Any]:
        view = self._for(payload["plan_id"], payload["n_steps"])
        view.update(state=payload["state"], primitive=payload["primitive"],
                    eta_s=payload["eta_s"], n_steps=payload["n_steps"])
        self._at(view, payload["step"])
        return view

    def result(self, payload: dict[str, Any]) -> dict[str, Any]:
        view = self._for(payload["plan_id"], payload["n_steps"])
        if payload.get("primitives") is not None:  # the plan as executed
            self._primitives = list(payload["primitives"])
        view.update(state="done" if payload["ok"] else "failed", primitive="", eta_s=0.0,
                    error=payload.get("error") or "")
        self._at(view, payload["executed"])
        return view


class ServiceStates:
    """Each service's last heartbeat (pure; ``now`` is wall-clock seconds)."""

    def __init__(self) -> None:
        self._beats: dict[str, dict[str, Any]] = {}

    def beat(self, payload: dict[str, Any], wall_time: float) -> None:
        self._beats[payload["service"]] = dict(payload, seen=wall_time)

    def view(self, now: float) -> dict[str, Any]:
        services = []
        for name in sorted(self._beats):
            beat = self._beats[name]
            age = max(0.0, now - beat["seen"])
            stale = age > STALE_AFTER_BEATS * beat["period_s"] or beat["state"] == "stopping"
            services.append({"service": name, "state": beat["state"], "stale": stale,
                             "age_s": round(age, 2), "uptime_s": beat["uptime_s"],
                             "pid": beat["pid"], "host": beat["host"]})
        return {"alive": sum(not s["stale"] for s in services), "services": services}


def error_log(env: Envelope) -> Log:
    """An ``errors`` message as a foxglove.Log: level Error, named after the service."""
    p = env.payload
    text = f"{p['stage']}: {p['message']}"
    if p.get("action"):
        text += f" -- {p['action']}"
    return Log(timestamp=_stamp(_ns(env)), level=LogLevel.Error, name=p["service"],
               message=text, file=p["code"])


def diagnostic_log(env: Envelope) -> Log:
    p = env.payload
    where = f" (topic {p['topic']})" if p.get("topic") else ""
    return Log(timestamp=_stamp(_ns(env)), level=LOG_LEVELS[p["level"]], name=p["service"],
               message=f"{p['code']}: {p['message']}{where}", file=p["code"])


class TwinMotion:
    """Draws the twin turning: after a new twin state that one motion explains (a layer turn
    or an axial move, see `find_turns`), frames of that motion for TURN_S seconds on a thread
    of its own (while someone watches), then the state itself; a newer state cuts a turn
    short. Ends with stop()."""

    def __init__(self, show: Callable[[SceneUpdate, int], None],
                 watching: Callable[[], bool] = lambda: True) -> None:
        self._show = show  # show(SceneUpdate, log_time_ns)
        self._watching = watching
        self._job: tuple[str, str, set[str]] | None = None
        self._wake = threading.Condition()
        self._stopped = False
        self.failures = 0
        self._thread = threading.Thread(target=self._run, name="foxglove-twin", daemon=True)
        self._thread.start()

    def play(self, before: str | None, after: str, arms: set[str]) -> None:
        """Show ``after``, turning from ``before`` if one layer turn explains it (``arms``:
        the faces whose arms moved, tried first). Returns at once."""
        with self._wake:
            self._job = (before or after, after, arms)
            self._wake.notify()

    def stop(self) -> None:
        with self._wake:
            self._stopped = True
            self._wake.notify()
        self._thread.join(timeout=2)

    def _run(self) -> None:
        while True:
            with self._wake:
                while self._job is None and not self._stopped:
                    self._wake.wait()
                if self._stopped:
                    return
                job, self._job = self._job, None
            try:
                self._draw(*job)
            except Exception as exc:  # a bad twin state must not end the drawing of the next
                self.failures += 1
                print(f"foxglove: cannot draw the twin: {type(exc).__name__}: {exc}",
                      file=sys.stderr, flush=True)

    def _draw(self, before: str, after: str, arms: set[str]) -> None:
        turn = find_turns(before, after, arms) if self._watching() else None
        if turn is not None:
            for frame in range(1, TURN_FRAMES):
                with self._wake:
                    if self._wake.wait_for(lambda: self._job is not None or self._stopped,
                                           TURN_S / TURN_FRAMES):
                        break  # a newer state (or stop): show this one at once
                now = time.time_ns()
                self._show(cube_scene(before, TWIN_LABEL, turn, frame / TURN_FRAMES, now), now)
        now = time.time_ns()
        self._show(cube_scene(after, TWIN_LABEL, stamp_ns=now), now)


class CellChannels:
    """Every channel of the cell on ``context``; :meth:`ingest` logs one bus message."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.topics: dict[str, Channel] = {}
        for spec in TOPICS:
            if spec.topic in COMMAND_TOPICS:
                continue
            self.topics[spec.topic] = Channel(
                spec.topic, message_encoding="json", context=context,
                schema=_json_schema(f"robocell.{spec.type_name}",
                                    payload_json_schema(spec.topic)),
                metadata={"kind": spec.kind.value, "publisher": spec.publisher})
        self.latched = {spec.topic for spec in TOPICS if spec.latched}
        self.camera = CompressedImageChannel(IMAGE_CHANNEL, context=context)
        self.cube_scene = SceneUpdateChannel(CUBE_SCENE, context=context)
        self.twin_scene = SceneUpdateChannel(TWIN_SCENE, context=context)
        self.plan = Channel(PLAN_PROGRESS, message_encoding="json", context=context,
                            schema=_json_schema("robocell.PlanProgress", PLAN_PROGRESS_SCHEMA))
        self.services = Channel(SERVICES, message_encoding="json", context=context,
                                schema=_json_schema("robocell.ServiceStates", SERVICES_SCHEMA))
        self.log = LogChannel(LOG, context=context)
        self.plan_progress = PlanProgress()
        self.service_states = ServiceStates()
        self.ingested = 0
        self._latest: dict[int, _Latest] = {}
        self._lock = threading.Lock()
        self._twin: tuple[str, dict[str, float]] | None = None
        self.twin_motion = TwinMotion(self._show_twin, self.twin_scene.has_sinks)

    def close(self) -> None:
        self.twin_motion.stop()

    # -- logging -----------------------------------------------------------------------------

    def _log(self, channel: Any, message: Any, log_time: int, keep: bool) -> None:
        if keep:
            with self._lock:
                self._latest[channel.id()] = _Latest(channel, message, log_time)
        channel.log(message, log_time=log_time)

    def _show_twin(self, scene: SceneUpdate, log_time: int) -> None:
        self._log(self.twin_scene, scene, log_time, keep=True)

    def replay(self, channel_id: int) -> bool:
        """Log the last message of a state channel again (a client just subscribed to it);
        False if it has none."""
        with self._lock:
            latest = self._latest.get(channel_id)
        if latest is None:
            return False
        latest.channel.log(latest.message, log_time=latest.log_time)
        return True

    # -- one bus message ---------------------------------------------------------------------

    def ingest(self, env: Envelope) -> None:
        """Log ``env`` on its topic's channel and on the views derived from it."""
        channel = self.topics.get(env.topic)
        if channel is None:
            return
        self.ingested += 1
        stamp = _ns(env)
        self._log(channel, msgspec.json.encode(env.payload), stamp, env.topic in self.latched)
        derive = _DERIVED.get(env.topic)
        if derive is not None:
            derive(self, env, stamp)

    def _face(self, env: Envelope, stamp: int) -> None:
        jpeg = env.payload.get("jpeg")
        if jpeg:
            self._log(self.camera, CompressedImage(timestamp=_stamp(stamp), frame_id="camera",
                                                   data=jpeg, format="jpeg"), stamp, keep=True)

    def _cube_state(self, env: Envelope, stamp: int) -> None:
        self._log(self.cube_scene, cube_scene(env.payload["facelets"], CUBE_LABEL,
                                              stamp_ns=stamp), stamp, keep=True)

    def _twin_state(self, env: Envelope, stamp: int) -> None:
        facelets = env.payload["facelets"]
        angles = env.payload["arm_angles"]
        before, before_angles = self._twin or (None, {})
        turned = {arm for arm, angle in angles.items() if before_angles.get(arm) != angle}
        self._twin = (facelets, dict(angles))
        self.twin_motion.play(before, facelets, turned)

    def _plan(self, env: Envelope, stamp: int) -> None:
        self._log(self.plan, self.plan_progress.plan(env.payload), stamp, keep=True)

    def _progress(self, env: Envelope, stamp: int) -> None:
        self._log(self.plan, self.plan_progress.progress(env.payload), stamp, keep=True)

    def _result(self, env: Envelope, stamp: int) -> None:
        self._log(self.plan, self.plan_progress.result(env.payload), stamp, keep=True)

    def _amended(self, env: Envelope, stamp: int) -> None:
        self._log(self.plan, self.plan_progress.amended(env.payload), stamp, keep=True)

    def _heartbeat(self, env: Envelope, stamp: int) -> None:
        self.service_states.beat(env.payload, env.wall_time)
        self._log(self.services, self.service_states.view(env.wall_time), stamp, keep=True)

    def _error(self, env: Envelope, stamp: int) -> None:
        self._log(self.log, error_log(env), stamp, keep=False)

    def _diagnostic(self, env: Envelope, stamp: int) -> None:
        if env.payload["level"] != "info":
            self._log(self.log, diagnostic_log(env), stamp, keep=False)


_DERIVED = {
    "vision.face": CellChannels._face,
    "vision.cube_state": CellChannels._cube_state,
    "sim.twin_state": CellChannels._twin_state,
    "solver.plan": CellChannels._plan,
    "actuator.progress": CellChannels._progress,
    "actuator.result": CellChannels._result,
    "actuator.amended": CellChannels._amended,
    "heartbeat": CellChannels._heartbeat,
    "errors": CellChannels._error,
    "diagnostics": CellChannels._diagnostic,
}
"""bus topic -> what else its messages are logged as."""
