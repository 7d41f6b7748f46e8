"""Bus messages as Foxglove channels: each topic in JSON, and the camera, the scenes, the plan,
the service states and the log derived from them. The channels are recorded with the SDK's
own MCAP sink and read back with the `mcap` package, as Foxglove would read them."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import foxglove
import pytest
from mcap.reader import make_reader
from support.foxglove import protobuf_class
from support.monitor import face_jpeg

from robocell.common.bus.schema import payload_json_schema
from robocell.common.bus.wire import Envelope
from robocell.common.cube import apply_to_facelets, solved
from robocell.common.notation import parse_moves
from robocell.services.foxglove.service import (
    TURN_S,
    CellChannels,
    PlanProgress,
    ServiceStates,
)

T0 = 1_800_000_000.0
SETTLE_S = TURN_S * 6
"""How long the twin's drawing thread gets to draw a turn (TURN_S) and the state after it,
before the recording ends: a loaded machine may hold the thread back a while."""


def envelope(topic: str, payload: dict, seq: int, at: float, source: str = "test") -> Envelope:
    return Envelope(topic, source, seq, T0 + at, at, payload)


def heartbeat(service: str, state: str = "ready") -> dict:
    return {"service": service, "state": state, "health": {}, "period_s": 1.0, "pid": 7,
            "host": "cell", "uptime_s": 3.0, "commands": []}


def twin(facelets: str, angle: float) -> dict:
    return {"puzzle": "3x3x3", "facelets": facelets, "solved": facelets == solved(3),
            "grips": {}, "arm_angles": {"R": angle, "U": 0.0}}


def record(path: Path, envelopes: list[Envelope], settle_s: float = 0.0,
           pause_s: float = 0.0) -> dict[str, list]:
    """Feed ``envelopes`` to the channels while the SDK records them; the messages by
    channel, each as (schema name, encoding, schema data, message data)."""
    context = foxglove.Context()
    writer = foxglove.open_mcap(path, context=context)
    channels = CellChannels(context)
    try:
        for env in envelopes:
            channels.ingest(env)
            time.sleep(pause_s)
        time.sleep(settle_s)
    finally:
        channels.close()
        writer.close()
    out: dict[str, list] = {}
    with open(path, "rb") as stream:
        for schema, channel, message in make_reader(stream).iter_messages():
            out.setdefault(channel.topic, []).append(
                (schema.name, channel.message_encoding, schema.data, message.data))
    return out


def decode(item):
    name, encoding, schema, data = item
    if encoding == "json":
        return json.loads(data)
    return protobuf_class(name, schema).FromString(data)


def test_bus_topics_are_logged_as_json_with_robocell_schemas(tmp_path):
    jpeg, grid, colours = face_jpeg(solved(3), 2, 3)
    face = {"scan_id": "s1", "pose": 0, "face": "F", "size": 3, "jpeg": jpeg, "grid": grid,
            "colors": colours, "confidence": [1.0] * 9, "ok": True}
    got = record(tmp_path / "bus.mcap", [envelope("heartbeat", heartbeat("solver"), 1, 0.0),
                                         envelope("vision.face", face, 1, 0.1, "vision")])
    (name, encoding, schema, data), = got["heartbeat"]
    assert (name, encoding) == ("robocell.Heartbeat", "json")
    assert json.loads(schema) == payload_json_schema("heartbeat")
    assert json.loads(data) == heartbeat("solver")
    sent = decode(got["vision.face"][0])
    assert base64.b64decode(sent["jpeg"]) == jpeg  # bytes as base64, as the schema says
    image = decode(got["/vision.face/image"][0])
    assert got["/vision.face/image"][0][0] == "foxglove.CompressedImage"
    assert (image.format, image.data, image.frame_id) == ("jpeg", jpeg, "camera")
    assert image.timestamp.seconds == int(T0)


def test_errors_and_warnings_become_foxglove_logs(tmp_path):
    error = {"service": "vision", "stage": "resolve", "code": "bad_colours",
             "message": "sticker F5 is doubtful", "action": "rescan under even light"}
    warning = {"service": "broker", "level": "warning", "code": "dropped_messages",
               "message": "3 dropped", "topic": "vision.face"}
    info = dict(warning, level="info")
    got = record(tmp_path / "log.mcap", [envelope("errors", error, 1, 0.0),
                                         envelope("diagnostics", warning, 1, 0.1),
                                         envelope("diagnostics", info, 2, 0.2)])
    logs = [decode(item) for item in got["/log"]]
    assert got["/log"][0][0] == "foxglove.Log"
    assert [(log.name, log.level) for log in logs] == [("vision", 4), ("broker", 3)]
    assert logs[0].message == "resolve: sticker F5 is doubtful -- rescan under even light"
    assert "vision.face" in logs[1].message


def test_the_twin_turns_in_the_scene_between_two_states(tmp_path):
    before = apply_to_facelets(solved(3), parse_moves("U F"), 3)
    after = apply_to_facelets(before, parse_moves("R"), 3)
    got = record(tmp_path / "twin.mcap", [envelope("sim.twin_state", twin(before, 0.0), 1, 0.0),
                                          envelope("sim.twin_state", twin(after, 90.0), 2, 0.1)],
                 settle_s=SETTLE_S)
    scenes = [decode(item) for item in got["/twin/scene"]]
    assert got["/twin/scene"][0][0] == "foxglove.SceneUpdate"
    turning = [s for s in scenes if any(abs(b.pose.orientation.w) < 0.9999
                                        for e in s.entities for b in e.cubes)]
    assert len(scenes) >= 4 and turning, len(scenes)
    assert all(len(s.entities) == 28 for s in scenes)
    last = scenes[-1]
    assert all(b.pose.orientation.w == 1.0 for e in last.entities for b in e.cubes)
    # the turn is R's: the cubies that move are those of the R layer (x > 0 in the cube,
    # y > 0 in Foxglove's frame)
    moving = {e.id for e in turning[0].entities
              if any(abs(b.pose.orientation.w) < 0.9999 for b in e.cubes)}
    assert len(moving) == 9 and all(entity.split("cubie")[1].startswith("+2") for entity in moving)


def test_plan_progress_follows_the_plan_and_its_execution():
    progress = PlanProgress()
    view = progress.plan({"plan_id": "p1", "profile": "six-motor", "primitives": ["a", "b"],
                          "face_turns": ["R", "U"], "predicted_ms": 800.0, "puzzle": "3x3x3",
                          "facelets": "", "search": {}})
    assert (view["state"], view["step"], view["remaining"]) == ("planned", 0, ["a", "b"])
    view = progress.progress({"plan_id": "p1", "step": 1, "n_steps": 2, "primitive": "b",
                              "eta_s": 0.4, "state": "running"})
    assert (view["executed"], view["remaining"], view["percent"]) == (["a"], ["b"], 50.0)
    view = progress.result({"plan_id": "p1", "ok": False, "executed": 1, "n_steps": 2,
                            "duration_s": 1.0, "error": "jam on arm R"})
    assert (view["state"], view["error"], view["step"]) == ("failed", "jam on arm R", 1)
    other = progress.progress({"plan_id": "p2", "step": 0, "n_steps": 5, "primitive": "x",
                               "eta_s": 1.0, "state": "running"})
    assert (other["plan_id"], other["n_steps"]) == ("p2", 5)


def test_plan_progress_shows_a_rest_replaced_while_the_plan_runs():
    progress = PlanProgress()
    progress.plan({"plan_id": "p1", "profile": "six-motor", "primitives": ["a", "b", "c"],
                   "face_turns": ["R", "U", "F"], "predicted_ms": 900.0, "puzzle": "3x3x3",
                   "facelets": "", "search": {}})
    progress.progress({"plan_id": "p1", "step": 1, "n_steps": 3, "primitive": "b",
                       "eta_s": 0.6, "state": "running"})
    view = progress.amended({"plan_id": "p1", "at_step": 2, "primitives": ["a", "b", "d", "e"],
                             "predicted_ms": 850.0})
    assert (view["n_steps"], view["executed"], view["remaining"]) == (4, ["a"], ["b", "d", "e"])
    assert (view["predicted_ms"], view["face_turns"]) == (850.0, [])
    view = progress.result({"plan_id": "p1", "ok": True, "executed": 4, "n_steps": 4,
                            "duration_s": 1.0, "primitives": ["a", "b", "d", "e"]})
    assert (view["state"], view["executed"], view["remaining"]) == (
        "done", ["a", "b", "d", "e"], [])


def test_service_states_say_which_heartbeats_are_stale():
    states = ServiceStates()
    states.beat(heartbeat("solver"), T0)
    states.beat(heartbeat("vision"), T0 + 5.0)
    states.beat(heartbeat("cell", "stopping"), T0 + 5.0)
    view = states.view(T0 + 5.5)
    assert [(s["service"], s["stale"]) for s in view["services"]] == [
        ("cell", True), ("solver", True), ("vision", False)]
    assert view["alive"] == 1


@pytest.mark.slow
def test_a_twin_state_that_cannot_be_drawn_does_not_stop_the_next(tmp_path, capfd):
    bad = dict(twin(solved(3), 0.0), facelets="UUU")
    good = apply_to_facelets(solved(3), parse_moves("F"), 3)
    got = record(tmp_path / "bad.mcap", [envelope("sim.twin_state", bad, 1, 0.0),
                                         envelope("sim.twin_state", twin(good, 0.0), 2, 0.5)],
                 settle_s=SETTLE_S, pause_s=0.3)
    assert "cannot draw the twin: ValueError: a cube has 24" in capfd.readouterr().err
    assert [decode(item)["facelets"] for item in got["sim.twin_state"]] == ["UUU", good]
    assert len(got["/twin/scene"]) >= 1
    assert len(decode(got["/twin/scene"][-1]).entities) == 28
