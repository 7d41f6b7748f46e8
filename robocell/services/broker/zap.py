"""Pattern **ZAP** (ZeroMQ RFC 27): the broker's CURVE endpoints admit only allow-listed keys.

A remote endpoint is a CURVE server; its ZAP handler, on a thread of its own, admits a client
key on the allow-list with its role (user id ``role:name``): role ``read`` may subscribe,
role ``command`` may also send commands. Everything else is refused (status 400).
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field

import zmq
import zmq.utils.z85

from robocell.common.bus.keys import CurveKey

ZAP_ENDPOINT = "inproc://zeromq.zap.01"
ZAP_DOMAIN_READ = "robocell-read"
ZAP_DOMAIN_COMMAND = "robocell-command"


@dataclass
class RemoteAccess:
    """The CURVE endpoint for remote monitoring: the broker's key and the allowed clients."""

    base: str
    server_key: CurveKey
    allowed: dict[str, tuple[str, str]] = field(default_factory=dict)
    """client public key (Z85) -> (client name, role)."""

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
        """ZAP handler (RFC 27): admit allow-listed CURVE keys; user id = 'role:name'."""
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
            self.counts["zap_" + ("allowed" if status == b"200" else "denied")] += 1
            self._zap.send_multipart([version, request_id, status, text, user, b""])
        self._zap.close()
