"""A TCP relay between a client and a server on loopback whose links a test can cut silently:
while cut, no byte passes and no open connection is closed -- what a pulled cable or a dead
router does to TCP (no FIN, no RST; what was sent waits), so only a heartbeat can tell; a new
connection meanwhile fails at once (as on a host that has no route). Restored with ``forget``,
the connections made before the cut stay black holes (a router that restarted and lost them,
a host that rebooted): open at both ends, carrying nothing, ever."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable

CHUNK = 65536


class Relay:
    """Listens on each of ``offsets`` from ``listen_base`` (127.0.0.1) and relays every
    connection to the same offset from ``upstream_base``; ``cut`` holds what is sent until
    ``restore``."""

    def __init__(self, listen_base: int, upstream_base: int, offsets: Iterable[int]) -> None:
        self.cut = threading.Event()
        self.generation = 0
        """Connections of an older generation are forgotten: nothing passes them again."""
        self._stop = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        for offset in offsets:
            server = socket.create_server(("127.0.0.1", listen_base + offset))
            server.settimeout(0.2)
            self._sockets.append(server)
            threading.Thread(target=self._accept, args=(server, upstream_base + offset),
                             daemon=True, name=f"relay-{offset}").start()

    def restore(self, forget: bool = False) -> None:
        """Let bytes pass again; ``forget``: not on the connections made before."""
        if forget:
            self.generation += 1
        self.cut.clear()

    def _accept(self, server: socket.socket, upstream_port: int) -> None:
        while not self._stop.is_set():
            try:
                client, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self.cut.is_set():  # no way through: the connection fails, the client retries
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", upstream_port))
            except OSError:
                client.close()
                continue
            self._keep(client, upstream)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink, self.generation),
                                 daemon=True).start()

    def _keep(self, *socks: socket.socket) -> None:
        with self._lock:
            self._sockets.extend(socks)

    def _pump(self, source: socket.socket, sink: socket.socket, generation: int) -> None:
        """Copy ``source`` to ``sink`` (held while cut) until either end closes, or forever
        nothing once its connection is forgotten."""
        source.settimeout(0.2)
        while not self._stop.is_set():
            if self.cut.is_set() or generation != self.generation:
                self._stop.wait(0.05)
                continue
            try:
                data = source.recv(CHUNK)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
            try:
                sink.sendall(data)
            except OSError:
                break
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            for sock in self._sockets:
                sock.close()
