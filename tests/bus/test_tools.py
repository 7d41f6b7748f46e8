"""Bus tools as a user runs them: real broker process, real CLI processes, MCAP files."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from support.bus import (
    declared_result,
    known_subscriptions,
    recv_topic,
    robocell_cmd,
    stop_process,
    subscription_watcher,
    wait_for_new_subscription,
    wait_registered,
    wait_subscribed,
)

from robocell.common.bus import Endpoints, Publisher, Subscriber
from robocell.common.bus.wire import TOPIC_END, decode
from robocell.tools.recording import read_messages, recording_info

PROGRESS = {"plan_id": "p1", "step": 0, "n_steps": 30, "primitive": "R+", "eta_s": 1.0,
            "state": "running"}
PLAN = declared_result("solver", "solve", facelets="UUUU", primitives=["R'"])
"""What the scripted solver answers."""
N_RECORDED = 30
GAP_S = (0.0, 0.05, 0.2)  # irregular spacing, so that timing is worth reproducing
TIMING_TOLERANCE_S = 0.6  # generous: the machine may be busy; the gaps span > 2 s


def run_cli(env: dict, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(robocell_cmd(*args), env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def cli_env(broker_process, bus_base: str) -> dict:
    from support.bus import robocell_env

    return robocell_env(bus_base)


def linked(endpoints: Endpoints, source: str) -> Publisher:
    pub = Publisher(source, endpoints)
    assert pub.wait_linked(10)
    return pub


def start_recorder(endpoints: Endpoints, env: dict, *args: str, last_topic: str = ""
                   ) -> subprocess.Popen:
    """``robocell bus record ARGS``, once its subscriptions have reached the broker (the last
    one, to ``last_topic``; "" when it records everything). A fixed sleep instead is outlasted
    on a loaded machine."""
    watcher = subscription_watcher(endpoints)
    try:
        known = known_subscriptions(watcher)
        recorder = subprocess.Popen(robocell_cmd("bus", "record", *args), env=env,
                                    stderr=subprocess.PIPE, text=True)
        try:
            assert "recording" in recorder.stderr.readline()
            wait_for_new_subscription(
                watcher, known, last_topic.encode() + (TOPIC_END if last_topic else b""), 30)
        except BaseException:
            stop_process(recorder)
            raise
        return recorder
    finally:
        watcher.close()


def test_record_then_play_reproduces_the_same_messages_in_order_with_timing(
        broker_process, cli_env: dict, tmp_path: Path) -> None:
    _, endpoints = broker_process
    recording = tmp_path / "run.mcap"
    recorder = start_recorder(endpoints, cli_env, str(recording), "actuator.progress",
                              "--count", str(N_RECORDED), last_topic="actuator.progress")
    pub = linked(endpoints, "actuator")
    try:
        for step in range(N_RECORDED):
            pub.publish("actuator.progress", {**PROGRESS, "step": step})
            time.sleep(GAP_S[step % len(GAP_S)])
        assert recorder.wait(30) == 0
    finally:
        pub.close()
        stop_process(recorder)

    info = recording_info(recording)
    assert info["complete"] and info["messages"] == N_RECORDED
    assert info["topics"]["actuator.progress"]["encoding"] == "msgpack"
    assert info["topics"]["actuator.progress"]["schema"] == "robocell.ActuatorProgress"
    recorded = list(read_messages(recording))
    assert [decode(m.data).payload["step"] for m in recorded] == list(range(N_RECORDED))

    listener = Subscriber(["actuator.progress"], endpoints)
    player = None
    try:
        wait_subscribed(listener, "actuator.progress")
        player = subprocess.Popen(robocell_cmd("bus", "play", str(recording)), env=cli_env,
                                  stderr=subprocess.PIPE, text=True)
        replayed, arrivals = [], []
        while len(replayed) < N_RECORDED:
            env = recv_topic(listener, "actuator.progress", timeout=10)
            assert env is not None, f"replay stopped after {len(replayed)} messages"
            arrivals.append(time.monotonic())
            replayed.append(env)
        assert player.wait(30) == 0
    finally:
        listener.close()
        if player is not None:
            stop_process(player)
    originals = [decode(m.data) for m in recorded]
    assert [(e.source, e.seq, e.payload) for e in replayed] == \
        [("replay:" + e.source, e.seq, e.payload) for e in originals]  # marked as replayed
    assert [e.wall_time for e in replayed] == [e.wall_time for e in originals]
    recorded_offsets = [(m.log_time_ns - recorded[0].log_time_ns) / 1e9 for m in recorded]
    replay_offsets = [t - arrivals[0] for t in arrivals]
    worst = max(abs(a - b) for a, b in zip(recorded_offsets, replay_offsets, strict=True))
    assert worst < TIMING_TOLERANCE_S, f"replay timing off by {worst:.3f} s"
    # the spacing was real (well over the tolerance), so the check means something
    assert recorded_offsets[-1] > 3 * TIMING_TOLERANCE_S


def test_info_and_export_for_foxglove(broker_process, cli_env: dict, tmp_path: Path) -> None:
    _, endpoints = broker_process
    recording = tmp_path / "scan.mcap"
    recorder = start_recorder(endpoints, cli_env, str(recording), "vision.face", "cell.status",
                              "--count", "3", last_topic="cell.status")
    pub = linked(endpoints, "vision")
    jpeg = b"\xff\xd8\xff\xe0" + bytes(range(256)) + b"\xff\xd9"
    try:
        pub.publish("cell.status", {"cycle_id": "c1", "stage": "scanning"})
        for pose, face in enumerate("UR"):
            pub.publish("vision.face", {
                "scan_id": "s1", "pose": pose, "face": face, "size": 2, "jpeg": jpeg,
                "grid": [[1.0, 2.0]] * 4, "colors": [[255, 0, 0]] * 4,
                "confidence": [0.9] * 4, "ok": True})
        assert recorder.wait(30) == 0
    finally:
        pub.close()
        stop_process(recorder)

    info = run_cli(cli_env, "bus", "info", str(recording))
    assert info.returncode == 0, info.stderr
    assert "vision.face" in info.stdout and "robocell.FaceResult" in info.stdout
    assert "messages:  3" in info.stdout

    exported = tmp_path / "scan.json.mcap"
    done = run_cli(cli_env, "bus", "export", str(recording), "--json")
    assert done.returncode == 0, done.stderr
    from mcap.reader import make_reader

    with open(exported, "rb") as stream:
        messages = [(ch.topic, ch.message_encoding, schema.encoding, json.loads(m.data))
                    for schema, ch, m in make_reader(stream).iter_messages()]
    topics = [m[0] for m in messages]
    assert topics.count("vision.face") == 2 and topics.count("/vision.face/image") == 2
    assert all(enc == "json" and schema == "jsonschema" for _, enc, schema, _ in messages)
    face = next(body for topic, _, _, body in messages if topic == "vision.face")
    assert face["face"] == "U" and face["envelope"]["source"] == "vision"
    import base64

    assert base64.b64decode(face["jpeg"]) == jpeg
    image = next(body for topic, _, _, body in messages if topic == "/vision.face/image")
    assert image["format"] == "jpeg" and base64.b64decode(image["data"]) == jpeg


def test_pub_echo_list_and_hz_from_the_command_line(broker_process, cli_env: dict) -> None:
    done = run_cli(cli_env, "bus", "pub", "cell.status", '{"cycle_id": "c9", "stage": "idle"}')
    assert done.returncode == 0, done.stderr

    echoed = run_cli(cli_env, "bus", "echo", "cell.status", "-n", "1", "--json",
                     "--timeout", "20")
    assert echoed.returncode == 0, echoed.stderr
    message = json.loads(echoed.stdout)
    assert message["payload"] == {"cycle_id": "c9", "stage": "idle"}
    assert message["source"] == "cli"

    pretty = run_cli(cli_env, "bus", "echo", "cell.status", "-n", "1", "--timeout", "20")
    assert "--- cell.status  from cli  seq 0" in pretty.stdout
    assert 'stage: "idle"' in pretty.stdout

    refused = run_cli(cli_env, "bus", "pub", "cell.status", '{"cycle_id": "c9"}')
    assert refused.returncode == 2
    assert "missing required field(s) stage" in refused.stderr

    listed = run_cli(cli_env, "bus", "list")
    assert listed.returncode == 0, listed.stderr
    line = next(row for row in listed.stdout.splitlines() if row.startswith("cell.status"))
    assert "CycleStatus" in line and "latched" in line and "cli" in line
    assert any(row.startswith("broker ") and " yes " in row
               for row in listed.stdout.splitlines())

    hz = run_cli(cli_env, "bus", "hz", "heartbeat", "--duration", "3.2")
    assert hz.returncode == 0, hz.stderr
    rates = [float(row.split()[2]) for row in hz.stdout.splitlines()
             if row.startswith("average rate")]
    assert rates and 0.5 < rates[-1] < 2.0  # the broker beats once a second


def test_broker_refuses_to_listen_beyond_loopback_and_tools_explain_no_broker(
        bus_base: str) -> None:
    from support.bus import robocell_env

    env = robocell_env(bus_base)
    done = run_cli(env, "broker", "--bus", "tcp://0.0.0.0:" + bus_base.rsplit(":", 1)[1])
    assert done.returncode == 2 and "refusing to listen" in done.stderr
    listed = run_cli(env, "bus", "list", "--wait", "0.5")
    assert listed.returncode == 2 and "no broker answers" in listed.stderr
    missing = run_cli(env, "bus", "info", "/nonexistent.mcap")
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_broker_process_stops_cleanly_on_sigterm(broker_process) -> None:
    proc, _ = broker_process
    proc.terminate()
    assert proc.wait(15) == 0


def test_record_from_the_tap_includes_command_traffic(broker_process, cli_env: dict,
                                                      tmp_path: Path) -> None:
    from robocell.common.bus import Node

    _, endpoints = broker_process
    recording = tmp_path / "tap.mcap"
    recorder = start_recorder(endpoints, cli_env, str(recording), "cmd.request", "cmd.reply",
                              "--tap", "--count", "2", last_topic="cmd.reply")
    try:
        with Node("solver", endpoints) as solver, Node("cell", endpoints) as cell:
            solver.serve("solve", lambda args, ctx: PLAN)
            wait_registered(endpoints, "solver", ["solve"])
            assert cell.call("solver", "solve", {"facelets": "UUUU"}, timeout=10) == PLAN
            assert recorder.wait(30) == 0
    finally:
        stop_process(recorder)
    messages = [decode(m.data) for m in read_messages(recording)]
    assert [m.topic for m in messages] == ["cmd.request", "cmd.reply"]
    assert messages[0].payload["command"] == "solve" and messages[0].source == "cell"
    assert messages[1].payload["result"] == PLAN
    assert messages[1].payload["id"] == messages[0].payload["id"]


def test_record_everything_from_the_tap(
        broker_process, cli_env: dict, tmp_path: Path) -> None:
    from robocell.common.bus import Node

    _, endpoints = broker_process
    recording = tmp_path / "all.mcap"
    # (6 s: enough for the traffic below on a loaded machine; the test waits for all of it)
    recorder = start_recorder(endpoints, cli_env, str(recording), "--tap", "--duration", "6")
    try:
        with Node("solver", endpoints) as solver, Node("cell", endpoints) as cell:
            solver.serve("solve", lambda args, ctx: PLAN)
            cell.subscribe("solver.plan", lambda env: None)  # its latched replay is recorded too
            wait_registered(endpoints, "solver", ["solve"])
            cell.publish("cell.status", {"cycle_id": "c9", "stage": "solving"})
            assert cell.call("solver", "solve", {"facelets": "UUUU"}, timeout=10) == PLAN
            assert recorder.wait(30) == 0
        summary = recorder.stderr.read()
    finally:
        stop_process(recorder)
    assert "rejected 0" in summary
    topics = {m.topic for m in read_messages(recording)}
    assert {"cell.status", "cmd.request", "cmd.reply", "bus.stats", "heartbeat"} <= topics
