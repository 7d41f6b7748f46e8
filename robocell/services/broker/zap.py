"""Pattern **ZAP** (ZeroMQ RFC 27): the broker's CURVE endpoints admit only allow-listed keys.

A remote endpoint is a CURVE server; its ZAP handler, on a thread of its own, admits a client
key on the allow-list (user id: the key's public key, which the broker looks up for what the
key may do, :class:`Access`). Role ``read`` may subscribe, role ``command`` may also send
commands, role ``service:NAME[,NAME...]`` may also join as an instance of each service NAME:
only such a key is admitted to the publish and instance ports. A key on the list refused
there is queued in ``refusals`` (the broker reports it on ``diagnostics``, naming the key);
an unknown key is refused everywhere (status 400) and counted.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field

import zmq
import zmq.utils.z85

from robocell.common.bus.keys import SERVICE_ROLE, CurveKey, service_names

ZAP_ENDPOINT = "inproc://zeromq.zap.01"
ZAP_DOMAIN_READ = "robocell-read"
ZAP_DOMAIN_COMMAND = "robocell-command"
ZAP_DOMAIN_PUBLISH = "robocell-publish"
ZAP_DOMAIN_SERVE = "robocell-serve"
SERVICE_DOMAINS = {ZAP_DOMAIN_PUBLISH: "publish", ZAP_DOMAIN_SERVE: "register an instance"}
"""The ports only a key with a service role may connect to, and what it would do there."""
MAX_REFUSALS_QUEUED = 1_000


@dataclass(frozen=True)
class Access:
    """What one allowed key may do: subscribe always; ``command``: send commands;
    ``services``: join as an instance of each (and send commands)."""

    name: str
    command: bool = False
    services: frozenset[str] = frozenset()

    @property
    def may_command(self) -> bool:
        return self.command or bool(self.services)

    @property
    def role(self) -> str:
        """The role as an allow entry writes it."""
        if self.services:
            return SERVICE_ROLE + ",".join(sorted(self.services))
        return "command" if self.command else "read"

    def label(self) -> str:
        return f"key {self.name!r} (role {self.role})"


@dataclass(frozen=True)
class Refusal:
    """A key on the allow-list refused at a port its role does not open."""

    access: Access
    domain: str


@dataclass
class RemoteAccess:
    """The CURVE endpoint for remote peers: the broker's key and the allowed clients."""

    base: str
    server_key: CurveKey
    allowed: dict[str, Access] = field(default_factory=dict)
    """client public key (Z85) -> what it may do."""
    refusals: collections.deque[Refusal] = field(
        default_factory=lambda: collections.deque(maxlen=MAX_REFUSALS_QUEUED))
    """Refused allowed keys, queued by the ZAP thread for the broker's loop to report."""

    def allow(self, key: CurveKey, role: str) -> None:
        """Allow ``key`` with ``role`` (``read``, ``command``, ``service:NAME[,NAME...]``);
        a key allowed twice holds both roles. KeyFileError for an unknown role."""
        services = service_names(role)
        known = self.allowed.get(key.public, Access(key.name))
        self.allowed[key.public] = Access(known.name, known.command or role == "command",
                                          known.services | services)

    def access_of(self, user_id: str | None) -> Access | None:
        """What the peer whose ZAP user id (its public key) is ``user_id`` may do."""
        return self.allowed.get(user_id) if user_id else None

    def secure(self, sock: zmq.Socket, domain: str) -> None:
        """Make ``sock`` a CURVE server with the broker's key, judged by the ZAP domain."""
        sock.curve_server = True
        sock.curve_secretkey = self.server_key.secret.encode("ascii")
        sock.curve_publickey = self.server_key.public.encode("ascii")
        sock.zap_domain = domain.encode()


class ZapHandler:
    """The ZAP handler of one broker, on its own thread until ``stop`` is set; counts
    ``zap_allowed`` and ``zap_denied`` in ``counts``."""

    def __init__(self, ctx: zmq.Context, remote: RemoteAccess, stop: threading.Event,
                 counts: collections.Counter[str]) -> None:
        self.remote = remote
        self._stop = stop
        self.counts = counts
        self._zap = ctx.socket(zmq.REP)
        self._zap.bind(ZAP_ENDPOINT)
        self.thread = threading.Thread(target=self._zap_loop, daemon=True, name="broker-zap")
        self.thread.start()

    def _zap_loop(self) -> None:
        """ZAP handler (RFC 27): admit allow-listed CURVE keys where their role allows."""
        poller = zmq.Poller()
        poller.register(self._zap, zmq.POLLIN)
        while not self._stop.is_set():
            if not poller.poll(100):
                continue
            frames = self._zap.recv_multipart()
            if len(frames) < 6:
                continue  # not a ZAP request: libzmq never sends these
            version, request_id, domain, _address, _identity, mechanism = frames[:6]
            status, text, user = b"400", b"key not allowed", b""
            if mechanism == b"CURVE" and len(frames) >= 7 and len(frames[6]) == 32:
                client_key = zmq.utils.z85.encode(frames[6]).decode("ascii")
                status, text, user = self._judge(client_key, domain.decode("ascii", "replace"))
            self.counts["zap_" + ("allowed" if status == b"200" else "denied")] += 1
            self._zap.send_multipart([version, request_id, status, text, user, b""])
        self._zap.close()

    def _judge(self, client_key: str, domain: str) -> tuple[bytes, bytes, bytes]:
        """(status, text, user id) for an allowed key's handshake in ``domain``."""
        access = self.remote.allowed.get(client_key)
        if access is None:
            return b"400", b"key not allowed", b""
        if domain in SERVICE_DOMAINS and not access.services:
            self.remote.refusals.append(Refusal(access, domain))
            return b"400", b"role does not allow serving", b""
        return b"200", b"OK", client_key.encode("ascii")
