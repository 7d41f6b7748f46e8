"""No message on the bus can tell the cell a lie about the twin: a forged `sim.twin_state`
(the firmware simulator's source name and boot id, a sequence number near 2^64, a wall time
in 2096, a firmware line of 10^9) and a replayed one (`replay:firmware-sim`, as `bus play
--onto-live` sends) are published throughout, and the cell still reports only what the twin
it is connected to says; real twin states are never made "old" by them.

Runs the simulated cell of docker-compose.yml as real processes on a real bus.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import zmq
from support.cell import bus_address, running_cell, wait_executing
from support.forge import Forger

from robocell.common.bus import Endpoints, Node, Subscriber
from robocell.common.bus.wire import Envelope, encode_frame, subscription
from robocell.common.cube import solved
from robocell.tools.cycle import CycleFollower

from .test_cell import run_one_cycle

FORGED_SEQ = 2**64 - 10
FORGED_WALL = 4e9
FORGED_LINE = 10**9


def latched_twin(endpoints: Endpoints) -> dict:
    sub = Subscriber(["sim.twin_state"], endpoints)
    try:
        env = sub.recv(timeout=15.0)
        assert env is not None, "no sim.twin_state from the broker's cache"
        return {"source": env.source, **env.payload}
    finally:
        sub.close()


def twin_frames(boot_id: str, replay_seq: int) -> list[bytes]:
    """A forged live twin and a replayed one, both solved, both past any real line."""
    payload = {"puzzle": "2x2x2", "facelets": solved(2), "solved": True,
               "grips": {}, "arm_angles": {}, "boot_id": boot_id, "line": FORGED_LINE}
    forged = Envelope("sim.twin_state", "firmware-sim", FORGED_SEQ, FORGED_WALL,
                      time.monotonic(), payload)
    replayed = Envelope("sim.twin_state", "replay:firmware-sim", replay_seq, time.time(),
                        time.monotonic(), payload)
    return [encode_frame(forged), encode_frame(replayed)]


@contextmanager
def forger(endpoints: Endpoints, boot_id: str) -> Iterator[list[int]]:
    """A local process's socket publishing the two lies every 50 ms until the block ends;
    yields the count of frames sent."""
    sock = zmq.Context.instance().socket(zmq.XPUB)
    sock.linger = 0
    sock.connect(endpoints.publish)
    wanted = b"\x01" + subscription("sim.twin_state")
    deadline = time.monotonic() + 15.0
    while time.monotonic() < deadline:  # until the broker passed the cell's subscription on
        if sock.poll(500) and sock.recv().startswith(wanted):
            break
    sent = [0]
    done = threading.Event()

    def run() -> None:
        seq = 0
        while not done.wait(0.05):
            for frame in twin_frames(boot_id, seq):
                sock.send(frame)
                sent[0] += 1
            seq += 1

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield sent
    finally:
        done.set()
        thread.join()
        sock.close()


def test_forged_and_replayed_solved_twins_never_make_a_cycle_solved():
    # at real speed: the plan's execution (about 1.8 s) outlasts the hand's way to the
    # simulator
    with running_cell("soltvvo-2x2", speed=1.0) as cell:
        endpoints = Endpoints.resolve(bus_address(cell))
        with Node("test-forgery", endpoints, track_peers=False) as node:
            diagnostics: queue.Queue = queue.Queue()
            node.subscribe("diagnostics", diagnostics.put)
            boot_id = latched_twin(endpoints)["boot_id"]
            progress: queue.Queue = queue.Queue()
            node.subscribe("actuator.progress", progress.put)
            follower = CycleFollower(node)
            # the forger in place first: its set-up waits for the broker to pass the cell's
            # subscription on, and the hand must land while the robot still turns
            with forger(endpoints, boot_id) as sent:
                node.call("cell", "scramble", {"seed": 61}, timeout=30.0)
                cycle_id = node.call("cell", "start", {}, timeout=30.0)["cycle_id"]
                wait_executing(node, cycle_id)
                # a hand on the cube: straight to the simulated world, not via the cell
                node.call("firmware-sim", "scramble", {"seed": 62}, timeout=30.0)
                result = follower.follow(cycle_id, 120.0, show=False)
                # the verdict is the real twin's (asked of the simulator itself), never the
                # forger's
                real = node.call("firmware-sim", "twin", {}, timeout=10.0)
                assert result["ok"] == real["solved"], f"a false verdict: {result} {real}"
                if not result["ok"]:
                    assert result["failed_stage"] == "verifying", result
                    assert "not solved" in result["error"], result
                # a late joiner gets the live twin, not the forgery or the replay
                twin = latched_twin(endpoints)
                assert twin["source"] == "firmware-sim" and twin["line"] < FORGED_LINE, twin
                assert twin["solved"] is real["solved"]
                # the lies go on: real cycles still read, solve and verify the real twin
                before = sent[0]
                again = run_one_cycle(node, 63)
                assert again["ok"], again
                assert latched_twin(endpoints)["solved"] is True
                assert sent[0] > before > 0  # forged all along, during the real cycle too
            reported = []
            while not diagnostics.empty():
                reported.append(diagnostics.get().payload)
            assert any("stamp" in d["message"] for d in reported), reported


def latched_status(endpoints: Endpoints) -> tuple[str, dict]:
    """The `cell.status` the broker's cache serves a late joiner: (source, payload)."""
    sub = Subscriber(["cell.status"], endpoints)
    try:
        env = sub.recv(timeout=15.0)
        assert env is not None, "no cell.status from the broker's cache"
        return env.source, env.payload
    finally:
        sub.close()


def test_a_cell_status_stamped_in_the_future_never_becomes_the_latched_one():
    """Issue 49 item 10: `cell.status` forged under the cell's name and another's, stamped
    10^6 s ahead, published throughout real cycles: every receiver and the broker's cache
    refuse it, and the latched status is the cell's own, of its last real cycle."""
    with running_cell("soltvvo-2x2", speed=10.0) as cell:
        endpoints = Endpoints.resolve(bus_address(cell))
        with Node("test-status", endpoints, track_peers=False) as node:
            seen: queue.Queue = queue.Queue()
            node.subscribe("cell.status", seen.put)
            boot_id = node.call("firmware-sim", "twin", {}, timeout=30.0)["boot_id"]
            forger = Forger(endpoints, boot_id)
            try:
                for seed in (71, 72):
                    result = run_one_cycle(node, seed)
                    assert result["ok"], result
                    source, status = latched_status(endpoints)
                    assert source == "cell", (source, status)
                    assert status["cycle_id"] == result["cycle_id"], status
                    assert status["stage"] != "forged" and status.get("detail") != "forged"
                assert forger.sent > 40
            finally:
                forger.close()
            while not seen.empty():
                env = seen.get()
                assert env.payload["cycle_id"] != "forged", env
                assert env.wall_time < time.time() + 5, env
