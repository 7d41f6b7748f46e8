"""`bus play` onto a bus with live services: refused without --onto-live; with it, replayed
messages are marked and fake neither liveness nor the live latched state."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from support.bus import recv_topic, robocell_cmd, robocell_env

from robocell.common.bus import Node, Subscriber
from robocell.common.bus.wire import MAX_FUTURE_S, Envelope, encode
from robocell.tools.recording import Recorder

LIVE_STATUS = {"cycle_id": "live", "stage": "scanning"}
RECORDED_STATUS = {"cycle_id": "recorded", "stage": "done"}


def _recording(path: Path) -> None:
    """A heartbeat of a 'cell' service that is not running now, and a cell.status stamped
    later than anything live (so only its marker keeps it out of the cache; within the
    bound on future stamps, which receivers refuse beyond)."""
    later = time.time() + MAX_FUTURE_S / 2
    beat = Envelope("heartbeat", "cell", 0, later, 1.0, {
        "service": "cell", "state": "ready", "health": {}, "period_s": 1.0, "pid": 1,
        "host": "recorded", "uptime_s": 1.0, "commands": []})
    status = Envelope("cell.status", "cell", 7, later, 1.0, RECORDED_STATUS)
    with Recorder(path) as recorder:
        for i, env in enumerate((beat, status)):
            recorder.write(env.topic, encode(env), (1000 + i) * 10**9,
                           int(env.wall_time * 10**9), env.seq)


def _cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(robocell_cmd(*args), env=env, capture_output=True, text=True,
                          timeout=30)


def test_play_onto_live_services_is_refused_and_with_the_flag_fakes_no_liveness_or_state(
        broker_process, bus_base: str, tmp_path: Path) -> None:
    _, endpoints = broker_process
    env = robocell_env(bus_base)
    recording = tmp_path / "old.mcap"
    _recording(recording)
    with Node("vision", endpoints) as vision:
        vision.set_state("ready")
        vision.publish("cell.status", LIVE_STATUS)
        time.sleep(1.2)  # a beat or two

        refused = _cli(env, "bus", "play", str(recording))
        assert refused.returncode == 2
        assert "vision" in refused.stderr and "--onto-live" in refused.stderr
        assert "broker" not in refused.stderr.split("(")[1].split(")")[0]

        watcher = Subscriber(["cell.status"], endpoints)
        try:
            assert recv_topic(watcher, "cell.status").payload == LIVE_STATUS
            played = _cli(env, "bus", "play", str(recording), "--onto-live")
            assert played.returncode == 0, played.stderr
            replayed = recv_topic(watcher, "cell.status")
            assert replayed.payload == RECORDED_STATUS and replayed.source == "replay:cell"
        finally:
            watcher.close()

        late = Subscriber(["cell.status"], endpoints)  # the cache still holds the live state
        try:
            first = recv_topic(late, "cell.status")
            assert first.payload == LIVE_STATUS and first.source == "vision"
        finally:
            late.close()
        health = _cli(env, "health", "cell", "--wait", "1.5")
        assert health.returncode == 1, health.stdout
        listed = _cli(env, "bus", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert set(json.loads(listed.stdout)["services"]) == {"broker", "vision"}
