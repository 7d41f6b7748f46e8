"""The coordinate level: each cubie property of a cube as one integer, and back.

Coordinates (all 0 for the solved cube):
``twist`` (corner orientations, base 3), ``flip`` (edge orientations, base 2),
``slice`` (which 4 of the 12 edge positions hold the slice edges FR FL BL BR, as a
combination rank), ``slice_sorted`` (24 * slice + order of those edges), ``corners`` (rank of
the corner permutation), ``ud_edges`` (rank of the permutation of edges UR..DB on positions
UR..DB, meaningful in phase 2), ``slice_perm`` (order of the slice edges in phase 2).
Functions take and fill small int8 cubie arrays; all are numba-compiled.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.services.solver.cube3.defs import FIRST_SLICE_EDGE, N_CORNER, N_EDGE, N_SLICE_EDGE


def _binomials(n: int) -> np.ndarray:
    table = np.zeros((n + 1, n + 1), dtype=np.int64)
    for i in range(n + 1):
        table[i, 0] = 1
        for k in range(1, i + 1):
            table[i, k] = table[i - 1, k - 1] + table[i - 1, k]
    return table


BINOMIAL = _binomials(N_EDGE)
FACTORIAL = np.array([1, 1, 2, 6, 24, 120, 720, 5040, 40320], dtype=np.int64)


@njit(cache=True)
def get_twist(co: np.ndarray) -> int:
    twist = 0
    for i in range(N_CORNER - 1):
        twist = 3 * twist + co[i]
    return twist


@njit(cache=True)
def set_twist(co: np.ndarray, twist: int) -> None:
    total = 0
    for i in range(N_CORNER - 2, -1, -1):
        co[i] = twist % 3
        total += co[i]
        twist //= 3
    co[N_CORNER - 1] = (3 - total % 3) % 3


@njit(cache=True)
def get_flip(eo: np.ndarray) -> int:
    flip = 0
    for i in range(N_EDGE - 1):
        flip = 2 * flip + eo[i]
    return flip


@njit(cache=True)
def set_flip(eo: np.ndarray, flip: int) -> None:
    total = 0
    for i in range(N_EDGE - 2, -1, -1):
        eo[i] = flip & 1
        total += eo[i]
        flip >>= 1
    eo[N_EDGE - 1] = total & 1


@njit(cache=True)
def perm_rank(values: np.ndarray, n: int) -> int:
    """Lehmer rank of a permutation of 0..n-1 (identity -> 0)."""
    rank = 0
    for i in range(n):
        smaller = 0
        for j in range(i + 1, n):
            if values[j] < values[i]:
                smaller += 1
        rank += smaller * FACTORIAL[n - 1 - i]
    return rank


@njit(cache=True)
def perm_unrank(values: np.ndarray, n: int, rank: int) -> None:
    """Inverse of `perm_rank`: writes the permutation into values[0:n]."""
    used = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        f = FACTORIAL[n - 1 - i]
        k = rank // f
        rank %= f
        for v in range(n):
            if not used[v]:
                if k == 0:
                    values[i] = v
                    used[v] = True
                    break
                k -= 1


@njit(cache=True)
def get_slice(ep: np.ndarray) -> int:
    """Combination rank of the slice edges' positions, scanning from position BR down."""
    rank = 0
    found = 0
    for j in range(N_EDGE - 1, -1, -1):
        if ep[j] >= FIRST_SLICE_EDGE:
            found += 1
            rank += BINOMIAL[N_EDGE - 1 - j, found]
    return rank


@njit(cache=True)
def get_slice_sorted(ep: np.ndarray) -> int:
    order = np.empty(N_SLICE_EDGE, dtype=np.int8)
    k = 0
    for j in range(N_EDGE):
        if ep[j] >= FIRST_SLICE_EDGE:
            order[k] = ep[j] - FIRST_SLICE_EDGE
            k += 1
    return 24 * get_slice(ep) + perm_rank(order, N_SLICE_EDGE)


@njit(cache=True)
def set_slice_sorted(ep: np.ndarray, slice_sorted: int) -> None:
    """Slice edges where and in the order the coordinate says; the others in order 0..7."""
    rank = slice_sorted // 24
    order = np.empty(N_SLICE_EDGE, dtype=np.int8)
    perm_unrank(order, N_SLICE_EDGE, slice_sorted % 24)
    is_slice = np.zeros(N_EDGE, dtype=np.bool_)
    for k in range(N_SLICE_EDGE, 0, -1):
        c = k - 1
        while c + 1 <= N_EDGE - 1 and BINOMIAL[c + 1, k] <= rank:
            c += 1
        rank -= BINOMIAL[c, k]
        is_slice[N_EDGE - 1 - c] = True
    k = 0
    other = 0
    for j in range(N_EDGE):
        if is_slice[j]:
            ep[j] = FIRST_SLICE_EDGE + order[k]
            k += 1
        else:
            ep[j] = other
            other += 1


@njit(cache=True)
def get_corners(cp: np.ndarray) -> int:
    return perm_rank(cp, N_CORNER)


@njit(cache=True)
def set_corners(cp: np.ndarray, corners: int) -> None:
    perm_unrank(cp, N_CORNER, corners)


@njit(cache=True)
def get_ud_edges(ep: np.ndarray) -> int:
    return perm_rank(ep, FIRST_SLICE_EDGE)


@njit(cache=True)
def set_ud_edges(ep: np.ndarray, ud_edges: int) -> None:
    perm_unrank(ep, FIRST_SLICE_EDGE, ud_edges)
    for j in range(FIRST_SLICE_EDGE, N_EDGE):
        ep[j] = j


@njit(cache=True)
def get_slice_perm(ep: np.ndarray) -> int:
    """Order of the slice edges on the slice positions (phase 2 only)."""
    return perm_rank(ep[FIRST_SLICE_EDGE:] - FIRST_SLICE_EDGE, N_SLICE_EDGE)
