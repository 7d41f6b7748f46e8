"""The broker: pub/sub proxy with a last-value cache, capture tap, statistics and command routing.

Patterns (ZeroMQ guide names):

- **Proxy** (XSUB/XPUB) -- publishers connect to the XSUB side, subscribers to the XPUB side.
  The loop is written out here rather than ``zmq.proxy`` so that each message can be
  checked and counted per topic.
- **Last value cache** -- the newest message of every *latched* topic is kept; XPUB_VERBOSE
  hands every subscription to the broker, which answers it with the cached messages whose
  topic matches the subscribed prefix. XPUB sends to every matching subscriber, so existing
  subscribers see the repeat too; they drop it by its (source, topic, seq).
- **Capture tap** -- every forwarded message, plus command requests and replies, is also
  sent on a PUB socket for recorders (``bus record --tap``).
- **Broker-routed request/reply** -- one ROUTER for services and clients (see
  :mod:`robocell.common.bus` for the frames); a second, CURVE-protected ROUTER for remote
  clients whose key allows commands.

Backpressure: every socket has a deliberate high-water mark. ZeroMQ's PUB/XPUB drop for a
subscriber that is too slow instead of blocking the loop; those drops show up as sequence
gaps at that subscriber (reported in its heartbeat). Messages lost before the broker show
up as gaps here, per topic, in ``bus.stats``. Nothing a subscriber does can block a publisher.

Security: the local endpoints bind to loopback unless told otherwise; a remote endpoint
(``remote``) is a CURVE server whose ZAP handler admits only allow-listed client keys:
role ``read`` may subscribe, role ``command`` may also send commands.
"""

from __future__ import annotations

import collections
import os
import socket as socketlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import msgpack
import zmq
import zmq.utils.z85

from robocell.common.bus import (
    CLIENT_ID_PREFIX,
    HELLO,
    REPLY,
    REQUEST,
    SERVICE_ID_PREFIX,
    SUB_HWM,
    ZMQ_NOBLOCK,
    Endpoints,
    reply_payload,
    send_message,
)
from robocell.common.curve_keys import CurveKey
from robocell.common.envelope import Envelope, MessageError, decode, encode, max_message_bytes
from robocell.common.messages import LATCHED_TOPICS, TOPIC_SPECS, validate

BROKER_SOURCE = "broker"
INBOUND_HWM = 100_000
"""Messages queued from all publishers into the broker before ZeroMQ drops (seen as gaps)."""
TAP_HWM = 100_000
"""Messages queued for a recorder on the tap before it drops for that recorder."""
COMMAND_HWM = 10_000
BATCH = 500
"""Messages taken from one socket before looking at the others (fairness, bounded latency)."""
STATS_PERIOD_S = 1.0
HEARTBEAT_PERIOD_S = 1.0
ZAP_ENDPOINT = "inproc://zeromq.zap.01"
ZAP_DOMAIN_READ = "robocell-read"
ZAP_DOMAIN_COMMAND = "robocell-command"
LOCAL_ID, REMOTE_ID = b"L", b"R"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


@dataclass
class RemoteAccess:
    """The CURVE endpoint for remote monitoring: the broker's key and the allowed clients."""

    base: str
    server_key: CurveKey
    allowed: dict[str, tuple[str, str]] = field(default_factory=dict)
    """client public key (Z85) -> (client name, role)."""


@dataclass(slots=True)
class TopicStats:
    """What the broker counted on one topic. Rates come from the difference of the totals
    between two reports, so the hot path only adds to ``messages`` and ``bytes``."""

    messages: int = 0
    bytes: int = 0
    gaps: int = 0
    publishers: set[str] = field(default_factory=set)
    reported_messages: int = 0
    reported_bytes: int = 0
    last_seq: dict[str, int] = field(default_factory=dict)
    """source -> latest sequence number seen on this topic (gaps are counted from it)."""


@dataclass(slots=True)
class TopicRoute:
    """Everything the forwarding loop needs about one topic frame, looked up once per
    message: its name, its statistics and whether its last value is cached."""

    name: str
    stats: TopicStats
    latched: bool


def is_loopback(endpoint: str) -> bool:
    parts = urlsplit(endpoint)
    if parts.scheme in ("ipc", "inproc"):
        return True
    return (parts.hostname or "") in LOOPBACK_HOSTS or (parts.hostname or "").startswith("127.")


