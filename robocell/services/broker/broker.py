"""The broker: pub/sub proxy in C, last-value cache, capture tap, statistics, command routing.

Patterns (ZeroMQ guide names):

- **Proxy** (XSUB/XPUB) -- publishers connect to the XSUB side, subscribers to the XPUB side;
  ``zmq.proxy_steerable`` forwards between them in libzmq's own loop on a thread that does
  not hold the GIL. No Python runs per forwarded message on the forwarding path, so the
  broker costs about as much as the socket work of one more hop. The broker does not decode
  or validate what it forwards: every receiver does (see :class:`robocell.common.bus.
  Subscriber`), counts refusals and reports them on ``diagnostics``.
- **Capture tap** -- the proxy copies every message (and every subscription) to a capture
  socket. The broker's Python loop reads the copies *beside* the forwarding path, never in
  it: it counts messages and bytes per topic, keeps the last-value cache, checks messages
  (decode, validate, per-source sequence gaps) as far as a CPU budget allows, and counts
  refusals. If it falls behind (a flood of tens of thousands of messages per second) it only
  counts and caches; the checks resume when the flood ends, and ``bus.stats`` says how many
  messages went unchecked. Recorders (``bus record --tap``) get the same copies from the
  tap endpoint, through a second C proxy, with the command traffic added.
- **Last value cache** -- the newest message of every *latched* topic is kept; the XPUB is
  verbose, so every subscription reaches the loop, which answers it by sending the cached
  messages whose topic matches the subscribed prefix back into the proxy. XPUB sends to every
  matching subscriber, so existing subscribers see the repeat too; they drop it by its
  (source, topic, seq, wall time).
- **Broker-routed request/reply** -- one ROUTER for services and clients (see
  :mod:`robocell.common.bus` for the frames); a second, CURVE-protected ROUTER for remote
  clients whose key allows commands.

Backpressure: every socket has a deliberate high-water mark. ZeroMQ's PUB/XPUB drop for a
subscriber that is too slow instead of blocking the proxy; those drops show up as sequence
gaps at that subscriber (reported in its heartbeat). Messages lost before the broker show
up as gaps here, per topic, in ``bus.stats``. Nothing a subscriber does can block a
publisher. A frame larger than the size limit is refused by the XSUB socket itself
(ZMQ_MAXMSGSIZE: the sending connection is dropped, and reconnects).

Security: the local endpoints bind to loopback unless told otherwise; a remote endpoint
(``remote``) is a CURVE server whose ZAP handler admits only allow-listed client keys:
role ``read`` may subscribe, role ``command`` may also send commands. The remote XPUB is fed
by a third C proxy that subscribes, on the remote clients' behalf, to what they subscribe.
"""

from __future__ import annotations

import collections
import itertools
import os
import socket as socketlib
import struct
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
    DIAGNOSTIC_MIN_INTERVAL_S,
    HELLO,
    REPLY,
    REQUEST,
    SERVICE_ID_PREFIX,
    SUB_HWM,
    ZMQ_NOBLOCK,
    Endpoints,
    Publisher,
    reply_payload,
)
from robocell.common.curve_keys import CurveKey
from robocell.common.envelope import (
    MAX_SOURCE_CHARS,
    MAX_TOPIC_CHARS,
    Envelope,
    MessageError,
    decode,
    encode,
    max_message_bytes,
)
from robocell.common.messages import LATCHED_TOPICS, TOPIC_SPECS, validate

BROKER_SOURCE = "broker"
INBOUND_HWM = 100_000
"""Messages queued from all publishers into the broker before ZeroMQ drops (seen as gaps)."""
TAP_HWM = 100_000
"""Messages queued for the broker's own tap reader, and for a recorder on the tap endpoint,
before ZeroMQ drops for that reader."""
COMMAND_HWM = 10_000
BATCH = 500
"""Messages taken from one socket before looking at the others (fairness, bounded latency)."""
CHECK_BUDGET = 0.05
"""Share of one core the tap may spend checking messages (decode, validate, sequence);
beyond it messages are only counted and cached until the next budget slice."""
CHECK_SLICE_S = 0.1
STATS_PERIOD_S = 1.0
HEARTBEAT_PERIOD_S = 1.0
ZAP_ENDPOINT = "inproc://zeromq.zap.01"
ZAP_DOMAIN_READ = "robocell-read"
ZAP_DOMAIN_COMMAND = "robocell-command"
LOCAL_ID, REMOTE_ID = b"L", b"R"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
SUBSCRIPTION_MARKS = (b"\x00", b"\x01")  # first byte of an (un)subscription message
ENVELOPE_MARK = b"\x97"  # first byte of an envelope: a msgpack array of 7
ZMQ_RCVMORE = 13  # zmq.h; a plain int, because pyzmq's enum lookup is slow
BIND_RETRY_S = 1.0
N_PROXY_STATISTICS = 8
"""zmq_proxy_steerable's STATISTICS reply: frontend messages/bytes in/out, then backend."""

