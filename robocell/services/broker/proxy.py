"""Pattern **proxy**: ``zmq.proxy_steerable`` between two sockets on a thread of its own.

The broker runs three (publishers -> subscribers, the capture tap, the remote XPUB); each
forwards in libzmq's own loop without holding the GIL, and is steered (statistics,
termination) through its control socket. Also: binding that waits out a port still held by
a predecessor, and what counts as a loopback endpoint.
"""

from __future__ import annotations

import struct
import threading
import time
from urllib.parse import urlsplit

import zmq

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
BIND_RETRY_S = 1.0
N_PROXY_STATISTICS = 8


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


class Proxy:
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
