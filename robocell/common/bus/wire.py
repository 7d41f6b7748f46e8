"""The bus wire format, written and read only here: the envelope, message and batch frames.

On the wire a message is one ZeroMQ frame::

    topic (UTF-8 bytes) + TOPIC_END (one zero byte) + envelope (msgpack)

The frame starts with the topic so that ZeroMQ's prefix subscriptions filter without
decoding; the zero byte ends it, so a subscription to ``topic + TOPIC_END`` (see
:func:`subscription`) matches that topic exactly and a bare prefix (``"vision."``) matches a
family of topics. One frame, not two, halves the socket calls of every hop and lets the
broker keep the latest value of a topic inside libzmq (ZMQ_CONFLATE takes single frames).
The envelope is a msgpack array, in this order::

    [schema_version, topic, source, seq, wall_time, mono_time, payload]

- ``schema_version`` -- ``SCHEMA_VERSION``; a receiver refuses any other version.
- ``topic`` -- repeated inside the envelope so a recorded envelope stands on its own; a
  receiver refuses a message whose topic frame and envelope topic disagree.
- ``source`` -- the name of the publishing process (``vision``, ``broker``, ...).
- ``seq`` -- per-source, per-topic sequence number starting at 0; a gap means messages were
  dropped on the way, a smaller number means the source restarted.
- ``wall_time`` -- seconds since the epoch (``time.time()``) when the message was made.
- ``mono_time`` -- the source's ``time.monotonic()`` at the same moment (only comparable
  between messages of the same source).
- ``payload`` -- a msgpack map with string keys; its fields are declared per topic in
  :mod:`robocell.common.bus.topics`.

Publishers may write ``seq`` and the time stamps in msgpack's fixed-width forms (uint 64,
float 64); any valid msgpack encoding of the same values is the same envelope.

A **batch frame** carries several consecutive messages of one topic from one publisher,
stored by column::

    topic + TOPIC_END + msgpack array 16 header of 7 (BATCH_HEAD) +
        [schema_version, topic, source, first_seq, [wall_time...], [mono_time...], [payload...]]

Message ``i`` of the batch is the envelope ``[schema_version, topic, source, first_seq + i,
wall_time[i], mono_time[i], payload[i]]``: what every message of a burst repeats (version,
topic, source) is written once, and the sequence numbers, consecutive by construction, are
written as the first one. (An envelope is a msgpack fixarray, whose first byte is never
BATCH_MARK.) A publisher sends one only while it publishes faster than COALESCE_GAP_S apart
(see :class:`robocell.common.bus.Publisher`): every hop then moves one frame for many
messages, and a receiver decodes, checks and sequence-checks the batch as a whole.
Subscription filtering works unchanged (the topic leads). A batch that is not wholly good is
taken apart (:func:`unbatch_frame`, which gives each message's frame exactly as it would
travel alone) and each envelope is judged on its own; recordings keep single envelopes.

Publishers write frames with :class:`FrameWriter` (a constant prefix per topic and source,
packed with the stamps in one struct call); the subscriptions that mean something to the
bus itself (SUBSCRIBE_ALL, BROKER_SUBSCRIPTION, ANSWER_MARK) are declared here too.

This module knows nothing about topics; :func:`decode` checks the envelope only, and
:func:`robocell.common.bus.schema.validate` checks a payload against its declaration.
"""

from __future__ import annotations

import functools
import os
import struct
import threading
import time
from typing import Any

import msgpack
import msgspec

from robocell.common.bus.plain import (
    MAX_ARRAY_ITEMS,
    MAX_DEPTH,
    MAX_MAP_KEYS,
    MAX_STR_BYTES,
    describe,
    plain_problem,
)
from robocell.errors import RobocellError

SCHEMA_VERSION = 1
"""Version of the envelope layout and of the message declarations as a whole."""

DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024
"""Largest encoded envelope accepted by default (8 MiB: room for a full camera JPEG)."""

MAX_MESSAGE_BYTES_ENV = "ROBOCELL_BUS_MAX_BYTES"
"""Environment variable that overrides the size limit (in bytes) for every process."""

