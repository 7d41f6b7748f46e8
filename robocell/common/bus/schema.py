"""Code generated from the topic declarations: validators, fast checks, wire decoders, schemas.

Everything here is derived from :mod:`robocell.common.bus.topics` when this module is
imported: the field-type grammar compiled into explaining validators
(:func:`validate_payload`, :func:`validate`, :func:`validate_args`,
:func:`validate_result`), one generated predicate per topic for the publisher's hot path
(``TOPIC_FAST_CHECKS``), one msgspec decoder per topic that decodes and checks an envelope
(or a batch) in C (``TOPIC_WIRE_DECODERS``, over the payload classes of
:mod:`robocell.common.bus.payloads`), and the JSON Schema of every payload (for MCAP
recordings and Foxglove).
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import msgspec

from robocell.common.bus.payloads import Payload, payload_class
from robocell.common.bus.plain import PLAIN_SCALARS, plain_problem
from robocell.common.bus.topics import (
    ANY_SERVICE,
    COMMAND_SPECS,
    MESSAGE_TYPES,
    TOPIC_SPECS,
    TOPICS,
    CommandSpec,
    F,
    TopicSpec,
)
from robocell.common.bus.wire import (
    MAX_SOURCE_CHARS,
    SCHEMA_VERSION,
    DecodeError,
    Envelope,
    UnknownTopicError,
    ValidationError,
)

# --- the type grammar, compiled into validators -------------------------------------------

Checker = Callable[[Any, str], None]
"""Checks a value; raises ValidationError naming ``where`` (a dotted field path)."""


_short_repr = reprlib.Repr()
_short_repr.maxlevel = 3
_short_repr.maxstring = _short_repr.maxother = 40


def _type_error(where: str, expected: str, value: Any) -> ValidationError:
    text = _short_repr.repr(value)  # bounded: a hostile value must not break the message
    if len(text) > 40:
        text = text[:37] + "..."
    return ValidationError(f"field {where!r}: expected {expected}, got "
                           f"{type(value).__name__} {text}")


def _scalar(expected: str, accept: Callable[[Any], bool]) -> Checker:
    def check(value: Any, where: str) -> None:
        if not accept(value):
            raise _type_error(where, expected, value)
    return check


def _plain(value: Any) -> bool:
    """True if ``value`` is plain bus data within the limits (see
    robocell.common.bus.plain.plain_problem: iterative, so any depth is safe to check)."""
    return type(value) in PLAIN_SCALARS or plain_problem(value) is None


_SCALARS: dict[str, Checker] = {
    "str": _scalar("a string", lambda v: type(v) is str),
    "int": _scalar("an integer", lambda v: type(v) is int),
    "float": _scalar("a number", lambda v: type(v) is float or type(v) is int),
    "bool": _scalar("true or false", lambda v: type(v) is bool),
    "bytes": _scalar("binary data", lambda v: type(v) is bytes),
    "any": _scalar("plain msgpack data", _plain),
    "map": _scalar("a map with string keys",
                   lambda v: isinstance(v, dict) and _plain(v)),
}


def compile_type(text: str) -> Checker:
    """The validator for a type expression of the grammar in the module docstring."""
    text = text.strip()
    if text.endswith("?"):
        inner = compile_type(text[:-1])

        def check_optional(value: Any, where: str) -> None:
            if value is not None:
                inner(value, where)
        return check_optional
    if text in _SCALARS:
        return _SCALARS[text]
    if text in MESSAGE_TYPES:
        return _message_checker(text)
    if text.startswith("list[") and text.endswith("]"):
        item = compile_type(text[5:-1])

        def check_list(value: Any, where: str) -> None:
            if not isinstance(value, list):
                raise _type_error(where, f"a list ({text})", value)
            for index, element in enumerate(value):
                item(element, f"{where}[{index}]")
        return check_list
    if text.startswith("map[") and text.endswith("]"):
        item = compile_type(text[4:-1])

        def check_map(value: Any, where: str) -> None:
            if not isinstance(value, dict):
                raise _type_error(where, f"a map ({text})", value)
            for key, element in value.items():
                if not isinstance(key, str):
                    raise _type_error(f"{where} key", "a string", key)
                item(element, f"{where}.{key}")
        return check_map
    if text.startswith("enum(") and text.endswith(")"):
        allowed = frozenset(part.strip() for part in text[5:-1].split(","))
        listing = ", ".join(sorted(allowed))

        def check_enum(value: Any, where: str) -> None:
            if type(value) is not str or value not in allowed:  # a list is unhashable
                raise _type_error(where, f"one of {listing}", value)
        return check_enum
    raise ValueError(f"unknown field type {text!r} in robocell.common.bus.topics; "
                     "see the type grammar in its module docstring")


def _message_checker(name: str) -> Checker:
    """The validator of a field whose type is the declared type ``name``: a map with
    exactly its fields (a refusal names the field by its path, ``plan.primitives``)."""

    def check_message(value: Any, where: str) -> None:
        if type(value) is not dict:
            raise _type_error(where, f"a map ({name})", value)
        validator = _message_validator(name)
        if not validator.fast_check(value):
            validator.explain(value, path=f"{where}.")
    return check_message


def _message_validator(name: str) -> _FieldsValidator:
    """The validator of the declared type ``name`` (made on first use)."""
    validator = _MESSAGE_VALIDATORS.get(name)
    if validator is None:
        validator = _MESSAGE_VALIDATORS[name] = _FieldsValidator(name, MESSAGE_TYPES[name])
    return validator


_SCALAR_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,), "int": (int,), "float": (float, int), "bool": (bool,), "bytes": (bytes,),
}
"""Exact Python types accepted for scalar fields (checked inline, the hot path)."""


class _FieldsValidator:
    """Checks a payload map against declared fields: required present, none undeclared,
    each value of its type."""

    def __init__(self, owner: str, fields: tuple[F, ...]) -> None:
        seen: set[str] = set()
        for f in fields:
            if f.name in seen:
                raise ValueError(f"{owner}: field {f.name!r} declared twice")
            seen.add(f.name)
        self.owner = owner
        self.fields = {f.name: compile_type(f.type) for f in fields}
        self.exact_types = {f.name: _glance_types(f.type) for f in fields}
        """field -> Python types accepted at a glance (the hot path); any other value of a
        declared field goes through its full checker."""
        self.names = frozenset(self.fields)
        self.required = frozenset(f.name for f in fields if not f.optional)
        self.fast_check = compile_fast_check(fields)
        """payload -> bool: the generated yes/no check (the hot path)."""

    def __call__(self, values: Any) -> None:
        if self.fast_check(values):
            return
        self.explain(values)
        raise ValidationError(f"{self.owner}: payload refused by the fast check but not by "
                              "the full one (a bug in robocell.common.bus.topics)")

    def explain(self, values: Any, path: str = "") -> None:
        """The full check: raises ValidationError saying what is wrong and where. ``path``:
        where these fields sit in an enclosing message (``plan.``); its owner names that
        one, so the message leaves this one's out."""
        owner = "" if path else f"{self.owner}: "
        if type(values) is not dict:
            raise ValidationError(f"{owner}expected a map of fields, got "
                                  f"{type(values).__name__}")
        if not self.required <= values.keys():
            missing = sorted(path + name for name in self.required - values.keys())
            raise ValidationError(f"{owner}missing required field(s) {', '.join(missing)}")
        exact_types = self.exact_types
        for name, value in values.items():
            if type(value) not in exact_types.get(name, _NO_TYPES):
                self._check_field(name, value, values, path)

    def _check_field(self, name: str, value: Any, values: dict[str, Any], path: str) -> None:
        """The full check of one field: undeclared, or not of a scalar type at a glance."""
        owner = "" if path else f"{self.owner}: "
        check = self.fields.get(name)
        if check is None:
            unknown = sorted(path + str(k) for k in values.keys() - self.names)
            raise ValidationError(
                f"{owner}undeclared field(s) {', '.join(unknown)}; declared: "
                f"{', '.join(sorted(self.names)) or 'none'} (add new fields in "
                "robocell.common.bus.topics)")
        try:
            check(value, path + name)
        except ValidationError as exc:
            raise ValidationError(f"{owner}{exc}") from None


