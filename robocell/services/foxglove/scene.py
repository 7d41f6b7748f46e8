"""A cube in Foxglove's 3D panel: its cubies with their sticker colours, one layer turned part way.

Geometry is :func:`robocell.common.facelets.sticker_geometry`'s: cubie centres at -(n-1) ..
n-1 in steps of 2, stickers on the planes +-n, y up. Foxglove's frames are z up, so a point
(x, y, z) of the cube is drawn at (z, x, y) (a proper rotation: F faces +x, R +y, U +z), and
one cube unit is ``UNIT_M`` metres (a 3x3 is a real cube's 57 mm).

:func:`find_turn` says which layer turn carried one facelet string to the next (the twin
publishes its cube after each motion), so that :func:`cube_scene` can draw the layer part way
through it: the cube turns in Foxglove as the twin turns.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

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

from robocell.common.facelets import FACE_NORMALS, FACES, size_of, sticker_geometry

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


def apply_turn(facelets: str, turn: Turn) -> str:
    """The facelet string after ``turn``, by moving stickers in space."""
    size = size_of(facelets)
    if size is None:
        raise ValueError(f"a cube has 24 or 54 facelets, not {len(facelets)}")
    positions, normals, centres = _geometry(size)
    index = {(tuple(p), tuple(n)): i for i, (p, n) in
             enumerate(zip(positions.tolist(), normals.tolist(), strict=True))}
    rotation = np.rint(_rotation(FACE_NORMALS[turn.face], turn.angle())).astype(np.int64)
    out = list(facelets)
    for i in np.flatnonzero(_in_layers(centres, size, turn)):
        target = index[(tuple((rotation @ positions[i]).tolist()),
                        tuple((rotation @ normals[i]).tolist()))]
        out[target] = facelets[i]
    return "".join(out)


def find_turn(before: str, after: str, prefer: Iterable[str] = ()) -> Turn | None:
    """The single layer turn (outer layers of one face, any depth up to the whole cube) that
    carries ``before`` to ``after``, or None when none does (or they are equal). Faces in
    ``prefer`` (e.g. the arms that just turned) are tried first, then fewer layers first."""
    size = size_of(before)
    if size is None or len(after) != len(before) or before == after:
        return None
    preferred = [f for f in prefer if f in FACES]
    faces = preferred + [f for f in FACES if f not in preferred]
    for layers in range(1, size + 1):
        for face in faces:
            for quarters in (1, -1, 2):
                turn = Turn(face, layers, quarters)
                if apply_turn(before, turn) == after:
                    return turn
    return None


def _rgb(values: tuple[int, int, int], alpha: float = 1.0) -> Color:
    return Color(r=values[0] / 255, g=values[1] / 255, b=values[2] / 255, a=alpha)


def _to_frame(point: np.ndarray, offset: tuple[float, float, float]) -> Vector3:
    """A point of the cube (y up, cube units) in Foxglove's frame (z up, metres)."""
    x, y, z = (float(v) * UNIT_M for v in point)
    return Vector3(x=z + offset[0], y=x + offset[1], z=y + offset[2])


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


def cube_entities(facelets: str, label: CubeLabel, turn: Turn | None = None,
                  fraction: float = 0.0, stamp_ns: int = 0) -> list[SceneEntity]:
    """One entity per cubie (27 for a 3x3, 8 for a 2x2: a dark body and its stickers in the
    colours of ``facelets``) and one for the label. With ``turn``, the cubies it carries are
    drawn ``fraction`` of the way through it."""
    size = size_of(facelets)
    if size is None:
        raise ValueError(f"a cube has 24 or 54 facelets, not {len(facelets)}")
    positions, normals, centres = _geometry(size)
    axis = FACE_NORMALS[turn.face] if turn is not None else (0, 1, 0)
    angle = turn.angle(fraction) if turn is not None else 0.0
    spin = _rotation(axis, angle)
    turned = _orientation(axis, angle)
    still = Quaternion(x=0.0, y=0.0, z=0.0, w=1.0)
    stamp = Timestamp(sec=stamp_ns // 1_000_000_000, nsec=stamp_ns % 1_000_000_000)
    coords = range(-(size - 1), size, 2)
    entities = []
    for cx in coords:
        for cy in coords:
            for cz in coords:
                centre = np.array([cx, cy, cz])
                stickers = np.flatnonzero((centres == centre).all(axis=1))
                carried = turn is not None and bool(_in_layers(centre[None], size, turn)[0])
                place = spin if carried else np.eye(3)
                orientation = turned if carried else still
                body_size = BODY_SIZE * UNIT_M
                cubes = [CubePrimitive(
                    pose=Pose(position=_to_frame(place @ centre, label.offset),
                              orientation=orientation),
                    size=Vector3(x=body_size, y=body_size, z=body_size), color=_rgb(BODY_RGB))]
                for i in stickers:
                    at = centres[i] + normals[i] * (1.0 + STICKER_THICKNESS / 2)
                    cubes.append(CubePrimitive(
                        pose=Pose(position=_to_frame(place @ at, label.offset),
                                  orientation=orientation),
                        size=_sticker_extent(normals[i]),
                        color=_rgb(STICKER_RGB.get(facelets[i], UNKNOWN_RGB))))
                entities.append(SceneEntity(timestamp=stamp, frame_id=FRAME,
                                            id=f"{label.name}/cubie{cx:+d}{cy:+d}{cz:+d}",
                                            cubes=cubes))
    above = np.array([0.0, size + 2.0, 0.0])
    entities.append(SceneEntity(timestamp=stamp, frame_id=FRAME, id=f"{label.name}/label",
                                texts=[TextPrimitive(
                                    pose=Pose(position=_to_frame(above, label.offset),
                                              orientation=still),
                                    billboard=True, font_size=14.0, scale_invariant=True,
                                    color=_rgb((255, 255, 255)), text=label.text)]))
    return entities


def cube_scene(facelets: str, label: CubeLabel, turn: Turn | None = None,
               fraction: float = 0.0, stamp_ns: int = 0) -> SceneUpdate:
    """The SceneUpdate that draws ``facelets`` (see :func:`cube_entities`)."""
    return SceneUpdate(entities=cube_entities(facelets, label, turn, fraction, stamp_ns))
