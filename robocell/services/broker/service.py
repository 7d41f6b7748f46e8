"""The broker: pub/sub proxy in C, last-value cache, taps, statistics, command routing.

Patterns (ZeroMQ guide names), each in a module of its own, composed here: the proxies
(:mod:`.proxy`), the last-value cache (:mod:`.cache`), the check tap (:mod:`.check`), the
statistics (:mod:`.stats`), command routing (:mod:`.routing`) and CURVE/ZAP (:mod:`.zap`).

- **Proxy** (XSUB/XPUB) -- publishers connect to the XSUB side, subscribers to the XPUB side;
  ``zmq.proxy_steerable`` forwards between them in libzmq's own loop on a thread that does
  not hold the GIL. No Python runs per forwarded message: the broker costs about as much as
  the socket work of one more hop. A message is one frame (topic, zero byte, envelope; see
  :mod:`robocell.common.bus.wire`), so the proxy moves one frame per message. The broker does
  not decode or validate what it forwards: every receiver does (see
  :class:`robocell.common.bus.Subscriber`), counts refusals and reports them on
  ``diagnostics``.
- **Internal feed** -- the XPUB also binds an inproc endpoint; the broker's own readers
  subscribe there like any subscriber, so ZeroMQ sends each of them only what it asked for:
- **Last value cache** -- one SUB socket subscribed to the *latched* topics reads, in the
  order the proxy forwarded them, their frames (state: a few a second; a burst is one batch
  frame); the broker keeps per topic the newest message, by (source, seq, wall time), and
  ignores any that is not newer -- its own answers come back through the proxy too, and
  must not replace what is newer. Every subscription passes the broker on its way to the
  publishers (the XPUB is verbose; the broker's own publisher sees it). A Subscriber
  follows each subscription with one on its own answer channel (see
  :data:`robocell.common.bus.ANSWER_MARK`); the broker reads what is queued (so the cache
  holds everything forwarded before the subscription) and answers with the newest message
  of each latched topic it matches, the channel in front, sent back into the proxy: only
  that subscriber receives it. One older than what came directly is dropped there by its
  (source, topic, seq, wall time).
- **Statistics** -- every publisher counts what it sends per topic (messages, bytes, drops at
  its high-water mark) and reports it on ``bus.traffic`` every second while it sends; the
  broker reads those reports (one subscription) and adds them up. Its own totals come from
  the proxy's STATISTICS (counted in C). ``bus.stats`` is published every period.
- **Check tap** -- the proxy copies every message to a capture PUB socket; the broker's
  check reader subscribes to it only while within a CPU budget (CHECK_BUDGET of a core),
  so otherwise libzmq drops each copy at once. On a timer the broker decodes and validates
  what was queued, counts refusals by reason and reports them on ``diagnostics``. A trickle
  is checked in full; of a flood only what the budget allows (``bus.stats`` says how many
  messages went unchecked).
- **Capture tap** -- recorders (``bus record --tap``) connect to the tap endpoint: an XPUB
  fed by a second C proxy from the internal feed and from the command traffic; nothing flows
  there unless a recorder subscribes.
- **Broker-routed request/reply** -- one ROUTER for services and clients (see
  :mod:`robocell.common.bus` for the frames); a second, CURVE-protected ROUTER for remote
  clients whose key allows commands. Several instances of a service may register under one
  name; requests go to the least loaded live one, and the broker never blocks on a peer
  (see :mod:`robocell.services.broker.routing`).

Backpressure: every socket has a deliberate high-water mark. ZeroMQ's XPUB drops for a
subscriber that is too slow instead of blocking the proxy; those drops show up as sequence
gaps at that subscriber (reported in its heartbeat). A publisher whose queue to the broker
is full has its message refused by ZeroMQ and counts it as dropped (per topic in
``bus.stats``). Nothing a subscriber does can block a publisher. A frame larger than the
size limit is refused by the XSUB socket itself (ZMQ_MAXMSGSIZE: the sending connection is
dropped, and reconnects); so is a frame over the limit on the command ROUTERs (the client
says so when its request times out, see robocell.common.bus.LinkWatch) and a message over
SUBSCRIPTION_MAX_BYTES on the XPUB sockets, where only subscriptions flow.

Security: the local endpoints bind to loopback unless told otherwise; a remote endpoint
(``remote``, :mod:`.remote`) is a CURVE server whose ZAP handler admits only allow-listed
client keys: role ``read`` may subscribe, role ``command`` may also send commands, role
``service:NAME`` may also register as an instance of NAME and publish NAME's topics. The
remote XPUB is fed by a third C proxy that subscribes, on the remote clients' behalf, to
what they subscribe; what remote services publish is judged per frame by its key. A key
refused something its role does not allow is named on ``diagnostics``.
"""

