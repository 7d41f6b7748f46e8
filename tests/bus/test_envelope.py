"""Envelope encoding and the message declarations: round trips, refusals, and fuzzing."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robocell.common.bus import Endpoints, Subscriber
from robocell.common.bus.schema import (
    _TOPIC_VALIDATORS,
    TOPIC_FAST_CHECKS,
    TOPIC_WIRE_DECODERS,
    UNSET,
    compile_type,
    payload_json_schema,
    payload_map,
    validate,
    validate_args,
    validate_payload,
)
from robocell.common.bus.topics import COMMAND_SPECS, TOPICS
from robocell.common.bus.wire import (
    SCHEMA_VERSION,
    TOPIC_END,
    DecodeError,
    Envelope,
    MessageError,
    OversizeError,
    SchemaVersionError,
    batch_frame,
    decode,
    encode,
    encode_frame,
    max_message_bytes,
    message_frame,
    unbatch_frame,
)

GOOD_STATUS = {"cycle_id": "c1", "stage": "scanning"}
FIELD_NAMES = sorted({f.name for spec in TOPICS for f in spec.fields})


def test_envelope_round_trip_keeps_every_field() -> None:
    env = Envelope.now("cell.status", "cell", 7, GOOD_STATUS)
    back = decode(encode(env))
    assert (back.version, back.topic, back.source, back.seq) == (SCHEMA_VERSION, "cell.status",
                                                                 "cell", 7)
    assert back.wall_time == env.wall_time and back.mono_time == env.mono_time
    assert back.payload == GOOD_STATUS
    assert back.size == env.size > 0


def test_binary_payload_survives_as_bytes() -> None:
    jpeg = bytes(range(256)) * 4
    env = Envelope.now("vision.face", "vision", 0, {"jpeg": jpeg})
    assert decode(encode(env)).payload["jpeg"] == jpeg


def test_oversize_message_is_refused_with_the_limit_in_the_message() -> None:
    env = Envelope.now("vision.face", "vision", 0, {"jpeg": b"x" * 5000})
    with pytest.raises(OversizeError, match="over the limit of 1000 bytes"):
        encode(env, max_bytes=1000)
    data = encode(env)
    with pytest.raises(OversizeError):
        decode(data, max_bytes=1000)


def test_size_limit_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    max_message_bytes.cache_clear()
    monkeypatch.setenv("ROBOCELL_BUS_MAX_BYTES", "200")
    with pytest.raises(OversizeError):
        encode(Envelope.now("cell.status", "cell", 0, {"detail": "y" * 300}))
    max_message_bytes.cache_clear()
    monkeypatch.setenv("ROBOCELL_BUS_MAX_BYTES", "lots")
    with pytest.raises(ValueError, match="ROBOCELL_BUS_MAX_BYTES"):
        encode(Envelope.now("cell.status", "cell", 0, GOOD_STATUS))
    monkeypatch.delenv("ROBOCELL_BUS_MAX_BYTES")
    max_message_bytes.cache_clear()


def test_wrong_schema_version_is_refused() -> None:
    data = msgpack.packb([SCHEMA_VERSION + 1, "cell.status", "cell", 0, 1.0, 1.0, GOOD_STATUS])
    with pytest.raises(SchemaVersionError, match="schema version 2"):
        decode(data)


@pytest.mark.parametrize("fields, needle", [
    ([1, "t"], "array of 7"),
    ({"a": 1}, "array of 7"),
    ([1, "", "s", 0, 1.0, 1.0, {}], "topic"),
    ([1, "t", 5, 0, 1.0, 1.0, {}], "source"),
    ([1, "t", "s", -1, 1.0, 1.0, {}], "sequence"),
    ([1, "t", "s", True, 1.0, 1.0, {}], "sequence"),
    ([1, "t", "s", 0, "now", 1.0, {}], "wall_time"),
    ([1, "t", "s", 0, 1.0, 1.0, [1]], "payload must be a map"),
    (["1", "t", "s", 0, 1.0, 1.0, {}], "schema version"),
])
def test_malformed_envelopes_are_refused_with_a_reason(fields: object, needle: str) -> None:
    with pytest.raises(DecodeError, match=needle):
        decode(msgpack.packb(fields))


def test_msgpack_extension_types_are_refused() -> None:
    data = msgpack.packb([1, "t", "s", 0, 1.0, 1.0, {"x": msgpack.ExtType(5, b"abc")}])
    with pytest.raises(DecodeError, match="extension type 5"):
        decode(data)


def test_payload_that_msgpack_cannot_carry_is_refused() -> None:
    with pytest.raises(MessageError, match="cannot be encoded"):
        encode(Envelope.now("cell.status", "cell", 0, {"cycle_id": object()}))


# --- validation derived from the declarations ---------------------------------------------


def test_every_declared_type_compiles_and_has_a_json_schema() -> None:
    for spec in TOPICS:
        for f in spec.fields:
            compile_type(f.type)
        schema = payload_json_schema(spec.topic)
        assert set(schema["properties"]) == {f.name for f in spec.fields}


@pytest.mark.parametrize("payload, needle", [
    ({"cycle_id": "c1"}, "missing required field"),
    ({"cycle_id": "c1", "stage": "idle", "colour": "red"}, "undeclared field"),
    ({"cycle_id": 3, "stage": "idle"}, "field 'cycle_id': expected a string"),
    ({"cycle_id": "c1", "stage": "dancing"}, "expected one of"),
    ({"cycle_id": "c1", "stage": ["idle"]}, "expected one of"),  # unhashable, not a crash
    ({"cycle_id": "c1", "stage": True}, "expected one of"),
    ({"cycle_id": "c1", "stage": "idle", "detail": None}, "expected a string"),
])
def test_payload_with_wrong_fields_is_refused_naming_the_field(payload: dict,
                                                               needle: str) -> None:
    with pytest.raises(MessageError, match=needle):
        validate_payload("cell.status", payload)


def test_nested_types_are_checked_down_to_the_element() -> None:
    good = {"cycle_id": "c", "ok": True, "stages_s": {"scan": 1.5, "solve": 2}, "total_s": 3.5}
    validate_payload("cell.result", good)
    with pytest.raises(MessageError, match=r"stages_s\.solve"):
        validate_payload("cell.result", {**good, "stages_s": {"scan": 1.5, "solve": "fast"}})
    face = {"scan_id": "s", "pose": 0, "face": "U", "size": 3, "jpeg": b"",
            "grid": [[1.0, 2.0], [3, "x"]], "colors": [], "confidence": [], "ok": True}
    with pytest.raises(MessageError, match=r"grid\[1\]\[1\]"):
        validate_payload("vision.face", face)


def test_unknown_topic_is_refused_with_the_declared_list() -> None:
    with pytest.raises(MessageError, match="not declared") as info:
        validate_payload("cube.stat", {})
    assert info.value.reason == "unknown_topic"
    assert "vision.cube_state" in str(info.value)


def test_command_arguments_are_checked_against_the_declaration() -> None:
    assert ("solver", "solve") in COMMAND_SPECS
    validate_args("solver", "solve", {"facelets": "U" * 54})
    with pytest.raises(MessageError, match="missing required field"):
        validate_args("solver", "solve", {})
    with pytest.raises(MessageError, match="expected an integer"):
        validate_args("cell", "scramble", {"moves": "many"})
    validate_args("anything", "undeclared", {"free": [1, 2]})  # undeclared: any plain map


# --- fuzzing the decoder ------------------------------------------------------------------

msgpack_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.floats()
    | st.text(max_size=20) | st.binary(max_size=20),
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=8,
)


@settings(max_examples=1500, deadline=None)
@given(st.binary(max_size=300))
def test_decoder_never_raises_anything_but_message_error_on_random_bytes(data: bytes) -> None:
    try:
        env = decode(data)
    except MessageError:
        return
    assert isinstance(env.payload, dict)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(msgpack_values, min_size=6, max_size=8))
@pytest.mark.slow
def test_decoder_and_validator_survive_envelope_shaped_garbage(fields: list) -> None:
    data = msgpack.packb(fields, use_bin_type=True)
    try:
        env = decode(data)
        validate(env)
    except MessageError:
        return
    assert env.topic in {spec.topic for spec in TOPICS}


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([spec.topic for spec in TOPICS]),
       st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=6), msgpack_values,
                       max_size=6))
@pytest.mark.slow
def test_validator_refuses_random_payloads_only_with_message_error(topic: str,
                                                                   payload: dict) -> None:
    try:
        validate_payload(topic, payload)
    except MessageError:
        return


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=64), st.integers(0, 80))
def test_truncated_or_corrupted_valid_message_is_refused_cleanly(noise: bytes,
                                                                  cut: int) -> None:
    data = bytearray(encode(Envelope.now("cell.status", "cell", 1, GOOD_STATUS)))
    data[cut % len(data)] ^= noise[0]
    for candidate in (bytes(data), bytes(data[:cut])):
        try:
            validate(decode(candidate))
        except MessageError:
            pass


# --- the generated fast checks agree with the full validator -------------------------------


def values_of(type_text: str) -> st.SearchStrategy:
    """Values of a declared type (any of them may be swapped for a wrong one below)."""
    text = type_text.strip()
    if text.endswith("?"):
        return st.none() | values_of(text[:-1])
    if text.startswith("list[") and text.endswith("]"):
        return st.lists(values_of(text[5:-1]) | msgpack_values, max_size=3)
    if text.startswith("map[") and text.endswith("]"):
        return st.dictionaries(st.text(max_size=4), values_of(text[4:-1]) | msgpack_values,
                               max_size=3)
    if text.startswith("enum(") and text.endswith(")"):
        return st.sampled_from([part.strip() for part in text[5:-1].split(",")])
    if text in NAMED_TYPES:
        return near_valid_maps(NAMED_TYPES[text])
    return {"str": st.text(max_size=5), "int": st.integers(-5, 5), "bool": st.booleans(),
            "float": st.floats() | st.integers(-5, 5), "bytes": st.binary(max_size=5),
            "any": msgpack_values, "map": st.dictionaries(st.text(max_size=4), msgpack_values,
                                                          max_size=3)}[text]


NAMED_TYPES = {spec.type_name: spec.fields for spec in TOPICS}
"""A topic's payload type by name, as a field of another may declare it (``list[FaceResult]``)."""


