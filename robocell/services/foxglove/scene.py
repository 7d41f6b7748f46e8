"""A cube in Foxglove's 3D panel: its cubies with their sticker colours, one layer turned part way.

Geometry is :func:`robocell.common.facelets.sticker_geometry`'s: cubie centres at -(n-1) ..
n-1 in steps of 2, stickers on the planes +-n, y up. Foxglove's frames are z up, so a point
(x, y, z) of the cube is drawn at (z, x, y) (a proper rotation: F faces +x, R +y, U +z), and
one cube unit is ``UNIT_M`` metres (a 3x3 is a real cube's 57 mm).

:func:`find_turns` says which layer turn (or which two turns of one axis, an axial move)
carried one facelet string to the next (the twin publishes its cube after each motion), so that
:func:`cube_scene` can draw the layers part way through it: the cube turns in Foxglove as the
twin turns.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from foxglove.messages import (
    Color,
    CubePrimitive,
    Pose,
    Quaternion,
    SceneEntity,
    SceneUpdate,
    TextPrimitive,
    Timestamp,
    Vector3,
)

from robocell.common.facelets import (
    FACE_NORMALS,
    FACES,
    OPPOSITE_FACE,
    size_of,
    sticker_geometry,
)

UNIT_M = 0.0095
"""Metres per cube unit (half a cubie): a 3x3 is 6 units, 57 mm."""
FRAME = "world"
STICKER_RGB: dict[str, tuple[int, int, int]] = {
    "U": (244, 244, 238), "R": (196, 30, 58), "F": (0, 158, 96),
    "D": (255, 213, 0), "L": (255, 88, 0), "B": (0, 81, 186),
}
"""Colour of the sticker of each face's centre (the dashboard's western scheme)."""
UNKNOWN_RGB = (85, 85, 85)
BODY_RGB = (20, 20, 20)
BODY_SIZE = 1.96
"""Edge of a cubie's body, in cube units (a cubie is 2 units apart from the next)."""
STICKER_SIZE = 1.7
STICKER_THICKNESS = 0.08
QUARTER = math.pi / 2


@dataclass(frozen=True)
class Turn:
    """A turn of the ``layers`` outer layers on ``face`` by ``quarters`` clockwise quarter
    turns (1, 2 or -1 for counter-clockwise), as seen looking at the face."""

    face: str
    layers: int
    quarters: int

    def angle(self, fraction: float = 1.0) -> float:
        """The rotation about the face's outward normal, in radians (right hand rule), after
        ``fraction`` of the turn."""
        return -self.quarters * QUARTER * fraction


@dataclass(frozen=True)
class CubeLabel:
    """Where a cube is drawn and what its label says."""

    name: str
    """entity id prefix, e.g. ``twin``"""
    text: str
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """position of the cube's centre in Foxglove's frame, metres"""