from __future__ import annotations

import collections
import itertools
import os
import threading
import time
from typing import Any

import zmq
import zmq.utils.z85

from robocell.common.bus import SUB_HWM, Endpoints, Publisher
from robocell.common.bus.endpoints import ZMQ_NOBLOCK
from robocell.common.bus.liveness import HEARTBEAT_PERIOD_S
from robocell.common.bus.node import DIAGNOSTIC_MIN_INTERVAL_S
from robocell.common.bus.publisher import TRAFFIC_TOPIC
from robocell.common.bus.schema import validate
from robocell.common.bus.topics import LATCHED_TOPICS
from robocell.common.bus.wire import (
    BROKER_SUBSCRIPTION,
    MAX_SOURCE_CHARS,
    MAX_TOPIC_BYTES,
    MessageError,
    decode_frame,
    max_message_bytes,
    message_frame,
    subscription,
    unbatch_frame,
)
from robocell.common.config import host_name
from robocell.services.broker.cache import CACHE_HWM, LastValueCache
from robocell.services.broker.check import CHECK_HWM, CHECK_PERIOD_S, CheckTap
from robocell.services.broker.proxy import Proxy, bind, is_loopback
from robocell.services.broker.remote import RemoteEndpoint
from robocell.services.broker.routing import (
    LOCAL_ID,
    REMOTE_ID,
    SERVE_ID,
    CommandRouter,
    Instance,
)
from robocell.services.broker.stats import TopicStats, TrafficStats
from robocell.services.broker.zap import SERVICE_DOMAINS, Access, RemoteAccess, ZapHandler

BROKER_SOURCE = "broker"
INBOUND_HWM = 100_000
"""Messages queued from all publishers into the broker before ZeroMQ stops reading them
(then the publishers' own queues fill and they count drops)."""
TAP_HWM = 100_000
"""Messages queued for a recorder on the tap endpoint before ZeroMQ drops for it."""
TRAFFIC_HWM = 10_000
COMMAND_HWM = 10_000
BATCH = 500
"""Messages taken from one socket before looking at the others (fairness, bounded latency)."""
STATS_PERIOD_S = 1.0
SUBSCRIBE_MARK = b"\x01"  # first byte of a subscription message (b"\x00": unsubscribe)
CACHE_REFRESH_S = 0.05
"""How often the broker reads the latched messages queued for the cache between
subscriptions (a subscription reads them at once)."""
COMMAND_FRAME_SLACK = 1024
"""Bytes a command frame may carry beyond the message size limit (ZMQ_MAXMSGSIZE counts
each frame; an envelope frame is at most the limit, the routing frames are tiny)."""
SUBSCRIPTION_MAX_BYTES = MAX_TOPIC_BYTES + 64
"""Largest message the broker's XPUB sockets take from a subscriber: all that flows that
way is subscriptions (a mark byte and a topic prefix); a larger one drops the connection
instead of growing the subscription tables of the broker and of every publisher."""

_broker_ids = itertools.count()


