"""The typed payloads: one msgspec Struct class per topic payload and per command result,
generated from the declarations in :mod:`robocell.common.bus.topics` when this module is
imported, and named as declared (a topic's ``type_name``, a command's ``result_name``)::

    from robocell.common.bus.payloads import ActuatorResult, Plan

    plan = Plan(plan_id="p1", puzzle="2x2x2", profile="soltvvo-2x2", facelets=f,
                primitives=["R'", "B2"], face_turns=["R'", "B2"], predicted_ms=640.0,
                search={})
    node.publish("solver.plan", plan)          # a Node sends a payload class as its map
    plan.to_payload()                          # the map (absent optional fields left out)
    Plan.from_checked(args["plan"])            # the class of a map checked where it arrived

A class has the declaration's fields as attributes, in its order, optional ones defaulting to
``UNSET`` (absent). Constructing one checks nothing: a message is checked once, where it is
received (:mod:`robocell.common.bus.schema`), and these same classes decode and check every
topic's payload there in C (the wire decoders).
"""

from __future__ import annotations

from typing import Any, Literal, Optional, TypeVar

import msgspec

from robocell.common.bus.topics import MESSAGE_TYPES

_Self = TypeVar("_Self", bound="Payload")
_KEPT_TYPES = (bytes, bytearray, memoryview)
UNSET = msgspec.UNSET


class Payload(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Base of the generated classes: a payload or result as typed attributes."""

    def to_payload(self) -> dict[str, Any]:
        """The map this payload travels as (absent optional fields left out; bytes stay
        bytes)."""
        return msgspec.to_builtins(self, builtin_types=_KEPT_TYPES)

    @classmethod
    def from_checked(cls: type[_Self], values: dict[str, Any]) -> _Self:
        """The payload of a map already checked against this type's declaration (where it
        was received): built as it is, without a second check."""
        nested = _NESTED_FIELDS.get(cls)
        if nested:
            values = {**values, **{name: kind.from_checked(values[name])
                                   for name, kind in nested.items()
                                   if values.get(name) is not None}}
        return cls(**values)


_WIRE_SCALARS: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool,
                                 "bytes": bytes, "any": Any, "map": dict[str, Any]}

PAYLOAD_CLASSES: dict[str, type[Payload]] = {}
"""type name -> its generated class (every name of topics.MESSAGE_TYPES)."""
_NESTED_FIELDS: dict[type, dict[str, type[Payload]]] = {}
"""class -> its fields whose type is another declared type (built by from_checked)."""


def wire_type(text: str) -> Any:
    """The msgspec type of a type expression of the grammar in robocell.common.bus.topics."""
    text = text.strip()
    if text.endswith("?"):
        return Optional[wire_type(text[:-1])]  # noqa: UP045 -- built at run time
    if text in _WIRE_SCALARS:
        return _WIRE_SCALARS[text]
    if text in MESSAGE_TYPES:
        return payload_class(text)
    if text.startswith("list[") and text.endswith("]"):
        return list[wire_type(text[5:-1])]  # type: ignore[misc]
    if text.startswith("map[") and text.endswith("]"):
        return dict[str, wire_type(text[4:-1])]  # type: ignore[misc]
    if text.startswith("enum(") and text.endswith(")"):
        return Literal[tuple(part.strip() for part in text[5:-1].split(","))]  # type: ignore
    raise ValueError(f"unknown field type {text!r} in robocell.common.bus.topics")


def payload_class(name: str) -> type[Payload]:
    """The generated class of the declared type ``name`` (made once)."""
    made = PAYLOAD_CLASSES.get(name)
    if made is not None:
        return made
    try:
        fields = MESSAGE_TYPES[name]
    except KeyError:
        raise ValueError(f"no payload or result type {name!r} is declared in "
                         "robocell.common.bus.topics") from None
    made = msgspec.defstruct(
        name, [(f.name, wire_type(f.type), msgspec.UNSET) if f.optional
               else (f.name, wire_type(f.type)) for f in fields],
        bases=(Payload,), module=__name__, kw_only=True, forbid_unknown_fields=True)
    PAYLOAD_CLASSES[name] = made
    nested = {f.name: payload_class(f.type.rstrip("? ")) for f in fields
              if f.type.rstrip("? ") in MESSAGE_TYPES}
    if nested:
        _NESTED_FIELDS[made] = nested
    return made


for _name in MESSAGE_TYPES:
    payload_class(_name)
globals().update(PAYLOAD_CLASSES)  # each class importable by its name
__all__ = ["PAYLOAD_CLASSES", "UNSET", "Payload", "payload_class", "wire_type",
           *sorted(PAYLOAD_CLASSES)]
