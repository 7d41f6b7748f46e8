"""Move-transition tables of the 2x2x2: how motions change robot-frame coordinates, and which
rotation class a robot-frame state belongs to, all as table lookups.

A robot-frame state is two coordinates: ``perm8`` (0 .. 8!-1, the Lehmer rank of the corner
permutation) and ``twist7`` (0 .. 3^7-1, the twists of positions 0..6 in base 3, position 6
last; position 7 follows from the zero total). A motion changes each coordinate on its own,
so its transition is two small tables: ``perm_moves[m, perm8]`` and ``twist_moves[m, twist7]``.

Its rotation class (see `coord`) takes three more: the relabelling rotation depends only on
the cubie at DBL (from ``perm8``) and its twist ``t = twist7 % 3``, so
``class = class_perm[t, perm8] * N_TWIST + twist_add[class_twist_offset[t, perm8], twist7 // 3]``
where the relabelling adds a twist offset (``class_twist_offset``) to the six free twists
digit by digit (``twist_add``). ``normal_perm8[perm7]`` goes back from a class to its normal
member: ``perm8 = normal_perm8[class // N_TWIST]``, ``twist7 = (class % N_TWIST) * 3``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.services.solver.cube2.coord import (
    N_PERM,
    N_TWIST,
    N_TWIST_VALUES,
    normal_coordinate,
    normalisers,
)

N_PERM8 = 40320
"""8!: corner permutations in the robot's frame."""
N_TWIST7 = 2187
"""3^7: corner twists in the robot's frame."""


@njit(cache=True)
def perm8_rank(cp):  # pragma: no cover - compiled
    """Lehmer rank of a corner permutation."""
    rank = 0
    seen = 0
    for k in range(8):
        value = cp[k]
        below = seen & ((1 << value) - 1)
        used_below = 0
        while below:
            below &= below - 1
            used_below += 1
        rank = rank * (8 - k) + value - used_below
        seen |= 1 << value
    return rank


@njit(cache=True)
def perm8_unrank(rank, out_cp):  # pragma: no cover - compiled
    """The corner permutation of a Lehmer rank, into ``out_cp``."""
    digits = 0
    for k in range(7, -1, -1):
        base = 8 - k
        digits |= (rank % base) << (3 * k)
        rank //= base
    free = 0xFF
    for k in range(8):
        skip = (digits >> (3 * k)) & 7
        v = 0
        while True:
            if free & (1 << v):
                if skip == 0:
                    break
                skip -= 1
            v += 1
        free &= ~(1 << v)
        out_cp[k] = v


@njit(cache=True)
def twist7_rank(co):  # pragma: no cover - compiled
    """Base-3 number of the twists of positions 0..6 (position 6 least significant)."""
    value = 0
    for k in range(7):
        value = value * 3 + co[k]
    return value


@njit(cache=True)
def twist7_unrank(value, out_co):  # pragma: no cover - compiled
    """The twists of a twist coordinate (position 7 makes the total zero), into ``out_co``."""
    total = 0
    for k in range(6, -1, -1):
        out_co[k] = value % 3
        total += value % 3
        value //= 3
    out_co[7] = (3 - total % 3) % 3


@njit(cache=True)
def class_of(perm8, twist7, class_perm, class_twist_offset, twist_add):  # pragma: no cover
    """Rotation class of the robot-frame state (perm8, twist7)."""
    t = twist7 % 3
    return (np.int64(class_perm[t, perm8]) * 729
            + twist_add[class_twist_offset[t, perm8], twist7 // 3])


@njit(cache=True)
def _fill_class_tables(norm_cp, norm_co, class_perm, class_twist_offset, twist_add,
                       normal_perm8):  # pragma: no cover - compiled
    cp = np.empty(8, dtype=np.int8)
    co = np.zeros(8, dtype=np.int8)
    for perm8 in range(40320):
        perm8_unrank(perm8, cp)
        for t in range(3):
            co[6] = t  # the other twists are zero: the class twist is the pure offset
            coord = normal_coordinate(cp, co, norm_cp, norm_co)
            class_perm[t, perm8] = coord // 729
            class_twist_offset[t, perm8] = coord % 729
        if cp[6] == 6:
            normal_perm8[class_perm[0, perm8]] = perm8
    for a in range(729):
        for b in range(729):
            total = 0
            x = a
            y = b
            place = 1
            for _ in range(6):
                total += ((x % 3 + y % 3) % 3) * place
                x //= 3
                y //= 3
                place *= 3
            twist_add[a, b] = total


def class_tables() -> dict[str, np.ndarray]:
    """The tables that map robot-frame coordinates to rotation classes and back."""
    norm_cp, norm_co = normalisers()
    class_perm = np.zeros((N_TWIST_VALUES, N_PERM8), dtype=np.uint16)
    class_twist_offset = np.zeros((N_TWIST_VALUES, N_PERM8), dtype=np.uint16)
    twist_add = np.zeros((N_TWIST, N_TWIST), dtype=np.uint16)
    normal_perm8 = np.zeros(N_PERM, dtype=np.uint16)
    _fill_class_tables(norm_cp, norm_co, class_perm, class_twist_offset, twist_add,
                       normal_perm8)
    return {"class_perm": class_perm, "class_twist_offset": class_twist_offset,
            "twist_add": twist_add, "normal_perm8": normal_perm8}


@njit(cache=True)
def _fill_move_tables(el_cp, el_co, perm_moves, twist_moves):  # pragma: no cover - compiled
    cp = np.empty(8, dtype=np.int8)
    co = np.empty(8, dtype=np.int8)
    out = np.empty(8, dtype=np.int8)
    for m in range(el_cp.shape[0]):
        for perm8 in range(40320):
            perm8_unrank(perm8, cp)
            for i in range(8):
                out[i] = cp[el_cp[m, i]]
            perm_moves[m, perm8] = perm8_rank(out)
        for twist7 in range(2187):
            twist7_unrank(twist7, co)
            for i in range(8):
                out[i] = (co[el_cp[m, i]] + el_co[m, i]) % 3
            twist_moves[m, twist7] = twist7_rank(out)


def move_tables(el_cp: np.ndarray, el_co: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Transition tables of motions given as elements (arrays (n, 8) of cp and co):
    ``perm_moves`` (n, 8!) and ``twist_moves`` (n, 3^7), uint16."""
    n = el_cp.shape[0]
    perm_moves = np.zeros((n, N_PERM8), dtype=np.uint16)
    twist_moves = np.zeros((n, N_TWIST7), dtype=np.uint16)
    _fill_move_tables(np.ascontiguousarray(el_cp, dtype=np.int8),
                      np.ascontiguousarray(el_co, dtype=np.int8), perm_moves, twist_moves)
    return perm_moves, twist_moves
