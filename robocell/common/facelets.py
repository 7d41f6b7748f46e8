"""The facelet level: sticker positions of 2x2x2 and 3x3x3 cubes in kociemba order.

A facelet string lists every sticker's colour letter, faces in the order U R F D L B, each
face row-major as drawn in the usual net (U above F with B at its top edge; R, F, L, B seen
from outside with U on top; D below F with F at its top edge). A letter names the face whose
colour the sticker carries: 54 letters for a 3x3x3, 24 for a 2x2x2.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy only where the geometry is made: the bus's processes never load it
    import numpy as np

FACES = "URFDLB"
"""Face letters in facelet-string order."""

N_FACES = 6
SIZES = (2, 3)

U, R, F, D, L, B = range(N_FACES)

FACE_NORMALS: dict[str, tuple[int, int, int]] = {
    "U": (0, 1, 0), "R": (1, 0, 0), "F": (0, 0, 1),
    "D": (0, -1, 0), "L": (-1, 0, 0), "B": (0, 0, -1),
}
"""Outward normal of each face; x points right, y up, z to the front."""

OPPOSITE_FACE = {"U": "D", "D": "U", "R": "L", "L": "R", "F": "B", "B": "F"}

N_CORNERS = 8
N_EDGES = 12

CORNER_NAMES = ("URF", "UFL", "ULB", "UBR", "DFR", "DLF", "DBL", "DRB")
"""Corner positions (and cubies) in kociemba order; letters clockwise from the U/D face."""

EDGE_NAMES = ("UR", "UF", "UL", "UB", "DR", "DF", "DL", "DB", "FR", "FL", "BL", "BR")
"""Edge positions (and cubies) in kociemba order; the first letter is the reference face."""

# Sticker numbers (1-based, row-major) of each corner on the 3x3 net, in the order of
# CORNER_NAMES letters; every corner sticker of a 3x3 is 1, 3, 7 or 9 of its face.
_CORNER_STICKERS_3 = (
    (("U", 9), ("R", 1), ("F", 3)),
    (("U", 7), ("F", 1), ("L", 3)),
    (("U", 1), ("L", 1), ("B", 3)),
    (("U", 3), ("B", 1), ("R", 3)),
    (("D", 3), ("F", 9), ("R", 7)),
    (("D", 1), ("L", 9), ("F", 7)),
    (("D", 7), ("B", 9), ("L", 7)),
    (("D", 9), ("R", 9), ("B", 7)),
)
_EDGE_STICKERS_3 = (
    (("U", 6), ("R", 2)), (("U", 8), ("F", 2)), (("U", 4), ("L", 2)), (("U", 2), ("B", 2)),
    (("D", 6), ("R", 8)), (("D", 2), ("F", 8)), (("D", 4), ("L", 8)), (("D", 8), ("B", 8)),
    (("F", 6), ("R", 4)), (("F", 4), ("L", 6)), (("B", 6), ("L", 4)), (("B", 4), ("R", 6)),
)


def n_facelets(size: int) -> int:
    """Number of stickers of a size x size x size cube."""
    check_size(size)
    return N_FACES * size * size


def check_size(size: int) -> None:
    if size not in SIZES:
        raise ValueError(f"cube size {size} is not supported; use 2 or 3")


def size_of(facelets: str) -> int | None:
    """The cube size a facelet string's length implies, or None."""
    return {24: 2, 54: 3}.get(len(facelets))


PUZZLE_NAMES = {2: "2x2x2", 3: "3x3x3"}
"""The canonical name of each cube size (bus messages, plans); `puzzle_size` also reads the
short spelling ("3x3") that profiles and the command line use."""


def puzzle_name(size: int) -> str:
    """3 -> "3x3x3"."""
    check_size(size)
    return PUZZLE_NAMES[size]


def puzzle_size(puzzle: str) -> int:
    """The cube size of a puzzle name, in either spelling: "3x3x3" or "3x3" -> 3."""
    parts = puzzle.split("x")
    if len(parts) not in (2, 3) or len(set(parts)) != 1 or not parts[0].isdigit() or \
            int(parts[0]) not in SIZES:
        raise ValueError(f"puzzle {puzzle!r} is not a cube this cell handles; use one of "
                         f"{', '.join(PUZZLE_NAMES.values())} (or 2x2, 3x3)")
    return int(parts[0])


