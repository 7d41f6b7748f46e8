"""The broker: pub/sub proxy in C, last-value cache, taps, statistics, command routing.

Patterns (ZeroMQ guide names):

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
(``remote``) is a CURVE server whose ZAP handler admits only allow-listed client keys:
role ``read`` may subscribe, role ``command`` may also send commands. The remote XPUB is fed
by a third C proxy that subscribes, on the remote clients' behalf, to what they subscribe.
"""

from __future__ import annotations

import collections
import itertools
import os
import socket as socketlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import zmq
import zmq.utils.z85

from robocell.common.bus import SUB_HWM, Endpoints, Publisher, is_replayed
from robocell.common.bus.endpoints import ZMQ_NOBLOCK
from robocell.common.bus.node import DIAGNOSTIC_MIN_INTERVAL_S
from robocell.common.bus.publisher import TRAFFIC_TOPIC
from robocell.common.bus.schema import TOPIC_WIRE_DECODERS, validate
from robocell.common.bus.topics import LATCHED_TOPICS, TOPIC_SPECS
from robocell.common.bus.wire import (
    ANSWER_MARK,
    BATCH_MARK,
    BROKER_SUBSCRIPTION,
    MAX_SOURCE_CHARS,
    MAX_TOPIC_BYTES,
    TOPIC_END,
    Envelope,
    MessageError,
    decode_frame,
    last_of_batch,
    max_message_bytes,
    message_frame,
    subscription,
    unbatch_frame,
)
from robocell.services.broker.proxy import Proxy, bind, is_loopback
from robocell.services.broker.routing import LOCAL_ID, REMOTE_ID, CommandRouter, Instance
from robocell.services.broker.zap import (
    ZAP_DOMAIN_COMMAND,
    ZAP_DOMAIN_READ,
    RemoteAccess,
    ZapHandler,
)

BROKER_SOURCE = "broker"
INBOUND_HWM = 100_000
"""Messages queued from all publishers into the broker before ZeroMQ stops reading them
(then the publishers' own queues fill and they count drops)."""
TAP_HWM = 100_000
"""Messages queued for a recorder on the tap endpoint before ZeroMQ drops for it."""
CHECK_HWM = 1_000
"""Messages queued for the check tap; beyond, libzmq drops for the check tap alone."""
TRAFFIC_HWM = 10_000
COMMAND_HWM = 10_000
BATCH = 500
"""Messages taken from one socket before looking at the others (fairness, bounded latency)."""
CHECK_BUDGET = 0.02
"""Share of one core the check tap may spend decoding and validating; beyond it the tap
stops reading until the next budget slice. A good message costs the tap about 1 us (its
topic's compiled decoder), so it checks everything up to about 20,000 messages a second --
the cell sends hundreds."""
CHECK_SLICE_S = 1.0
"""The budget is counted per slice of this length: a burst of malformed messages (each
explained in Python, tens of microseconds) is checked in full when the second is quiet
otherwise, a flood is still held to CHECK_BUDGET."""
CHECK_PERIOD_S = 0.05
"""The check tap is read on a timer, not when a message arrives: a reader woken for every
message would cost libzmq a signal and the loop a wake-up per message, outside the budget.
Every 50 ms, with the cache refresh: CHECK_HWM frames a period are 20,000 a second, about
what the budget can check; an idle broker wakes 20 times a second (each wake-up costs
about 0.15 ms of CPU on a small virtual machine: at 100 a second, 2% of a core)."""
CACHE_REFRESH_S = 0.05
"""How often the broker reads the latched messages queued for the cache between
subscriptions (a subscription reads them at once)."""
CACHE_HWM = 10_000
"""Latched frames queued for the cache between two reads (state: a few a second)."""
MAX_INSTANCES = 1_000
"""Publisher instances whose traffic reports are kept apart; older ones are folded into
one total (a rogue sender must not grow the broker's tables)."""
STATS_PERIOD_S = 1.0
HEARTBEAT_PERIOD_S = 1.0
SUBSCRIBE_MARK = b"\x01"  # first byte of a subscription message (b"\x00": unsubscribe)
SUBSCRIPTION_MARKS = (b"\x00", SUBSCRIBE_MARK)
"""zmq_proxy_steerable's STATISTICS reply: frontend messages/bytes in/out, then backend."""
COMMAND_FRAME_SLACK = 1024
"""Bytes a command frame may carry beyond the message size limit (ZMQ_MAXMSGSIZE counts
each frame; an envelope frame is at most the limit, the routing frames are tiny)."""
SUBSCRIPTION_MAX_BYTES = MAX_TOPIC_BYTES + 64
"""Largest message the broker's XPUB sockets take from a subscriber: all that flows that
way is subscriptions (a mark byte and a topic prefix); a larger one drops the connection
instead of growing the subscription tables of the broker and of every publisher."""

