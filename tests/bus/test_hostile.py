"""Hostile input: nothing a sender puts on the bus may take down a broker or a service.

Every receiver bounds what it decodes (depth, size, map keys, string length; see
robocell.common.envelope) and refuses the rest with a MessageError, which is counted and
reported; no other exception may escape into a broker's or a service's I/O loop.
"""

from __future__ import annotations

import msgpack
import pytest

from robocell.common.bus import Subscriber
from robocell.common.envelope import (
    MAX_DEPTH,
    SCHEMA_VERSION,
    TOPIC_END,
    DecodeError,
    Envelope,
    MessageError,
    decode,
)
from robocell.common.messages import TOPIC_WIRE_DECODERS, validate, validate_args

DEEP = 10_000
"""Nesting far past every recursion limit (Python's, msgpack's, msgspec's)."""
ERRORS = {"service": "x", "stage": "scan", "code": "c", "message": "m"}


def nested(depth: int, leaf: object = None, as_map: bool = False) -> object:
    """A value ``depth`` containers deep (lists, or maps with key "k")."""
    value = leaf
    for _ in range(depth):
        value = {"k": value} if as_map else [value]
    return value


def packed_nested(depth: int, as_map: bool = False) -> bytes:
    """msgpack bytes of a value ``depth`` containers deep, written without recursion."""
    return (b"\x81\xa1k" if as_map else b"\x91") * depth + b"\xc0"


def raw_envelope(topic: str, payload_fields: dict[str, bytes], seq: int = 0) -> bytes:
    """An envelope whose payload fields are given as msgpack bytes (any depth)."""
    head = msgpack.packb([SCHEMA_VERSION, topic, "rogue", seq, 1.0, 1.0])[1:]
    payload = bytes([0x80 + len(payload_fields)]) + b"".join(
        msgpack.packb(name) + value for name, value in payload_fields.items())
    return bytes([0x97]) + head + payload


@pytest.mark.parametrize("depth", [40, 450, 900, DEEP])
@pytest.mark.parametrize("as_map", [False, True])
def test_deep_nesting_is_refused_with_a_message_error_by_decode_and_validate(
        depth: int, as_map: bool) -> None:
    data = raw_envelope("errors", {**{k: msgpack.packb(v) for k, v in ERRORS.items()},
                                   "detail": b"\x81\xa1d" + packed_nested(depth, as_map)})
    with pytest.raises(DecodeError, match="deep"):
        decode(data)
    env = Envelope.now("errors", "x", 0, {**ERRORS, "detail": {"d": nested(
        min(depth, 900), as_map=as_map)}})
    with pytest.raises(MessageError):
        validate(env)
    with pytest.raises(MessageError):
        validate_args("nobody", "undeclared", {"a": nested(min(depth, 900), as_map=as_map)})
    assert not TOPIC_WIRE_DECODERS["errors"].accepts(data)


def test_subscriber_refuses_deep_messages_without_raising() -> None:
    sub = Subscriber.__new__(Subscriber)  # only the frame handling, no socket
    Subscriber.__init__(sub, ["errors"])
    try:
        for depth in (40, 450, 900, DEEP):
            data = raw_envelope("errors", {**{k: msgpack.packb(v) for k, v in ERRORS.items()},
                                           "detail": b"\x81\xa1d" + packed_nested(depth)})
            assert sub.handle_frame(b"errors" + TOPIC_END + data) is None
        assert sub.stats.rejected["decode"] == 4
    finally:
        sub.close()


def test_depth_limit_is_generous_for_real_payloads() -> None:
    env = Envelope.now("errors", "x", 0, {**ERRORS, "detail": {"d": nested(MAX_DEPTH - 2)}})
    validate(env)
