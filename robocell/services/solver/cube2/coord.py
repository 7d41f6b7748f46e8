"""Coordinates of the 2x2x2 up to whole-cube orientation: one integer per rotation class.

A 2x2x2 state in the robot's frame is a corner permutation and twist (8! * 3^7 states).
Relabelling the cubies by a whole-cube rotation (left multiplication ``r * s``: the same
stickers read with the colours of a rotated solved cube) changes neither which faces are
monochrome nor how any motion acts (motions multiply on the right), so a plan's cost depends
only on the class ``{r * s : r rotation}``. Every class has exactly one *normal* member, the
one with cubie DBL home and untwisted at position DBL; the class is uniquely determined by
the permutation of the other seven corners (``N_PERM`` = 7!) and the twists of six of them
(``N_TWIST`` = 3^6, the seventh follows from the zero total): ``N_STATES`` = 3,674,160.
The solved classes - the cube solved in any orientation - are the one class with coordinate 0.

Elements (states, motions, rotations) are pairs of int8 arrays ``(cp, co)`` of length 8,
composed kociemba-style: ``(a * b).cp[i] = a.cp[b.cp[i]]``.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numba import njit

from robocell.common.cubie import CubieState
from robocell.common.facelets import N_CORNERS
from robocell.common.moves import move_cubie
from robocell.common.notation import Move

CUBE_SIZE = 2
N_TWIST_VALUES = 3
N_ROTATIONS = 24
FIXED_CORNER = 6
"""Position (and cubie) DBL: it stays home and untwisted in every normal state."""
FREE_CORNERS = np.array([0, 1, 2, 3, 4, 5, 7], dtype=np.int8)
"""The seven corners whose permutation and twist make up the coordinate."""
N_FREE = 7
N_PERM = 5040
"""7!: permutations of the free corners."""
N_TWIST = 729
"""3^6: twists of the first six free corners."""
N_STATES = N_PERM * N_TWIST
"""3,674,160 rotation classes of the 2x2x2."""
SOLVED = 0
"""Coordinate of the solved class (the solved cube in any orientation)."""


def element(state: CubieState) -> tuple[np.ndarray, np.ndarray]:
    """The (cp, co) arrays of a cubie state."""
    return (np.ascontiguousarray(state.corner_perm, dtype=np.int8),
            np.ascontiguousarray(state.corner_twist, dtype=np.int8))


def moves_element(moves: tuple[Move, ...] | list[Move]) -> tuple[np.ndarray, np.ndarray]:
    """The element of a sequence of face turns and rotations (applied in order)."""
    state = CubieState.solved(CUBE_SIZE)
    for move in moves:
        state = state * move_cubie(move, CUBE_SIZE)
    return element(state)


@cache
def rotations() -> tuple[np.ndarray, np.ndarray]:
    """The 24 whole-cube rotations as elements: arrays (24, 8) of cp and co; index 0 is the
    identity."""
    gens = [move_cubie(Move(name, 1), CUBE_SIZE) for name in "xyz"]
    found = [CubieState.solved(CUBE_SIZE)]
    keys = {_key(found[0])}
    frontier = list(found)
    while frontier:
        nxt = []
        for state in frontier:
            for gen in gens:
                new = state * gen
                if _key(new) not in keys:
                    keys.add(_key(new))
                    found.append(new)
                    nxt.append(new)
        frontier = nxt
    assert len(found) == N_ROTATIONS
    cp = np.array([s.corner_perm for s in found], dtype=np.int8)
    co = np.array([s.corner_twist for s in found], dtype=np.int8)
    cp.setflags(write=False)
    co.setflags(write=False)
    return cp, co


def _key(state: CubieState) -> bytes:
    return state.corner_perm.tobytes() + state.corner_twist.tobytes()


@cache
def normalisers() -> tuple[np.ndarray, np.ndarray]:
    """For the cubie ``c`` and twist ``t`` found at position DBL, the rotation ``r`` whose
    relabelling ``r * s`` brings the state to its normal member: arrays (8, 3, 8) cp, co."""
    rot_cp, rot_co = rotations()
    cp = np.zeros((N_CORNERS, N_TWIST_VALUES, N_CORNERS), dtype=np.int8)
    co = np.zeros((N_CORNERS, N_TWIST_VALUES, N_CORNERS), dtype=np.int8)
    filled = np.zeros((N_CORNERS, N_TWIST_VALUES), dtype=bool)
    for r in range(N_ROTATIONS):
        for c in range(N_CORNERS):
            if rot_cp[r, c] != FIXED_CORNER:
                continue
            t = (-int(rot_co[r, c])) % N_TWIST_VALUES
            assert not filled[c, t]
            filled[c, t] = True
            cp[c, t] = rot_cp[r]
            co[c, t] = rot_co[r]
    assert filled.all()
    cp.setflags(write=False)
    co.setflags(write=False)
    return cp, co


@njit(cache=True)
def normal_coordinate(cp, co, norm_cp, norm_co):  # pragma: no cover - compiled
    """Coordinate of the rotation class of the state (cp, co), from the cubies (the
    move-transition tables of `moves` are built from this)."""
    c = cp[6]
    t = co[6]
    r_cp = norm_cp[c, t]
    r_co = norm_co[c, t]
    # the normal member r * s, read over the free positions 0..5, 7 (cubie 7 renamed 6);
    # Lehmer rank: each value counts the smaller values not yet used
    rank = 0
    twist = 0
    seen = 0
    for k in range(7):
        i = k if k < 6 else 7
        cubie = r_cp[cp[i]]
        value = cubie if cubie < 6 else 6
        below = seen & ((1 << value) - 1)
        used_below = 0
        while below:
            below &= below - 1
            used_below += 1
        rank = rank * (7 - k) + value - used_below
        seen |= 1 << value
        if k < 6:
            twist = twist * 3 + (r_co[cp[i]] + co[i]) % 3
    return rank * 729 + twist