_NO_TYPES: frozenset[type] = frozenset()


def _glance_types(text: str) -> frozenset[type]:
    """The Python types that satisfy a type expression on their own: those of a scalar,
    plus None when optional (``str?``); none for lists, maps and enums."""
    text = text.strip()
    if text.endswith("?"):
        inner = _SCALAR_TYPES.get(text[:-1].strip())
        return frozenset((*inner, type(None))) if inner else _NO_TYPES
    return frozenset(_SCALAR_TYPES.get(text, ()))


def _predicate(text: str) -> Callable[[Any], bool]:
    """A fast yes/no check of a type expression (no error text: the full checker of
    compile_type explains a refusal)."""
    text = text.strip()
    if text.endswith("?"):
        inner = _predicate(text[:-1])
        return lambda v: v is None or inner(v)
    if text in _SCALAR_TYPES:
        types = _SCALAR_TYPES[text]
        return lambda v: type(v) in types
    if text == "any":
        return _plain
    if text == "map":
        return lambda v: type(v) is dict and _plain(v)
    if text in MESSAGE_TYPES:
        return lambda v: _message_validator(text).fast_check(v)
    if text.startswith("list[") and text.endswith("]"):
        item = _predicate(text[5:-1])
        return lambda v: type(v) is list and all(map(item, v))
    if text.startswith("map[") and text.endswith("]"):
        item = _predicate(text[4:-1])
        return lambda v: (type(v) is dict and all(type(k) is str for k in v)
                          and all(map(item, v.values())))
    if text.startswith("enum(") and text.endswith(")"):
        allowed = frozenset(part.strip() for part in text[5:-1].split(","))
        return lambda v: type(v) is str and v in allowed
    raise ValueError(f"unknown field type {text!r} in robocell.common.bus.topics")


