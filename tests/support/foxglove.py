"""A Foxglove WebSocket client written from the protocol, for tests: what the Foxglove app does.

Text frames are JSON with an ``op`` (serverInfo, advertise, advertiseServices,
serviceCallFailure; the client sends subscribe); binary frames start with an opcode byte:
0x01 message data (u32 subscription id, u64 log time in ns, message) from the server, 0x02
service call request (u32 service id, u32 call id, u32 encoding length, encoding, payload)
from the client, 0x03 service call response (same layout) from the server. All integers are
little-endian. Protobuf messages are decoded with the schema the channel advertised (a
FileDescriptorSet, base64), as the app decodes them.
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import websockets
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

SUBPROTOCOLS = ["foxglove.sdk.v1", "foxglove.websocket.v1"]
"""What the Foxglove app offers; the SDK's server picks the first it speaks."""
MESSAGE_DATA = 0x01
SERVICE_CALL_REQUEST = 0x02
SERVICE_CALL_RESPONSE = 0x03


def protobuf_class(name: str, file_descriptor_set: bytes) -> Any:
    """The protobuf message class ``name`` of a schema (a serialised FileDescriptorSet)."""
    files = descriptor_pb2.FileDescriptorSet.FromString(file_descriptor_set)
    pool = descriptor_pool.DescriptorPool()
    for proto in files.file:
        pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def decoded(message: Any) -> Any:
    """A foxglove-sdk message (opaque) as the protobuf message a client decodes."""
    schema = message.get_schema()
    return protobuf_class(schema.name, schema.data).FromString(message.encode())


FACE_DIRECTIONS = {"F": (1, 0, 0), "R": (0, 1, 0), "U": (0, 0, 1), "B": (-1, 0, 0),
                   "L": (0, -1, 0), "D": (0, 0, -1)}
"""Where each face of the cube looks in Foxglove's frame (z up)."""


def sticker_colours(scene: Any) -> dict[tuple[int, int, int], Counter]:
    """For each outward direction of a still cube in a decoded SceneUpdate, how many stickers
    of each colour (r, g, b, 0-255) face it. A sticker is a thin box: its smallest extent is
    along its normal; each cubie entity's first box is its body."""
    faces: dict[tuple[int, int, int], Counter] = {}
    for entity in scene.entities:
        for box in entity.cubes[1:]:
            extent = (box.size.x, box.size.y, box.size.z)
            axis = extent.index(min(extent))
            position = (box.pose.position.x, box.pose.position.y, box.pose.position.z)
            direction = [0, 0, 0]
            direction[axis] = 1 if position[axis] > 0 else -1
            colour = (round(box.color.r * 255), round(box.color.g * 255),
                      round(box.color.b * 255))
            faces.setdefault(tuple(direction), Counter())[colour] += 1
    return faces


def expected_colours(facelets: str, rgb: dict[str, tuple[int, int, int]]
                     ) -> dict[tuple[int, int, int], Counter]:
    """What :func:`sticker_colours` should find for ``facelets`` (faces U R F D L B)."""
    per_face = len(facelets) // 6
    return {FACE_DIRECTIONS[face]: Counter(rgb[letter] for letter in
                                           facelets[i * per_face:(i + 1) * per_face])
            for i, face in enumerate("URFDLB")}


@dataclass
class Received:
    topic: str
    log_time_ns: int
    data: bytes
    decoded: Any


@dataclass
class CallResult:
    ok: bool
    payload: Any = None
    """the decoded JSON response when ok"""
    message: str = ""
    """the failure's message when not ok"""


