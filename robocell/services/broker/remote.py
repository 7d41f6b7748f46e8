"""The broker's remote endpoint: CURVE sockets for peers on other hosts, and the
**filtering proxy** that lets a remote service publish its own topics and nothing else.

Ports from the remote base P (each a CURVE server judged by the ZAP handler, :mod:`.zap`):

- P+0 subscribe (XPUB; every allowed key), fed by a C proxy from the broker's internal feed;
- P+1 publish (XSUB; keys with a service role alone): read here, in the broker's loop, each
  frame judged by its key -- a topic the key's services publish (bus/topics.py names the
  publisher of each), or one every service publishes (heartbeat, diagnostics, errors,
  bus.traffic) with the key's service as source; whatever passes goes into the proxy like a
  local publisher's message, the rest is dropped and the key named on ``diagnostics``;
- P+2 commands (ROUTER; every allowed key, role ``command`` or a service role to send);
- P+3 service instances (ROUTER; keys with a service role alone; see :mod:`.routing`).

Every remote socket sends ZeroMQ heartbeats, so a peer whose link died silently is dropped
within seconds (and its instance with it), not after TCP's hours.
"""

from __future__ import annotations

from collections.abc import Callable

import zmq

from robocell.common.bus import Endpoints
from robocell.common.bus.endpoints import ZMQ_NOBLOCK, watch_link
from robocell.common.bus.topics import ANY_SERVICE, TOPIC_SPECS
from robocell.common.bus.wire import (
    BROKER_SUBSCRIPTION,
    MAX_TOPIC_BYTES,
    SUBSCRIBE_ALL,
    TOPIC_END,
    MessageError,
    decode_frame,
    unbatch_frame,
)
from robocell.services.broker.proxy import Proxy, bind
from robocell.services.broker.zap import (
    ZAP_DOMAIN_COMMAND,
    ZAP_DOMAIN_PUBLISH,
    ZAP_DOMAIN_READ,
    ZAP_DOMAIN_SERVE,
    Access,
    RemoteAccess,
)

BATCH = 500
"""Frames taken from the remote publish port before the broker looks at its other sockets."""
COMMAND_CHANNEL_TOPICS = frozenset({"cmd.request", "cmd.reply"})
"""Declared for every service, but carried by the command channel (and the broker's tap):
never published."""
SERVICE_FIELD_TOPICS = frozenset({"heartbeat", "diagnostics", "errors"})
"""Topics every service publishes whose payload names the service that speaks."""

Refused = Callable[[Access, str], None]
"""(the key's access, what it tried) -> None"""


def publish_problem(frame: bytes, services: frozenset[str], max_bytes: int) -> str | None:
    """Why a remote key allowed to serve as ``services`` may not publish ``frame`` (a
    message or batch frame), or None when it may."""
    end = frame.find(TOPIC_END, 0, MAX_TOPIC_BYTES)
    topic = frame[:end].decode("utf-8", "replace") if end > 0 else ""
    spec = TOPIC_SPECS.get(topic)
    if spec is None:
        return f"to publish on {topic[:40]!r}, which is no declared topic"
    if topic in COMMAND_CHANNEL_TOPICS:
        return f"to publish on {topic!r}, which travels on the command channel alone"
    if spec.publisher != ANY_SERVICE and spec.publisher not in services:
        return f"to publish on {topic!r}, which is service {spec.publisher!r}'s"
    try:
        envelopes = [decode_frame(part, max_bytes) for part in unbatch_frame(frame)]
    except MessageError as exc:
        return f"to publish a malformed message on {topic!r} ({exc.reason}: {exc})"
    for env in envelopes:
        if env.source not in services:
            return f"to publish on {topic!r} as source {env.source[:40]!r}"
        speaker = env.payload.get("service") if isinstance(env.payload, dict) else None
        if topic in SERVICE_FIELD_TOPICS and speaker not in services:
            return f"to publish on {topic!r} for service {str(speaker)[:40]!r}"
    return None


class RemoteEndpoint:
    """The remote endpoint's sockets: the subscribe proxy (``proxy``, started by the
    broker), the publish port read by :meth:`read_published`, and the two ROUTERs
    (``command``, ``serve``) made by ``router`` (the broker's ROUTER settings)."""

    def __init__(self, ctx: zmq.Context, remote: RemoteAccess, name: str, feed: str,
                 inject: str, subscriber_hwm: int, inbound_hwm: int, max_bytes: int,
                 subscription_max_bytes: int, router: Callable[[], zmq.Socket],
                 refused: Refused) -> None:
        self.remote = remote
        self.max_bytes = max_bytes
        self.refused = refused
        self.forwarded = 0
        """Frames from remote services passed into the proxy."""
        ports = Endpoints.from_base(remote.base, remote.server_key, serve=True)
        self.endpoints = ports
        remote_in = ctx.socket(zmq.XSUB)
        remote_in.rcvhwm = subscriber_hwm
        remote_in.connect(feed)
        xpub = ctx.socket(zmq.XPUB)
        self._secure(xpub, ZAP_DOMAIN_READ)
        xpub.sndhwm = subscriber_hwm
        xpub.maxmsgsize = subscription_max_bytes
        xpub.setsockopt(zmq.XPUB_VERBOSE, 1)  # every late joiner reaches the cache
        bind(xpub, ports.subscribe)
        self.proxy = Proxy(ctx, f"{name}-remote", remote_in, xpub)
        # remote services publish here; what passes goes into the proxy as a local message
        self.publish = ctx.socket(zmq.XSUB)
        self._secure(self.publish, ZAP_DOMAIN_PUBLISH)
        self.publish.rcvhwm = inbound_hwm
        self.publish.maxmsgsize = max_bytes
        assert ports.publish is not None and ports.serve is not None
        bind(self.publish, ports.publish)
        self.publish.send(SUBSCRIBE_ALL)
        self.publish.send(BROKER_SUBSCRIPTION)  # each (re)connecting publisher knows us
        self._into_proxy = ctx.socket(zmq.PUB)
        self._into_proxy.sndhwm = inbound_hwm
        self._into_proxy.connect(inject)
        self.command = router()
        self._secure(self.command, ZAP_DOMAIN_COMMAND)
        bind(self.command, ports.command)
        self.serve = router()
        self._secure(self.serve, ZAP_DOMAIN_SERVE)
        bind(self.serve, ports.serve)

    def _secure(self, sock: zmq.Socket, domain: str) -> None:
        self.remote.secure(sock, domain)
        watch_link(sock)

    def read_published(self) -> None:
        """Judge up to BATCH frames from remote publishers; forward those their keys may
        publish, refuse (and say) the rest."""
        for _ in range(BATCH):
            try:
                frame = self.publish.recv(ZMQ_NOBLOCK, copy=False)
            except zmq.Again:
                return
            access = self.remote.access_of(frame.get("User-Id"))
            if frame.more:  # a bus message is one frame
                while self.publish.rcvmore:
                    self.publish.recv()
                problem: str | None = "to publish a message of several frames"
            elif access is None or not access.services:
                problem = "to publish without a service role"
            else:
                problem = publish_problem(frame.bytes, access.services, self.max_bytes)
            if problem is None:
                self._into_proxy.send(frame, ZMQ_NOBLOCK, copy=False)
                self.forwarded += 1
            elif access is not None:
                self.refused(access, problem)

    def sockets(self) -> list[zmq.Socket]:
        """The sockets the broker closes (the proxy closes its own)."""
        return [self.publish, self._into_proxy, self.command, self.serve]