class Broker:
    """One broker; ``run()`` loops until ``stop()`` is called (from any thread) or the process
    is interrupted. ``check=False`` leaves the check tap out (receivers still check)."""

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
        self.traffic = TrafficStats()
        self.rejected: collections.Counter[str] = collections.Counter()
        """bad messages by reason, as the check tap saw them."""
        self.commands: collections.Counter[str] = collections.Counter()
        self.unchecked = 0
        """Messages forwarded but not checked (the check tap was over its budget)."""
        self._diag_count: collections.Counter[tuple[str, str | None]] = collections.Counter()
        self._diag_last: dict[tuple[str, str | None], float] = {}
        self._stop = threading.Event()
        self._zap: ZapHandler | None = None
        self._proxies: list[Proxy] = []
        self._cache_read = 0.0
        self.ready = threading.Event()
        self._name = f"robocell-broker-{os.getpid()}-{next(_broker_ids)}"
        self._open_sockets()

    # -- transport setup ---------------------------------------------------------------------

    def _open_sockets(self) -> None:
        """Bind everything now (so that a busy port is an error of the constructor); the
        proxies start in run()."""
        ctx, name = self.ctx, self._name
        inject = f"inproc://{name}-inject"
        feed = f"inproc://{name}-feed"
        xsub = ctx.socket(zmq.XSUB)
        xsub.rcvhwm = INBOUND_HWM
        xsub.maxmsgsize = self.max_bytes
        bind(xsub, self.endpoints.publish)
        xsub.bind(inject)
        xsub.send(SUBSCRIBE_MARK)  # subscribe to everything: what anyone wants passes here
        xsub.send(BROKER_SUBSCRIPTION)  # tells each (re)connecting publisher who we are
        xpub = ctx.socket(zmq.XPUB)
        xpub.sndhwm = self.subscriber_hwm
        xpub.setsockopt(zmq.XPUB_VERBOSE, 1)  # every subscription reaches the cache
        xpub.maxmsgsize = SUBSCRIPTION_MAX_BYTES
        bind(xpub, self.endpoints.subscribe)
        xpub.bind(feed)
        # The check tap reads the proxy's capture copies: a PUB that sends them only while the
        # tap subscribes (within its budget); otherwise libzmq drops each copy at once.
        capture = None
        if self.check:
            capture = ctx.socket(zmq.PUB)
            capture.sndhwm = CHECK_HWM
            capture.bind(f"inproc://{name}-capture")
        self._proxies.append(Proxy(ctx, f"{name}-proxy", xsub, xpub, capture))
        # The broker's own messages and the cached ones go into the proxy like a publisher's;
        # the subscriptions on their way to the publishers pass its socket too.
        self.publisher = Publisher(BROKER_SOURCE, Endpoints(inject, inject, inject),
                                   hwm=INBOUND_HWM, on_subscription=self._on_subscription)
        # The last-value cache reads every latched frame in the order the proxy forwarded
        # it. (Not a ZMQ_CONFLATE socket per topic: the broker's own answers pass the proxy
        # too, and one in flight when a newer message passes would be the last value there.)
        latched = sorted(LATCHED_TOPICS)
        self.cache_reader = ctx.socket(zmq.SUB)
        self.cache_reader.rcvhwm = CACHE_HWM
        for topic in latched:
            self.cache_reader.setsockopt(zmq.SUBSCRIBE, subscription(topic))
        self.cache_reader.connect(feed)
        self.last_values = LastValueCache(self.cache_reader, latched, self.max_bytes)
        self.traffic_reader = ctx.socket(zmq.SUB)
        self.traffic_reader.rcvhwm = TRAFFIC_HWM
        self.traffic_reader.setsockopt(zmq.SUBSCRIBE, subscription(TRAFFIC_TOPIC))
        self.traffic_reader.connect(feed)
        self.check_reader = None
        self.check_tap: CheckTap | None = None
        if self.check:
            self.check_reader = ctx.socket(zmq.SUB)
            self.check_reader.rcvhwm = CHECK_HWM
            self.check_reader.connect(f"inproc://{name}-capture")
            self.check_reader.setsockopt(zmq.SUBSCRIBE, b"")
            self.check_tap = CheckTap(self.check_reader, self.max_bytes, self.rejected,
                                      self._refused)
        self.router = self._router(self.endpoints.command)
        self.command_tap = None
        if self.endpoints.tap:
            command_tap_endpoint = f"inproc://{name}-command-tap"
            self.command_tap = ctx.socket(zmq.PUB)
            self.command_tap.sndhwm = TAP_HWM
            self.command_tap.bind(command_tap_endpoint)
            tap_in = ctx.socket(zmq.XSUB)
            tap_in.rcvhwm = TAP_HWM
            tap_in.connect(feed)
            tap_in.connect(command_tap_endpoint)
            tap_out = ctx.socket(zmq.XPUB)
            tap_out.sndhwm = TAP_HWM
            tap_out.maxmsgsize = SUBSCRIPTION_MAX_BYTES
            bind(tap_out, self.endpoints.tap)
            self._proxies.append(Proxy(ctx, f"{name}-tap", tap_in, tap_out))
        self.remote_router = None
        self.routing = CommandRouter(self.router, None, self.commands,
                                     self._tap_command if self.command_tap is not None
                                     else None, self._bad_command)
        self.remote_side: RemoteEndpoint | None = None
        if self.remote is not None:
            self._zap = ZapHandler(ctx, self.remote, self._stop, self.commands)
            self.remote_side = RemoteEndpoint(
                ctx, self.remote, name, feed, inject, self.subscriber_hwm, INBOUND_HWM,
                self.max_bytes, SUBSCRIPTION_MAX_BYTES, lambda: self._router(None),
                self._refused_publish)
            self._proxies.append(self.remote_side.proxy)
            self.remote_router = self.remote_side.command
            self.routing.remote = self.remote_router
            self.routing.serve = self.remote_side.serve
            self.routing.access_of = self.remote.access_of
            self.routing.refused_key = self._refused_key

    def _router(self, endpoint: str | None) -> zmq.Socket:
        router = self.ctx.socket(zmq.ROUTER)
        router.setsockopt(zmq.ROUTER_MANDATORY, 1)  # unroutable -> error, not silence
        router.setsockopt(zmq.ROUTER_HANDOVER, 1)   # a restarted service takes its name back
        router.sndhwm = router.rcvhwm = COMMAND_HWM
        # A larger frame drops the sender's connection (libzmq refuses it unread); the
        # client sees its link go down and says so (see CommandClient).
        router.maxmsgsize = self.max_bytes + COMMAND_FRAME_SLACK
        if endpoint:
            bind(router, endpoint)
        return router

    # -- the loop ------------------------------------------------------------------------------

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        """Start the proxies, then answer subscriptions from the cache, read traffic reports,
        check within the budget, route commands and report until stop()."""
        for proxy in self._proxies:
            proxy.start()
        poller = zmq.Poller()
        inputs = [self.publisher.socket, self.traffic_reader, self.router]
        remote = self.remote_side
        if remote is not None:
            inputs += [remote.command, remote.serve, remote.publish]
        for sock in inputs:
            poller.register(sock, zmq.POLLIN)
        next_check = 0.0
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
                if now - self._cache_read >= CACHE_REFRESH_S:
                    self._read_cache()
                    self.routing.sweep(now)
                    self._report_refused_keys()
                if self.check_tap is not None and now >= next_check:
                    self.check_tap.read()
                    self.check_tap.subscribe_within_budget()
                    next_check = now + CHECK_PERIOD_S
                next_event = min(next_beat, next_stats, self._cache_read + CACHE_REFRESH_S,
                                 next_check if self.check_tap is not None else next_stats)
                timeout_ms = max(0, int((next_event - now) * 1000)) + 1
                for sock, _ in poller.poll(timeout_ms):
                    if sock is self.publisher.socket:
                        self.publisher.check_link()  # -> _on_subscription for each
                    elif sock is self.traffic_reader:
                        self._read_traffic()
                    elif sock is self.router:
                        self.routing.read(self.router, LOCAL_ID)
                    elif remote is None:
                        continue
                    elif sock is remote.command:
                        self.routing.read(remote.command, REMOTE_ID)
                    elif sock is remote.serve:
                        self.routing.read(remote.serve, SERVE_ID)
                    elif sock is remote.publish:
                        remote.read_published()
        finally:
            self.close()

    def close(self) -> None:
        self._stop.set()
        if self._zap is not None:
            self._zap.thread.join(timeout=2)
        for proxy in self._proxies:
            proxy.stop()
        self._proxies = []
        self.publisher.close()
        remote = self.remote_side.sockets() if self.remote_side is not None else []
        for sock in (self.traffic_reader, self.check_reader, self.router, self.command_tap,
                     self.cache_reader, *remote):
            if sock is not None:
                sock.close(linger=0)

    # -- the last-value cache ------------------------------------------------------------------

    def _read_cache(self) -> None:
        self._cache_read = time.monotonic()
        self.last_values.read()

    def _on_subscription(self, frame: bytes) -> None:
        """A subscription on its way from a subscriber to the publishers: answer a request
        on a subscriber's answer channel with the newest latched messages it matches."""
        for answer in self.last_values.answers(frame):
            self.publisher.send_frame(answer, count=False, latch=False)

    @property
    def cache(self) -> dict[str, bytes]:
        """latched topic -> its newest message (a plain frame)."""
        return self.last_values.frames

    @property
    def topics(self) -> dict[str, TopicStats]:
        """topic -> what the publishers reported, added up."""
        return self.traffic.topics

    @property
    def checked(self) -> int:
        """Frames the check tap decoded and validated."""
        return self.check_tap.checked if self.check_tap is not None else 0

    # -- statistics from the publishers' traffic reports -------------------------------------

    def _read_traffic(self) -> None:
        for _ in range(BATCH):
            try:
                frame = self.traffic_reader.recv(ZMQ_NOBLOCK)
            except zmq.Again:
                return
            try:
                frames = unbatch_frame(frame)
            except MessageError:
                continue  # the check tap counts and reports bad messages
            for one in frames:
                try:
                    env = validate(decode_frame(one, self.max_bytes))
                except MessageError:
                    continue
                if env.topic == TRAFFIC_TOPIC:
                    try:
                        self.traffic.add_report(env)
                    except Exception as exc:  # never let one report stop the broker
                        self._refused("internal", TRAFFIC_TOPIC,
                                      f"adding up a traffic report raised "
                                      f"{type(exc).__name__}: {exc}", env.source)

    def _refused(self, reason: str, topic: str | None, detail: str,
                 source: str | None = None) -> None:
        """Count a bad message the check tap saw and report it on ``diagnostics``, at most
        once a second per (reason, declared topic), with the count so far. (Receivers
        refuse it; this tells the operator where it came from.)"""
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

    # -- the broker's own messages ---------------------------------------------------------------

    def services_alive(self) -> list[str]:
        """Services with at least one live instance on the command channel."""
        return self.routing.services_alive()

    @property
    def instances(self) -> dict[str, dict[bytes, Instance]]:
        """service -> routing id -> its live instance on the command channel."""
        return self.routing.instances

    def stats_instances(self) -> dict[str, list[dict[str, Any]]]:
        """Per service, its live instances as ``bus.stats`` lists them."""
        return self.routing.describe()

    def _bad_command(self, what: str) -> None:
        """Report a malformed message on the command channel on ``diagnostics``, at most
        once a second, with the count so far."""
        key = ("bad_request", "cmd.request")
        self._diag_count[key] += 1
        now = time.monotonic()
        if now - self._diag_last.get(key, -DIAGNOSTIC_MIN_INTERVAL_S) < DIAGNOSTIC_MIN_INTERVAL_S:
            return
        self._diag_last[key] = now
        self._publish_own("diagnostics", {
            "service": BROKER_SOURCE, "level": "warning", "code": "bad_request",
            "message": f"the broker refused {what}; fix the sender",
            "topic": "cmd.request", "count": self._diag_count[key]})

    def _refused_key(self, code: str, message: str, key: str) -> None:
        """Say on ``diagnostics`` that the allowed key ``key`` was refused something, at
        most once a second per (code, key), with the count so far."""
        diag = (code, f"key:{key}")
        self._diag_count[diag] += 1
        now = time.monotonic()
        if now - self._diag_last.get(diag, -DIAGNOSTIC_MIN_INTERVAL_S) < DIAGNOSTIC_MIN_INTERVAL_S:
            return
        self._diag_last[diag] = now
        self._publish_own("diagnostics", {
            "service": BROKER_SOURCE, "level": "warning", "code": code, "message": message,
            "topic": None, "count": self._diag_count[diag], "peer": f"key:{key}"[:64]})

    def _refused_publish(self, access: Access, problem: str) -> None:
        """A remote service's message its key may not publish: dropped, and said."""
        self.commands["remote_refused"] += 1
        self._refused_key("forbidden_publish",
                          f"the broker dropped a message from {access.label()}, which tried "
                          f"{problem}: a remote service publishes its own topics alone; fix "
                          "the sender or its key's role", access.name)

    def _report_refused_keys(self) -> None:
        """Say what the ZAP handler refused allowed keys (their role opens no such port)."""
        refusals = self.remote.refusals if self.remote is not None else ()
        while refusals:
            refusal = refusals.popleft()
            what = SERVICE_DOMAINS.get(refusal.domain, refusal.domain)
            access = refusal.access
            self._refused_key(
                "forbidden_publish" if what == "publish" else "forbidden_instance",
                f"the broker refused {access.label()} a connection to {what} on the remote "
                f"endpoint: only a key with a service role serves there; allow it with "
                f"`robocell broker --allow {access.name}.pub:service:NAME` if it should serve",
                access.name)

    def _tap_command(self, topic: str, data: bytes) -> None:
        """Copy a request or reply to the capture tap (a PUB: never blocks)."""
        assert self.command_tap is not None
        self.command_tap.send(message_frame(topic, data), ZMQ_NOBLOCK)

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
                       "gaps": self.traffic.gaps},
            "period_s": HEARTBEAT_PERIOD_S, "pid": os.getpid(),
            "host": host_name(), "uptime_s": now - self.started, "commands": [],
        })

    def _report(self, now: float) -> None:
        """Publish bus.stats for the window since the last report."""
        forwarded, forwarded_bytes = (self._proxies[0].statistics()[:2] if self._proxies
                                      else (0, 0))
        # Everything forwarded so far is queued for the check tap (or was dropped for it):
        # read what the budget allows, then what was not checked is known.
        if self.check_tap is not None:
            self.check_tap.read()
        self.unchecked = max(0, forwarded - self.checked) if self.check_tap else forwarded
        window = now - self._last_report if self._last_report else 0.0
        self._last_report = now
        self._publish_own("bus.stats", {
            "period_s": window or self.stats_period, "uptime_s": now - self.started,
            **self.traffic.rows(window), "rejected": dict(self.rejected),
            "forwarded": forwarded, "forwarded_bytes": forwarded_bytes,
            "checked": self.checked, "unchecked": self.unchecked,
            "subscriptions": self.last_values.subscriptions, "commands": dict(self.commands),
            "services": self.routing.services_alive(),
            "instances": self.routing.describe(),
        })