@st.composite
def near_valid_payloads(draw: st.DrawFn) -> tuple[str, dict]:
    spec = draw(st.sampled_from(TOPICS))
    return spec.topic, draw(near_valid_maps(spec.fields))


@st.composite
def near_valid_maps(draw: st.DrawFn, fields: tuple) -> dict:
    """A map of ``fields``, now and then with one missing, wrong or undeclared."""
    payload = {}
    for f in fields:
        if f.optional and draw(st.booleans()):
            continue
        if draw(st.integers(0, 9)) == 0:
            continue  # a required field missing, now and then
        wrong = draw(st.integers(0, 9)) == 0
        payload[f.name] = draw(msgpack_values if wrong else values_of(f.type))
    if draw(st.integers(0, 9)) == 0:
        payload[draw(st.text(max_size=6))] = draw(msgpack_values)  # maybe undeclared
    return payload


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near_valid_payloads())
@pytest.mark.slow
def test_generated_fast_check_agrees_with_the_full_validator(case: tuple[str, dict]) -> None:
    topic, payload = case
    fast = TOPIC_FAST_CHECKS[topic](payload)
    try:
        _TOPIC_VALIDATORS[topic].explain(payload)
        full = True
    except MessageError:
        full = False
    assert fast == full, (topic, payload)


