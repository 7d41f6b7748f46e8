"""Helpers for the 2x2x2 solver tests: facelet-level checks that do not use the solver."""

from __future__ import annotations

import heapq

from robocell.common.facelets import OPPOSITE_FACE, corner_facelets
from robocell.common.moves import apply_to_facelets
from robocell.common.profile import Profile

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


def least_robot_cost(facelets: str, profile: Profile, bound: float) -> float | None:
    """Uniform-cost search over (cube, last group) with the profile's primitives applied to
    the facelet string: the least cost to any solved orientation, None if above ``bound``.
    States are popped cheapest first, so the first solved one is optimal."""
    alternate = profile.sequencing == "alternate-groups"
    steps = [(list(p.moves), p.cost, p.group if alternate else None)
             for p in profile.primitives]
    queue: list[tuple[float, int, str, str | None]] = [(0.0, 0, facelets, None)]
    best: dict[tuple[str, str | None], float] = {}
    counter = 1
    while queue:
        cost, _, cube, group = heapq.heappop(queue)
        if is_solved_any_orientation(cube):
            return cost
        if best.get((orientation_free_key(cube), group), float("inf")) < cost:
            continue
        for moves, step_cost, step_group in steps:
            if alternate and step_group == group:
                continue
            after = apply_to_facelets(cube, moves)
            new_cost = cost + step_cost
            key = (orientation_free_key(after), step_group)
            if new_cost <= bound + 1e-9 and new_cost < best.get(key, float("inf")):
                best[key] = new_cost
                heapq.heappush(queue, (new_cost, counter, after, step_group))
                counter += 1
    return None
