"""Plain bus data: what a payload may hold, and the limits a receiver puts on hostile input
(depth, map keys, list items, string length), checked without recursion."""

from __future__ import annotations

import reprlib
from typing import Any

MAX_DEPTH = 32
"""Deepest nesting of lists and maps in a payload (the payload map itself is level 1). Real
payloads nest a few levels; a checker that recursed would fail at about 450 levels, so every
check here is iterative and refuses anything deeper than this."""
MAX_MAP_KEYS = 10_000
"""Most keys of one map in a received message (a 1 M-key map is refused before it is built)."""
MAX_ARRAY_ITEMS = 100_000
"""Most items of one list in a received message."""
MAX_STR_BYTES = 1024 * 1024
"""Longest string in a received message, in UTF-8 bytes (binary data, e.g. a JPEG, may fill
the whole message)."""
PLAIN_SCALARS = frozenset((str, bytes, int, float, bool, type(None)))
"""The Python types of msgpack's scalars: plain data at any depth."""

_short_repr = reprlib.Repr()
_short_repr.maxlevel = 3
_short_repr.maxstring = _short_repr.maxother = 40


def describe(value: Any) -> str:
    """Type and a short repr of ``value`` for an error message (bounded in depth and length,
    so a hostile value cannot make the explanation itself fail or cost much)."""
    text = _short_repr.repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(value).__name__} {text}"


def plain_problem(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """What keeps ``value`` from being plain bus data, or None if it is: only str, bytes,
    int, float, bool, None, lists and maps with string keys, nested at most ``max_depth``
    levels, maps of at most MAX_MAP_KEYS keys, lists of at most MAX_ARRAY_ITEMS items.
    Iterative (an explicit stack), so any depth costs no recursion; stops at the first
    problem, so a hostile value costs at most about its size."""
    scalars = PLAIN_SCALARS
    stack: list[tuple[Any, int]] = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        kind = type(item)
        if kind is dict:
            if depth > max_depth:
                return f"is nested too deep (more than {max_depth} levels of lists and maps)"
            if len(item) > MAX_MAP_KEYS:
                return f"holds a map of {len(item)} keys (at most {MAX_MAP_KEYS})"
            for key, member in item.items():
                if type(key) is not str:
                    return f"holds a map key that is not a string ({describe(key)})"
                member_kind = type(member)
                if member_kind is dict or member_kind is list:
                    push((member, depth + 1))
                elif member_kind not in scalars:
                    return f"holds a value that is not plain data ({describe(member)})"
        elif kind is list:
            if depth > max_depth:
                return f"is nested too deep (more than {max_depth} levels of lists and maps)"
            if len(item) > MAX_ARRAY_ITEMS:
                return f"holds a list of {len(item)} items (at most {MAX_ARRAY_ITEMS})"
            for member in item:
                member_kind = type(member)
                if member_kind is dict or member_kind is list:
                    push((member, depth + 1))
                elif member_kind not in scalars:
                    return f"holds a value that is not plain data ({describe(member)})"
        elif kind not in scalars:
            return f"is not plain data ({describe(item)})"
    return None