@dataclass
class FoxgloveClient:
    """One connection; use ``async with FoxgloveClient.connect(url) as client``."""

    ws: Any
    server_info: dict[str, Any] = field(default_factory=dict)
    channels: dict[int, dict[str, Any]] = field(default_factory=dict)
    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    subscriptions: dict[int, int] = field(default_factory=dict)
    """subscription id -> channel id"""
    transcript: list[str] = field(default_factory=list)
    _inbox: list[Received] = field(default_factory=list)
    _calls: dict[int, CallResult] = field(default_factory=dict)
    _decoders: dict[int, Any] = field(default_factory=dict)
    _next_call: int = 1

    @classmethod
    def connect(cls, url: str) -> _Connection:
        return _Connection(url)

    def note(self, line: str) -> None:
        self.transcript.append(line)

    def channel(self, topic: str) -> dict[str, Any]:
        for channel in self.channels.values():
            if channel["topic"] == topic:
                return channel
        raise AssertionError(f"no channel {topic!r} advertised; have "
                             f"{sorted(c['topic'] for c in self.channels.values())}")

    async def subscribe(self, topics: list[str]) -> None:
        subs = []
        for topic in topics:
            sub_id = len(self.subscriptions) + 1
            self.subscriptions[sub_id] = self.channel(topic)["id"]
            subs.append({"id": sub_id, "channelId": self.channel(topic)["id"]})
        await self.ws.send(json.dumps({"op": "subscribe", "subscriptions": subs}))
        self.note(f"-> subscribe {', '.join(topics)}")

    async def _pump(self, timeout: float) -> None:
        """Handle the next frame from the server (or return after ``timeout`` s)."""
        try:
            frame = await asyncio.wait_for(self.ws.recv(), timeout)
        except TimeoutError:
            return
        if isinstance(frame, str):
            self._on_text(json.loads(frame))
        elif frame[0] == MESSAGE_DATA:
            sub_id, log_time = struct.unpack_from("<IQ", frame, 1)
            channel = self.channels[self.subscriptions[sub_id]]
            data = bytes(frame[13:])
            self._inbox.append(Received(channel["topic"], log_time, data,
                                        self._decode(channel, data)))
        elif frame[0] == SERVICE_CALL_RESPONSE:
            _, call_id, length = struct.unpack_from("<III", frame, 1)
            encoding = frame[13:13 + length].decode()
            assert encoding == "json", encoding
            self._calls[call_id] = CallResult(True, json.loads(frame[13 + length:]))

    def _on_text(self, message: dict[str, Any]) -> None:
        op = message["op"]
        if op == "serverInfo":
            self.server_info = message
        elif op == "advertise":
            for channel in message["channels"]:
                self.channels[channel["id"]] = channel
        elif op == "advertiseServices":
            for service in message["services"]:
                self.services[service["name"]] = service
        elif op == "serviceCallFailure":
            self._calls[message["callId"]] = CallResult(False, message=message["message"])

    def _decode(self, channel: dict[str, Any], data: bytes) -> Any:
        if channel["encoding"] == "json":
            return json.loads(data)
        if channel["encoding"] == "protobuf":
            decoder = self._decoders.get(channel["id"])
            if decoder is None:
                decoder = protobuf_class(channel["schemaName"],
                                         base64.b64decode(channel["schema"]))
                self._decoders[channel["id"]] = decoder
            return decoder.FromString(data)
        return data

    async def until_advertised(self, topics: list[str], services: list[str],
                               timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            have = {c["topic"] for c in self.channels.values()}
            if set(topics) <= have and set(services) <= set(self.services):
                return
            await self._pump(max(0.01, deadline - time.monotonic()))
        raise AssertionError(f"not advertised within {timeout} s: channels "
                             f"{sorted(set(topics) - {c['topic'] for c in self.channels.values()})}"
                             f", services {sorted(set(services) - set(self.services))}")

    async def receive(self, topic: str, timeout: float, where: Any = None) -> Received:
        """The first message on ``topic`` (for which ``where(received)`` holds), consuming
        it and every message before it on that topic."""
        deadline = time.monotonic() + timeout
        while True:
            for i, received in enumerate(self._inbox):
                if received.topic == topic:
                    del self._inbox[i]
                    if where is None or where(received):
                        return received
                    break
            else:
                if time.monotonic() >= deadline:
                    raise AssertionError(f"no fitting message on {topic} within {timeout} s")
                await self._pump(max(0.01, deadline - time.monotonic()))

    def drop(self, topic: str) -> None:
        """Forget what is queued on ``topic``."""
        self._inbox = [r for r in self._inbox if r.topic != topic]

    async def call(self, service: str, request: dict[str, Any], timeout: float) -> CallResult:
        """Call a service with a JSON request; its response or failure."""
        call_id, self._next_call = self._next_call, self._next_call + 1
        encoding = b"json"
        await self.ws.send(struct.pack("<BIII", SERVICE_CALL_REQUEST,
                                       self.services[service]["id"], call_id, len(encoding))
                           + encoding + json.dumps(request).encode())
        deadline = time.monotonic() + timeout
        while call_id not in self._calls:
            if time.monotonic() >= deadline:
                raise AssertionError(f"no answer to {service} within {timeout} s")
            await self._pump(max(0.01, deadline - time.monotonic()))
        return self._calls.pop(call_id)


class _Connection:
    def __init__(self, url: str) -> None:
        self.url = url
        self.client: FoxgloveClient | None = None
        self._cm: Any = None

    async def __aenter__(self) -> FoxgloveClient:
        self._cm = websockets.connect(self.url, subprotocols=SUBPROTOCOLS, compression=None,
                                      max_size=None)
        ws = await self._cm.__aenter__()
        self.client = FoxgloveClient(ws)
        self.client.note(f"connected to {self.url}, subprotocol {ws.subprotocol}")
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        await self._cm.__aexit__(*exc)