_broker_ids = itertools.count()


@dataclass(slots=True)
class TopicStats:
    """What the publishers reported on one topic, added up. Rates come from the difference
    of the totals between two reports."""

    messages: int = 0
    bytes: int = 0
    gaps: int = 0
    """messages dropped before the broker (refused at a publisher's high-water mark)."""
    publishers: set[str] = field(default_factory=set)
    reported_messages: int = 0
    reported_bytes: int = 0


@dataclass(slots=True)
class _Instance:
    """The latest traffic report of one publisher instance."""

    source: str
    topics: dict[str, tuple[int, int, int]]  # topic -> (messages, bytes, dropped)


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
        self.topics: dict[str, TopicStats] = {}
        """topic -> what the publishers reported, added up (rebuilt on every report)."""
        self.rejected: collections.Counter[str] = collections.Counter()
        self.commands: collections.Counter[str] = collections.Counter()
        self.subscriptions = 0
        self.checked = 0
        """Messages the check tap decoded and validated."""
        self.unchecked = 0
        """Messages forwarded but not checked (the check tap was over its budget)."""
        self.cache: dict[str, bytes] = {}
        """latched topic -> its newest message (a plain frame), see _read_cache."""
        self._cache_stamps: dict[str, tuple[str, int, float]] = {}
        """latched topic -> (source, seq, wall time) of the message in ``cache``."""
        self._instances: collections.OrderedDict[str, _Instance] = collections.OrderedDict()
        self._retired: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
        """topic -> [messages, bytes, dropped] of instances folded away (MAX_INSTANCES)."""
        self._retired_sources: dict[str, set[str]] = collections.defaultdict(set)
        self._diag_count: collections.Counter[tuple[str, str | None]] = collections.Counter()
        self._diag_last: dict[tuple[str, str | None], float] = {}
        self._stop = threading.Event()
        self._zap: ZapHandler | None = None
        self._proxies: list[Proxy] = []
        self._budget_slice = 0.0
        self._budget_used = 0.0
        self._cache_read = 0.0
        self._wire = {topic.encode(): wire for topic, wire in TOPIC_WIRE_DECODERS.items()}
        """topic bytes -> its compiled decoder (the check tap's fast path)."""
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
        self.latched = sorted(LATCHED_TOPICS)
        self.cache_reader = ctx.socket(zmq.SUB)
        self.cache_reader.rcvhwm = CACHE_HWM
        for topic in self.latched:
            self.cache_reader.setsockopt(zmq.SUBSCRIBE, subscription(topic))
        self.cache_reader.connect(feed)
        self.traffic_reader = ctx.socket(zmq.SUB)
        self.traffic_reader.rcvhwm = TRAFFIC_HWM
        self.traffic_reader.setsockopt(zmq.SUBSCRIBE, subscription(TRAFFIC_TOPIC))
        self.traffic_reader.connect(feed)
        self.check_reader = None
        if self.check:
            self.check_reader = ctx.socket(zmq.SUB)
            self.check_reader.rcvhwm = CHECK_HWM
            self.check_reader.connect(f"inproc://{name}-capture")
            self.check_reader.setsockopt(zmq.SUBSCRIBE, b"")
        self._check_subscribed = True
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
        if self.remote is not None:
            self._zap = ZapHandler(ctx, self.remote, self._stop, self.commands)
            remote = Endpoints.from_base(self.remote.base, self.remote.server_key)
            remote_in = ctx.socket(zmq.XSUB)
            remote_in.rcvhwm = self.subscriber_hwm
            remote_in.connect(feed)
            remote_xpub = ctx.socket(zmq.XPUB)
            self.remote.secure(remote_xpub, ZAP_DOMAIN_READ)
            remote_xpub.sndhwm = self.subscriber_hwm
            remote_xpub.maxmsgsize = SUBSCRIPTION_MAX_BYTES
            remote_xpub.setsockopt(zmq.XPUB_VERBOSE, 1)  # every late joiner reaches the cache
            bind(remote_xpub, remote.subscribe)
            self._proxies.append(Proxy(ctx, f"{name}-remote", remote_in, remote_xpub))
            self.remote_router = self._router(None)
            self.remote.secure(self.remote_router, ZAP_DOMAIN_COMMAND)
            bind(self.remote_router, remote.command)
            self.routing.remote = self.remote_router

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
        if self.remote_router is not None:
            inputs.append(self.remote_router)
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
                if self.check_reader is not None and now >= next_check:
                    self._read_checks()
                    self._subscribe_checks(self._within_budget())
                    next_check = now + CHECK_PERIOD_S
                next_event = min(next_beat, next_stats, self._cache_read + CACHE_REFRESH_S,
                                 next_check if self.check_reader is not None else next_stats)
                timeout_ms = max(0, int((next_event - now) * 1000)) + 1
                for sock, _ in poller.poll(timeout_ms):
                    if sock is self.publisher.socket:
                        self.publisher.check_link()  # -> _on_subscription for each
                    elif sock is self.traffic_reader:
                        self._read_traffic()
                    elif sock is self.router:
                        self.routing.read(self.router, LOCAL_ID)
                    elif sock is self.remote_router:
                        self.routing.read(self.remote_router, REMOTE_ID)
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
        for sock in (self.traffic_reader, self.check_reader, self.router, self.command_tap,
                     self.remote_router, self.cache_reader):
            if sock is not None:
                sock.close(linger=0)

    # -- the last-value cache ------------------------------------------------------------------

    def _read_cache(self) -> None:
        """Read every latched frame queued so far; keep per topic the newest message."""
        self._cache_read = time.monotonic()
        recv, sock = zmq.backend.Socket.recv, self.cache_reader
        while True:
            try:
                frame = recv(sock, ZMQ_NOBLOCK)
            except zmq.Again:
                return
            self._cache_frame(frame)

    def _cache_frame(self, frame: bytes) -> None:
        """Keep the newest message of ``frame`` (of a batch: its last) unless the cache holds
        a newer one of its topic: a repeat (the broker's own answer coming back, a
        publisher's resend) is not newer than what it repeats. Of two sources, the later
        send time wins. A replayed message (``bus play``, source ``replay:...``) never
        replaces a live one; a live one always replaces a replayed one. A frame that cannot
        be decoded is left to the check tap."""
        one = last_of_batch(frame)
        try:
            env = decode_frame(one, self.max_bytes)
        except MessageError:
            return
        held = self._cache_stamps.get(env.topic)
        if held is not None:
            source, seq, wall = held
            replayed = is_replayed(env.source)
            if replayed != is_replayed(source):
                if replayed:
                    return  # the live state stays
            elif env.wall_time <= wall and (env.source != source or env.seq <= seq):
                return  # not newer (a smaller seq sent later is a restarted source)
        self.cache[env.topic] = one
        self._cache_stamps[env.topic] = (env.source, env.seq, env.wall_time)

    def _on_subscription(self, frame: bytes) -> None:
        """A subscription on its way from a subscriber to the publishers: answer a request
        on a subscriber's answer channel (see Subscriber) with the newest message of every
        latched topic it matches, on that channel only."""
        if frame[:1] != SUBSCRIBE_MARK:
            return
        if not frame.startswith(ANSWER_MARK, 1):
            self.subscriptions += 1  # the topic's own subscription: its answer is asked next
            return
        end = frame.find(TOPIC_END, 1 + len(ANSWER_MARK))
        if end < 0:
            return
        channel, prefix = frame[1:end + 1], frame[end + 1:]
        matches = [topic for topic in self.latched if subscription(topic).startswith(prefix)]
        if not matches:
            return
        self._read_cache()  # everything forwarded before the subscription passed the proxy
        for topic in matches:
            cached = self.cache.get(topic)
            if cached is not None:  # the newest message
                self.publisher.send_frame(channel + cached, count=False, latch=False)

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
                        self._add_report(env)
                    except Exception as exc:  # never let one report stop the broker
                        self._refused("internal", TRAFFIC_TOPIC,
                                      f"adding up a traffic report raised "
                                      f"{type(exc).__name__}: {exc}", env.source)

    def _add_report(self, env: Envelope) -> None:
        """Keep the latest cumulative report of a publisher instance; add all up."""
        p = env.payload
        topics = {}
        for topic, counts in p["topics"].items():
            if topic in TOPIC_SPECS:
                topics[topic] = (counts.get("messages", 0), counts.get("bytes", 0),
                                 counts.get("dropped", 0))
        instance = p["instance"]
        self._instances[instance] = _Instance(env.source, topics)
        self._instances.move_to_end(instance)
        while len(self._instances) > MAX_INSTANCES:
            _, old = self._instances.popitem(last=False)
            for topic, counts in old.topics.items():
                retired = self._retired[topic]
                for i, value in enumerate(counts):
                    retired[i] += value
                self._retired_sources[topic].add(old.source)
        self._aggregate()

    def _aggregate(self) -> None:
        topics: dict[str, TopicStats] = {}
        for topic, counts in self._retired.items():
            topics[topic] = TopicStats(counts[0], counts[1], counts[2],
                                       set(self._retired_sources[topic]))
        for instance in self._instances.values():
            for topic, (messages, nbytes, dropped) in instance.topics.items():
                stats = topics.get(topic)
                if stats is None:
                    stats = topics[topic] = TopicStats()
                stats.messages += messages
                stats.bytes += nbytes
                stats.gaps += dropped
                stats.publishers.add(instance.source)
        for topic, stats in topics.items():  # rates continue from the previous totals
            old = self.topics.get(topic)
            if old is not None:
                stats.reported_messages, stats.reported_bytes = (old.reported_messages,
                                                                 old.reported_bytes)
        self.topics = topics

    # -- the check tap: decode and validate what it finds, within the budget -----------------

    def _within_budget(self) -> bool:
        """True while this slice's checking CPU time is under CHECK_BUDGET of the slice."""
        now = time.monotonic()
        if now - self._budget_slice >= CHECK_SLICE_S:
            self._budget_slice, self._budget_used = now, 0.0
        return self._budget_used < CHECK_BUDGET * CHECK_SLICE_S

    def _subscribe_checks(self, on: bool) -> None:
        """Take capture copies only while within the budget: unsubscribed, the check tap
        costs the proxy one dropped copy a message and nothing else."""
        if on != self._check_subscribed:
            self.check_reader.setsockopt(zmq.SUBSCRIBE if on else zmq.UNSUBSCRIBE, b"")
            self._check_subscribed = on

    def _read_checks(self) -> None:
        """Check what the check tap has queued, batch by batch, while within the budget."""
        while self._within_budget():
            started = time.thread_time()
            read = self._check_batch()
            self._budget_used += time.thread_time() - started
            if read < BATCH:
                return

    def _check_batch(self) -> int:
        """Check about BATCH queued messages (a batch frame counts as the messages it
        carries: the budget is looked at in between); how many were read."""
        reader = self.check_reader
        read = 0
        while read < BATCH:
            try:
                frame = reader.recv(ZMQ_NOBLOCK)
            except zmq.Again:
                break
            if frame.startswith(ANSWER_MARK) and not reader.rcvmore:
                end = frame.find(TOPIC_END, len(ANSWER_MARK))  # a cache answer: its message
                frame = frame[end + 1:] if end > 0 else frame
            elif frame[:1] in SUBSCRIPTION_MARKS and not reader.rcvmore:
                read += 1
                continue  # a subscription on its way upstream, copied by the proxy too
            if reader.rcvmore:  # a sender put several frames into one message
                n = 1
                while reader.rcvmore:
                    reader.recv()
                    n += 1
                self.checked += n  # in frames, as the proxy counts what it forwards
                self._refused("decode", self._name_of(frame),
                              f"a message of {n} frames; a bus message is one frame")
                read += 1
                continue
            try:
                read += self._inspect(frame)
            except Exception as exc:  # never let one message stop the broker: count, say
                read += 1
                self._refused("internal", self._name_of(frame),
                              f"checking it raised {type(exc).__name__}: {exc}")
        return read

    def _inspect(self, frame: bytes) -> int:
        """Decode and validate one message (each of a batch frame); refusals are counted
        and reported. A good message takes one call of its topic's compiled decoder (a good
        batch one too); anything else goes through the explaining checks. How many
        messages the frame carried (1 for one that cannot be taken apart)."""
        self.checked += 1  # in frames, as the proxy counts what it forwards
        end = frame.find(TOPIC_END, 0, MAX_TOPIC_BYTES)
        wire = self._wire.get(frame[:end]) if end > 0 else None
        if end > 0 and len(frame) > end + 1 and frame[end + 1] == BATCH_MARK:
            count = wire.accepts_batch(memoryview(frame)[end + 1:]) if wire else 0
            if count:
                return count
            try:
                parts = unbatch_frame(frame)
            except MessageError as exc:
                self._refused(exc.reason, self._name_of(frame), str(exc))
                return 1
            for part in parts:  # something in it is wrong: explain envelope by envelope
                self._explain(part)
            return len(parts)
        if wire is not None and len(frame) - end - 1 <= self.max_bytes \
                and wire.accepts(frame[end + 1:]):
            return 1
        self._explain(frame)
        return 1

    def _explain(self, frame: bytes) -> None:
        """Decode and validate one plain message frame with the explaining checks."""
        try:
            validate(decode_frame(frame, self.max_bytes))
        except MessageError as exc:
            name = self._name_of(frame)
            self._refused(exc.reason, name if name else None, str(exc), exc.source)

    @staticmethod
    def _name_of(frame: bytes) -> str | None:
        """The declared topic a frame starts with, if any."""
        end = frame.find(TOPIC_END, 0, MAX_TOPIC_BYTES)
        name = frame[:end].decode("utf-8", "replace") if end > 0 else ""
        return name if name in TOPIC_SPECS else None

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
                       "gaps": sum(s.gaps for s in self.topics.values())},
            "period_s": HEARTBEAT_PERIOD_S, "pid": os.getpid(),
            "host": socketlib.gethostname(), "uptime_s": now - self.started, "commands": [],
        })

    def _report(self, now: float) -> None:
        """Publish bus.stats for the window since the last report."""
        forwarded, forwarded_bytes = (self._proxies[0].statistics()[:2] if self._proxies
                                      else (0, 0))
        # Everything forwarded so far is queued for the check tap (or was dropped for it):
        # read what the budget allows, then what was not checked is known.
        if self.check_reader is not None:
            self._read_checks()
        self.unchecked = max(0, forwarded - self.checked) if self.check_reader else forwarded
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
            "forwarded": forwarded, "forwarded_bytes": forwarded_bytes,
            "checked": self.checked, "unchecked": self.unchecked,
            "subscriptions": self.subscriptions, "commands": dict(self.commands),
            "services": self.routing.services_alive(),
            "instances": self.routing.describe(),
        })
