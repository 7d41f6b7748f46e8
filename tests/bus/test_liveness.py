"""Heartbeats and liveness: lifecycle states, health, and staleness after missed beats."""

from __future__ import annotations

import subprocess
import sys
import time

from support.bus import SCRIPTED_SERVICE, robocell_env, stop_process

from robocell.common.bus import STALE_AFTER_BEATS, Endpoints, Liveness, Node
from robocell.common.bus.wire import Envelope
from robocell.services.broker.service import Broker

FAST_BEAT_S = 0.1


def wait_until(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def beat(service: str, period: float = 1.0, state: str = "ready") -> Envelope:
    return Envelope.now("heartbeat", service, 0, {
        "service": service, "state": state, "health": {}, "period_s": period, "pid": 1,
        "host": "h", "uptime_s": 0.0, "commands": []})


def test_peer_is_stale_only_after_three_missed_beats() -> None:
    liveness = Liveness()
    liveness.update(beat("vision", period=1.0), now=100.0)
    assert liveness.alive(now=100.0 + STALE_AFTER_BEATS - 0.01) == ["vision"]
    assert liveness.alive(now=100.0 + STALE_AFTER_BEATS + 0.01) == []
    assert liveness.peers(now=104.0)["vision"].stale


def test_lifecycle_state_and_health_reach_peers(endpoints: Endpoints) -> None:
    with Node("monitor", endpoints) as monitor, \
            Node("solver", endpoints, heartbeat_period=FAST_BEAT_S) as solver:
        assert wait_until(lambda: "solver" in monitor.alive())
        assert monitor.peers()["solver"].state == "starting"
        solver.set_state("busy", queue_depth=3)
        assert wait_until(lambda: monitor.peers()["solver"].state == "busy")
        peer = monitor.peers()["solver"]
        assert peer.health["queue_depth"] == 3
        assert "received" in peer.health["bus"]
        assert "ping" in peer.commands
        solver.set_state("ready")
        assert wait_until(lambda: monitor.peers()["solver"].state == "ready")
        assert wait_until(lambda: "broker" in monitor.alive())


def test_stopping_is_announced_and_a_killed_service_goes_stale(broker: Broker,
                                                               bus_base: str) -> None:
    with Node("monitor", broker.endpoints) as monitor:
        graceful = Node("vision", broker.endpoints, heartbeat_period=FAST_BEAT_S).start()
        assert wait_until(lambda: "vision" in monitor.alive())
        graceful.stop()
        assert wait_until(lambda: monitor.peers()["vision"].state == "stopping")

        proc = subprocess.Popen([sys.executable, str(SCRIPTED_SERVICE), "actuator",
                                 str(FAST_BEAT_S)], env=robocell_env(bus_base),
                                stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "ready"
            assert wait_until(lambda: monitor.peers().get("actuator") is not None
                              and monitor.peers()["actuator"].state == "ready")
            proc.kill()
            proc.wait(5)
            killed = time.monotonic()
            assert wait_until(lambda: "actuator" not in monitor.alive())
            gone_after = time.monotonic() - killed
            # stale after 3 missed beats of 0.1 s: not much later (up to 2 s for a loaded
            # machine, still well before 3 beats of the default 1 s period)
            assert gone_after < STALE_AFTER_BEATS * FAST_BEAT_S + 2.0
            assert monitor.peers()["actuator"].stale
        finally:
            stop_process(proc)


def test_a_replayed_heartbeat_says_nothing_about_who_is_alive() -> None:
    liveness = Liveness()
    replayed = beat("cell")
    replayed.source = "replay:cell"
    liveness.update(replayed, now=0.0)
    liveness.update(beat("vision"), now=0.0)
    assert liveness.alive(now=0.5) == ["vision"]
