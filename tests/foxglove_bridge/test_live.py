"""The running cell in Foxglove: a client speaking the Foxglove WebSocket protocol against the
bridge of a simulated cell (`robocell up --sim`'s services): channels advertised with
robocell's schemas, the camera, the cube and the twin in 3D, service calls refused without
the monitor's token and answered with it. The test keeps a transcript of the conversation
(printed, and saved as foxglove-transcript.txt in its temporary directory)."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter

from support.cell import foxglove_url
from support.foxglove import FoxgloveClient, expected_colours, sticker_colours
from support.monitor import run_async

from robocell.common.bus.schema import payload_json_schema
from robocell.common.bus.topics import TOPICS
from robocell.common.cube import solved
from robocell.services.foxglove.scene import STICKER_RGB

TOKEN = "foxglove-test-token-7d2e"
PROFILE = "six-motor"  # a 3x3: 27 cubies
SCENE_ENTITIES = 27 + 1  # the cubies and the label
SERVICES = ["cell.start", "cell.scramble", "cell.estop", "solver.solve"]
DERIVED = {"/vision.face/image": "foxglove.CompressedImage", "/cube/scene": "foxglove.SceneUpdate",
           "/twin/scene": "foxglove.SceneUpdate", "/log": "foxglove.Log",
           "/plan/progress": "robocell.PlanProgress", "/services": "robocell.ServiceStates"}
CYCLE_TIMEOUT_S = 240.0


def is_turning(scene) -> bool:
    """Some cubie stands part way through a turn (a still cube is drawn unrotated)."""
    return any(abs(box.pose.orientation.w) < 0.9999
               for entity in scene.entities for box in entity.cubes)


async def converse(url: str) -> list[str]:
    async with FoxgloveClient.connect(url) as fox:
        bus_topics = [s.topic for s in TOPICS if not s.topic.startswith("cmd.")]
        await fox.until_advertised(bus_topics + list(DERIVED), SERVICES, timeout=30.0)
        info = fox.server_info
        assert "services" in info["capabilities"], info
        fox.note(f"<- serverInfo name={info['name']} capabilities={info['capabilities']} "
                 f"encodings={info['supportedEncodings']}")
        for topic in bus_topics:
            channel = fox.channel(topic)
            assert channel["encoding"] == "json" and channel["schemaEncoding"] == "jsonschema"
            assert json.loads(channel["schema"]) == payload_json_schema(topic), topic
        for topic, schema_name in DERIVED.items():
            assert fox.channel(topic)["schemaName"] == schema_name, topic
        fox.note(f"<- advertise {len(fox.channels)} channels: " + ", ".join(
            f"{c['topic']} [{c['schemaName']}]" for c in
            sorted(fox.channels.values(), key=lambda c: c["topic"])))
        fox.note("<- advertiseServices " + ", ".join(
            f"{s['name']} (request {s['request']['schemaName']})"
            for s in fox.services.values()))
        assert set(fox.services) == set(SERVICES)

        await fox.subscribe(["heartbeat", "sim.twin_state", "/twin/scene", "/cube/scene",
                             "/vision.face/image", "/plan/progress", "/services", "/log",
                             "cell.result"])
        beat = await fox.receive("heartbeat", 30.0)
        assert {"service", "state", "period_s"} <= set(beat.decoded)
        fox.note(f"<- heartbeat (JSON, {len(beat.data)} B): service={beat.decoded['service']} "
                 f"state={beat.decoded['state']}")
        services = await fox.receive("/services", 30.0,
                                     lambda r: r.decoded["alive"] >= 7)
        fox.note("<- /services: " + ", ".join(
            f"{s['service']}={s['state']}" for s in services.decoded["services"]))
        twin = await fox.receive("sim.twin_state", 30.0)  # latched: replayed at once
        first = await fox.receive("/twin/scene", 30.0)
        assert len(first.decoded.entities) == SCENE_ENTITIES
        assert sticker_colours(first.decoded) == expected_colours(twin.decoded["facelets"],
                                                                  STICKER_RGB)
        fox.note(f"<- /twin/scene SceneUpdate: {len(first.decoded.entities)} entities, "
                 f"{sum(len(e.cubes) for e in first.decoded.entities)} boxes, twin solved="
                 f"{twin.decoded['solved']}")

        refused = await fox.call("cell.scramble", {"seed": 3}, timeout=30.0)
        assert not refused.ok and "token" in refused.message
        fox.note(f"-> call cell.scramble {{seed: 3}} without token\n<- serviceCallFailure: "
                 f"{refused.message}")
        wrong = await fox.call("cell.start", {"token": TOKEN[:-1] + "x"}, timeout=30.0)
        assert not wrong.ok and "token" in wrong.message
        fox.note(f"-> call cell.start with a wrong token\n<- serviceCallFailure: "
                 f"{wrong.message}")
        await asyncio.sleep(1.0)  # nothing reached the bus: the twin stays as it was
        fox.drop("sim.twin_state")
        still = await fox.call("solver.solve", {"token": TOKEN, "facelets": twin.decoded[
            "facelets"]}, timeout=60.0)
        assert still.ok, still
        assert not [r for r in fox._inbox if r.topic == "sim.twin_state"], "twin moved"

        scrambled = await fox.call("cell.scramble", {"token": TOKEN, "seed": 3}, timeout=30.0)
        assert scrambled.ok and scrambled.payload["ok"], scrambled
        facelets = scrambled.payload["replies"][0]["result"]["facelets"]
        fox.note(f"-> call cell.scramble {{token, seed: 3}}\n<- serviceCallResponse: ok, "
                 f"twin {facelets}")
        shown = expected_colours(facelets, STICKER_RGB)
        await fox.receive("/twin/scene", 30.0, lambda r: not is_turning(r.decoded)
                          and sticker_colours(r.decoded) == shown)
        fox.note("<- /twin/scene SceneUpdate: the scrambled twin, each face's stickers in "
                 "the colours of its facelets")

        plan = await fox.call("solver.solve", {"token": TOKEN, "facelets": facelets},
                              timeout=60.0)
        assert plan.ok and plan.payload["ok"], plan
        result = plan.payload["replies"][0]["result"]
        fox.note(f"-> call solver.solve {{token, facelets}}\n<- serviceCallResponse: "
                 f"{len(result['primitives'])} primitives, {result['face_turns']}")

        started = await fox.call("cell.start", {"token": TOKEN}, timeout=30.0)
        assert started.ok and started.payload["ok"], started
        fox.note(f"-> call cell.start {{token}}\n<- serviceCallResponse: cycle "
                 f"{started.payload['replies'][0]['result']['cycle_id']}")
        image = await fox.receive("/vision.face/image", 60.0)
        assert image.decoded.format == "jpeg" and image.decoded.data[:2] == b"\xff\xd8"
        fox.note(f"<- /vision.face/image CompressedImage: {image.decoded.format}, "
                 f"{len(image.decoded.data)} B, frame_id={image.decoded.frame_id}")
        read = await fox.receive("/cube/scene", 60.0)
        assert len(read.decoded.entities) == SCENE_ENTITIES
        fox.note(f"<- /cube/scene SceneUpdate: the cube as read, "
                 f"{len(read.decoded.entities)} entities")
        turning = await fox.receive("/twin/scene", CYCLE_TIMEOUT_S,
                                    lambda r: is_turning(r.decoded))
        fox.note("<- /twin/scene SceneUpdate: a layer part way through a turn")
        done = await fox.receive("cell.result", CYCLE_TIMEOUT_S,
                                 lambda r: r.decoded["cycle_id"] == started.payload[
                                     "replies"][0]["result"]["cycle_id"])
        assert done.decoded["ok"], done.decoded
        progress = await fox.receive("/plan/progress", 30.0,
                                     lambda r: r.decoded["state"] == "done")
        assert progress.decoded["step"] == progress.decoded["n_steps"] > 0
        fox.note(f"<- /plan/progress: {progress.decoded['state']} "
                 f"{progress.decoded['step']}/{progress.decoded['n_steps']}")
        solved_colours = expected_colours(solved(3), STICKER_RGB)
        last = await fox.receive("/twin/scene", 30.0, lambda r: not is_turning(r.decoded)
                                 and sticker_colours(r.decoded) == solved_colours)
        assert turning.log_time_ns < last.log_time_ns
        fox.note(f"<- cell.result ok={done.decoded['ok']} total_s={done.decoded['total_s']:.1f};"
                 " /twin/scene shows the twin solved")
        counts = Counter(r.topic for r in fox._inbox)
        fox.note("messages still queued by topic: " + ", ".join(
            f"{t}={n}" for t, n in sorted(counts.items())))
        return fox.transcript


def test_a_foxglove_client_watches_and_commands_the_running_cell(launch_cell, tmp_path):
    started = time.monotonic()
    with launch_cell(PROFILE, speed=20.0, env={"ROBOCELL_MONITOR_TOKEN": TOKEN}) as cell:
        transcript = run_async(converse(foxglove_url(cell)))
    text = "\n".join(transcript) + f"\n(test took {time.monotonic() - started:.0f} s)\n"
    (tmp_path / "foxglove-transcript.txt").write_text(text)
    print(text)
