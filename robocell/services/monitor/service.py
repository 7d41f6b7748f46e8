"""The monitor's web server: aiohttp serving the dashboard page and a WebSocket fed from the bus.

Shell around the pure core (:mod:`.dashboard`, :mod:`.control`). Threads and tasks:

- the bus :class:`~robocell.common.bus.Node` subscribes to every topic; its I/O thread
  *ingests* each message into the :class:`~.dashboard.Dashboard` (constant work);
- one asyncio task *ticks* every update period, takes the changed views and hands them to
  every connected browser;
- one sender task per browser sends what is pending for it. Pending views are kept per view
  name, so a slow browser gets the newest value of each view, never a growing queue.

WebSocket protocol (JSON text frames)::

    server -> browser  {"type": "hello", "control_available", "authorised", "actions", ...}
                       {"type": "update", "views": {name: value, ...}}
                       {"type": "auth", "authorised": bool, "message"}
                       {"type": "control_reply", "id", "action", "ok", "replies": [...]}
                       {"type": "error", "message"}
    browser -> server  {"type": "auth", "token": "..."}
                       {"type": "control", "id": "...", "action": "start", "args": {}}

A control message from a browser that has not presented the token is answered with a
``forbidden`` control_reply and never reaches the bus.

Hardening: every request must name, in its ``Host`` header, an address the monitor serves
(a DNS-rebinding page on another name is refused even with a matching ``Origin``); wrong
tokens are throttled per client address (a fixed pace shared by all of that address's
sockets); a token that is not valid text counts as wrong.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import secrets
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import WSMsgType, web

from robocell.common.bus import Endpoints, Node
from robocell.common.bus.liveness import ECHO_STALE_S, BrokerPresence
from robocell.common.bus.views import jsonable
from robocell.common.hosts import LOOPBACK_HOSTS, host_name
from robocell.common.operator_control import (
    ACTIONS,
    WRONG_TOKEN_DELAY_S,
    ControlRefusedError,
    check_token,
    plan_control,
)
from robocell.services.monitor.dashboard import UPDATE_PERIOD_S, Dashboard
from robocell.services.monitor.sokoban_graph import SokobanGraphError, SokobanGraphs
from robocell.sokoban.explorer import SCRIPT_FILE, STYLE_FILE, VENDOR_DIR, VENDOR_FILES

STATIC_DIR = Path(__file__).with_name("static")
MAX_BROWSER_MESSAGE_BYTES = 64 * 1024
# Token attempts from one client address are tried at most once per WRONG_TOKEN_DELAY_S,
# however many sockets it opens.
AUTH_BACKLOG_MAX_S = 10.0
"""An address whose queued attempts reach this far ahead is refused without a try."""
MAX_OUTBOX = 64
"""Direct messages (replies) queued for one browser before the oldest are dropped."""
CONTROL_WORKERS = 4
ANY_HOSTS = ("0.0.0.0", "::", "")


def served_hosts(host: str) -> frozenset[str]:
    """The names a browser may use for a monitor listening on ``host`` (``Host`` header
    without the port): that address, loopback names when it listens on loopback, and for
    every interface (0.0.0.0) this machine's name and addresses."""
    names = {host.lower().strip("[]")}
    if host in LOOPBACK_HOSTS or host.startswith("127.") or host in ANY_HOSTS:
        names.update(LOOPBACK_HOSTS)
    if host in ANY_HOSTS:
        hostname = socket.gethostname()
        names.update({hostname.lower(), socket.getfqdn().lower()})
        try:
            names.update(socket.gethostbyname_ex(hostname)[2])
        except OSError:
            pass  # a name that does not resolve adds no address
    return frozenset(names - {""})


SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                               "connect-src 'self' ws: wss:; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class Browser:
    """One connected page: its WebSocket, whether it presented the token, what is pending."""

    def __init__(self, ws: web.WebSocketResponse, peer: str) -> None:
        self.ws = ws
        self.peer = peer
        self.authorised = False
        self.pending: dict[str, Any] = {}
        self.outbox: collections.deque[dict[str, Any]] = collections.deque(maxlen=MAX_OUTBOX)
        self.wake = asyncio.Event()
        self.updates_sent = 0

    def queue_views(self, views: dict[str, Any]) -> None:
        self.pending.update(views)
        self.wake.set()

    def queue_message(self, message: dict[str, Any]) -> None:
        self.outbox.append(message)
        self.wake.set()

    async def run_sender(self) -> None:
        """Send direct messages first, then one update with every pending view; loops
        until the socket closes."""
        while not self.ws.closed:
            await self.wake.wait()
            self.wake.clear()
            while self.outbox:
                await self.ws.send_str(json.dumps(self.outbox.popleft()))
            if self.pending:
                views, self.pending = self.pending, {}
                await self.ws.send_str(json.dumps({"type": "update", "views": views}))
                self.updates_sent += 1