MAX_SEQ = 2**64 - 1
"""The largest sequence number (msgpack's largest unsigned integer)."""
MAX_SEQ_JUMP = 2**32
"""A sequence number more than this past the last one a receiver saw from its source on its
topic is not a gap (no publisher sends 4 billion messages unseen): the receiver takes it as
a restart of the source, counts it (``seq_jumps``) and reports it, never as 2^64 lost
messages and never as a number every later real message must exceed."""
MAX_FUTURE_S = 5.0
"""A wall time more than this ahead of the receiver's clock is refused (reason ``stamp``):
every process of the cell reads one clock (remote peers only subscribe), so such a stamp
is a forgery or a broken clock, and accepted it would make every real message sent before
that time look older than it."""
MAX_TOPIC_CHARS = 128
MAX_SOURCE_CHARS = 64
N_ENVELOPE_FIELDS = 7
TOPIC_END = b"\x00"
"""The byte between the topic and the envelope in a message frame (never part of a topic)."""
MAX_TOPIC_BYTES = 4 * MAX_TOPIC_CHARS + 1
"""How far into a frame the end of the topic is looked for (UTF-8: up to 4 bytes a char)."""

# --- subscriptions that mean something to the bus itself ----------------------------------

SUBSCRIBE_ALL = b"\x01"
"""The subscription to everything: the broker's, and that of any subscriber to every topic
(``bus record``, ``bus echo ''``); a publisher sees both alike."""
BROKER_SUBSCRIPTION = b"\x01\x00robocell-broker"
"""A subscription only the broker makes (no topic starts with a zero byte, so it matches no
message): its XSUB sends it to every publisher that (re)connects. A publisher that sees it
gives the broker its latched state (again): the broker came (back) and may have missed it.
Subscriptions to everything from subscribers pass the publishers too, and mean nothing to
them."""
REPLAY_PREFIX = "replay:"
"""``bus play`` sends each recorded message with this in front of its source: replayed
state is never taken for live state (the broker's cache prefers live messages, Liveness
ignores replayed heartbeats, the monitor shows them as replayed)."""


def is_replayed(source: str) -> bool:
    """True for the source of a message ``bus play`` sent (see REPLAY_PREFIX)."""
    return source.startswith(REPLAY_PREFIX)


ANSWER_MARK = b"\x00answer:"
"""How the channel of one subscriber's latched answers starts (see Subscriber): the broker
answers a subscription ``b"\x01" + channel + topic subscription``, where the channel is
``ANSWER_MARK + token + b"\x00"``, with the newest message of each latched topic it
matches, the channel in front, so that only that subscriber receives it. (No topic starts
with a zero byte: nobody else subscribes to it by chance.)"""

@functools.lru_cache(maxsize=1)
def max_message_bytes() -> int:
    """The configured size limit: $ROBOCELL_BUS_MAX_BYTES, else DEFAULT_MAX_MESSAGE_BYTES
    (read once per process; ``max_message_bytes.cache_clear()`` re-reads it)."""
    env = os.environ.get(MAX_MESSAGE_BYTES_ENV)
    if not env:
        return DEFAULT_MAX_MESSAGE_BYTES
    try:
        limit = int(env)
    except ValueError:
        raise ValueError(
            f"{MAX_MESSAGE_BYTES_ENV}={env!r} is not a whole number of bytes; "
            "set it to e.g. 8388608 or unset it"
        ) from None
    if limit <= 0:
        raise ValueError(f"{MAX_MESSAGE_BYTES_ENV}={env!r} must be a positive number of bytes")
    return limit


class MessageError(RobocellError, ValueError):
    """A message that cannot be accepted. ``reason`` is a short machine-readable code
    (``decode``, ``schema_version``, ``oversize``, ``invalid``, ``unknown_topic``,
    ``stamp``), the
    message text says what is wrong and where."""

    reason = "invalid"

    def __init__(self, message: str, *, topic: str | None = None,
                 source: str | None = None) -> None:
        super().__init__(message)
        self.topic = topic
        self.source = source


class DecodeError(MessageError):
    """The bytes are not a well-formed envelope (not msgpack, wrong shape, wrong types)."""

    reason = "decode"


