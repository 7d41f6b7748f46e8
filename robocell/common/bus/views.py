"""How bus messages are shown outside the bus, the same way by every viewer (dashboard,
Foxglove bridge, recordings, `bus call --json`): JSON-safe values and the channel the camera
image is published on."""

from __future__ import annotations

import base64
from typing import Any

import msgspec

IMAGE_CHANNEL = "/vision.face/image"
"""The channel of the camera's face images, as Foxglove's CompressedImage, in recordings and
in the live bridge alike."""


def jsonable(value: Any) -> Any:
    """``value`` (decoded msgpack) as JSON-ready data: bytes become base64 text, tuples lists,
    dict keys strings, NaN null, a typed payload (a nested declared type) its map."""
    if isinstance(value, msgspec.Struct):
        value = msgspec.to_builtins(value, builtin_types=(bytes,))
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    return value