_PY_TYPE_NAMES = {str: "str", int: "int", float: "float", bool: "bool", bytes: "bytes"}


def _field_test(text: str, slot: int, env: dict[str, Any]) -> str:
    """Python source of a test that is true when the value ``v`` does NOT fit ``text``;
    scalars and enums are written inline, anything else calls a predicate."""
    text = text.strip()
    optional = text.endswith("?")
    base = text[:-1].strip() if optional else text
    if base in _SCALAR_TYPES:
        test = " and ".join(f"type(v) is not {_PY_TYPE_NAMES[t]}"
                            for t in _SCALAR_TYPES[base])
    elif base.startswith("enum(") and base.endswith(")"):
        env[f"E{slot}"] = frozenset(part.strip() for part in base[5:-1].split(","))
        test = f"type(v) is not str or v not in E{slot}"
    else:
        env[f"P{slot}"] = _predicate(base)
        test = f"not P{slot}(v)"
    return f"v is not None and ({test})" if optional else f"({test})"


def compile_fast_check(fields: tuple[F, ...]) -> Callable[[Any], bool]:
    """A function generated from the declaration that answers, as fast as Python allows,
    whether a payload fits: every required field present, none undeclared, each of its
    type. It only says yes or no; the full validator says what is wrong. This is the
    per-message check of publishers and receivers, so it is written out as straight-line
    code (one ``dict.get`` and one type test per field) instead of a loop over specs."""
    env: dict[str, Any] = {"_MISSING": _MISSING}
    required = sum(1 for f in fields if not f.optional)
    lines = ["def fast_check(p):", "    if type(p) is not dict:", "        return False",
             f"    n = {required}"]
    for slot, f in enumerate(fields):
        test = _field_test(f.type, slot, env)
        if f.optional:
            lines += [f"    v = p.get({f.name!r}, _MISSING)", "    if v is not _MISSING:",
                      f"        if {test}:", "            return False", "        n += 1"]
        elif _accepts_none(f.type):  # a missing field must be told from a None
            lines += [f"    v = p.get({f.name!r}, _MISSING)",
                      "    if v is _MISSING or " + test + ":", "        return False"]
        else:  # a missing field reads as None, which its type test refuses
            lines += [f"    v = p.get({f.name!r})", f"    if {test}:", "        return False"]
    lines.append("    return len(p) == n")
    exec("\n".join(lines), env)  # noqa: S102 -- source built above from the declaration
    return env["fast_check"]