_broker_ids = itertools.count()


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
    """source -> latest sequence number checked on this topic (gaps are counted from it)."""


@dataclass(slots=True)
class TopicRoute:
    """Everything the tap needs about one topic frame, looked up once per message: its
    name, its statistics, whether its last value is cached, and whether messages went
    unchecked since the last checked one (then the sequence tracking starts afresh)."""

    name: str
    stats: TopicStats
    latched: bool
    skipped: bool = False


def bind(sock: zmq.Socket, endpoint: str) -> None:
    """Bind, waiting up to BIND_RETRY_S while the address is still held: libzmq closes a
    listener asynchronously, so a broker restarted in the same process may find its
    predecessor's ports busy for a few milliseconds."""
    deadline = time.monotonic() + BIND_RETRY_S
    while True:
        try:
            sock.bind(endpoint)
            return
        except zmq.ZMQError as exc:
            if exc.errno != zmq.EADDRINUSE or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def is_loopback(endpoint: str) -> bool:
    parts = urlsplit(endpoint)
    if parts.scheme in ("ipc", "inproc"):
        return True
    return (parts.hostname or "") in LOOPBACK_HOSTS or (parts.hostname or "").startswith("127.")


class _Proxy:
    """One ``zmq.proxy_steerable`` on its own thread, stopped through its control socket."""

    def __init__(self, ctx: zmq.Context, name: str, frontend: zmq.Socket, backend: zmq.Socket,
                 capture: zmq.Socket | None = None) -> None:
        self.name = name
        self.sockets = [sock for sock in (frontend, backend, capture) if sock is not None]
        endpoint = f"inproc://{name}-control"
        self.control = ctx.socket(zmq.PAIR)
        self.control.bind(endpoint)
        self._inner_control = ctx.socket(zmq.PAIR)
        self._inner_control.connect(endpoint)
        self._args = (frontend, backend, capture, self._inner_control)
        self.thread = threading.Thread(target=self._run, daemon=True, name=name)
        self.error: Exception | None = None

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            zmq.proxy_steerable(*self._args)
        except zmq.ZMQError as exc:  # ETERM when the context goes away
            self.error = exc

    def statistics(self) -> tuple[int, ...]:
        """(frontend msgs in, bytes in, msgs out, bytes out, backend ...) since the start."""
        self.control.send(b"STATISTICS")
        frames = self.control.recv_multipart()
        if len(frames) != N_PROXY_STATISTICS:
            return (0,) * N_PROXY_STATISTICS
        return tuple(struct.unpack("=Q", frame)[0] for frame in frames)

    def stop(self) -> None:
        if self.thread.is_alive():
            self.control.send(b"TERMINATE")
            self.thread.join(timeout=5)
        for sock in (*self.sockets, self.control, self._inner_control):
            sock.close(linger=0)


