"""Helpers for the 2x2x2 solver tests: facelet-level checks that do not use the solver."""

from __future__ import annotations

from robocell.common.facelets import OPPOSITE_FACE, corner_facelets

DBL = 6
"""Corner position DBL in kociemba order."""
STICKERS_PER_FACE = 4


def is_solved_any_orientation(facelets: str) -> bool:
    """Every face shows one colour (the cube is solved in some orientation)."""
    return all(len(set(facelets[i:i + STICKERS_PER_FACE])) == 1
               for i in range(0, len(facelets), STICKERS_PER_FACE))


def orientation_free_key(facelets: str) -> str:
    """The facelet string recoloured so that the corner at DBL shows D, B, L: equal for two
    cubes exactly when one is the other with the colours of a rotated solved cube."""
    d, b, l = (facelets[i] for i in corner_facelets(2)[DBL])
    colour = {d: "D", OPPOSITE_FACE[d]: "U", b: "B", OPPOSITE_FACE[b]: "F",
              l: "L", OPPOSITE_FACE[l]: "R"}
    return "".join(colour[c] for c in facelets)