@cache
def _geometry(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    positions, normals = sticker_geometry(size)
    return positions, normals, positions - normals  # the centre of each sticker's cubie


def _rotation(axis: tuple[int, int, int], angle: float) -> np.ndarray:
    """Rotation matrix about a unit axis (Rodrigues)."""
    a = np.asarray(axis, dtype=float)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * (k @ k)


def _in_layers(centres: np.ndarray, size: int, turn: Turn) -> np.ndarray:
    """Mask of the rows of ``centres`` (cubie centres) that ``turn`` carries."""
    along = centres @ np.asarray(FACE_NORMALS[turn.face])
    return along >= (size - 1) - 2 * (turn.layers - 1)


@cache
def _source(size: int, turn: Turn) -> np.ndarray:
    """For each sticker position after ``turn``, the position its sticker came from."""
    positions, normals, centres = _geometry(size)
    index = {(tuple(p), tuple(n)): i for i, (p, n) in
             enumerate(zip(positions.tolist(), normals.tolist(), strict=True))}
    rotation = np.rint(_rotation(FACE_NORMALS[turn.face], turn.angle())).astype(np.int64)
    source = np.arange(len(positions))
    for i in np.flatnonzero(_in_layers(centres, size, turn)):
        source[index[(tuple((rotation @ positions[i]).tolist()),
                      tuple((rotation @ normals[i]).tolist()))]] = i
    return source


@cache
def _turns(size: int) -> tuple[Turn, ...]:
    return tuple(Turn(face, layers, quarters) for layers in range(1, size + 1)
                 for face in FACES for quarters in (1, -1, 2))


def _size(facelets: str) -> int:
    size = size_of(facelets)
    if size is None:
        raise ValueError(f"a cube has 24 or 54 facelets, not {len(facelets)}")
    return size


def apply_turn(facelets: str, turn: Turn) -> str:
    """The facelet string after ``turn``, by moving stickers in space."""
    stickers = np.frombuffer(facelets.encode(), dtype=np.uint8)
    return stickers[_source(_size(facelets), turn)].tobytes().decode()


def find_turn(before: str, after: str, prefer: Iterable[str] = ()) -> Turn | None:
    """The single layer turn (outer layers of one face, any depth up to the whole cube) that
    carries ``before`` to ``after``, or None when none does (or they are equal). Faces in
    ``prefer`` (e.g. the arms that just turned) are tried first, then fewer layers first."""
    turns = find_turns(before, after, prefer, axial=False)
    return turns[0] if turns else None


def find_turns(before: str, after: str, prefer: Iterable[str] = (), axial: bool = True
               ) -> tuple[Turn, ...] | None:
    """The motion that carries ``before`` to ``after``: one layer turn (see
    :func:`find_turn`) or, with ``axial``, an axial move (outer layers of two opposite faces
    turned at once, each its own way, as a six-motor robot does), or None when neither
    explains it (or the states are equal)."""
    size = size_of(before)
    if size is None or len(after) != len(before) or before == after:
        return None
    was = np.frombuffer(before.encode(), dtype=np.uint8)
    now = np.frombuffer(after.encode(), dtype=np.uint8)
    preferred = set(prefer)
    singles = sorted(_turns(size), key=lambda t: (t.layers, t.face not in preferred))
    for turn in singles:
        if np.array_equal(was[_source(size, turn)], now):
            return (turn,)
    if not axial:
        return None
    for first in singles:
        if first.layers >= size or first.face not in "URF":
            continue
        moved = was[_source(size, first)]
        for second in singles:
            if (second.face == OPPOSITE_FACE[first.face]
                    and first.layers + second.layers <= size  # layers apart
                    and np.array_equal(moved[_source(size, second)], now)):
                return (first, second)
    return None


@dataclass(frozen=True)
class _Cubie:
    centre: tuple[int, int, int]
    stickers: tuple[tuple[int, tuple[float, float, float], Vector3], ...]
    """(facelet index, sticker centre in cube units, its box's extent in Foxglove's frame)"""


@cache
def _cubies(size: int) -> tuple[_Cubie, ...]:
    """Every cubie of a size x size x size cube with its stickers, in a fixed order."""
    _, normals, centres = _geometry(size)
    coords = range(-(size - 1), size, 2)
    cubies = []
    for cx in coords:
        for cy in coords:
            for cz in coords:
                stickers = []
                for i in np.flatnonzero((centres == (cx, cy, cz)).all(axis=1)):
                    n = normals[i]
                    at = centres[i] + n * (1.0 + STICKER_THICKNESS / 2)
                    stickers.append((int(i), tuple(float(v) for v in at), _sticker_extent(n)))
                cubies.append(_Cubie((cx, cy, cz), tuple(stickers)))
    return tuple(cubies)


def _rgb(values: tuple[int, int, int], alpha: float = 1.0) -> Color:
    return Color(r=values[0] / 255, g=values[1] / 255, b=values[2] / 255, a=alpha)


def _to_frame(point: Sequence[float], offset: tuple[float, float, float]) -> Vector3:
    """A point of the cube (y up, cube units) in Foxglove's frame (z up, metres)."""
    x, y, z = point
    return Vector3(x=z * UNIT_M + offset[0], y=x * UNIT_M + offset[1], z=y * UNIT_M + offset[2])


def _orientation(axis: tuple[int, int, int], angle: float) -> Quaternion:
    """The rotation ``angle`` about the cube axis ``axis``, in Foxglove's frame."""
    half = angle / 2
    s = math.sin(half)
    ax, ay, az = axis
    return Quaternion(x=az * s, y=ax * s, z=ay * s, w=math.cos(half))


def _sticker_extent(normal: np.ndarray) -> Vector3:
    """Size of a sticker's thin box, in Foxglove's frame, for a cube normal."""
    sizes = [STICKER_THICKNESS if abs(v) else STICKER_SIZE for v in normal.tolist()]
    return Vector3(x=sizes[2] * UNIT_M, y=sizes[0] * UNIT_M, z=sizes[1] * UNIT_M)


def _turned(point: Sequence[float], rotation: Sequence[Sequence[float]] | None
            ) -> Sequence[float]:
    if rotation is None:
        return point
    x, y, z = point
    return tuple(r[0] * x + r[1] * y + r[2] * z for r in rotation)


def cube_entities(facelets: str, label: CubeLabel,
                  turn: Turn | Sequence[Turn] | None = None, fraction: float = 0.0,
                  stamp_ns: int = 0) -> list[SceneEntity]:
    """One entity per cubie (27 for a 3x3, 8 for a 2x2: a dark body and its stickers in the
    colours of ``facelets``) and one for the label. With ``turn`` (a layer turn, or the turns
    of an axial move, on layers no two of them share), the cubies each carries are drawn
    ``fraction`` of the way through it."""
    size = _size(facelets)
    turns = () if turn is None else (turn,) if isinstance(turn, Turn) else tuple(turn)
    moving = []  # (axis, threshold, rotation matrix, orientation) of each turn
    for each in turns:
        axis = FACE_NORMALS[each.face]
        angle = each.angle(fraction)
        moving.append((axis, (size - 1) - 2 * (each.layers - 1),
                       _rotation(axis, angle).tolist(), _orientation(axis, angle)))
    still = Quaternion(x=0.0, y=0.0, z=0.0, w=1.0)
    stamp = Timestamp(sec=stamp_ns // 1_000_000_000, nsec=stamp_ns % 1_000_000_000)
    body = Vector3(x=BODY_SIZE * UNIT_M, y=BODY_SIZE * UNIT_M, z=BODY_SIZE * UNIT_M)
    body_colour = _rgb(BODY_RGB)
    colours = {letter: _rgb(rgb) for letter, rgb in STICKER_RGB.items()}
    unknown = _rgb(UNKNOWN_RGB)
    entities = []
    for cubie in _cubies(size):
        rotation, orientation = None, still
        for axis, threshold, spin, turned in moving:
            if sum(c * a for c, a in zip(cubie.centre, axis, strict=True)) >= threshold:
                rotation, orientation = spin, turned
                break
        cubes = [CubePrimitive(pose=Pose(position=_to_frame(_turned(cubie.centre, rotation),
                                                            label.offset),
                                         orientation=orientation),
                               size=body, color=body_colour)]
        for index, at, extent in cubie.stickers:
            cubes.append(CubePrimitive(
                pose=Pose(position=_to_frame(_turned(at, rotation), label.offset),
                          orientation=orientation),
                size=extent, color=colours.get(facelets[index], unknown)))
        cx, cy, cz = cubie.centre
        entities.append(SceneEntity(timestamp=stamp, frame_id=FRAME,
                                    id=f"{label.name}/cubie{cx:+d}{cy:+d}{cz:+d}", cubes=cubes))
    entities.append(SceneEntity(timestamp=stamp, frame_id=FRAME, id=f"{label.name}/label",
                                texts=[TextPrimitive(
                                    pose=Pose(position=_to_frame((0.0, size + 2.0, 0.0),
                                                                 label.offset),
                                              orientation=still),
                                    billboard=True, font_size=14.0, scale_invariant=True,
                                    color=_rgb((255, 255, 255)), text=label.text)]))
    return entities


def cube_scene(facelets: str, label: CubeLabel, turn: Turn | Sequence[Turn] | None = None,
               fraction: float = 0.0, stamp_ns: int = 0) -> SceneUpdate:
    """The SceneUpdate that draws ``facelets`` (see :func:`cube_entities`)."""
    return SceneUpdate(entities=cube_entities(facelets, label, turn, fraction, stamp_ns))
