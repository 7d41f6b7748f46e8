"""The bridge process's parts on a real broker: latched state that was published before the
bridge started reaches a Foxglove client that subscribes late, and --record writes every
channel to an MCAP file with the SDK's writer."""

from __future__ import annotations

import asyncio
import time

import pytest
import websockets
from mcap.reader import make_reader
from support.foxglove import SUBPROTOCOLS, FoxgloveClient
from support.monitor import run_async, start_broker

from robocell.common.bus import Endpoints, Node, Subscriber
from robocell.common.cube import apply_to_facelets, solved
from robocell.common.notation import parse_moves
from robocell.common.operator_control import WRONG_TOKEN_DELAY_S
from robocell.services.foxglove.server import FoxgloveBridge

TOKEN = "foxglove-server-token"
FACELETS = apply_to_facelets(solved(3), parse_moves("R U R' U'"), 3)


@pytest.fixture
def broker(tmp_path):
    proc, bus = start_broker(tmp_path)
    yield bus
    proc.stop()


def foxglove_state(endpoints: Endpoints, timeout: float = 30.0) -> dict:
    """The bridge's own heartbeat."""
    sub = Subscriber(["heartbeat"], endpoints)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            env = sub.recv(timeout=0.5)
            if env is not None and env.payload["service"] == "foxglove":
                return env.payload
    finally:
        sub.close()
    raise AssertionError("the bridge never beat")


async def late_client(url: str) -> tuple[object, object]:
    async with FoxgloveClient.connect(url) as fox:
        await fox.until_advertised(["/cube/scene", "vision.cube_state"], [], timeout=30.0)
        await fox.subscribe(["/cube/scene", "vision.cube_state"])
        state = await fox.receive("vision.cube_state", 30.0)
        scene = await fox.receive("/cube/scene", 30.0)
        return state.decoded, scene.decoded


def test_a_late_client_gets_the_latched_state_and_the_recording_holds_every_channel(
        broker, tmp_path):
    endpoints = Endpoints.from_base(broker)
    with Node("vision", endpoints, track_peers=False) as vision:
        vision.publish("vision.cube_state", {"scan_id": "s1", "puzzle": "3x3x3",
                                             "facelets": FACELETS, "confidence": [1.0] * 54})
        time.sleep(0.3)  # latched by the broker before the bridge exists
        bridge = FoxgloveBridge(endpoints, TOKEN, "127.0.0.1", 0, record=tmp_path / "live.mcap")
        bridge.start()
        try:
            beat = foxglove_state(endpoints)
            assert beat["state"] == "ready" and beat["health"]["port"] == bridge.port
            time.sleep(0.5)  # the client connects well after the state arrived
            state, scene = run_async(late_client(f"ws://127.0.0.1:{bridge.port}"))
        finally:
            bridge.stop()
    assert state["facelets"] == FACELETS
    assert len(scene.entities) == 28
    with open(tmp_path / "live.mcap", "rb") as stream:
        reader = make_reader(stream)
        topics = {channel.topic: schema.name for schema, channel, _ in reader.iter_messages()}
    assert topics["vision.cube_state"] == "robocell.CubeState"
    assert topics["/cube/scene"] == "foxglove.SceneUpdate"
    assert topics["/services"] == "robocell.ServiceStates"


async def guesses(url: str, connections: int, per_connection: int) -> list[str]:
    """Wrong-token calls on many connections at once; the failure message of each."""

    async def one(index: int) -> list[str]:
        async with FoxgloveClient.connect(url) as fox:
            await fox.until_advertised([], ["cell.scramble"], timeout=30.0)
            out = []
            for n in range(per_connection):
                result = await fox.call("cell.scramble", {"token": f"guess-{index}-{n}"}, 60.0)
                assert not result.ok, result
                out.append(result.message)
            return out

    answers = await asyncio.gather(*(one(i) for i in range(connections)))
    return [message for per in answers for message in per]


def test_token_guesses_are_rate_limited_across_connections(broker):
    """However many connections a guesser opens, tokens are tried at most once per
    WRONG_TOKEN_DELAY_S in all; attempts beyond the backlog are refused without a try."""
    endpoints = Endpoints.from_base(broker)
    bridge = FoxgloveBridge(endpoints, TOKEN, "127.0.0.1", 0)
    bridge.start()
    try:
        url = f"ws://127.0.0.1:{bridge.port}"
        started = time.monotonic()
        messages = run_async(guesses(url, connections=10, per_connection=4))
        elapsed = time.monotonic() - started
        tried = sum("needs the monitor's token" in m for m in messages)
        refused = sum("too many token attempts" in m for m in messages)
        assert tried + refused == len(messages) == 40, messages
        assert tried <= 1 + elapsed / WRONG_TOKEN_DELAY_S, (tried, elapsed)
        assert bridge.services is not None and bridge.services.refused == tried + refused
    finally:
        bridge.stop()


async def crowd_then_operator(url: str, crowd: int) -> tuple[int, list[str], list[str]]:
    """``crowd`` connections from 127.0.0.2 held open, then an operator from 127.0.0.1:
    (the crowd's accepted count, the crowd's refusals, the services the operator sees)."""
    held, refusals = [], []
    for _ in range(crowd):
        try:
            ws = await asyncio.wait_for(websockets.connect(
                url, subprotocols=SUBPROTOCOLS, local_addr=("127.0.0.2", 0)), 10.0)
            held.append(ws)
        except websockets.InvalidStatus as exc:
            assert exc.response.status_code == 503
            refusals.append(exc.response.body.decode())
        except TimeoutError:
            refusals.append("no answer")  # silence: what must never happen
    try:
        async with FoxgloveClient.connect(url) as fox:
            await fox.until_advertised([], ["cell.estop"], timeout=10.0)
            services = sorted(fox.services)
    finally:
        for ws in held:
            await ws.close()
    return len(held), refusals, services


def test_a_crowd_of_clients_never_locks_the_operator_out_silently(broker):
    """Issue 49 item 9: one address opening connection after connection is bounded and
    refused in words, and an operator from another address still gets the E-STOP."""
    bridge = FoxgloveBridge(Endpoints.from_base(broker), TOKEN, "127.0.0.1", 0)
    bridge.start()
    try:
        accepted, refusals, services = run_async(crowd_then_operator(
            f"ws://127.0.0.1:{bridge.port}", crowd=110))
    finally:
        bridge.stop()
    assert "cell.estop" in services
    assert "no answer" not in refusals
    assert accepted < 100 and len(refusals) == 110 - accepted
    assert all("Foxglove connections already open from 127.0.0.2" in r for r in refusals)
