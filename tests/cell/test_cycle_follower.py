"""`robocell cycle`'s follower tells a lost broker from a lost cell: real nodes heartbeat
through a real broker on loopback, and one of the two goes away."""

from __future__ import annotations

import threading
import time

import pytest
from support.bus import free_base_port, wait_for_broker

from robocell.common.bus import Endpoints, Node
from robocell.errors import CommandError
from robocell.services.broker.service import Broker
from robocell.tools.cycle import CycleFollower

CYCLE = "c0ffee"


def start_broker(endpoints: Endpoints) -> tuple[Broker, threading.Thread]:
    broker = Broker(endpoints, stats_period=0.2)
    thread = threading.Thread(target=broker.run, daemon=True)
    thread.start()
    assert broker.ready.wait(5)
    return broker, thread


@pytest.mark.parametrize("lost", ["broker", "cell"])
def test_the_follower_names_what_went_away(lost: str) -> None:
    endpoints = Endpoints.from_base(f"tcp://127.0.0.1:{free_base_port()}")
    broker, thread = start_broker(endpoints)
    wait_for_broker(endpoints)
    # the cell beats once a second, another service ten times as often: the last heartbeat
    # heard before the broker dies is nearly always not the cell's
    cell = Node("cell", endpoints, track_peers=False)
    other = Node("vision", endpoints, heartbeat_period=0.1, track_peers=False)
    watcher = Node("cycle-cli", endpoints, track_peers=False)
    try:
        for node in (cell, other, watcher):
            node.start()
        follower = CycleFollower(watcher, endpoints.subscribe)
        raised: list[CommandError] = []

        def follow() -> None:
            try:
                follower.follow(CYCLE, 30.0, show=False)
            except CommandError as exc:
                raised.append(exc)

        following = threading.Thread(target=follow, daemon=True)
        following.start()
        time.sleep(2.5)  # the follower has heard both
        if lost == "broker":
            broker.stop()
            thread.join(5)
        else:
            cell.stop()
        following.join(30)
        assert raised, "the follower did not notice"
        message = str(raised[0])
        if lost == "broker":
            assert "lost the broker" in message and "robocell history" in message, message
            assert "cell service went away" not in message, message
        else:
            assert "the cell service went away" in message, message
    finally:
        for node in (watcher, other, cell):
            node.stop()
        if lost == "cell":
            broker.stop()
            thread.join(5)
