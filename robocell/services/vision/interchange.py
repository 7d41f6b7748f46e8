"""The colour-scan interchange format of open-source cube robots: JSON ``{"1": [r, g, b], ...}``.

Stickers are numbered 1..6·N² face by face in the order U, L, F, R, B, D, each face row-major
in the usual net orientation. Internally stickers are in kociemba order (U R F D L B).

`load_colours` also takes what `robocell vision scan --json` and `vision resolve --json`
print (``"stickers"``: the colours in kociemba order, ``"size"``, and, from frames,
``"tints"``), so a scan's output can be resolved again.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from robocell.errors import RobocellError

SCAN_FACE_ORDER = "ULFRBD"
FACELET_FACE_ORDER = "URFDLB"
N_FACES = 6


def scan_to_facelet_order(size: int) -> np.ndarray:
    """``order[k]`` = 0-based scan number of the sticker at facelet index ``k``."""
    area = size * size
    return np.array([SCAN_FACE_ORDER.index(face) * area + i
                     for face in FACELET_FACE_ORDER for i in range(area)], dtype=np.int64)


class ScanFormatError(RobocellError, ValueError):
    """A scan file that does not follow the interchange format."""


def parse_scan(data: object, where: str = "scan", size: int | None = None
               ) -> tuple[np.ndarray, int]:
    """Sticker colours in facelet order (6·N² x 3 float) and N from a decoded scan."""
    if not isinstance(data, dict):
        raise ScanFormatError(f"{where}: expected a JSON object mapping sticker numbers to "
                              f"[r, g, b], got {type(data).__name__}")
    count = len(data)
    asked = size
    if size is None:
        size = math.isqrt(count // N_FACES)
    area = size * size
    if count != N_FACES * area or size not in (2, 3):
        raise ScanFormatError(f"{where}: {count} stickers; a 2x2 scan has 24 and a 3x3 has 54"
                              + (f" (asked for size {asked})" if asked else ""))
    colours = np.empty((N_FACES * area, 3))
    for number in range(1, N_FACES * area + 1):
        value = data.get(str(number))
        if value is None:
            raise ScanFormatError(f"{where}: sticker {number} is missing")
        if (not isinstance(value, list | tuple) or len(value) != 3
                or not all(isinstance(v, int | float) and 0 <= v <= 255 for v in value)):
            raise ScanFormatError(f"{where}: sticker {number} must be [r, g, b] with values "
                                  f"0..255, got {value!r}")
        colours[number - 1] = value
    return colours[scan_to_facelet_order(size)], size


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise ScanFormatError(f"{path}: cannot read ({exc.strerror})") from exc
    except json.JSONDecodeError as exc:
        raise ScanFormatError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from exc


def load_scan(path: str | Path, size: int | None = None) -> tuple[np.ndarray, int]:
    """Read a scan file; see `parse_scan`."""
    path = Path(path)
    return parse_scan(_read_json(path), str(path), size)


def _rgb_rows(values: object, where: str, what: str, allow_none: bool) -> np.ndarray:
    if not isinstance(values, list):
        raise ScanFormatError(f"{where}: {what!r} must be a list of [r, g, b]")
    rows = np.full((len(values), 3), np.nan)
    for i, value in enumerate(values):
        if value is None and allow_none:
            continue
        if (not isinstance(value, list | tuple) or len(value) != 3
                or not all(isinstance(v, int | float) and 0 <= v <= 255 for v in value)):
            raise ScanFormatError(f"{where}: {what}[{i}] must be [r, g, b] with values "
                                  f"0..255, got {value!r}")
        rows[i] = value
    return rows


def parse_result(data: dict, where: str = "result", size: int | None = None
                 ) -> tuple[np.ndarray, int, np.ndarray | None]:
    """(colours, size, tints or None) from a robocell reading: ``"stickers"`` in kociemba
    order, its ``"size"``, optional ``"tints"`` (null where none)."""
    colours = _rgb_rows(data["stickers"], where, "stickers", allow_none=False)
    found = data.get("size")
    if size is None:
        size = found if found in (2, 3) else {24: 2, 54: 3}.get(len(colours))
    if size not in (2, 3) or len(colours) != N_FACES * size * size:
        raise ScanFormatError(f"{where}: {len(colours)} stickers; a 2x2 has 24 and a 3x3 has "
                              "54" + (f" (size {size})" if size else ""))
    tints = data.get("tints")
    if tints is None:
        return colours, size, None
    tints = _rgb_rows(tints, where, "tints", allow_none=True)
    if tints.shape != colours.shape:
        raise ScanFormatError(f"{where}: {len(tints)} tints for {len(colours)} stickers")
    return colours, size, tints


def load_colours(path: str | Path, size: int | None = None
                 ) -> tuple[np.ndarray, int, np.ndarray | None]:
    """(colours in kociemba order, size, tints or None) from a scan file in the interchange
    format or a robocell reading (`vision scan --json`, `vision resolve --json`)."""
    path = Path(path)
    data = _read_json(path)
    if isinstance(data, dict) and "stickers" in data:
        return parse_result(data, str(path), size)
    colours, size = parse_scan(data, str(path), size)
    return colours, size, None


def to_scan(colours: np.ndarray, size: int) -> dict[str, list[int]]:
    """Facelet-order colours back to the interchange format."""
    order = scan_to_facelet_order(size)
    out: dict[str, list[int]] = {}
    for facelet, number in enumerate(order):
        out[str(int(number) + 1)] = [int(round(v)) for v in colours[facelet]]
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))
