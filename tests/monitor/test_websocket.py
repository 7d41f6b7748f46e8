"""The monitor's WebSocket spoken to directly: the server itself refuses control without the
token, whatever the page shows; remote monitoring through the broker's CURVE endpoint."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import aiohttp
import pytest
from support.bus import declared_result
from support.monitor import (
    TOKEN,
    http_get,
    process_env,
    run_async,
    start_broker,
    start_monitor,
    wait_for,
)

from robocell.common.bus import Node

REPLY_TIMEOUT_S = 20.0  # only bounds a hang


async def converse(url: str, messages: list[dict], want: str, count: int = 1,
                   headers: dict | None = None) -> list[dict]:
    """Send ``messages`` after the hello; return the first ``count`` messages of type
    ``want`` the server sends back."""
    got: list[dict] = []
    async with aiohttp.ClientSession() as session, \
            session.ws_connect(url.replace("http", "ws") + "/ws", headers=headers) as ws:
        hello = json.loads((await ws.receive(REPLY_TIMEOUT_S)).data)
        assert hello["type"] == "hello"
        for message in messages:
            await ws.send_str(message if isinstance(message, str) else json.dumps(message))
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while len(got) < count:
            msg = await ws.receive(max(0.1, deadline - time.monotonic()))
            data = json.loads(msg.data)
            if data["type"] == want:
                got.append(data)
    return got


class CallCounter:
    """A scripted 'cell' service that counts the commands it receives."""

    def __init__(self, endpoints, name: str = "cell") -> None:
        self.calls = 0
        self.lock = threading.Lock()
        self.node = Node(name, endpoints, heartbeat_period=0.2, track_peers=False)
        self.node.serve("start", self._start)
        self.node.serve("estop", self._start)

    def _start(self, args, ctx):
        with self.lock:
            self.calls += 1
        return declared_result("cell", "start", cycle_id="c1")

    def __enter__(self) -> CallCounter:
        self.node.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.node.stop()


def test_control_without_token_is_refused_by_the_server_and_never_reaches_the_bus(cell):
    with CallCounter(cell.endpoints) as service:
        replies = run_async(converse(cell.url, [
            {"type": "control", "id": "a", "action": "start", "args": {}},
            {"type": "auth", "token": TOKEN[:-1] + "x"},
            {"type": "control", "id": "b", "action": "estop"},
        ], "control_reply", count=2))
        assert [r["id"] for r in replies] == ["a", "b"]
        for reply in replies:
            assert reply["ok"] is False
            assert reply["replies"][0]["error"] == "forbidden"
            assert "token" in reply["replies"][0]["message"]
        time.sleep(0.3)
        assert service.calls == 0
    health = json.loads(http_get(cell.url + "/healthz"))
    assert health["refused_controls"] >= 2


def test_control_with_the_token_is_sent_and_answered(cell):
    with CallCounter(cell.endpoints) as service:
        replies = run_async(converse(cell.url, [
            {"type": "auth", "token": TOKEN},
            {"type": "control", "id": "go", "action": "start"},
            {"type": "control", "id": "bad", "action": "self-destruct"},
        ], "control_reply", count=2))
        by_id = {r["id"]: r for r in replies}
        assert by_id["go"]["ok"] is True
        assert by_id["go"]["replies"][0]["result"]["cycle_id"] == "c1"
        assert by_id["bad"]["replies"][0]["error"] == "invalid_arguments"
        assert service.calls == 1


def test_bad_messages_get_an_error_and_the_connection_stays_up(cell):
    errors = run_async(converse(cell.url, ["{not json", {"type": "dance"}],
                                  "error", count=2))
    assert "not JSON" in errors[0]["message"]
    assert "unknown message type" in errors[1]["message"]


def test_a_websocket_from_a_foreign_origin_is_refused(cell):
    async def attempt() -> int:
        async with aiohttp.ClientSession() as session:
            try:
                async with session.ws_connect(cell.url.replace("http", "ws") + "/ws",
                                              headers={"Origin": "http://evil.example"}):
                    return 101
            except aiohttp.WSServerHandshakeError as exc:
                return exc.status
    assert run_async(attempt()) == 403


def test_page_headers_forbid_framing_and_foreign_scripts(cell):
    async def headers() -> dict:
        async with aiohttp.ClientSession() as session, session.get(cell.url + "/") as r:
            assert r.status == 200
            return dict(r.headers)
    h = run_async(headers())
    assert h["X-Frame-Options"] == "DENY"
    assert "default-src 'self'" in h["Content-Security-Policy"]


@pytest.mark.slow
def test_remote_monitoring_through_the_curve_endpoint(tmp_path):
    """A monitor on the 'laptop' watches the cell through the broker's CURVE endpoint with a
    read-only key: it sees the cell's heartbeats, and its commands get the broker's explicit
    forbidden reply."""
    keys = tmp_path / "keys"

    def robocell(*args: str) -> None:
        subprocess.run([sys.executable, "-m", "robocell", *args], check=True,
                       env=process_env("tcp://127.0.0.1:1"), capture_output=True)

    robocell("keys", "generate", "broker", "--dir", str(keys))
    robocell("keys", "generate", "laptop", "--dir", str(keys),
             "--broker-pub", str(keys / "broker.pub"))
    from robocell.common.config import free_port_blocks

    local, remote_port = free_port_blocks(4, 4)  # neither block may take the other's ports
    remote = f"tcp://127.0.0.1:{remote_port}"
    broker, bus = start_broker(tmp_path, ["--remote", remote, "--curve-key",
                                          str(keys / "broker.key"), "--allow",
                                          str(keys / "laptop.pub")], name="cell-broker",
                               port=local)
    monitor = None
    try:
        monitor, url = start_monitor(tmp_path, "tcp://127.0.0.1:1", [
            "--broker", remote, "--curve-key", str(keys / "laptop.key"), "--token", TOKEN],
            name="remote-monitor")
        from robocell.common.bus import Endpoints

        with CallCounter(Endpoints.from_base(bus), name="cell") as service:
            def sees_cell() -> bool:
                snapshot = json.loads(http_get(url + "/api/snapshot") or b"{}")
                return any(s["service"] == "cell" and not s["stale"]
                           for s in snapshot.get("services") or [])
            try:
                wait_for(sees_cell, 30.0, "the remote monitor to see the cell's heartbeat",
                         monitor)
            except AssertionError as exc:
                raise AssertionError(f"{exc}\nbroker log:\n{broker.output()}") from None
            hello_and_reply = run_async(converse(url, [
                {"type": "auth", "token": TOKEN},
                {"type": "control", "id": "r", "action": "start"}], "control_reply"))
            reply = hello_and_reply[0]["replies"][0]
            assert reply["ok"] is False and reply["error"] == "forbidden"
            assert service.calls == 0
        snapshot = json.loads(http_get(url + "/api/snapshot"))
        assert all(s["service"] != "monitor" for s in snapshot["services"]), \
            "a remote monitor must not publish on the cell's bus"
    finally:
        if monitor is not None:
            monitor.stop()
        broker.stop()