_MISSING = object()


def _accepts_none(text: str) -> bool:
    """True if None fits the type expression ``text`` (``T?``, or ``any``)."""
    text = text.strip()
    return text.endswith("?") or text == "any"


def _fields_validator(owner: str, fields: tuple[F, ...]) -> _FieldsValidator:
    return _FieldsValidator(owner, fields)


_TOPIC_VALIDATORS: dict[str, _FieldsValidator] = {
    spec.topic: _fields_validator(f"topic {spec.topic!r}", spec.fields) for spec in TOPICS
}
TOPIC_FAST_CHECKS: dict[str, Callable[[Any], bool]] = {
    topic: validator.fast_check for topic, validator in _TOPIC_VALIDATORS.items()
}
"""topic -> payload -> bool (see compile_fast_check); a False is explained by validate()."""
_MESSAGE_VALIDATORS: dict[str, _FieldsValidator] = {}
"""type name -> its validator, for fields of a declared type (see _message_validator)."""
_ARGS_VALIDATORS: dict[tuple[str, str], _FieldsValidator] = {
    key: _fields_validator(f"command {key[0]}.{key[1]}", spec.args)
    for key, spec in COMMAND_SPECS.items()
}
_RESULT_VALIDATORS: dict[tuple[str, str], _FieldsValidator] = {
    key: _fields_validator("result", spec.result)
    for key, spec in COMMAND_SPECS.items() if spec.result is not None
}

# --- wire decoders: the same declaration as msgspec types (decoding and checking in C) -----

_FREE_VALUES = re.compile(r"\b(any|map)\b(?!\[)")
"""Type expressions with values of any shape ('any', a bare 'map'): the C decoder cannot
tell plain msgpack data from the rest there, so the generated Python check runs too."""


@dataclass(frozen=True)
class WireDecoder:
    """Decodes the envelope of one topic and checks it against the declaration in one C
    call (msgspec): version, topic, source, sequence number, stamps, and every payload
    field (required ones present, none undeclared, each of its type). ``decode(data)``
    returns a struct with the envelope's fields whose ``payload`` is a struct too:
    :meth:`payload` turns it into the payload map. Raises on anything else (the explaining
    checks of :func:`validate` then say what is wrong)."""

    decode: Callable[[Any], Any]
    decode_batch: Callable[[Any], Any]
    """the batch of a batch frame (what follows TOPIC_END; see robocell.common.bus.wire) as
    a struct of ``version, topic, source, seq`` (the first one), ``walls``, ``monos`` and
    ``payloads`` (payload structs); the three lists are not empty, :meth:`batch_count`
    checks that they are equally long."""
    optional: tuple[str, ...]
    """optional fields: absent ones are left out of the payload map."""
    python_check: Callable[[Any], bool] | None
    """the generated Python check, for topics with free-form fields (else None)."""

    def payload(self, struct: Any) -> dict[str, Any]:
        """The payload map of a decoded payload struct (absent optional fields left out)."""
        values = msgspec.structs.asdict(struct)
        for name in self.optional:
            if values[name] is msgspec.UNSET:
                del values[name]
        return values

    def accepts(self, data: Any) -> bool:
        """True if ``data`` is a good envelope of this topic (no explanation when not)."""
        try:
            env = self.decode(data)
        except Exception:  # msgspec's errors, or an extension type refused
            return False
        return self.python_check is None or self.python_check(self.payload(env.payload))

    @staticmethod
    def batch_count(batch: Any) -> int:
        """How many messages a decoded batch holds; 0 if its columns disagree."""
        count = len(batch.payloads)
        return count if len(batch.walls) == count and len(batch.monos) == count else 0

    def accepts_batch(self, data: Any) -> int:
        """How many messages ``data`` (what follows TOPIC_END in a batch frame) holds if it
        is a good batch of this topic (at least one message, every envelope good); else 0."""
        try:
            batch = self.decode_batch(data)
        except Exception:  # msgspec's errors, or an extension type refused
            return 0
        check = self.python_check
        if check is not None and not all(check(self.payload(p)) for p in batch.payloads):
            return 0
        return self.batch_count(batch)


