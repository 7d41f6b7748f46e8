"""The Foxglove bridge process: a bus node feeding the channels, the SDK's WebSocket server.

Shell around :mod:`.bridge` (channels) and :mod:`.control` (services). Threads: the bus
:class:`~robocell.common.bus.Node` subscribes to every topic (its Subscriber also receives
the latched state) and logs each message on its I/O thread; the SDK serves WebSocket clients
on a loopback port, relayed from the bridge's own port by :class:`~.front.Front` (which
bounds them), and calls the service handler and the listener on its own threads; the twin's
turns are drawn on a thread of :class:`~.bridge.TwinMotion`; a replay thread logs the last
state of a channel again when a client subscribes to it. The node heartbeats as
``foxglove`` (``robocell health foxglove``), with the number of clients in its health.
"""

from __future__ import annotations

import queue
import sys
import threading
from pathlib import Path
from typing import Any

import foxglove
from foxglove import Context
from foxglove.websocket import Capability, ChannelView, Client, WebSocketServer

from robocell.common.bus import Endpoints, Node
from robocell.services.foxglove.control import CellServices
from robocell.services.foxglove.front import Front
from robocell.services.foxglove.service import CellChannels

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
SERVER_NAME = "robocell"


class _Listener:
    """The SDK's server listener: counts clients, asks for a replay on each subscription."""

    def __init__(self, bridge: FoxgloveBridge) -> None:
        self.bridge = bridge

    def on_subscribe(self, client: Client, channel: ChannelView) -> None:
        self.bridge.subscribed(client.id, channel.id)

    def on_unsubscribe(self, client: Client, channel: ChannelView) -> None:
        self.bridge.unsubscribed(client.id, channel.id)


class FoxgloveBridge:
    """The running bridge: start(), then wait() until Ctrl-C, then stop()."""

    def __init__(self, endpoints: Endpoints, token: str | None, host: str, port: int, *,
                 name: str = "foxglove", record: Path | None = None) -> None:
        self.endpoints = endpoints
        self.token = token
        self.host = host
        self.port = port
        self.name = name
        self.record = record
        """also write every channel to this MCAP file (the SDK's writer), if set"""
        self.context = Context()
        self._recording: Any = None
        self.channels: CellChannels | None = None
        self.services: CellServices | None = None
        self.node: Node | None = None
        self.server: WebSocketServer | None = None
        self.front: Front | None = None
        self._replays: queue.Queue[int | None] = queue.Queue()
        self._replayer: threading.Thread | None = None
        self._clients: dict[int, set[int]] = {}
        self._lock = threading.Lock()

    def start(self) -> FoxgloveBridge:
        """Listen (OSError if the port is taken), then join the bus."""
        self.node = Node(self.name, self.endpoints, track_peers=False)
        if self.record is not None:
            self._recording = foxglove.open_mcap(self.record, allow_overwrite=True,
                                                 context=self.context)
        self.channels = CellChannels(self.context)
        self.services = CellServices(self.token, self.node.request)
        self.server = foxglove.start_server(
            name=SERVER_NAME, host="127.0.0.1", port=0, context=self.context,
            capabilities=[Capability.Services], supported_encodings=["json"],
            services=self.services.services(), server_listener=_Listener(self))
        self.front = Front(self.host, self.port, self.server.port).start()
        self.port = self.front.port
        self._replayer = threading.Thread(target=self._replay, name="foxglove-replay",
                                          daemon=True)
        self._replayer.start()
        self.node.subscribe("", self.channels.ingest, prefix=True)
        self.node.start()
        self._announce()
        return self

    def stop(self) -> None:
        if self.front is not None:
            self.front.stop()
            self.front = None
        if self.server is not None:
            self.server.stop()
            self.server = None
        self._replays.put(None)
        if self._replayer is not None:
            self._replayer.join(timeout=2)
        if self.node is not None:
            self.node.stop()
            self.node = None
        if self.channels is not None:
            self.channels.close()
        if self.services is not None:
            self.services.close()
        if self._recording is not None:
            self._recording.close()
            self._recording = None

    def wait(self) -> None:
        if self.node is not None:
            self.node.wait()

    # -- clients -----------------------------------------------------------------------------

    def subscribed(self, client: int, channel: int) -> None:
        with self._lock:
            self._clients.setdefault(client, set()).add(channel)
        self._replays.put(channel)  # logged from our thread, not the SDK's
        self._announce()

    def unsubscribed(self, client: int, channel: int) -> None:
        with self._lock:
            channels = self._clients.get(client)
            if channels is not None:
                channels.discard(channel)
                if not channels:
                    del self._clients[client]
        self._announce()

    def _announce(self) -> None:
        node, services, front = self.node, self.services, self.front
        if node is not None and services is not None:
            with self._lock:
                clients = len(self._clients)
            node.set_state("ready", port=self.port, subscribed_clients=clients,
                           calls_answered=services.answered, calls_refused=services.refused,
                           connections_refused=front.refused if front is not None else 0)

    def _replay(self) -> None:
        """Log the last state of each channel a client subscribes to (ends on None)."""
        while True:
            channel = self._replays.get()
            if channel is None or self.channels is None:
                return
            try:
                self.channels.replay(channel)
            except Exception as exc:  # a replay is a courtesy: never end the thread
                print(f"foxglove: cannot replay channel {channel}: {type(exc).__name__}: "
                      f"{exc}", file=sys.stderr, flush=True)


def describe(bridge: FoxgloveBridge) -> str:
    """The line the process prints when it listens."""
    control = "needs the monitor's token" if bridge.token else "off: no token"
    recording = f"; recording to {bridge.record}" if bridge.record else ""
    return (f"foxglove: ws://{bridge.host}:{bridge.port}  (bus {bridge.endpoints.subscribe}"
            f"{', remote CURVE' if bridge.endpoints.curve else ''}; services {control}"
            f"{recording}); open it in Foxglove: Open connection > Foxglove WebSocket")


def serve(bridge: FoxgloveBridge) -> None:
    """Run the bridge until Ctrl-C or SIGTERM."""
    bridge.start()
    try:
        print(describe(bridge), file=sys.stderr, flush=True)
        if bridge.token and bridge.host not in LOOPBACK_HOSTS:
            print(f"foxglove: warning: listening on {bridge.host} over plain WebSocket: the "
                  "token crosses the network in clear; keep the bridge on loopback and reach "
                  "it through an SSH tunnel", file=sys.stderr, flush=True)
        bridge.wait()
    finally:
        bridge.stop()

