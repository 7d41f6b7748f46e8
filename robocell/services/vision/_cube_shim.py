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


def random_state(size: int, seed: int) -> str:
    """A uniformly random reachable state as a facelet string (cubie level -> facelets)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    letters = list(solved(size))
    home = solved(3)
    corner_perm = rng.permutation(8)
    twist = rng.integers(0, 3, 8)
    twist[-1] = (-twist[:-1].sum()) % 3
    corners_here = corner_facelets(size)
    corners_3 = corner_facelets(3)
    for pos in range(8):
        cubie = corner_perm[pos]
        for k in range(3):
            letters[corners_here[pos][(k + twist[pos]) % 3]] = home[corners_3[cubie][k]]
    if size == 3:
        def parity(p):
            return sum(p[i] > p[j] for i in range(len(p)) for j in range(i + 1, len(p))) % 2
        edge_perm = rng.permutation(12)
        if parity(edge_perm) != parity(corner_perm):
            edge_perm[[0, 1]] = edge_perm[[1, 0]]
        flip = rng.integers(0, 2, 12)
        flip[-1] = flip[:-1].sum() % 2
        edges = edge_facelets()
        for pos in range(12):
            cubie = edge_perm[pos]
            for k in range(2):
                letters[edges[pos][(k + flip[pos]) % 2]] = home[edges[cubie][k]]
    return "".join(letters)
