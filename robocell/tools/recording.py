"""Bus recordings in MCAP: write what the bus carried, read it back, summarise, export to JSON.

A recording holds one MCAP channel per bus topic with ``message_encoding = "msgpack"`` (the
registered MCAP encoding). Each MCAP message is the exact wire envelope (see
:mod:`robocell.common.bus.wire`), so a replay sends byte-identical messages; ``log_time`` is
when the recorder received it (replay keeps these relative times) and ``publish_time`` the
envelope's wall time. Each channel's schema is a JSON Schema of the envelope, derived from
:mod:`robocell.common.bus.topics`.

:func:`export_json` writes a second MCAP with ``message_encoding = "json"`` that Foxglove
opens directly: each message is the payload's fields plus an ``envelope`` object, binary
fields as base64, and every ``vision.face`` thumbnail also on a ``/vision.face/image``
channel as a ``foxglove.CompressedImage``.

:func:`verify_recording` checks every chunk against its CRC (and the data section's) with
the ``mcap`` package's readers and says which chunk is damaged: its index, byte offset and
message time range. ``bus play`` and ``bus export`` verify first and refuse a damaged file.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcap.reader import make_reader
from mcap.records import Chunk, DataEnd, Message
from mcap.stream_reader import CRCValidationError, StreamReader, breakup_chunk
from mcap.writer import Writer

from robocell.common.bus.schema import payload_json_schema
from robocell.common.bus.topics import TOPIC_SPECS
from robocell.common.bus.views import IMAGE_CHANNEL, jsonable
from robocell.common.bus.wire import MessageError, decode
from robocell.errors import RobocellError

MESSAGE_ENCODING = "msgpack"
PROFILE = "robocell"
LIBRARY = "robocell"
NS_PER_S = 1_000_000_000
CHUNK_BYTES = 256 * 1024  # small chunks: little is lost if the recorder is killed
COMPRESSED_IMAGE_SCHEMA = {
    "title": "foxglove.CompressedImage", "type": "object",
    "properties": {
        "timestamp": {"type": "object", "properties": {"sec": {"type": "integer"},
                                                       "nsec": {"type": "integer"}}},
        "frame_id": {"type": "string"},
        "data": {"type": "string", "contentEncoding": "base64"},
        "format": {"type": "string"},
    },
}


class RecordingError(RobocellError, ValueError):
    """A recording that cannot be read or written."""


def envelope_json_schema(topic: str) -> dict[str, Any]:
    """JSON Schema of a wire envelope (msgpack array) of ``topic``."""
    payload = (payload_json_schema(topic, bytes_as_base64=False) if topic in TOPIC_SPECS
               else {"type": "object"})
    return {
        "title": payload.get("title", topic) + " envelope",
        "description": "msgpack array [schema_version, topic, source, seq, wall_time, "
                       "mono_time, payload]",
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"const": topic}, {"type": "string"},
                        {"type": "integer"}, {"type": "number"}, {"type": "number"}, payload],
    }


class Recorder:
    """Writes wire envelopes into an MCAP file; close() (or the context manager) finishes it."""

    def __init__(self, path: Path | str, metadata: dict[str, str] | None = None) -> None:
        self.path = Path(path)
        try:
            self._stream = open(self.path, "wb")  # noqa: SIM115 -- closed in close()
        except OSError as exc:
            raise RecordingError(f"cannot write {self.path}: {exc}") from None
        self._writer = Writer(self._stream, chunk_size=CHUNK_BYTES)
        self._writer.start(profile=PROFILE, library=LIBRARY)
        if metadata:
            self._writer.add_metadata("robocell", metadata)
        self._channels: dict[str, int] = {}
        self.count = 0

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _channel(self, topic: str) -> int:
        channel = self._channels.get(topic)
        if channel is None:
            spec = TOPIC_SPECS.get(topic)
            schema = self._writer.register_schema(
                name=f"robocell.{spec.type_name}" if spec else topic,
                encoding="jsonschema",
                data=json.dumps(envelope_json_schema(topic)).encode(),
            )
            metadata = {"kind": spec.kind.value, "publisher": spec.publisher} if spec else {}
            channel = self._writer.register_channel(topic, MESSAGE_ENCODING, schema, metadata)
            self._channels[topic] = channel
        return channel

    def write(self, topic: str, data: bytes, log_time_ns: int, publish_time_ns: int,
              sequence: int = 0) -> None:
        self._writer.add_message(self._channel(topic), log_time_ns, data, publish_time_ns,
                                 sequence & 0xFFFFFFFF)
        self.count += 1

    def close(self) -> None:
        if not self._stream.closed:
            self._writer.finish()
            self._stream.close()


@dataclass(frozen=True)
class Damage:
    """One damaged part of a recording."""

    offset: int
    """byte offset of the record (a chunk) where the damage was found."""
    problem: str
    chunk: int | None = None
    """index of the chunk in the file (0: the first), None outside chunks."""
    start_ns: int = 0
    end_ns: int = 0
    """log times of the first and last message the chunk says it holds."""

    def describe(self) -> str:
        if self.chunk is None:
            return f"at byte {self.offset}: {self.problem}"
        return (f"chunk {self.chunk} at byte {self.offset} (messages logged "
                f"{_clock(self.start_ns)} to {_clock(self.end_ns)}): {self.problem}")


@dataclass
class Verification:
    """What verify_recording found: chunks and messages read, and the damage."""

    path: str
    chunks: int = 0
    messages: int = 0
    """messages in the chunks that are good."""
    damage: list[Damage] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.damage

    def describe(self) -> str:
        """What is wrong and what to do, for a refusal."""
        lines = [f"{self.path} is damaged: {len(self.damage)} problem(s) found by its CRCs"]
        lines += [f"  {d.describe()}" for d in self.damage]
        lines.append("the file cannot be trusted; use another copy, or recover what is "
                     "readable with the mcap command-line tool (`mcap recover`) and check "
                     "the result with `robocell bus info --verify`")
        return "\n".join(lines)


def _clock(ns: int) -> str:
    millis = ns % NS_PER_S // 1_000_000
    return time.strftime("%H:%M:%S", time.localtime(ns / NS_PER_S)) + f".{millis:03d}"


def verify_recording(path: Path | str) -> Verification:
    """Read the whole recording with the ``mcap`` package's CRC checks: every chunk's CRC
    (of its records, as written) and the data section's. A damaged chunk is reported and
    the reading goes on with the next; a record that cannot be read at all ends it."""

    path = Path(path)
    result = Verification(str(path))
    try:
        stream = open(path, "rb")  # noqa: SIM115 -- closed below
    except FileNotFoundError:
        raise RecordingError(f"recording {path} does not exist") from None
    except OSError as exc:
        raise RecordingError(f"cannot read {path}: {exc}") from None
    with stream:
        reader = StreamReader(stream, emit_chunks=True, validate_crcs=True)
        offset = 0  # where the record being read starts (the reader reads exactly)
        records = reader.records
        while True:
            try:
                record = next(records)
            except StopIteration:
                break
            except CRCValidationError as exc:
                if isinstance(exc.record, DataEnd) and result.damage:
                    break  # the data section's CRC fails because of the damage found
                result.damage.append(Damage(offset, f"CRC mismatch: {exc}"))
                break
            except Exception as exc:  # a record that cannot be read: nothing after it can
                result.damage.append(Damage(
                    offset, f"unreadable from here on ({type(exc).__name__}: {exc}); the "
                            "file is truncated or damaged"))
                break
            if isinstance(record, Chunk):
                index = result.chunks
                result.chunks += 1
                try:
                    inner = breakup_chunk(record, validate_crc=True)
                except CRCValidationError as exc:
                    result.damage.append(Damage(offset, f"CRC mismatch: {exc}", index,
                                                record.message_start_time,
                                                record.message_end_time))
                except Exception as exc:  # e.g. compressed data that does not decompress
                    result.damage.append(Damage(offset, f"{type(exc).__name__}: {exc}", index,
                                                record.message_start_time,
                                                record.message_end_time))
                else:
                    result.messages += sum(isinstance(r, Message) for r in inner)
            elif isinstance(record, Message):
                result.messages += 1
            offset = stream.tell()
    return result


def require_intact(path: Path | str) -> Verification:
    """verify_recording, raising RecordingError (what is damaged, what to do) if damaged."""
    result = verify_recording(path)
    if not result.ok:
        raise RecordingError(result.describe())
    return result


@dataclass(frozen=True)
class RecordedMessage:
    topic: str
    data: bytes
    log_time_ns: int
    publish_time_ns: int


def read_messages(path: Path | str, topics: Iterable[str] | None = None
                  ) -> Iterator[RecordedMessage]:
    """The messages of a recording in log-time order (optionally only ``topics``)."""

    path = Path(path)
    wanted = set(topics) if topics else None
    try:
        with open(path, "rb") as stream:
            reader = make_reader(stream, validate_crcs=True)
            for _schema, channel, message in reader.iter_messages(
                    topics=sorted(wanted) if wanted else None, log_time_order=True):
                yield RecordedMessage(channel.topic, message.data, message.log_time,
                                      message.publish_time)
    except FileNotFoundError:
        raise RecordingError(f"recording {path} does not exist") from None
    except RecordingError:
        raise
    except Exception as exc:  # mcap raises its own types for damaged files
        raise RecordingError(f"{path} is not a readable MCAP recording "
                             f"({type(exc).__name__}: {exc})") from None


def recording_info(path: Path | str) -> dict[str, Any]:
    """Duration, time range and per-topic counts, encodings and schema names."""

    path = Path(path)
    try:
        with open(path, "rb") as stream:
            reader = make_reader(stream)
            header = reader.get_header()
            summary = reader.get_summary()
    except FileNotFoundError:
        raise RecordingError(f"recording {path} does not exist") from None
    except Exception as exc:
        raise RecordingError(f"{path} is not a readable MCAP recording "
                             f"({type(exc).__name__}: {exc})") from None
    if summary is None or summary.statistics is None:
        # An unfinished file (recorder killed): count by reading through.
        counts: dict[str, int] = {}
        start = end = 0
        for message in read_messages(path):
            counts[message.topic] = counts.get(message.topic, 0) + 1
            start = start or message.log_time_ns
            end = message.log_time_ns
        return {"path": str(path), "profile": header.profile, "library": header.library,
                "complete": False, "messages": sum(counts.values()), "start_ns": start,
                "end_ns": end, "duration_s": (end - start) / NS_PER_S,
                "topics": {t: {"messages": n, "encoding": MESSAGE_ENCODING, "schema": ""}
                           for t, n in sorted(counts.items())}}
    stats = summary.statistics
    topics = {}
    for channel_id, channel in summary.channels.items():
        schema = summary.schemas.get(channel.schema_id)
        topics[channel.topic] = {
            "messages": stats.channel_message_counts.get(channel_id, 0),
            "encoding": channel.message_encoding,
            "schema": schema.name if schema else "",
        }
    return {"path": str(path), "profile": header.profile, "library": header.library,
            "complete": True, "messages": stats.message_count,
            "start_ns": stats.message_start_time, "end_ns": stats.message_end_time,
            "duration_s": (stats.message_end_time - stats.message_start_time) / NS_PER_S,
            "topics": dict(sorted(topics.items())), "size_bytes": path.stat().st_size}



def export_json(path: Path | str, out: Path | str) -> dict[str, int]:
    """Write ``out``: the recording re-encoded as JSON messages with JSON Schemas
    (Foxglove-ready). Returns messages written per channel; undecodable ones are skipped
    and counted under ``"skipped"``."""

    counts: dict[str, int] = {}
    with open(out, "wb") as stream:
        writer = Writer(stream)
        writer.start(profile="", library=LIBRARY)
        channels: dict[str, int] = {}

        def channel(topic: str, schema: dict[str, Any], name: str) -> int:
            if topic not in channels:
                schema_id = writer.register_schema(name=name, encoding="jsonschema",
                                                   data=json.dumps(schema).encode())
                channels[topic] = writer.register_channel(topic, "json", schema_id)
            return channels[topic]

        for message in read_messages(path):
            try:
                env = decode(message.data)
            except MessageError:
                counts["skipped"] = counts.get("skipped", 0) + 1
                continue
            body = jsonable(env.payload)
            body["envelope"] = {"source": env.source, "seq": env.seq,
                                "wall_time": env.wall_time, "mono_time": env.mono_time,
                                "schema_version": env.version}
            if env.topic in TOPIC_SPECS:
                schema = payload_json_schema(env.topic)
                schema["properties"]["envelope"] = {"type": "object"}
                schema["additionalProperties"] = True
                name = schema["title"]
            else:
                schema, name = {"type": "object"}, env.topic
            channel_id = channel(env.topic, schema, name)
            writer.add_message(channel_id, message.log_time_ns, json.dumps(body).encode(),
                               message.publish_time_ns, env.seq & 0xFFFFFFFF)
            counts[env.topic] = counts.get(env.topic, 0) + 1
            if env.topic == "vision.face" and isinstance(env.payload.get("jpeg"), bytes):
                stamp = message.publish_time_ns
                image = {"timestamp": {"sec": stamp // NS_PER_S, "nsec": stamp % NS_PER_S},
                         "frame_id": f"face_{env.payload.get('face', '?')}",
                         "data": body["jpeg"], "format": "jpeg"}
                image_channel = channel(IMAGE_CHANNEL, COMPRESSED_IMAGE_SCHEMA,
                                        "foxglove.CompressedImage")
                writer.add_message(image_channel, message.log_time_ns,
                                   json.dumps(image).encode(), stamp, env.seq & 0xFFFFFFFF)
                counts[IMAGE_CHANNEL] = counts.get(IMAGE_CHANNEL, 0) + 1
        writer.finish()
    return counts