def is_solved_any_orientation(facelets: str) -> bool:
    """Every face shows one colour: the cube is solved in some whole-cube orientation."""
    per_face = len(facelets) // 6
    return all(len(set(facelets[i:i + per_face])) == 1
               for i in range(0, len(facelets), per_face))


def typed_facelets(text: str) -> str:
    """A facelet string as a person types or pastes it: spaces and line breaks anywhere (a
    trailing one, or one between faces) are not letters and are left out."""
    return "".join(text.split())


def solved(size: int) -> str:
    """The facelet string of a solved cube."""
    check_size(size)
    return "".join(face * size * size for face in FACES)


def facelet_index(size: int, face: str, row: int, col: int) -> int:
    """Index in the facelet string of the sticker at (row, col) of a face."""
    return FACES.index(face) * size * size + row * size + col


def facelet_name(size: int, index: int) -> str:
    """Human name of a sticker, e.g. 'F3' (face letter and 1-based number on that face)."""
    per_face = size * size
    return f"{FACES[index // per_face]}{index % per_face + 1}"


def _sticker_3_to_index(size: int, face: str, number: int) -> int:
    row, col = divmod(number - 1, 3)
    if size == 2:
        row, col = row // 2, col // 2
    return facelet_index(size, face, row, col)


@cache
def corner_facelets(size: int) -> tuple[tuple[int, int, int], ...]:
    """For each corner position, its three sticker indices, U/D sticker first, then clockwise."""
    check_size(size)
    return tuple(
        tuple(_sticker_3_to_index(size, f, n) for f, n in corner)  # type: ignore[misc]
        for corner in _CORNER_STICKERS_3
    )


@cache
def edge_facelets() -> tuple[tuple[int, int], ...]:
    """For each edge position of a 3x3, its two sticker indices, reference sticker first."""
    return tuple(
        tuple(_sticker_3_to_index(3, f, n) for f, n in edge)  # type: ignore[misc]
        for edge in _EDGE_STICKERS_3
    )


@cache
def centre_facelets() -> tuple[int, ...]:
    """Sticker index of each centre of a 3x3, in face order U R F D L B."""
    return tuple(facelet_index(3, face, 1, 1) for face in FACES)


CORNER_COLOURS: tuple[tuple[str, str, str], ...] = tuple(
    (name[0], name[1], name[2]) for name in CORNER_NAMES
)
"""Colours (face letters) of each corner cubie, clockwise from its U/D colour."""

EDGE_COLOURS: tuple[tuple[str, str], ...] = tuple((name[0], name[1]) for name in EDGE_NAMES)


@cache
def sticker_geometry(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer 3D position and outward normal of every sticker.

    Cubie centres sit at coordinates -(size-1), ..., size-1 in steps of 2 along each axis and
    stickers on the plane +-size, so that quarter turns map stickers onto stickers exactly.
    """
    import numpy as np  # here only: every process on the bus imports this module

    check_size(size)
    positions = np.zeros((n_facelets(size), 3), dtype=np.int64)
    normals = np.zeros((n_facelets(size), 3), dtype=np.int64)
    n = size

    def u(i: int) -> int:
        return 2 * i - (n - 1)

    for face in FACES:
        for row in range(n):
            for col in range(n):
                if face == "U":
                    p = (u(col), n, u(row))
                elif face == "R":
                    p = (n, -u(row), -u(col))
                elif face == "F":
                    p = (u(col), -u(row), n)
                elif face == "D":
                    p = (u(col), -n, -u(row))
                elif face == "L":
                    p = (-n, -u(row), u(col))
                else:  # B
                    p = (-u(col), -u(row), -n)
                index = facelet_index(size, face, row, col)
                positions[index] = p
                normals[index] = FACE_NORMALS[face]
    return positions, normals


def relabel_by_centres(facelets: str) -> str:
    """A 3x3 facelet string with each colour renamed after the face position its centre
    occupies: the same physical cube, described with standard centres (a cube sitting
    rotated in the robot becomes the cube that the robot's face turns act on). Other sizes
    and strings whose centres are already standard come back unchanged."""
    if len(facelets) != n_facelets(3):
        return facelets
    centres = [facelets[i] for i in centre_facelets()]
    if "".join(centres) == FACES:
        return facelets
    rename = {colour: FACES[position] for position, colour in enumerate(centres)}
    return "".join(rename.get(ch, ch) for ch in facelets)