class SchemaVersionError(MessageError):
    """The envelope was written by a different schema version."""

    reason = "schema_version"


class OversizeError(MessageError):
    """The encoded message is larger than the configured limit."""

    reason = "oversize"


class ValidationError(MessageError):
    """The payload does not match the declaration of its topic."""

    reason = "invalid"


class StampError(MessageError):
    """The envelope's wall time is further in the future than MAX_FUTURE_S."""

    reason = "stamp"


def future_stamp(topic: str, source: str, wall: float, now: float) -> StampError:
    """The refusal of a message stamped ``wall`` received at ``now`` (past MAX_FUTURE_S)."""
    return StampError(f"topic {topic!r} from {source!r}: its wall time {wall:.3f} is "
                      f"{wall - now:.3g} s ahead of this host's clock (over the bound of "
                      f"{MAX_FUTURE_S:g} s); a forged stamp or a broken clock: find the "
                      "sender", topic=topic, source=source)


class UnknownTopicError(MessageError):
    """The topic is not declared in :mod:`robocell.common.bus.topics`."""

    reason = "unknown_topic"


class Envelope(msgspec.Struct, gc=False):
    """One bus message: who sent what, when, and in which order. (A msgspec Struct: made
    for every message sent and received, it costs less than half of a dataclass; not
    tracked by the garbage collector, so a payload must not refer back to its envelope.)"""

    topic: str
    source: str
    seq: int
    wall_time: float
    mono_time: float
    payload: dict[str, Any]
    version: int = SCHEMA_VERSION
    size: int = 0
    """Encoded size in bytes (set by encode/decode; 0 for a message never on the wire)."""

    @classmethod
    def now(cls, topic: str, source: str, seq: int, payload: dict[str, Any]) -> Envelope:
        """An envelope stamped with the current wall and monotonic clocks."""
        return cls(topic, source, seq, time.time(), time.monotonic(), payload)


_packers = threading.local()
_unpackb = msgpack.unpackb


def _refuse_ext(code: int, data: bytes) -> Any:
    raise DecodeError(f"msgpack extension type {code} is not allowed in bus messages")


def encode(envelope: Envelope, max_bytes: int | None = None) -> bytes:
    """The msgpack bytes of ``envelope``; raises OversizeError above the size limit and
    DecodeError (a MessageError) if the payload holds something msgpack cannot carry."""
    packer = getattr(_packers, "packer", None)
    if packer is None:  # one per thread: a Packer keeps its buffer, packb allocates each time
        packer = _packers.packer = msgpack.Packer(use_bin_type=True)
    try:
        data = packer.pack(
            [envelope.version, envelope.topic, envelope.source, envelope.seq,
             envelope.wall_time, envelope.mono_time, envelope.payload])
    except (TypeError, ValueError, OverflowError) as exc:
        packer.reset()
        raise DecodeError(
            f"topic {envelope.topic!r}: payload cannot be encoded with msgpack ({exc}); "
            "use only str, bytes, int, float, bool, None, lists and maps with string keys",
            topic=envelope.topic, source=envelope.source,
        ) from None
    limit = max_message_bytes() if max_bytes is None else max_bytes
    if len(data) > limit:
        raise OversizeError(
            f"topic {envelope.topic!r}: message is {len(data)} bytes, over the limit of "
            f"{limit} bytes; send less (e.g. a smaller JPEG) or raise {MAX_MESSAGE_BYTES_ENV}",
            topic=envelope.topic, source=envelope.source,
        )
    envelope.size = len(data)
    return data


