"""Scramble to a state: a face-turn sequence that takes the solved cube to a given cube.

It needs the solver (the sequence is the inverse of a plan), so it lives here; uniformly random
states themselves are `robocell.common.scramble`.
"""

from __future__ import annotations

from robocell.common.facelets import size_of, solved
from robocell.common.moves import apply_to_facelets
from robocell.common.notation import Move, invert_moves, parse_moves
from robocell.services.solver.api import solve

ROTATIONS = (
    "y", "y2", "y'", "x", "x y", "x y2", "x y'", "x2", "x2 y", "x2 y2", "x2 y'", "x'",
    "x' y", "x' y2", "x' y'", "z", "z y", "z y2", "z y'", "z'", "z' y", "z' y2", "z' y'",
)
"""The 23 non-trivial whole-cube rotations (with the identity, all 24)."""


def scramble_moves(facelets: str) -> list[Move]:
    """A face-turn sequence that takes the solved cube to exactly ``facelets``: the inverse of
    the solver's plan in the plain face-turn metric, preceded, for a 2x2x2 whose plan solves
    it in another orientation, by the whole-cube rotation that sets that orientation."""
    plan = solve(facelets, "htm")
    # half turns written plainly (U2, not U2'): the same state, the usual scramble notation
    moves = [Move(m.name, m.quarter_turns) for m in invert_moves(plan.moves)]
    size = size_of(facelets)
    reached = apply_to_facelets(solved(size), moves, size)
    if reached == facelets:
        return moves
    for rotation in ROTATIONS:
        extra = parse_moves(rotation)
        if apply_to_facelets(solved(size), extra + moves, size) == facelets:
            return extra + moves
    raise AssertionError(f"no orientation of the plan's inverse reaches {facelets}")