# --- the receivers' compiled decoders agree with the full validator ------------------------


def same_value(a: object, b: object) -> bool:
    """Equal, with NaN equal to NaN and an int equal to the float a float field made of it."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(same_value, a, b))
    return type(a) is type(b) and a == b or (
        {type(a), type(b)} == {int, float} and a == b)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near_valid_payloads(), st.sampled_from([1, 2]), st.integers(-1, 3))
@pytest.mark.slow
def test_compiled_wire_decoder_agrees_with_the_full_validator(
        case: tuple[str, dict], version: int, seq: int) -> None:
    """What a receiver accepts on its fast path (one msgspec call generated from the
    declaration), the full decoder and validator accept too, with the same payload; and the
    other way round."""
    topic, payload = case
    data = msgpack.packb([version, topic, "fuzz", seq, 1.0, 2.0, payload], use_bin_type=True)
    try:
        full = validate(decode(data))
    except MessageError:
        full = None
    wire = TOPIC_WIRE_DECODERS[topic]
    try:
        fast = wire.decode(data)
        fast_payload = payload_map(fast.payload)
        for name in wire.optional:
            if fast_payload[name] is UNSET:
                del fast_payload[name]
        if wire.python_check is not None and not wire.python_check(fast_payload):
            fast_payload = None
    except Exception:
        fast_payload = None
    assert (fast_payload is None) == (full is None), (topic, payload, version, seq)
    if full is not None:
        assert same_value(fast_payload, full.payload)
        assert (fast.source, fast.seq, fast.wall_time) == (full.source, full.seq,
                                                           full.wall_time)


def test_receiver_fast_path_and_slow_path_give_the_same_envelope() -> None:
    """A frame the compiled decoder takes and one it leaves to the explaining path (an
    integer time stamp) come out as the same kind of Envelope."""
    sub = Subscriber([""], Endpoints.from_base("tcp://127.0.0.1:9"))
    try:
        fast = sub.handle_frame(encode_frame(Envelope("cell.status", "cell", 0, 10.0, 1.0,
                                                      GOOD_STATUS)))
        slow = sub.handle_frame(message_frame("cell.status", msgpack.packb(
            [SCHEMA_VERSION, "cell.status", "cell", 1, 11, 2, GOOD_STATUS])))
        assert fast is not None and slow is not None
        assert (fast.seq, fast.payload, type(fast.wall_time)) == (0, GOOD_STATUS, float)
        assert (slow.seq, slow.payload, slow.wall_time) == (1, GOOD_STATUS, 11.0)
        assert type(slow.wall_time) is float and sub.stats.received == 2
        jpeg = bytes(range(256)) * 400  # a large frame is decoded without slicing it first
        face = {"scan_id": "s", "pose": 0, "face": "U", "size": 3, "jpeg": jpeg,
                "grid": [[1.0, 2.0]] * 9, "colors": [[1, 2, 3]] * 9, "confidence": [0.5] * 9,
                "ok": True}
        big = sub.handle_frame(encode_frame(Envelope("vision.face", "vision", 0, 10.0, 1.0,
                                                     face)))
        assert big is not None and big.payload == face and type(big.payload["jpeg"]) is bytes
    finally:
        sub.close()


# --- a batch frame is judged as its messages would be, one by one -------------------------


@st.composite
def batches(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    """A batch frame of one topic and source (its messages near-valid), maybe corrupted,
    and the plain frames of its messages (empty if the corruption left none)."""
    spec = draw(st.sampled_from([s for s in TOPICS if s.topic != "cmd.request"]))
    head = spec.topic.encode() + TOPIC_END
    first = draw(st.integers(0, 2**40) | st.integers(2**64 - 8, 2**64 - 1))
    envelopes = []
    for i in range(min(draw(st.integers(2, 6)), 2**64 - first)):  # seqs up to the largest
        _, payload = draw(near_valid_payloads().filter(lambda case: case[0] == spec.topic)) \
            if draw(st.booleans()) else (None, draw(values_payload(spec)))
        envelopes.append(msgpack.packb([1, spec.topic, "fuzz", first + i,
                                        draw(st.floats(0, 2e9)), draw(st.floats(0, 1e6)),
                                        payload]))
    frame = batch_frame(head, envelopes)
    if draw(st.integers(0, 3)) == 0:  # a byte changed somewhere after the topic
        at = draw(st.integers(len(head), len(frame) - 1))
        frame = frame[:at] + bytes([draw(st.integers(0, 255))]) + frame[at + 1:]
    try:
        singles = unbatch_frame(frame)
    except DecodeError:
        singles = []
    return frame, singles


def values_payload(spec: object) -> st.SearchStrategy:
    """A payload of good values for every field of ``spec`` (optional ones maybe left out)."""
    return st.fixed_dictionaries({f.name: values_of(f.type) for f in spec.fields
                                  if not f.optional},
                                 optional={f.name: values_of(f.type) for f in spec.fields
                                           if f.optional})


def received(frames: list[bytes]) -> tuple[list[list], dict[str, int]]:
    """What a fresh subscriber to every topic accepts of ``frames`` (all it queues), and
    what it refuses."""
    sub = Subscriber([spec.topic for spec in TOPICS], Endpoints.from_base("tcp://127.0.0.1:1"))
    try:
        got = []
        for frame in frames:
            env = sub.handle_frame(frame)
            while env is not None:
                got.append([env.topic, env.source, env.seq, env.wall_time, env.mono_time,
                            env.payload])  # (a list: same_value compares NaN as equal)
                env = sub.recv(0)  # the rest of a batch, queued (the socket has none)
        return got, dict(sub.stats.rejected)
    finally:
        sub.close()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
@pytest.mark.slow
def test_a_batch_frame_is_accepted_and_refused_as_its_messages_alone_would_be(
        case: tuple[bytes, list[bytes]]) -> None:
    frame, singles = case
    as_batch, refused_as_batch = received([frame])
    if not singles:  # it cannot be taken apart: refused whole, nothing accepted
        assert as_batch == [] and refused_as_batch == {"decode": 1}
        return
    alone, refused_alone = received(singles)
    assert len(as_batch) == len(alone) and all(map(same_value, as_batch, alone))
    assert refused_as_batch == refused_alone