def decode(data: bytes, max_bytes: int | None = None) -> Envelope:
    """The envelope in ``data``. Raises a MessageError subclass (never anything else) when
    the bytes are oversize, not msgpack, not an envelope, or of another schema version."""
    size = len(data)
    if size > (max_message_bytes() if max_bytes is None else max_bytes):
        limit = max_message_bytes() if max_bytes is None else max_bytes
        raise OversizeError(
            f"message of {size} bytes is over the limit of {limit} bytes "
            f"(set {MAX_MESSAGE_BYTES_ENV} on both sides to carry larger messages)"
        )
    try:  # msgpack >= 1.0 defaults: raw=False, use_list=True, strict_map_key=True
        fields = _unpackb(data, ext_hook=_refuse_ext, max_str_len=MAX_STR_BYTES,
                          max_bin_len=size, max_array_len=MAX_ARRAY_ITEMS,
                          max_map_len=MAX_MAP_KEYS, max_ext_len=size)
    except MessageError:
        raise
    except msgpack.StackError:  # nested past msgpack's own stack (about 1,000 levels)
        raise DecodeError(f"message nested too deep: a message nests at most {MAX_DEPTH} "
                          "levels of lists and maps") from None
    except ValueError as exc:  # over one of the limits above
        raise DecodeError(f"not a msgpack message within the bus limits "
                          f"({type(exc).__name__}: {exc}); a message "
                          f"nests at most {MAX_DEPTH} levels, maps hold at most "
                          f"{MAX_MAP_KEYS} keys, lists {MAX_ARRAY_ITEMS} items, strings "
                          f"{MAX_STR_BYTES} bytes") from None
    except Exception as exc:  # msgpack raises many types on garbage input
        raise DecodeError(f"not a msgpack message ({type(exc).__name__}: {exc})") from None
    if type(fields) is not list or len(fields) != N_ENVELOPE_FIELDS:
        raise DecodeError(
            f"not an envelope: expected a msgpack array of {N_ENVELOPE_FIELDS} fields, "
            f"got {_describe(fields)}"
        )
    version, topic, source, seq, wall_time, mono_time, payload = fields
    if (version == SCHEMA_VERSION and type(version) is int and type(topic) is str
            and 0 < len(topic) <= MAX_TOPIC_CHARS and type(source) is str
            and 0 < len(source) <= MAX_SOURCE_CHARS and type(seq) is int and seq >= 0
            and type(wall_time) is float and type(mono_time) is float
            and type(payload) is dict):
        problem = plain_problem(payload)
        if problem is not None:
            raise DecodeError(f"topic {topic!r} from {source!r}: payload {problem}",
                              topic=topic, source=source)
        return Envelope(topic, source, seq, wall_time, mono_time, payload, version, size)
    return _explain_bad_envelope(fields, size)


def _explain_bad_envelope(fields: list, size: int) -> Envelope:
    """The slow path of decode: accept integer time stamps, else raise the precise error."""
    version, topic, source, seq, wall_time, mono_time, payload = fields
    if type(version) is not int:
        raise DecodeError(f"envelope schema version must be an integer, got {_describe(version)}")
    if not isinstance(topic, str) or not 0 < len(topic) <= MAX_TOPIC_CHARS:
        raise DecodeError(f"envelope topic must be a non-empty string of at most "
                          f"{MAX_TOPIC_CHARS} characters, got {_describe(topic)}")
    if version != SCHEMA_VERSION:
        raise SchemaVersionError(
            f"topic {topic!r}: schema version {version}, this process speaks version "
            f"{SCHEMA_VERSION}; run the same robocell version on every process",
            topic=topic,
        )
    if not isinstance(source, str) or not 0 < len(source) <= MAX_SOURCE_CHARS:
        raise DecodeError(f"topic {topic!r}: envelope source must be a non-empty string of at "
                          f"most {MAX_SOURCE_CHARS} characters, got {_describe(source)}",
                          topic=topic)
    if type(seq) is not int or seq < 0:
        raise DecodeError(f"topic {topic!r} from {source!r}: sequence number must be a "
                          f"non-negative integer, got {_describe(seq)}", topic=topic, source=source)
    for name, stamp in (("wall_time", wall_time), ("mono_time", mono_time)):
        if type(stamp) is not float and type(stamp) is not int:
            raise DecodeError(f"topic {topic!r} from {source!r}: {name} must be a number, "
                              f"got {_describe(stamp)}", topic=topic, source=source)
    if not isinstance(payload, dict):
        raise DecodeError(f"topic {topic!r} from {source!r}: payload must be a map, "
                          f"got {_describe(payload)}", topic=topic, source=source)
    problem = plain_problem(payload)
    if problem is not None:
        raise DecodeError(f"topic {topic!r} from {source!r}: payload {problem}",
                          topic=topic, source=source)
    return Envelope(topic, source, seq, float(wall_time), float(mono_time), payload,
                    version, size)