def _refuse_ext(code: int, data: memoryview) -> Any:
    raise DecodeError(f"msgpack extension type {code} is not allowed in bus messages")


def _wire_decoder(spec: TopicSpec) -> WireDecoder:
    payload = payload_class(spec.type_name)
    envelope = msgspec.defstruct(f"{spec.type_name}Envelope", [
        ("version", Literal[SCHEMA_VERSION]),
        ("topic", Literal[spec.topic]),
        ("source", Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_SOURCE_CHARS)]),
        ("seq", Annotated[int, msgspec.Meta(ge=0)]),
        ("wall_time", float),
        ("mono_time", float),
        ("payload", payload),
    ], array_like=True)
    non_empty = msgspec.Meta(min_length=1)
    batch = msgspec.defstruct(f"{spec.type_name}Batch", [
        ("version", Literal[SCHEMA_VERSION]),
        ("topic", Literal[spec.topic]),
        ("source", Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_SOURCE_CHARS)]),
        ("seq", Annotated[int, msgspec.Meta(ge=0)]),
        ("walls", Annotated[list[float], non_empty]),
        ("monos", Annotated[list[float], non_empty]),
        ("payloads", Annotated[list[payload], non_empty]),
    ], array_like=True)
    free = any(_FREE_VALUES.search(f.type) for f in spec.fields)
    return WireDecoder(msgspec.msgpack.Decoder(envelope, ext_hook=_refuse_ext).decode,
                       msgspec.msgpack.Decoder(batch, ext_hook=_refuse_ext).decode,
                       tuple(f.name for f in spec.fields if f.optional),
                       TOPIC_FAST_CHECKS[spec.topic] if free else None)


TOPIC_WIRE_DECODERS: dict[str, WireDecoder] = {spec.topic: _wire_decoder(spec)
                                               for spec in TOPICS}
"""topic -> its WireDecoder (the receivers' hot path)."""
payload_map = msgspec.structs.asdict
"""struct -> map of its fields (absent optional fields are msgspec.UNSET in it)."""
_KEPT_TYPES = (bytes, bytearray, memoryview)


def payload_maps(structs: list[Any]) -> list[dict[str, Any]]:
    """The payload maps of decoded payload structs, absent optional fields left out, in one
    C call (bytes stay bytes)."""
    return msgspec.to_builtins(structs, builtin_types=_KEPT_TYPES)
UNSET = msgspec.UNSET

# --- public API ---------------------------------------------------------------------------


def topic_spec(topic: str) -> TopicSpec:
    """The declaration of ``topic``; UnknownTopicError if it is not declared."""
    try:
        return TOPIC_SPECS[topic]
    except KeyError:
        raise UnknownTopicError(
            f"topic {topic!r} is not declared; declared topics: "
            f"{', '.join(sorted(TOPIC_SPECS))} (declare it in robocell.common.bus.topics)",
            topic=topic,
        ) from None


def validate_payload(topic: str, payload: Any) -> None:
    """Raise UnknownTopicError or ValidationError unless ``payload`` fits ``topic``."""
    validator = _TOPIC_VALIDATORS.get(topic)
    if validator is None:
        topic_spec(topic)  # raises the explanatory error
    try:
        validator(payload)  # type: ignore[misc]
    except ValidationError as exc:
        exc.topic = topic
        raise


def validate(envelope: Envelope) -> Envelope:
    """``envelope`` itself if its payload fits its topic's declaration, else raises.
    (validate_payload written out: this runs for every message in broker and subscriber.)"""
    validator = _TOPIC_VALIDATORS.get(envelope.topic)
    try:
        if validator is None:
            topic_spec(envelope.topic)  # raises the explanatory error
        validator(envelope.payload)  # type: ignore[misc]
    except (ValidationError, UnknownTopicError) as exc:
        exc.topic = envelope.topic
        exc.source = envelope.source
        raise
    return envelope