class MonitorServer:
    """The dashboard server: bus node, coalescing ticker, HTTP routes and WebSockets."""

    def __init__(self, endpoints: Endpoints, token: str | None, *, name: str = "monitor",
                 update_period: float = UPDATE_PERIOD_S) -> None:
        self.endpoints = endpoints
        self.token = token
        self.name = name
        self.update_period = update_period
        self.dashboard = Dashboard()
        self.sokoban_graphs = SokobanGraphs()
        self.browsers: set[Browser] = set()
        self.node: Node | None = None
        self.refused_controls = 0
        self.allowed_hosts: frozenset[str] = frozenset(LOOPBACK_HOSTS)
        """Host names the page may be reached by (set by `serve` from the listen address)."""
        self._auth_next: dict[str, float] = {}
        """Per client address: the earliest time its next token attempt is tried."""
        self._pool = ThreadPoolExecutor(CONTROL_WORKERS, thread_name_prefix="monitor-control")
        self._graph_pool = ThreadPoolExecutor(1, thread_name_prefix="monitor-sokoban-graph")
        """Waits on the Sokoban graph builds, apart from the control workers."""
        self._ticker: asyncio.Task[None] | None = None
        self.presence = BrokerPresence()
        """Whether the broker is there: this monitor's own heartbeat coming back through it."""
        self._link_sent: dict[str, Any] | None = None

    # -- application -------------------------------------------------------------------------

    def make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._check_host, _security_headers])
        app.router.add_get("/", self._index)
        app.router.add_get("/ws", self._websocket)
        app.router.add_get("/api/snapshot", self._snapshot)
        app.router.add_get("/healthz", self._health)
        app.router.add_get("/api/sokoban/graph", self._sokoban_graph)
        app.router.add_get("/sokoban/explorer.js", self._explorer_file)
        app.router.add_get("/sokoban/explorer.css", self._explorer_file)
        app.router.add_get("/sokoban/vendor/{name}", self._explorer_library)
        app.router.add_static("/static/", STATIC_DIR, follow_symlinks=False)
        app.on_startup.append(self._on_startup)
        app.on_shutdown.append(self._on_shutdown)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, app: web.Application) -> None:
        loop = asyncio.get_running_loop()
        self.node = await loop.run_in_executor(None, self._start_node)
        self._ticker = asyncio.create_task(self._tick())

    def _start_node(self) -> Node:
        node = Node(self.name, self.endpoints, track_peers=False)
        node.subscribe("", self._ingest, prefix=True)
        self.dashboard.receive_health = node.subscriber.stats.as_health
        node.start()
        node.set_state("ready", browsers=0)
        return node

    def _ingest(self, env: Any) -> None:
        if (env.topic == "heartbeat" and env.source == self.name
                and env.payload.get("pid") == os.getpid()):
            self.presence.on_own_heartbeat()
        self.dashboard.ingest(env)

    def link(self) -> dict[str, Any]:
        """The monitor's link to the broker, as the page's badge and /healthz show it:
        ``present``, ``connecting`` (just started, not heard yet) or ``absent``."""
        up_s = self.presence.broker_up_s()
        if up_s > 0:
            return {"broker": "present", "address": self.endpoints.subscribe, "problem": None}
        if -up_s < ECHO_STALE_S and self.presence.never_heard():
            return {"broker": "connecting", "address": self.endpoints.subscribe,
                    "problem": None}
        return {"broker": "absent", "address": self.endpoints.subscribe,
                "problem": f"no broker answers at {self.endpoints.subscribe}; start one with "
                           "`robocell broker &` or the whole cell with `robocell up --sim`"}

    def snapshot(self) -> dict[str, Any]:
        """Every view as it is now, with the link to the broker."""
        return {**self.dashboard.snapshot(), "link": self.link()}

    async def _on_shutdown(self, app: web.Application) -> None:
        for browser in list(self.browsers):
            await browser.ws.close(code=1001, message=b"monitor shutting down")

    async def _on_cleanup(self, app: web.Application) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        if self.node is not None:
            node, self.node = self.node, None
            await asyncio.get_running_loop().run_in_executor(None, node.stop)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._graph_pool.shutdown(wait=False, cancel_futures=True)

    async def _tick(self) -> None:
        """Every update period: hand the changed views to every browser (ends on cancel)."""
        while True:
            await asyncio.sleep(self.update_period)
            try:
                views = self.dashboard.take_changes()
            except Exception as exc:  # keep ticking: the next period may be fine
                print(f"monitor: cannot build the dashboard's views: {type(exc).__name__}: "
                      f"{exc}", file=sys.stderr, flush=True)
                continue
            link = self.link()
            if link != self._link_sent:
                views["link"] = self._link_sent = link
            if views:
                for browser in self.browsers:
                    browser.queue_views(views)

    # -- HTTP --------------------------------------------------------------------------------

    @web.middleware
    async def _check_host(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Refuse a request whose Host is not an address this monitor serves (a page on
        another name that resolves here: DNS rebinding)."""
        name = host_name(request.host)
        if name not in self.allowed_hosts:
            raise web.HTTPMisdirectedRequest(
                text=f"host {request.host!r} is not served here; open the dashboard by one of "
                     f"{', '.join(sorted(self.allowed_hosts))}", headers=SECURITY_HEADERS)
        return await handler(request)

    async def _index(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC_DIR / "index.html")

    async def _snapshot(self, request: web.Request) -> web.Response:
        return web.json_response(self.snapshot(), dumps=json.dumps)

    async def _explorer_file(self, request: web.Request) -> web.StreamResponse:
        """The explorer's script or style, from the Sokoban package (the same files the
        standalone page inlines)."""
        return web.FileResponse(SCRIPT_FILE if request.path.endswith(".js") else STYLE_FILE)

    async def _explorer_library(self, request: web.Request) -> web.StreamResponse:
        """One of the explorer's graph libraries (bundled in the Sokoban package)."""
        name = request.match_info["name"]
        if name not in VENDOR_FILES:
            raise web.HTTPNotFound(text=f"no library {name!r}: the explorer uses "
                                        f"{', '.join(VENDOR_FILES)}")
        return web.FileResponse(VENDOR_DIR / name)

    async def _sokoban_graph(self, request: web.Request) -> web.Response:
        """The explorer data of the level the solver last solved (built in a child process
        within a time bound, the outcome kept per level: ``sokoban_graph``)."""
        level = self.dashboard.last_sokoban_level()
        try:
            data = await asyncio.get_running_loop().run_in_executor(
                self._graph_pool, self.sokoban_graphs.data_for, level)
        except SokobanGraphError as exc:
            return web.json_response({"error": exc.message}, status=exc.status)
        return web.json_response(data, dumps=json.dumps)

    async def _health(self, request: web.Request) -> web.Response:
        link = self.link()
        linked = self.node is not None and link["broker"] == "present"
        return web.json_response({"ok": linked, "service": self.name, **link,
                                  "ingested": self.dashboard.ingested,
                                  "browsers": len(self.browsers),
                                  "refused_controls": self.refused_controls},
                                 status=200 if linked else 503)

    # -- WebSocket ---------------------------------------------------------------------------

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        if origin and urlsplit(origin).netloc != request.host:
            raise web.HTTPForbidden(text=f"WebSocket from origin {origin!r} refused: the "
                                         f"dashboard only talks to its own page")
        ws = web.WebSocketResponse(heartbeat=10.0, max_msg_size=MAX_BROWSER_MESSAGE_BYTES)
        await ws.prepare(request)
        browser = Browser(ws, request.remote or "?")
        browser.queue_message(self._hello(browser))
        browser.queue_views(self.snapshot())
        self.browsers.add(browser)
        self._announce_browsers()
        sender = asyncio.create_task(browser.run_sender())
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    await self._on_browser_message(browser, msg.data)
                elif msg.type == WSMsgType.BINARY:
                    browser.queue_message({"type": "error",
                                           "message": "binary frames are not understood"})
        finally:
            self.browsers.discard(browser)
            sender.cancel()
            self._announce_browsers()
        return ws

    def _announce_browsers(self) -> None:
        if self.node is not None:
            self.node.set_state("ready", browsers=len(self.browsers))

    def _hello(self, browser: Browser) -> dict[str, Any]:
        return {"type": "hello", "service": self.name, "authorised": browser.authorised,
                "control_available": self.token is not None, "actions": list(ACTIONS),
                "remote": self.endpoints.curve is not None,
                "broker": self.endpoints.subscribe, "update_period_s": self.update_period}

    async def _on_browser_message(self, browser: Browser, text: str) -> None:
        try:
            message = json.loads(text)
        except ValueError:
            browser.queue_message({"type": "error", "message": "message is not JSON"})
            return
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "auth":
            await self._on_auth(browser, message.get("token"))
        elif kind == "control":
            await self._on_control(browser, message)
        else:
            browser.queue_message({"type": "error",
                                   "message": f"unknown message type {kind!r}; "
                                              "expected auth or control"})

    async def _on_auth(self, browser: Browser, token: Any) -> None:
        if self.token is None:
            browser.queue_message({"type": "auth", "authorised": False,
                                   "message": "this monitor was started without a token: "
                                              "control is off (restart it with --token)"})
            return
        if not await self._auth_slot(browser.peer):
            browser.queue_message({"type": "auth", "authorised": False,
                                   "message": "too many token attempts from your address; "
                                              "wait and try again"})
            return
        browser.authorised = check_token(self.token, token)
        browser.queue_message({"type": "auth", "authorised": browser.authorised,
                               "message": "control enabled" if browser.authorised
                               else "wrong token: the dashboard stays read-only"})

    async def _auth_slot(self, peer: str) -> bool:
        """Wait for this address's next token attempt slot (one per WRONG_TOKEN_DELAY_S,
        shared by all its sockets); False if its backlog is already too long."""
        now = asyncio.get_running_loop().time()
        if len(self._auth_next) > 4096:  # forget addresses whose slots have passed
            self._auth_next = {p: t for p, t in self._auth_next.items() if t > now}
        slot = max(now, self._auth_next.get(peer, 0.0))
        if slot - now > AUTH_BACKLOG_MAX_S:
            return False
        self._auth_next[peer] = slot + WRONG_TOKEN_DELAY_S
        await asyncio.sleep(slot - now)
        return True

    async def _on_control(self, browser: Browser, message: dict[str, Any]) -> None:
        request_id = str(message.get("id") or secrets.token_hex(4))[:64]
        try:
            action, args = plan_control(message, browser.authorised)
        except ControlRefusedError as exc:
            if exc.code == "forbidden":
                self.refused_controls += 1
                print(f"monitor: refused control {message.get('action')!r} from "
                      f"{browser.peer}: no token", file=sys.stderr, flush=True)
            browser.queue_message({"type": "control_reply", "id": request_id,
                                   "action": message.get("action"), "ok": False,
                                   "replies": [{"service": "monitor", "command": "control",
                                                "ok": False, "error": exc.code,
                                                "message": exc.message}]})
            return
        node = self.node
        if node is None:
            return
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        replies = await asyncio.gather(*(
            loop.run_in_executor(self._pool, node.request, service, command, args,
                                 action.timeout_s)
            for service, command in action.commands))
        elapsed_ms = (time.monotonic() - started) * 1000.0
        answers = [{"service": r.service, "command": r.command, "ok": r.ok,
                    "error": r.error, "message": r.message, "result": jsonable(r.result)}
                   for r in replies]
        for answer in answers:
            if not answer["ok"]:
                self.dashboard.note_error(
                    "monitor", "control", answer["error"] or "failed",
                    f"{answer['service']}.{answer['command']}: {answer['message']}")
        browser.queue_message({"type": "control_reply", "id": request_id,
                               "action": action.name, "ok": all(a["ok"] for a in answers),
                               "replies": answers, "elapsed_ms": round(elapsed_ms, 1)})


