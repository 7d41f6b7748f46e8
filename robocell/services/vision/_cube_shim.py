"""Temporary facelet geometry until robocell.common.cube lands (same names, to be deleted)."""

from __future__ import annotations

FACES = "URFDLB"

# Kociemba corner facelets on a 3x3 as (face, row, col), U/D sticker first, then clockwise.
_CORNERS_3 = (
    (("U", 2, 2), ("R", 0, 0), ("F", 0, 2)),  # URF
    (("U", 2, 0), ("F", 0, 0), ("L", 0, 2)),  # UFL
    (("U", 0, 0), ("L", 0, 0), ("B", 0, 2)),  # ULB
    (("U", 0, 2), ("B", 0, 0), ("R", 0, 2)),  # UBR
    (("D", 0, 2), ("F", 2, 2), ("R", 2, 0)),  # DFR
    (("D", 0, 0), ("L", 2, 2), ("F", 2, 0)),  # DLF
    (("D", 2, 0), ("B", 2, 2), ("L", 2, 0)),  # DBL
    (("D", 2, 2), ("R", 2, 2), ("B", 2, 0)),  # DRB
)
_EDGES_3 = (
    (("U", 1, 2), ("R", 0, 1)), (("U", 2, 1), ("F", 0, 1)), (("U", 1, 0), ("L", 0, 1)),
    (("U", 0, 1), ("B", 0, 1)), (("D", 1, 2), ("R", 2, 1)), (("D", 0, 1), ("F", 2, 1)),
    (("D", 1, 0), ("L", 2, 1)), (("D", 2, 1), ("B", 2, 1)), (("F", 1, 2), ("R", 1, 0)),
    (("F", 1, 0), ("L", 1, 2)), (("B", 1, 2), ("L", 1, 0)), (("B", 1, 0), ("R", 1, 2)),
)


def _index(face: str, row: int, col: int, size: int) -> int:
    scale = size - 1
    return FACES.index(face) * size * size + (row * scale // 2) * size + (col * scale // 2)


def solved(size: int) -> str:
    return "".join(face * size * size for face in FACES)


def corner_facelets(size: int) -> tuple[tuple[int, int, int], ...]:
    return tuple(tuple(_index(f, r, c, size) for f, r, c in corner) for corner in _CORNERS_3)


def edge_facelets() -> tuple[tuple[int, int], ...]:
    return tuple(tuple(_index(f, r, c, 3) for f, r, c in edge) for edge in _EDGES_3)


def centre_facelets() -> tuple[int, ...]:
    return tuple(_index(f, 1, 1, 3) for f in FACES)