def command_spec(service: str, command: str) -> CommandSpec | None:
    """The declaration of ``service.command`` (or of a common command), if any."""
    return COMMAND_SPECS.get((service, command)) or COMMAND_SPECS.get((ANY_SERVICE, command))


def validate_args(service: str, command: str, args: Any) -> None:
    """Raise ValidationError unless ``args`` fit the declared arguments of the command.
    Commands that are not declared accept any plain map (declare them to get checks)."""
    key = (service, command) if (service, command) in _ARGS_VALIDATORS else (ANY_SERVICE,
                                                                              command)
    validator = _ARGS_VALIDATORS.get(key)
    if validator is None:
        problem = plain_problem(args) if type(args) is dict else "is not a map"
        if problem is not None:
            raise ValidationError(f"command {service}.{command}: arguments must be a map "
                                  f"of plain values; the arguments {problem}")
        return
    validator(args)


def validate_result(service: str, command: str, result: Any) -> None:
    """Raise ValidationError unless ``result`` fits the declared result of the command (the
    caller's check of a reply). Results of undeclared commands are not checked here (the
    reply's own check took them as plain data)."""
    key = (service, command) if (service, command) in _RESULT_VALIDATORS else (ANY_SERVICE,
                                                                                command)
    validator = _RESULT_VALIDATORS.get(key)
    if validator is not None:
        try:
            validator(result)
        except ValidationError as exc:
            raise ValidationError(f"{service}.{command} {exc}") from None


def result_class(service: str, command: str) -> type[Payload] | None:
    """The generated class of the command's declared result, if it declares one."""
    spec = command_spec(service, command)
    if spec is None or spec.result is None:
        return None
    return payload_class(spec.result_name)


# --- JSON Schema, derived from the same declaration (for MCAP recordings and Foxglove) ------


def type_json_schema(text: str, bytes_as_base64: bool = True) -> dict[str, Any]:
    """JSON Schema of a type expression; ``bytes`` become base64 strings."""
    text = text.strip()
    if text.endswith("?"):
        inner = type_json_schema(text[:-1], bytes_as_base64)
        return {"anyOf": [inner, {"type": "null"}]}
    simple = {"str": {"type": "string"}, "int": {"type": "integer"},
              "float": {"type": "number"}, "bool": {"type": "boolean"},
              "bytes": ({"type": "string", "contentEncoding": "base64"} if bytes_as_base64
                        else {"description": "binary"}),
              "any": {}, "map": {"type": "object"}}
    if text in simple:
        return simple[text]
    if text in MESSAGE_TYPES:
        return fields_json_schema(MESSAGE_TYPES[text], bytes_as_base64) | {
            "title": f"robocell.{text}"}
    if text.startswith("list["):
        return {"type": "array", "items": type_json_schema(text[5:-1], bytes_as_base64)}
    if text.startswith("map["):
        return {"type": "object",
                "additionalProperties": type_json_schema(text[4:-1], bytes_as_base64)}
    if text.startswith("enum("):
        return {"type": "string", "enum": [p.strip() for p in text[5:-1].split(",")]}
    raise ValueError(f"unknown field type {text!r}")


def payload_json_schema(topic: str, bytes_as_base64: bool = True) -> dict[str, Any]:
    """JSON Schema of the payload of ``topic``, with each field's doc as description."""
    spec = topic_spec(topic)
    return {"title": f"robocell.{spec.type_name}", "description": spec.doc,
            **fields_json_schema(spec.fields, bytes_as_base64)}


def fields_json_schema(fields: tuple[F, ...], bytes_as_base64: bool = True
                       ) -> dict[str, Any]:
    """JSON Schema of a map of declared fields, with each field's doc as description."""
    properties = {}
    for f in fields:
        schema = dict(type_json_schema(f.type, bytes_as_base64))
        if f.doc:
            schema["description"] = f.doc
        properties[f.name] = schema
    return {"type": "object", "properties": properties,
            "required": [f.name for f in fields if not f.optional],
            "additionalProperties": False}
