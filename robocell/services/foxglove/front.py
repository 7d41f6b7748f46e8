"""The Foxglove bridge's front door: a connection-limiting TCP relay before the SDK's server.

The SDK's WebSocket server stops answering handshakes past its own client limit and names no
client's address, so it cannot refuse anyone clearly. The bridge listens here instead and
relays each accepted connection, byte for byte, to the SDK's server on a loopback port of its
own. A connection past MAX_CLIENTS in all, or past MAX_CLIENTS_PER_ADDRESS from one address,
is answered at once with an HTTP 503 that says why, counted and logged; the total stays below
the SDK's limit, so an accepted client always gets its handshake, and no one address can take
every place (a client elsewhere, an operator through a tunnel, still finds room).

Pattern: a relay on one asyncio loop of its own thread; ``stop()`` ends it.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import threading

MAX_CLIENTS = 64
"""Connections relayed at once, in all (the SDK's own limit is 100)."""
MAX_CLIENTS_PER_ADDRESS = 32
"""Connections relayed at once from one address: half the room, so another finds some."""
CHUNK_BYTES = 64 * 1024
START_TIMEOUT_S = 10.0


def refusal(reason: str) -> bytes:
    """The HTTP answer to a connection that is not relayed: 503 and the reason in words."""
    body = (f"robocell foxglove bridge: {reason}; close other Foxglove connections and "
            "try again\n").encode()
    return (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n"
            + body)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy ``reader`` to ``writer`` until either side ends."""
    try:
        while data := await reader.read(CHUNK_BYTES):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


class Front:
    """Listen on ``host``:``port`` (0: any free port) and relay to the SDK's server on
    127.0.0.1:``backend_port``; ``port`` is the bound one after start()."""

    def __init__(self, host: str, port: int, backend_port: int) -> None:
        self.host = host
        self.port = port
        self.backend_port = backend_port
        self.clients: collections.Counter[str] = collections.Counter()
        self.refused = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._run, name="foxglove-front", daemon=True)

    def start(self) -> Front:
        """Listen (OSError if the port is taken), relaying on a thread of its own."""
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S):
            raise OSError(f"the Foxglove front did not listen on {self.host}:{self.port}")
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._relay, self.host, self.port))
            self.port = self._server.sockets[0].getsockname()[1]
        except OSError as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            self._loop.run_forever()  # until stop()
        finally:
            self._server.close()
            self._loop.close()

    def _full(self, address: str) -> str | None:
        """Why a new connection from ``address`` is refused, or None if there is room."""
        if sum(self.clients.values()) >= MAX_CLIENTS:
            return f"{MAX_CLIENTS} Foxglove connections already open"
        if self.clients[address] >= MAX_CLIENTS_PER_ADDRESS:
            return (f"{MAX_CLIENTS_PER_ADDRESS} Foxglove connections already open from "
                    f"{address}")
        return None

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        address = str((writer.get_extra_info("peername") or ("?",))[0])
        reason = self._full(address)
        if reason is not None:
            self.refused += 1
            print(f"foxglove: refused a connection from {address}: {reason}", file=sys.stderr,
                  flush=True)
            writer.write(refusal(reason))
            try:
                await writer.drain()
            except (ConnectionError, OSError):
                pass
            writer.close()
            return
        self.clients[address] += 1
        try:
            back_reader, back_writer = await asyncio.open_connection("127.0.0.1",
                                                                     self.backend_port)
        except OSError:
            writer.close()
            self._release(address)
            return
        try:
            await asyncio.gather(_pipe(reader, back_writer), _pipe(back_reader, writer))
        finally:
            self._release(address)

    def _release(self, address: str) -> None:
        self.clients[address] -= 1
        if self.clients[address] <= 0:
            del self.clients[address]
