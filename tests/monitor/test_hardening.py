"""The dashboard server against a hostile browser: a DNS-rebinding page (a foreign name in
Host and Origin alike) is refused; wrong tokens are throttled per client address however many
sockets it opens; a token that is not valid text is a wrong token, not a traceback; a short
token is refused at start."""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import pytest
from support.monitor import TOKEN, run_async, start_broker, start_monitor

from robocell.common.hosts import host_name
from robocell.services.monitor.service import served_hosts

SOCKETS = 6
WRONG_TOKEN_DELAY_S = 0.5
REPLY_TIMEOUT_S = 15.0


async def converse(url: str, messages: list, want: str) -> list[dict]:
    """Send ``messages`` after the hello; the first message of type ``want`` sent back."""
    async with aiohttp.ClientSession() as session, \
            session.ws_connect(url.replace("http", "ws") + "/ws") as ws:
        assert json.loads((await ws.receive(REPLY_TIMEOUT_S)).data)["type"] == "hello"
        for message in messages:
            await ws.send_str(message if isinstance(message, str) else json.dumps(message))
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while True:
            data = json.loads((await ws.receive(max(0.1, deadline - time.monotonic()))).data)
            if data["type"] == want:
                return [data]


def port_of(url: str) -> str:
    return url.rsplit(":", 1)[1]


@pytest.mark.parametrize("path", ["/", "/api/snapshot", "/ws"])
def test_a_dns_rebinding_name_is_refused(cell, path):
    host = f"rebind.example:{port_of(cell.url)}"

    async def status() -> int:
        async with aiohttp.ClientSession() as session:
            headers = {"Host": host, "Origin": f"http://{host}"}
            if path == "/ws":
                try:
                    async with session.ws_connect(cell.url.replace("http", "ws") + path,
                                                  headers=headers):
                        return 101
                except aiohttp.WSServerHandshakeError as exc:
                    return exc.status
            async with session.get(cell.url + path, headers=headers) as response:
                return response.status
    assert run_async(status()) == 421


def test_the_served_names_still_work(cell):
    async def status(host: str) -> int:
        async with aiohttp.ClientSession() as session, \
                session.get(cell.url + "/api/snapshot", headers={"Host": host}) as response:
            return response.status
    for name in ("127.0.0.1", "localhost"):
        assert run_async(status(f"{name}:{port_of(cell.url)}")) == 200


def test_served_hosts_follow_the_listen_address():
    assert served_hosts("127.0.0.1") >= {"127.0.0.1", "localhost", "::1"}
    assert served_hosts("192.0.2.7") == {"192.0.2.7"}
    assert "localhost" in served_hosts("0.0.0.0")
    assert host_name("[::1]:8765") == "::1" and host_name("Example.COM:80") == "example.com"


def test_wrong_tokens_are_throttled_per_address_not_per_socket(cell):
    async def guess() -> float:
        replies = await converse(cell.url, [{"type": "auth", "token": "x" * 20}], "auth")
        assert replies[0]["authorised"] is False
        return time.monotonic()

    async def many() -> float:
        started = time.monotonic()
        ends = await asyncio.gather(*(guess() for _ in range(SOCKETS)))
        return max(ends) - started
    elapsed = run_async(many())
    rate = SOCKETS / elapsed
    print(f"\n{SOCKETS} sockets from one address: {rate:.1f} wrong guesses a second")
    # one try per 0.5 s for the address: the last of 6 waits at least 2.5 s (was ~0.5 s)
    assert elapsed >= (SOCKETS - 1) * WRONG_TOKEN_DELAY_S * 0.9


def test_a_lone_surrogate_token_is_a_wrong_token_not_a_traceback(cell):
    raw = '{"type": "auth", "token": "\\ud800' + "a" * 20 + '"}'
    replies = run_async(converse(cell.url, [raw, {"type": "dance"}], "auth"))
    assert replies[0]["authorised"] is False
    errors = run_async(converse(cell.url, [{"type": "dance"}], "error"))
    assert "unknown message type" in errors[0]["message"]
    log = cell.monitor.output()
    assert "UnicodeEncodeError" not in log and "Traceback" not in log


def test_a_right_token_still_authorises(cell):
    replies = run_async(converse(cell.url, [{"type": "auth", "token": TOKEN}], "auth"))
    assert replies[0]["authorised"] is True
    assert json.dumps(replies[0])


def test_an_allowed_extra_name_is_served(tmp_path):
    broker, bus = start_broker(tmp_path)
    try:
        monitor, url = start_monitor(tmp_path, bus, ["--allow-host", "Cell.Example"])
        try:
            async def status(host: str) -> int:
                async with aiohttp.ClientSession() as session, \
                        session.get(url + "/healthz", headers={"Host": host}) as response:
                    return response.status
            assert run_async(status(f"cell.example:{port_of(url)}")) == 200
            assert run_async(status(f"other.example:{port_of(url)}")) == 421
        finally:
            monitor.stop()
    finally:
        broker.stop()
