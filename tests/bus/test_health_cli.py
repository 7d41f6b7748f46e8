"""`robocell health SERVICE`: a service still starting is not healthy, and when its next beat
says why (an actuator that cannot open its serial line), health reports that reason."""

from __future__ import annotations

import subprocess
import time

import pytest
from support.bus import robocell_cmd, robocell_env, stop_process

from robocell.common.bus import Publisher
from robocell.common.bus.wire import Envelope

REASON = "cannot open /dev/ttyUSB9: no such device"


def _beat(pub: Publisher, state: str, **health: object) -> None:
    env = Envelope.now("heartbeat", "gadget", 0, {
        "service": "gadget", "state": state, "health": health, "period_s": 1.0, "pid": 1,
        "host": "h", "uptime_s": 0.0, "commands": []})
    pub.publish("heartbeat", env.payload)


def _health_beside(broker_process, bus_base: str, beats, wait: float = 8
                   ) -> tuple[int, str, float]:
    """Run `health gadget --wait WAIT` while ``beats(pub, done)`` publishes gadget's heartbeats
    until health has ended: (exit code, stderr, seconds it took)."""
    _, endpoints = broker_process
    pub = Publisher("gadget", endpoints)
    assert pub.wait_linked(10)
    started = time.monotonic()
    proc = subprocess.Popen(robocell_cmd("health", "gadget", "--wait", str(wait)),
                            env=robocell_env(bus_base), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        beats(pub, lambda: proc.poll() is not None or time.monotonic() - started > wait + 30)
        _, err = proc.communicate(timeout=30)
        return proc.returncode, err, time.monotonic() - started
    finally:
        pub.close()
        stop_process(proc)


@pytest.mark.slow
def test_health_waits_past_a_starting_beat_for_the_reason_in_the_next(
        broker_process, bus_base: str) -> None:
    """A beat saying "starting", the state change's beat 0.3 s later saying why, and a second
    until the next pair: health most often hears a starting beat first (it used to stop
    there, without the reason) and must wait for the next."""
    def beats(pub: Publisher, done) -> None:
        while not done():
            _beat(pub, "starting")
            time.sleep(0.3)
            _beat(pub, "error", error=REASON, retrying=True)
            time.sleep(1.0)

    code, err, _ = _health_beside(broker_process, bus_base, beats)
    assert code == 1
    assert REASON in err, err


@pytest.mark.slow
def test_health_fails_on_a_service_that_stays_starting_without_waiting_all_of_wait(
        broker_process, bus_base: str) -> None:
    def beats(pub: Publisher, done) -> None:
        while not done():
            _beat(pub, "starting", firmware="not answered yet")
            time.sleep(0.3)

    code, err, took = _health_beside(broker_process, bus_base, beats, wait=40)
    assert code == 1
    assert "gadget: starting" in err and "not answered yet" in err
    assert took < 25  # the grace after its first starting beat, not the whole --wait 40