_describe = describe

def subscription(topic: str, prefix: bool = False) -> bytes:
    """The ZeroMQ subscription of ``topic``: exactly that topic, or (``prefix``, or the empty
    string) every topic that starts with it."""
    if prefix or not topic:
        return topic.encode()
    return topic.encode() + TOPIC_END


def message_frame(topic: str, data: bytes) -> bytes:
    """The one wire frame of an encoded envelope ``data`` of ``topic``."""
    return topic.encode() + TOPIC_END + data


def split_frame(frame: bytes) -> tuple[str, bytes]:
    """(topic, envelope bytes) of a message frame; DecodeError if it has no topic."""
    end = frame.find(TOPIC_END, 0, MAX_TOPIC_BYTES)
    if end <= 0:
        raise DecodeError("not a message frame: expected a topic, a zero byte and an "
                          f"envelope, got {_describe(bytes(frame[:40]))}")
    try:
        topic = frame[:end].decode("utf-8")
    except UnicodeDecodeError:
        raise DecodeError("the topic of the message frame is not UTF-8") from None
    return topic, frame[end + 1:]


BATCH_MARK = 0xDC
"""First byte after TOPIC_END of a batch frame: a msgpack array 16 header."""
N_BATCH_FIELDS = 7
BATCH_HEAD = bytes([BATCH_MARK, 0, N_BATCH_FIELDS])
"""What follows TOPIC_END in every batch frame: the array 16 header of its 7 fields."""
MAX_BATCH_BYTES = 64 * 1024
"""Largest batch frame a receiver takes apart (after the topic); publishers never make one
over about 33 KiB (see docs/bus.md). A larger one is refused whole, unread (``oversize``):
one frame of millions of tiny bad messages once kept every service busy for minutes."""
MAX_BATCH_MESSAGES = 4096
"""Most messages in one batch frame (a 32 KiB batch of the smallest real messages holds
about 1,100); a batch claiming more is refused whole (``oversize``)."""
ENVELOPE_ARRAY = bytes([0x90 + N_ENVELOPE_FIELDS])
"""The msgpack fixarray header of an envelope."""
_RawEnvelope = tuple[msgspec.Raw, msgspec.Raw, msgspec.Raw, int, msgspec.Raw, msgspec.Raw,
                     msgspec.Raw]
_RawBatch = tuple[msgspec.Raw, msgspec.Raw, msgspec.Raw, int, list[msgspec.Raw],
                  list[msgspec.Raw], list[msgspec.Raw]]
_split_envelope = msgspec.msgpack.Decoder(_RawEnvelope).decode
_split_batch = msgspec.msgpack.Decoder(_RawBatch).decode
_u16 = struct.Struct(">H").pack
_u32 = struct.Struct(">I").pack


def array_header(count: int) -> bytes:
    """The msgpack header of an array of ``count`` items."""
    if count < 16:
        return bytes([0x90 + count])
    if count < 0x10000:
        return b"\xdc" + _u16(count)
    return b"\xdd" + _u32(count)


def batch_prefix(topic: str, source: str) -> bytes:
    """What every batch frame of (``topic``, ``source``) carries after TOPIC_END before the
    first sequence number: the batch header, the schema version, the topic, the source."""
    return (BATCH_HEAD + msgpack.packb(SCHEMA_VERSION) + msgpack.packb(topic)
            + msgpack.packb(source))


def _join_batch(batch_head: bytes, first_seq: bytes, walls: bytes, monos: bytes,
                payloads: list[bytes]) -> bytes:
    """A batch frame from its parts, each already msgpack: the head (topic_head +
    batch_prefix), the first sequence number, the arrays of wall and monotonic times, and
    the payloads (their array header is written here)."""
    return b"".join([batch_head, first_seq, walls, monos, array_header(len(payloads)),
                     *payloads])


# --- the publisher's writer: a constant prefix and one struct call per message -------------

