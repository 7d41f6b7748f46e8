"""Cube helpers shared by the solver tests' exhaustive searches."""

from __future__ import annotations

from robocell.common.cube import apply_to_facelets, solved


def solved_orientations() -> set[str]:
    """The sticker strings of the solved 3x3x3 in its 24 whole-cube orientations."""
    goals = {solved(3)}
    frontier = list(goals)
    while frontier:
        nxt = []
        for f in frontier:
            for rot in ("x", "y"):
                g = apply_to_facelets(f, rot)
                if g not in goals:
                    goals.add(g)
                    nxt.append(g)
        frontier = nxt
    return goals