class Broker:
    """One broker; ``run()`` loops until ``stop()`` is called (from any thread) or the process
    is interrupted. ``check=False`` turns the tap's message checks off (it still counts)."""

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
        self.checked = 0
        """Messages the tap decoded and validated (the rest were only counted)."""
        self.unchecked = 0
        self.cache: dict[bytes, list[Any]] = {}  # topic -> frames (bytes or zmq.Frame)
        self.services: dict[str, list[str]] = {}
        self._routes: dict[bytes, TopicRoute] = {}  # topic frame -> route (declared topics)
        self._replays: dict[bytes, int] = {}
        self._diag_count: collections.Counter[tuple[str, str | None]] = collections.Counter()
        self._diag_last: dict[tuple[str, str | None], float] = {}
        """topic -> cached messages sent again and not yet seen back on the tap."""
        self._stop = threading.Event()
        self._zap_thread: threading.Thread | None = None
        self._proxies: list[_Proxy] = []
        self._budget_slice = 0.0
        self._budget_used = 0.0
        self.ready = threading.Event()
        self._name = f"robocell-broker-{os.getpid()}-{next(_broker_ids)}"
        self._open_sockets()

    # -- transport setup ---------------------------------------------------------------------

    def _open_sockets(self) -> None:
        """Bind everything now (so that a busy port is an error of the constructor); the
        proxies start in run()."""
        ctx, name = self.ctx, self._name
        inject = f"inproc://{name}-inject"
        capture_endpoint = f"inproc://{name}-capture"
        xsub = ctx.socket(zmq.XSUB)
        xsub.rcvhwm = INBOUND_HWM
        xsub.maxmsgsize = self.max_bytes
        bind(xsub, self.endpoints.publish)
        xsub.bind(inject)
        xsub.send(b"\x01")  # subscribe to everything: the tap sees all traffic
        xpub = ctx.socket(zmq.XPUB)
        xpub.sndhwm = self.subscriber_hwm
        xpub.setsockopt(zmq.XPUB_VERBOSE, 1)
        bind(xpub, self.endpoints.subscribe)
        capture = ctx.socket(zmq.PUB)
        capture.sndhwm = TAP_HWM
        capture.bind(capture_endpoint)
        # The tap reader: every copy, subscriptions included.
        self.tap_reader = ctx.socket(zmq.SUB)
        self.tap_reader.rcvhwm = TAP_HWM
        self.tap_reader.subscribe(b"")
        self.tap_reader.connect(capture_endpoint)
        # The broker's own messages and the cached ones go into the proxy like a publisher's.
        self.publisher = Publisher(BROKER_SOURCE, Endpoints(inject, inject, inject),
                                   hwm=INBOUND_HWM)
        remote_feed = f"inproc://{name}-remote-feed"
        if self.remote is not None:
            xpub.bind(remote_feed)
        self._proxies.append(_Proxy(ctx, f"{name}-proxy", xsub, xpub, capture))
        self.router = self._router(self.endpoints.command)
        self.command_tap = None
        if self.endpoints.tap:
            command_tap_endpoint = f"inproc://{name}-command-tap"
            self.command_tap = ctx.socket(zmq.PUB)
            self.command_tap.sndhwm = TAP_HWM
            self.command_tap.bind(command_tap_endpoint)
            tap_in = ctx.socket(zmq.XSUB)
            tap_in.rcvhwm = TAP_HWM
            tap_in.connect(capture_endpoint)
            tap_in.connect(command_tap_endpoint)
            tap_out = ctx.socket(zmq.XPUB)
            tap_out.sndhwm = TAP_HWM
            bind(tap_out, self.endpoints.tap)
            self._proxies.append(_Proxy(ctx, f"{name}-tap", tap_in, tap_out))
        self.remote_router = None
        if self.remote is not None:
            self._zap = ctx.socket(zmq.REP)
            self._zap.bind(ZAP_ENDPOINT)
            self._zap_thread = threading.Thread(target=self._zap_loop, daemon=True,
                                                name="broker-zap")
            self._zap_thread.start()
            remote = Endpoints.from_base(self.remote.base, self.remote.server_key)
            remote_in = ctx.socket(zmq.XSUB)
            remote_in.rcvhwm = self.subscriber_hwm
            remote_in.connect(remote_feed)
            remote_xpub = ctx.socket(zmq.XPUB)
            self._curve_server(remote_xpub, ZAP_DOMAIN_READ)
            remote_xpub.sndhwm = self.subscriber_hwm
            remote_xpub.setsockopt(zmq.XPUB_VERBOSE, 1)  # every late joiner reaches the cache
            bind(remote_xpub, remote.subscribe)
            self._proxies.append(_Proxy(ctx, f"{name}-remote", remote_in, remote_xpub))
            self.remote_router = self._router(None)
            self._curve_server(self.remote_router, ZAP_DOMAIN_COMMAND)
            bind(self.remote_router, remote.command)

    def _router(self, endpoint: str | None) -> zmq.Socket:
        router = self.ctx.socket(zmq.ROUTER)
        router.setsockopt(zmq.ROUTER_MANDATORY, 1)  # unroutable -> error, not silence
        router.setsockopt(zmq.ROUTER_HANDOVER, 1)   # a restarted service takes its name back
        router.sndhwm = router.rcvhwm = COMMAND_HWM
        if endpoint:
            bind(router, endpoint)
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
        """Start the proxies, then read the tap, route commands and report until stop()."""
        for proxy in self._proxies:
            proxy.start()
        poller = zmq.Poller()
        inputs = [self.tap_reader, self.router]
        if self.remote_router is not None:
            inputs.append(self.remote_router)
        for sock in inputs:
            poller.register(sock, zmq.POLLIN)
        self.publisher.wait_linked(5)
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
                    if sock is self.tap_reader:
                        self._read_tap()
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
        for proxy in self._proxies:
            proxy.stop()
        self._proxies = []
        self.publisher.close()
        for sock in (self.tap_reader, self.router, self.command_tap, self.remote_router):
            if sock is not None:
                sock.close(linger=0)

    # -- the tap: statistics, last-value cache and checks, beside the forwarding path --------

    def _read_tap(self) -> None:
        """Take up to BATCH copies from the capture socket. Each costs two receives and a
        few additions; decoding and validating happen only within the check budget."""
        reader, recv = self.tap_reader, zmq.backend.Socket.recv  # without pyzmq's wrapper
        check = self.check and self._within_budget()
        started = time.perf_counter() if check else 0.0
        for _ in range(BATCH):
            try:
                topic = recv(reader, ZMQ_NOBLOCK)
            except zmq.Again:
                break
            if topic[:1] in SUBSCRIPTION_MARKS and not self.tap_reader.get(ZMQ_RCVMORE):
                self._on_single_frame(topic)  # a subscription on its way to the publishers
                continue
            try:  # the frames of one message arrive together: never waits for a real one
                data = recv(reader, ZMQ_NOBLOCK, False)
            except zmq.Again:
                self._refused("decode", None, "a lone frame, not [topic, envelope]")
                continue
            while data.more:
                if data.bytes[:1] == ENVELOPE_MARK:  # three or more frames: count, skip
                    while recv(reader, 0, False).more:
                        pass
                    self._refused("decode", self._name_of(topic),
                                  "three or more frames, not [topic, envelope]")
                    break
                # the "topic" was a lone frame: resynchronise
                self._refused("decode", None, "a lone frame, not [topic, envelope]")
                topic = data.bytes
                data = recv(reader, 0, False)
            else:
                self._count(topic, data, check)
        if check:
            self._budget_used += time.perf_counter() - started

    def _count(self, topic: bytes, data: Any, check: bool) -> None:
        """Count one forwarded message, cache it if latched, check it if ``check``."""
        route = self._routes.get(topic)
        if route is None:
            route = self._route(topic, data)
            if route is None:
                return
        size = len(data)
        stats = route.stats
        if route.latched:
            if self._replays.get(topic) and self._is_replay(topic, data):
                return
            self.cache[topic] = [topic, data]
        stats.messages += 1
        stats.bytes += size
        if size > self.max_bytes:
            self._refused("oversize", route.name, f"{size} bytes, over the limit of "
                          f"{self.max_bytes}")
        elif check:
            self._inspect(route, data)
        else:
            route.skipped = True
            self.unchecked += 1

    def _refused(self, reason: str, topic: str | None, detail: str,
                 source: str | None = None) -> None:
        """Count a bad message the tap saw and report it on ``diagnostics``, at most once a
        second per (reason, declared topic), with the count so far. (Receivers refuse it;
        this tells the operator where it came from.)"""
        self.rejected[reason] += 1
        key = (reason, topic)
        self._diag_count[key] += 1
        now = time.monotonic()
        if now - self._diag_last.get(key, -DIAGNOSTIC_MIN_INTERVAL_S) < DIAGNOSTIC_MIN_INTERVAL_S:
            return
        self._diag_last[key] = now
        where = f"on topic {topic!r}" if topic else "on the bus"
        payload: dict[str, Any] = {
            "service": BROKER_SOURCE, "level": "warning", "code": "bad_message",
            "message": f"a publisher sent a bad message {where} ({reason}: {detail}); the "
                       "broker forwarded it and receivers refuse it; fix the sender",
            "topic": topic, "count": self._diag_count[key]}
        if source:
            payload["peer"] = source[:MAX_SOURCE_CHARS]
        self._publish_own("diagnostics", payload)

    @staticmethod
    def _name_of(topic: bytes) -> str | None:
        name = topic.decode("utf-8", "replace")
        return name if name in TOPIC_SPECS else None

    def _within_budget(self) -> bool:
        """True while this slice's checking time is under CHECK_BUDGET of the slice."""
        now = time.perf_counter()
        if now - self._budget_slice >= CHECK_SLICE_S:
            self._budget_slice, self._budget_used = now, 0.0
        return self._budget_used < CHECK_BUDGET * CHECK_SLICE_S

    def _is_replay(self, topic: bytes, data: Any) -> bool:
        """A cached message the broker sent again for a new subscriber (not counted twice)."""
        cached = self.cache.get(topic)
        if cached is not None and cached[1].bytes == data.bytes:
            self._replays[topic] -= 1
            return True
        return False

    def _on_single_frame(self, frame: bytes) -> None:
        """A subscription travelling from the XPUB up to the publishers, copied to the tap:
        answer a subscribe with the cached messages of the topics it matches."""
        if frame[:1] == b"\x01":
            self.subscriptions += 1
            prefix = frame[1:]
            for topic, frames in list(self.cache.items()):
                if topic.startswith(prefix):
                    self._replays[topic] = self._replays.get(topic, 0) + 1
                    self.publisher.send_frames(topic.decode(), frames[1])
        elif frame[:1] != b"\x00":
            self._refused("decode", None, "a lone frame, not [topic, envelope]")

    def _route(self, topic: bytes, data: Any) -> TopicRoute | None:
        """The route of a topic frame seen for the first time: declared topics get one
        (kept); an undeclared topic is counted as a refusal and gets none (a rogue
        publisher must not grow the broker's tables)."""
        name = topic.decode("utf-8", "replace")
        if name not in TOPIC_SPECS:
            self._refused("unknown_topic", None, f"topic {name[:MAX_TOPIC_CHARS]!r} is not "
                          "declared in robocell.common.messages")
            return None
        route = self._routes[topic] = TopicRoute(name, self.topics[name],
                                                 name in LATCHED_TOPICS)
        return route

    def _inspect(self, route: TopicRoute, data: Any) -> None:
        """Decode, validate and sequence-check one message; refusals are counted."""
        self.checked += 1
        try:
            env = decode(data.buffer, self.max_bytes)
            if env.topic != route.name:
                self._refused("decode", route.name, f"the envelope says topic {env.topic!r}",
                              env.source)
                return
            validate(env)
        except MessageError as exc:
            self._refused(exc.reason, route.name, str(exc), exc.source)
            return
        stats = route.stats
        if route.skipped:  # messages went by unchecked: start the gap count afresh
            stats.last_seq.clear()
            route.skipped = False
        source = env.source
        last = stats.last_seq.get(source)
        if last is None:
            stats.publishers.add(source)
        elif env.seq > last + 1:
            stats.gaps += env.seq - last - 1
        stats.last_seq[source] = env.seq

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
        if self.command_tap is not None:
            self.command_tap.send_multipart([b"cmd.request", data])
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
        if self.command_tap is not None:
            self.command_tap.send_multipart([b"cmd.reply", data])
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
        return self.publisher.envelope(topic, payload)

    def _publish_own(self, topic: str, payload: dict[str, Any]) -> None:
        """Publish into the proxy like any publisher (the tap counts and caches it)."""
        try:
            self.publisher.publish(topic, payload)
        except MessageError as exc:  # a bug in the broker's own payloads: say so, go on
            self.rejected[exc.reason] += 1

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
        forwarded = self._proxies[0].statistics()[0] if self._proxies else 0
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
            "forwarded": forwarded, "checked": self.checked, "unchecked": self.unchecked,
            "subscriptions": self.subscriptions, "commands": dict(self.commands),
            "services": sorted(self.services),
        })