ENVELOPE_HEAD = ENVELOPE_ARRAY + msgpack.packb(SCHEMA_VERSION)  # array header, version
MSGPACK_UINT64 = 0xCF  # msgpack type byte of a 64-bit unsigned integer
MSGPACK_FLOAT64 = 0xCB  # msgpack type byte of a 64-bit float
STAMPS_FORMAT = "BQBdBd"  # struct format: seq (uint 64), wall_time, mono_time (float 64)
encode_payload = msgspec.msgpack.Encoder().encode
"""payload -> msgpack bytes (str as str, bytes as bin: the same encoding as msgpack's; a
float always as float 64, which the stamps of a batch rely on)."""
_seq_head = struct.Struct(">BQ").pack  # (UINT64, seq) -> seq as msgpack uint 64


class FrameWriter:
    """The frames of one (topic, source) as its publisher writes them. Everything before
    the sequence number never changes for the pair (topic, TOPIC_END, envelope header,
    version, topic, source): it is packed once, and each message costs one struct call
    (sequence number as msgpack uint 64, the stamps as float 64) and one concatenation."""

    __slots__ = ("topic_head", "overhead", "message", "batch")

    def __init__(self, topic: str, source: str) -> None:
        topic_head = topic.encode() + TOPIC_END
        self.topic_head = topic_head
        """what a frame of this topic starts with, before the envelope (or the batch)."""
        prefix = topic_head + ENVELOPE_HEAD + msgpack.packb(topic) + msgpack.packb(source)
        stamps = f">{STAMPS_FORMAT}"
        self.overhead = len(prefix) - len(topic_head) + struct.calcsize(stamps)
        """bytes of an envelope of this topic that are not its payload."""
        pack = struct.Struct(f">{len(prefix)}s{STAMPS_FORMAT}").pack
        batch_head = topic_head + batch_prefix(topic, source)
        uint64, float64, encode_stamps = MSGPACK_UINT64, MSGPACK_FLOAT64, encode_payload

        def message(seq: int, wall: float, mono: float, payload: bytes) -> bytes:
            """The frame of one message, its payload already msgpack."""
            return pack(prefix, uint64, seq, float64, wall, float64, mono) + payload

        def batch(first_seq: int, walls: list[float], monos: list[float],
                  payloads: list[bytes]) -> bytes:
            """The batch frame of consecutive messages from ``first_seq`` on."""
            return _join_batch(batch_head, _seq_head(uint64, first_seq),
                               encode_stamps(walls), encode_stamps(monos), payloads)

        self.message = message
        self.batch = batch


def batch_frame(topic_head: bytes, envelopes: list[bytes]) -> bytes:
    """The batch frame of encoded envelopes of one topic (``topic_head`` = topic bytes +
    TOPIC_END): they must share version, topic and source and have consecutive sequence
    numbers (ValueError otherwise). One envelope makes a plain message frame."""
    if len(envelopes) == 1:
        return topic_head + envelopes[0]
    try:
        parts = [_split_envelope(envelope) for envelope in envelopes]
    except Exception as exc:  # msgspec's errors
        raise ValueError(f"not an envelope ({type(exc).__name__}: {exc})") from None
    version, topic, source, first, *_ = parts[0]
    for i, (v, t, s, seq, *_) in enumerate(parts):
        if (bytes(v), bytes(t), bytes(s)) != (bytes(version), bytes(topic), bytes(source)):
            raise ValueError(f"envelope {i} is of another version, topic or source")
        if seq != first + i:
            raise ValueError(f"envelope {i} has sequence number {seq}, not {first + i}: a "
                             "batch holds consecutive messages")
    head = array_header(len(parts))
    return _join_batch(b"".join([topic_head, BATCH_HEAD, bytes(version), bytes(topic),
                                 bytes(source)]),
                       msgpack.packb(first),
                       b"".join([head, *(bytes(p[4]) for p in parts)]),
                       b"".join([head, *(bytes(p[5]) for p in parts)]),
                       [bytes(p[6]) for p in parts])


def is_batch_frame(frame: bytes) -> bool:
    """True if ``frame`` (a message frame) is a batch frame."""
    end = frame.find(TOPIC_END, 0, MAX_TOPIC_BYTES)
    return end > 0 and len(frame) > end + 1 and frame[end + 1] == BATCH_MARK


