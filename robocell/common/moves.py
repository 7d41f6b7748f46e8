"""Moves as permutations: of the stickers (facelet level) and of the cubies (cubie level).

Every move of the notation (face, wide and slice turns, whole-cube rotations) is derived from
geometry: the stickers in the turning layers are rotated a quarter turn about the move's axis.
The cubie-level element of a move is read off the permuted solved cube, so both levels agree
by construction.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from robocell.common.cubie import CubieState, from_facelets
from robocell.common.facelets import FACE_NORMALS, check_size, solved, sticker_geometry
from robocell.common.notation import Move, parse_moves
from robocell.errors import RobocellError

# axis (outward normal the turn is clockwise about) and the layers it turns, by move kind
_SLICE_AXES = {"M": (-1, 0, 0), "E": (0, -1, 0), "S": (0, 0, 1)}
_ROTATION_AXES = {"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1)}


class MoveError(RobocellError, ValueError):
    """A move that does not exist on this cube size (e.g. a slice turn on a 2x2x2)."""


def _turning_layers(name: str, size: int) -> tuple[tuple[int, int, int], set[int]]:
    """Axis of a clockwise quarter turn of ``name`` and the layer coordinates it turns."""
    outer = size - 1
    all_layers = set(range(-outer, outer + 1, 2))
    if name in FACE_NORMALS:
        return FACE_NORMALS[name], {outer}
    if name.endswith("w"):
        return FACE_NORMALS[name[0]], {outer, outer - 2}
    if name in _SLICE_AXES:
        if size != 3:
            raise MoveError(f"slice move {name} needs a 3x3x3; a {size}x{size}x{size} has no "
                            "middle layer")
        return _SLICE_AXES[name], {0}
    return _ROTATION_AXES[name], all_layers


@cache
def facelet_permutation(name: str, size: int) -> np.ndarray:
    """``src`` such that after one clockwise quarter turn of ``name`` the sticker at position
    ``i`` is the one that was at ``src[i]``."""
    check_size(size)
    axis, layers = _turning_layers(name, size)
    positions, normals = sticker_geometry(size)
    n = np.array(axis)
    along = positions @ n
    # a sticker lies in the layer of its cubie: the face plane +-size belongs to layer +-(size-1)
    layer = np.where(np.abs(along) == size, np.sign(along) * (size - 1), along)
    turning = np.isin(layer, list(layers))

    def rotate(v: np.ndarray) -> np.ndarray:
        # clockwise seen from outside = -90 degrees about n: v' = -(n x v) + n (n . v)
        return -np.cross(n, v) + np.outer(v @ n, n)

    new_positions = np.where(turning[:, None], rotate(positions), positions)
    new_normals = np.where(turning[:, None], rotate(normals), normals)
    key = {(tuple(p), tuple(q)): i for i, (p, q) in enumerate(zip(positions, normals, strict=True))}
    src = np.empty(len(positions), dtype=np.int64)
    for i in range(len(positions)):
        dest = key[(tuple(new_positions[i]), tuple(new_normals[i]))]
        src[dest] = i
    src.setflags(write=False)
    return src


@cache
def move_facelet_permutation(move: Move, size: int) -> np.ndarray:
    """Sticker permutation of a whole move (all its quarter turns)."""
    quarter = facelet_permutation(move.name, size)
    perm = np.arange(len(quarter))
    for _ in range(move.quarter_turns):
        perm = perm[quarter]
    perm.setflags(write=False)
    return perm


def apply_to_facelets(facelets: str, moves: list[Move] | str, size: int | None = None) -> str:
    """The facelet string after applying ``moves`` (a list or notation text)."""
    if isinstance(moves, str):
        moves = parse_moves(moves)
    if size is None:
        size = {24: 2, 54: 3}.get(len(facelets), 0)
    check_size(size)
    stickers = np.frombuffer(facelets.encode("ascii"), dtype=np.uint8)
    for move in moves:
        stickers = stickers[move_facelet_permutation(move, size)]
    return stickers.tobytes().decode("ascii")


@cache
def move_cubie(move: Move, size: int) -> CubieState:
    """Cubie-level element of a move: ``state * move_cubie(m)`` applies ``m`` to ``state``."""
    return from_facelets(apply_to_facelets(solved(size), [move], size))


def apply_to_cubies(state: CubieState, moves: list[Move] | str) -> CubieState:
    """The cubie state after applying ``moves``."""
    if isinstance(moves, str):
        moves = parse_moves(moves)
    for move in moves:
        state = state * move_cubie(move, state.size)
    return state