class Broker:
    """One broker; ``run()`` loops until ``stop()`` is called (from any thread) or the process
    is interrupted."""

    def __init__(self, endpoints: Endpoints, *, remote: RemoteAccess | None = None,
                 stats_period: float = STATS_PERIOD_S, check: bool = True,
                 max_bytes: int | None = None, allow_nonlocal: bool = False,
                 subscriber_hwm: int = SUB_HWM, context: zmq.Context | None = None) -> None:
        if not allow_nonlocal:
            for endpoint in (endpoints.subscribe, endpoints.publish, endpoints.command,
                             endpoints.tap):
                if endpoint and not is_loopback(endpoint):
                    raise ValueError(
                        f"refusing to listen on {endpoint} without encryption: local "
                        "endpoints stay on loopback; use --remote with CURVE keys for remote "
                        "monitoring (or --allow-nonlocal on a trusted network)")
        self.endpoints = endpoints
        self.remote = remote
        self.stats_period = stats_period
        self.check = check
        self.subscriber_hwm = subscriber_hwm
        self.max_bytes = max_bytes if max_bytes is not None else max_message_bytes()
        self.ctx = context or zmq.Context.instance()
        self.started = time.monotonic()
        self.topics: dict[str, TopicStats] = collections.defaultdict(TopicStats)
        self.rejected: collections.Counter[str] = collections.Counter()
        self.commands: collections.Counter[str] = collections.Counter()
        self.subscriptions = 0
        self.cache: dict[bytes, list[Any]] = {}  # topic -> frames (bytes or zmq.Frame)
        self.services: dict[str, list[str]] = {}
        self._routes: dict[bytes, TopicRoute] = {}  # topic frame -> route (declared topics)
        self._own_seq: collections.Counter[str] = collections.Counter()
        self._stop = threading.Event()
        self._zap_thread: threading.Thread | None = None
        self.ready = threading.Event()
        self._open_sockets()

    # -- transport setup ---------------------------------------------------------------------

    def _open_sockets(self) -> None:
        ctx = self.ctx
        self.xsub = ctx.socket(zmq.XSUB)
        self.xsub.rcvhwm = INBOUND_HWM
        self.xsub.bind(self.endpoints.publish)
        self.xsub.send(b"\x01")  # subscribe to everything: the broker sees all traffic
        self.xpub = ctx.socket(zmq.XPUB)
        self.xpub.sndhwm = self.subscriber_hwm
        self.xpub.setsockopt(zmq.XPUB_VERBOSE, 1)
        self.xpub.bind(self.endpoints.subscribe)
        self.router = self._router(self.endpoints.command)
        self.tap = None
        if self.endpoints.tap:
            self.tap = ctx.socket(zmq.PUB)
            self.tap.sndhwm = TAP_HWM
            self.tap.bind(self.endpoints.tap)
        self.remote_xpub = self.remote_router = None
        if self.remote is not None:
            self._zap = ctx.socket(zmq.REP)
            self._zap.bind(ZAP_ENDPOINT)
            self._zap_thread = threading.Thread(target=self._zap_loop, daemon=True,
                                                name="broker-zap")
            self._zap_thread.start()
            remote = Endpoints.from_base(self.remote.base, self.remote.server_key)
            self.remote_xpub = ctx.socket(zmq.XPUB)
            self._curve_server(self.remote_xpub, ZAP_DOMAIN_READ)
            self.remote_xpub.sndhwm = self.subscriber_hwm
            self.remote_xpub.setsockopt(zmq.XPUB_VERBOSE, 1)
            self.remote_xpub.bind(remote.subscribe)
            self.remote_router = self._router(None)
            self._curve_server(self.remote_router, ZAP_DOMAIN_COMMAND)
            self.remote_router.bind(remote.command)

    def _router(self, endpoint: str | None) -> zmq.Socket:
        router = self.ctx.socket(zmq.ROUTER)
        router.setsockopt(zmq.ROUTER_MANDATORY, 1)  # unroutable -> error, not silence
        router.setsockopt(zmq.ROUTER_HANDOVER, 1)   # a restarted service takes its name back
        router.sndhwm = router.rcvhwm = COMMAND_HWM
        if endpoint:
            router.bind(endpoint)
        return router

    def _curve_server(self, sock: zmq.Socket, domain: str) -> None:
        assert self.remote is not None
        sock.curve_server = True
        sock.curve_secretkey = self.remote.server_key.secret.encode("ascii")
        sock.curve_publickey = self.remote.server_key.public.encode("ascii")
        sock.zap_domain = domain.encode()

    def _zap_loop(self) -> None:
        """ZAP handler (RFC 27): admit allow-listed CURVE keys; user id = 'role:name'."""
        assert self.remote is not None
        poller = zmq.Poller()
        poller.register(self._zap, zmq.POLLIN)
        while not self._stop.is_set():
            if not poller.poll(100):
                continue
            frames = self._zap.recv_multipart()
            if len(frames) < 6:
                continue  # not a ZAP request: libzmq never sends these
            version, request_id, _domain, _address, _identity, mechanism = frames[:6]
            status, text, user = b"400", b"key not allowed", b""
            if mechanism == b"CURVE" and len(frames) >= 7 and len(frames[6]) == 32:
                client_key = zmq.utils.z85.encode(frames[6]).decode("ascii")
                entry = self.remote.allowed.get(client_key)
                if entry is not None:
                    name, role = entry
                    status, text, user = b"200", b"OK", f"{role}:{name}".encode()
            self.commands["zap_" + ("allowed" if status == b"200" else "denied")] += 1
            self._zap.send_multipart([version, request_id, status, text, user, b""])
        self._zap.close()

    # -- the loop ------------------------------------------------------------------------------

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        """Proxy, cache, route and report until stop()."""
        poller = zmq.Poller()
        inputs = [self.xsub, self.xpub, self.router]
        if self.remote_xpub is not None:
            inputs += [self.remote_xpub, self.remote_router]
        for sock in inputs:
            poller.register(sock, zmq.POLLIN)
        next_beat = next_stats = time.monotonic()
        self.ready.set()
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if now >= next_beat:
                    self._beat(now)
                    next_beat = now + HEARTBEAT_PERIOD_S
                if now >= next_stats:
                    self._report(now)
                    next_stats = now + self.stats_period
                next_event = min(next_beat, next_stats)
                timeout_ms = min(100, max(0, int((next_event - now) * 1000)) + 1)
                for sock, _ in poller.poll(timeout_ms):
                    if sock is self.xsub:
                        self._forward_batch()
                    elif sock is self.xpub or sock is self.remote_xpub:
                        self._on_subscription(sock)
                    elif sock is self.router:
                        self._on_command(self.router, LOCAL_ID)
                    elif sock is self.remote_router:
                        self._on_command(self.remote_router, REMOTE_ID)
        finally:
            self.close()

    def close(self) -> None:
        self._stop.set()
        if self._zap_thread is not None:
            self._zap_thread.join(timeout=2)
        for sock in (self.xsub, self.xpub, self.router, self.tap, self.remote_xpub,
                     self.remote_router):
            if sock is not None:
                sock.close(linger=0)

    def _forward_batch(self) -> None:
        """Forward up to BATCH messages. Frames are received without copying into Python
        (copy=False) and re-sent as the same ZeroMQ messages: a 100 KB image is never copied
        by the broker, and a small message costs no more than with copies."""
        xsub, xpub, tap, remote = self.xsub, self.xpub, self.tap, self.remote_xpub
        recv, max_bytes, check = xsub.recv, self.max_bytes, self.check
        for _ in range(BATCH):
            try:
                topic_frame = recv(ZMQ_NOBLOCK, copy=False)
            except zmq.Again:
                return
            if not topic_frame.more:  # one frame: not [topic, envelope]
                self.rejected["decode"] += 1
                continue
            data_frame = recv(0, copy=False)
            if data_frame.more:  # three or more frames: take the rest and refuse the lot
                while recv(0, copy=False).more:
                    pass
                self.rejected["decode"] += 1
                continue
            topic = topic_frame.bytes
            size = len(data_frame)
            if size > max_bytes:
                self.rejected["oversize"] += 1
                continue
            route = self._routes.get(topic)
            if check:
                if route is None:
                    route = self._route_of_undeclared(topic, data_frame.buffer, size)
                    if route is None:
                        continue
                if not self._accept(route, data_frame.buffer):
                    continue
            elif route is None:  # unchecked: count by the topic frame alone
                route = self._route(topic)
            stats = route.stats
            stats.messages += 1
            stats.bytes += size
            send_message(xpub, topic_frame, data_frame)
            if remote is not None:
                send_message(remote, topic_frame, data_frame)
            if tap is not None:
                send_message(tap, topic_frame, data_frame)
            if route.latched:
                self.cache[topic] = [topic_frame, data_frame]

    def _route(self, topic: bytes) -> TopicRoute:
        """The route of a topic frame, made on first sight and kept."""
        route = self._routes.get(topic)
        if route is None:
            name = topic.decode("utf-8", "replace")
            route = self._routes[topic] = TopicRoute(name, self.topics[name],
                                                     name in LATCHED_TOPICS)
        return route

    def _route_of_undeclared(self, topic: bytes, data: memoryview, size: int
                             ) -> TopicRoute | None:
        """A topic frame never seen before: routed once a message on it is accepted in full
        (the envelope names the same declared topic); otherwise counted and refused."""
        try:
            env = validate(decode(data, self.max_bytes))
            if env.topic.encode() != topic:
                self.rejected["decode"] += 1
                return None
        except MessageError as exc:
            self.rejected[exc.reason] += 1
            return None
        return self._route(topic)

    def _accept(self, route: TopicRoute, data: memoryview) -> bool:
        """Decode, validate and sequence-check one message; False (counted) when refused."""
        try:
            env = decode(data, self.max_bytes)
            if env.topic != route.name:
                self.rejected["decode"] += 1
                return False
            validate(env)
        except MessageError as exc:
            self.rejected[exc.reason] += 1
            return False
        stats = route.stats
        source = env.source
        last = stats.last_seq.get(source)
        if last is None:
            stats.publishers.add(source)
        elif env.seq > last + 1:
            stats.gaps += env.seq - last - 1
        stats.last_seq[source] = env.seq
        return True

    def _on_subscription(self, sock: zmq.Socket) -> None:
        """XPUB_VERBOSE: each subscribe is b'\\x01' + prefix; answer with cached state."""
        for _ in range(BATCH):
            try:
                frame = sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            if frame[:1] != b"\x01":
                continue
            self.subscriptions += 1
            prefix = frame[1:]
            for topic, frames in list(self.cache.items()):
                if topic.startswith(prefix):
                    sock.send_multipart(frames)

    # -- command routing -------------------------------------------------------------------------

    def _on_command(self, router: zmq.Socket, origin: bytes) -> None:
        for _ in range(BATCH):
            try:
                frames = router.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            sender = frames[0].bytes
            kind = frames[1].bytes if len(frames) > 1 else b""
            if kind == REQUEST and len(frames) == 4:
                if origin == REMOTE_ID and not frames[1].get("User-Id").startswith("command:"):
                    self._refuse(router, sender, frames[3].bytes, "forbidden",
                                 "this key may only watch the bus; ask the cell's operator to "
                                 "allow it with role 'command'")
                    continue
                self._route_request(router, origin, sender, frames[2].bytes, frames[3].bytes)
            elif kind == REPLY and len(frames) == 4 and origin == LOCAL_ID:
                self._route_reply(frames[2].bytes, frames[3].bytes)
            elif kind == HELLO and len(frames) == 3 and origin == LOCAL_ID \
                    and sender.startswith(SERVICE_ID_PREFIX):
                try:
                    names = msgpack.unpackb(frames[2].bytes)
                except Exception:
                    names = []
                self.services[sender[len(SERVICE_ID_PREFIX):].decode(errors="replace")] = names
            else:
                self.commands["malformed"] += 1

    def _route_request(self, router: zmq.Socket, origin: bytes, sender: bytes, service: bytes,
                       data: bytes) -> None:
        self.commands["requests"] += 1
        if self.tap is not None:
            self.tap.send_multipart([b"cmd.request", data])
        try:
            self.router.send_multipart([SERVICE_ID_PREFIX + service, REQUEST, origin + sender,
                                        data])
        except zmq.ZMQError as exc:
            if exc.errno != zmq.EHOSTUNREACH:
                raise
            name = service.decode(errors="replace")
            self.services.pop(name, None)  # it has gone, if it was ever here
            known = ", ".join(sorted(self.services)) or "none"
            self._refuse(router, sender, data, "unavailable",
                         f"no service named {name!r} is connected to the broker (services "
                         f"seen: {known}); start it or check its name")

    def _route_reply(self, client: bytes, data: bytes) -> None:
        self.commands["replies"] += 1
        if self.tap is not None:
            self.tap.send_multipart([b"cmd.reply", data])
        router = self.router if client[:1] == LOCAL_ID else self.remote_router
        if router is None:
            self.commands["unroutable_replies"] += 1
            return
        try:
            router.send_multipart([client[1:], REPLY, data])
        except zmq.ZMQError as exc:
            if exc.errno != zmq.EHOSTUNREACH:
                raise
            self.commands["unroutable_replies"] += 1  # the caller left before the answer

    def _refuse(self, router: zmq.Socket, sender: bytes, data: bytes, code: str,
                message: str) -> None:
        """Answer a request on behalf of the broker with an explicit error."""
        self.commands[code] += 1
        try:
            request = validate(decode(data, self.max_bytes))
            request_id = request.payload["id"]
        except MessageError:
            self.commands["malformed"] += 1
            return  # without a request id the caller cannot match a reply
        reply = self._envelope("cmd.reply", reply_payload(request_id, error=code,
                                                          message=message))
        try:
            router.send_multipart([sender, REPLY, encode(reply)])
        except zmq.ZMQError:
            self.commands["unroutable_replies"] += 1
        if not sender.startswith(CLIENT_ID_PREFIX):
            self.commands["odd_client_ids"] += 1

    # -- the broker's own messages ---------------------------------------------------------------

    def _envelope(self, topic: str, payload: dict[str, Any]) -> Envelope:
        seq = self._own_seq[topic]
        self._own_seq[topic] += 1
        return Envelope.now(topic, BROKER_SOURCE, seq, payload)

    def _publish_own(self, topic: str, payload: dict[str, Any]) -> None:
        data = encode(self._envelope(topic, payload), self.max_bytes)
        frames = [topic.encode(), data]
        stats = self.topics[topic]
        stats.messages += 1
        stats.bytes += len(data)
        stats.publishers.add(BROKER_SOURCE)
        self.xpub.send_multipart(frames)
        if self.remote_xpub is not None:
            self.remote_xpub.send_multipart(frames)
        if self.tap is not None:
            self.tap.send_multipart(frames)
        if topic in LATCHED_TOPICS:
            self.cache[frames[0]] = frames

    _last_report = 0.0

    def _beat(self, now: float) -> None:
        self._publish_own("heartbeat", {
            "service": BROKER_SOURCE, "state": "ready",
            "health": {"rejected": dict(self.rejected), "cached_topics": len(self.cache),
                       "gaps": sum(s.gaps for s in self.topics.values())},
            "period_s": HEARTBEAT_PERIOD_S, "pid": os.getpid(),
            "host": socketlib.gethostname(), "uptime_s": now - self.started, "commands": [],
        })

    def _report(self, now: float) -> None:
        """Publish bus.stats for the window since the last report."""
        uptime = now - self.started
        window = now - self._last_report if self._last_report else 0.0
        self._last_report = now
        topics: dict[str, Any] = {}
        for name, s in sorted(self.topics.items()):
            spec = TOPIC_SPECS.get(name)
            topics[name] = {
                "messages": s.messages, "bytes": s.bytes, "gaps": s.gaps,
                "rate_hz": (s.messages - s.reported_messages) / window if window else 0.0,
                "bytes_per_s": (s.bytes - s.reported_bytes) / window if window else 0.0,
                "type": spec.type_name if spec else "?",
                "kind": spec.kind.value if spec else "?",
                "publishers": sorted(s.publishers),
            }
            s.reported_messages, s.reported_bytes = s.messages, s.bytes
        self._publish_own("bus.stats", {
            "period_s": window or self.stats_period, "uptime_s": uptime, "topics": topics,
            "messages": sum(s.messages for s in self.topics.values()),
            "bytes": sum(s.bytes for s in self.topics.values()),
            "rejected": dict(self.rejected),
            "gaps": sum(s.gaps for s in self.topics.values()),
            "subscriptions": self.subscriptions, "commands": dict(self.commands),
            "services": sorted(self.services),
        })