def _batch_parts(frame: bytes, end: int) -> tuple[bytes, int, list, list, list]:
    """(the head every message frame of the batch starts with, the first sequence number,
    and the raw wall times, monotonic times and payloads) of the batch frame ``frame``
    whose topic ends at ``end``; DecodeError if it cannot be taken apart, OversizeError
    past MAX_BATCH_BYTES or MAX_BATCH_MESSAGES."""
    if len(frame) - end - 1 > MAX_BATCH_BYTES:
        raise OversizeError(f"a batch frame of {len(frame) - end - 1} bytes, over the bound "
                            f"of {MAX_BATCH_BYTES}; refused unread (publishers batch up to "
                            "about 33 KiB)")
    try:
        version, topic, source, first, walls, monos, payloads = _split_batch(
            memoryview(frame)[end + 1:])
    except Exception as exc:  # msgspec's errors on truncated or garbled input
        raise DecodeError(f"malformed batch frame ({type(exc).__name__}: {exc})") from None
    count = len(payloads)
    if not count:
        raise DecodeError("an empty batch frame: a batch carries at least one message")
    if count > MAX_BATCH_MESSAGES:
        raise OversizeError(f"a batch frame of {count} messages, over the bound of "
                            f"{MAX_BATCH_MESSAGES}")
    if len(walls) != count or len(monos) != count:
        raise DecodeError(f"malformed batch frame: {len(walls)} wall times, {len(monos)} "
                          f"monotonic times and {count} payloads; one of each per message")
    if not 0 <= first <= MAX_SEQ - count + 1:
        raise DecodeError(f"malformed batch frame: sequence numbers {first} to "
                          f"{first + count - 1} are not all between 0 and {MAX_SEQ}")
    head = frame[:end + 1] + ENVELOPE_ARRAY + bytes(version) + bytes(topic) + bytes(source)
    return head, first, walls, monos, payloads


def unbatch_frame(frame: bytes) -> list[bytes]:
    """The plain message frames in ``frame``: itself unless it is a batch frame, else one
    frame per message, in order, each exactly as it would travel alone (the sequence number
    written in its shortest form). Raises DecodeError for a batch that cannot be taken apart
    (its envelopes are not judged here)."""
    end = frame.find(TOPIC_END, 0, MAX_TOPIC_BYTES)
    if end <= 0 or len(frame) <= end + 1 or frame[end + 1] != BATCH_MARK:
        return [frame]
    head, first, walls, monos, payloads = _batch_parts(frame, end)
    return [b"".join((head, msgpack.packb(first + i), bytes(walls[i]), bytes(monos[i]),
                      bytes(payloads[i]))) for i in range(len(payloads))]


def last_of_batch(frame: bytes) -> bytes:
    """The newest plain message frame in ``frame`` (itself unless a batch frame); a batch
    that cannot be taken apart is returned as it is (its receivers refuse it)."""
    end = frame.find(TOPIC_END, 0, MAX_TOPIC_BYTES)
    if end <= 0 or len(frame) <= end + 1 or frame[end + 1] != BATCH_MARK:
        return frame
    try:
        head, first, walls, monos, payloads = _batch_parts(frame, end)
    except DecodeError:
        return frame
    last = len(payloads) - 1
    return b"".join((head, msgpack.packb(first + last), bytes(walls[last]),
                     bytes(monos[last]), bytes(payloads[last])))


def decode_frame(frame: bytes, max_bytes: int | None = None) -> Envelope:
    """The envelope in a message frame; raises a MessageError subclass (never anything else)
    when the frame is malformed or its topic and the envelope's topic disagree."""
    topic, data = split_frame(frame)
    env = decode(data, max_bytes)
    if env.topic != topic:
        raise DecodeError(f"the frame says topic {topic!r}, the envelope {env.topic!r}",
                          topic=topic, source=env.source)
    return env


def encode_frame(envelope: Envelope, max_bytes: int | None = None) -> bytes:
    """The one wire frame of ``envelope`` (see :func:`encode` for the errors)."""
    return message_frame(envelope.topic, encode(envelope, max_bytes))