@web.middleware
async def _security_headers(request: web.Request, handler: Any) -> web.StreamResponse:
    response = await handler(request)
    if not response.prepared:
        response.headers.update(SECURITY_HEADERS)
    return response


def serve(server: MonitorServer, host: str, port: int,
          extra_hosts: list[str] | tuple[str, ...] = ()) -> None:
    """Run the server until Ctrl-C or SIGTERM; browsers may name ``host`` (see
    `served_hosts`) or one of ``extra_hosts``."""
    server.allowed_hosts = served_hosts(host) | {name.lower() for name in extra_hosts}
    def announce(text: str) -> None:
        print(f"monitor: dashboard on http://{host}:{port}/  (bus {server.endpoints.subscribe}"
              f"{', remote CURVE' if server.endpoints.curve else ''}; control "
              f"{'needs the token' if server.token else 'off: no token'})",
              file=sys.stderr, flush=True)
        if server.token and host not in LOOPBACK_HOSTS:
            print(f"monitor: warning: listening on {host} over plain HTTP: the token crosses "
                  "the network in clear; keep the dashboard on loopback and reach it through "
                  "an SSH tunnel or a TLS proxy", file=sys.stderr, flush=True)

    web.run_app(server.make_app(), host=host, port=port, print=announce,
                access_log=None, handle_signals=True, shutdown_timeout=2.0)
