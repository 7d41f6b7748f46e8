"""The 16 symmetries of the cube that keep the UD axis, and the coordinate classes they make.

Two cubes X and conj(X, s) = S_s * X * S_s^-1 need the same number of moves to reach G1 and
to solve within G1, because conjugation by S_s maps face turns to face turns and G1 to G1. So
the pruning tables store one entry per *class* of flip-slice (phase 1) or corner (phase 2)
coordinates. For each coordinate value the tables below give its class and a symmetry ``s``
with conj(value, s) = the class representative (the smallest value of the class); the other
coordinate of the table (twist, ud_edges) is then conjugated by the same ``s``.

Symmetry number 8 * f2 + 2 * u4 + lr2 is the product F2^f2 * U4^u4 * LR2^lr2: F2 a half turn
of the whole cube about the F axis, U4 a quarter turn about the U axis, LR2 the reflection
that swaps left and right (its corners carry orientation 3: mirrored).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.common.facelets import CORNER_NAMES, EDGE_NAMES
from robocell.common.moves import move_cubie
from robocell.common.notation import Move
from robocell.services.solver.cube3 import coord
from robocell.services.solver.cube3.defs import (
    N_CORNER,
    N_CORNER_CLASS,
    N_CORNERS,
    N_EDGE,
    N_FLIP,
    N_FLIPSLICE,
    N_FLIPSLICE_CLASS,
    N_MOVE,
    N_SYM,
    N_TWIST,
    N_UD_EDGES,
)
from robocell.services.solver.cube3.moves import basic_cubies, multiply_corners, multiply_edges

MIRROR = 3
"""Orientation offset of a mirrored corner."""


def _mirror_lr() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The left-right reflection: each piece goes to the position with R and L swapped."""
    swap = str.maketrans("RL", "LR")
    corner_sets = [set(name) for name in CORNER_NAMES]
    edge_sets = [set(name) for name in EDGE_NAMES]
    cp = np.array([corner_sets.index(set(n.translate(swap))) for n in CORNER_NAMES], np.int8)
    ep = np.array([edge_sets.index(set(n.translate(swap))) for n in EDGE_NAMES], np.int8)
    return cp, np.full(N_CORNER, MIRROR, np.int8), ep, np.zeros(N_EDGE, np.int8)


def _rotation(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    cubie = move_cubie(Move(text[0], int(text[1:] or 1)), 3)
    return (cubie.corner_perm.astype(np.int8), cubie.corner_twist.astype(np.int8),
            cubie.edge_perm.astype(np.int8), cubie.edge_flip.astype(np.int8))


def _multiply(a: tuple, b: tuple) -> tuple:
    out = tuple(np.zeros_like(x) for x in a)
    multiply_corners(a[0], a[1], b[0], b[1], out[0], out[1])
    multiply_edges(a[2], a[3], b[2], b[3], out[2], out[3])
    return out


def sym_cubies() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """cp, co, ep, eo of the 16 UD symmetries, shape (16, 8) / (16, 12)."""
    f2, u4, lr2 = _rotation("z2"), _rotation("y"), _mirror_lr()
    identity = (np.arange(N_CORNER, dtype=np.int8), np.zeros(N_CORNER, np.int8),
                np.arange(N_EDGE, dtype=np.int8), np.zeros(N_EDGE, np.int8))
    syms = []
    for i in range(2):
        for j in range(4):
            for k in range(2):
                cube = identity
                for _ in range(i):
                    cube = _multiply(cube, f2)
                for _ in range(j):
                    cube = _multiply(cube, u4)
                for _ in range(k):
                    cube = _multiply(cube, lr2)
                syms.append(cube)
    return tuple(np.stack([s[part] for s in syms]) for part in range(4))  # type: ignore[return-value]


def _same(a: tuple, b: tuple) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def sym_inverse_and_move_conj() -> tuple[np.ndarray, np.ndarray]:
    """``inverse[s]`` and ``move_conj[s, m]``: the face turn S_s * M_m * S_s^-1."""
    cubes = sym_cubies()
    sym = [tuple(part[s] for part in cubes) for s in range(N_SYM)]
    identity = sym[0]
    inverse = np.array([next(t for t in range(N_SYM) if _same(_multiply(sym[s], sym[t]),
                                                             identity))
                        for s in range(N_SYM)], np.int8)
    moves = basic_cubies()
    move = [tuple(part[m] for part in moves) for m in range(N_MOVE)]
    move_conj = np.full((N_SYM, N_MOVE), -1, np.int8)
    for s in range(N_SYM):
        for m in range(N_MOVE):
            image = _multiply(_multiply(sym[s], move[m]), sym[inverse[s]])
            move_conj[s, m] = next(k for k in range(N_MOVE) if _same(image, move[k]))
    return inverse, move_conj


@njit(cache=True)
def _conj_corners(s_cp, s_co, inv_cp, inv_co, cp, co, tmp_cp, tmp_co, out_cp, out_co):
    multiply_corners(s_cp, s_co, cp, co, tmp_cp, tmp_co)
    multiply_corners(tmp_cp, tmp_co, inv_cp, inv_co, out_cp, out_co)


@njit(cache=True)
def _conj_edges(s_ep, s_eo, inv_ep, inv_eo, ep, eo, tmp_ep, tmp_eo, out_ep, out_eo):
    multiply_edges(s_ep, s_eo, ep, eo, tmp_ep, tmp_eo)
    multiply_edges(tmp_ep, tmp_eo, inv_ep, inv_eo, out_ep, out_eo)


@njit(cache=True)
def _build_conj_tables(s_cp, s_co, s_ep, s_eo, inverse, twist_conj, ud_edges_conj):
    cp = np.arange(N_CORNER).astype(np.int8)
    co = np.zeros(N_CORNER, np.int8)
    tcp = np.zeros(N_CORNER, np.int8)
    tco = np.zeros(N_CORNER, np.int8)
    ocp = np.zeros(N_CORNER, np.int8)
    oco = np.zeros(N_CORNER, np.int8)
    for t in range(N_TWIST):
        coord.set_twist(co, t)
        for s in range(16):
            i = inverse[s]
            _conj_corners(s_cp[s], s_co[s], s_cp[i], s_co[i], cp, co, tcp, tco, ocp, oco)
            twist_conj[t, s] = coord.get_twist(oco)
    ep = np.zeros(N_EDGE, np.int8)
    eo = np.zeros(N_EDGE, np.int8)
    tep = np.zeros(N_EDGE, np.int8)
    teo = np.zeros(N_EDGE, np.int8)
    oep = np.zeros(N_EDGE, np.int8)
    oeo = np.zeros(N_EDGE, np.int8)
    for u in range(N_UD_EDGES):
        coord.set_ud_edges(ep, u)
        for s in range(16):
            i = inverse[s]
            _conj_edges(s_ep[s], s_eo[s], s_ep[i], s_eo[i], ep, eo, tep, teo, oep, oeo)
            ud_edges_conj[u, s] = coord.get_ud_edges(oep)


@njit(cache=True)
def _build_flipslice_classes(s_cp, s_co, s_ep, s_eo, inverse, classidx, sym, rep, stab):
    """Classes of flipslice = slice * N_FLIP + flip; returns the number of classes."""
    ep = np.zeros(N_EDGE, np.int8)
    eo = np.zeros(N_EDGE, np.int8)
    tep = np.zeros(N_EDGE, np.int8)
    teo = np.zeros(N_EDGE, np.int8)
    oep = np.zeros(N_EDGE, np.int8)
    oeo = np.zeros(N_EDGE, np.int8)
    n_class = 0
    for fs in range(N_FLIPSLICE):
        if classidx[fs] != 0xFFFF:
            continue
        coord.set_slice_sorted(ep, 24 * (fs // N_FLIP))
        coord.set_flip(eo, fs % N_FLIP)
        rep[n_class] = fs
        mask = 0
        for s in range(16):
            i = inverse[s]
            _conj_edges(s_ep[s], s_eo[s], s_ep[i], s_eo[i], ep, eo, tep, teo, oep, oeo)
            image = coord.get_slice(oep) * N_FLIP + coord.get_flip(oeo)
            if image == fs:
                mask |= 1 << s
            if classidx[image] == 0xFFFF:
                classidx[image] = n_class
                sym[image] = inverse[s]
        stab[n_class] = mask
        n_class += 1
    return n_class


@njit(cache=True)
def _build_corner_classes(s_cp, s_co, s_ep, s_eo, inverse, classidx, sym, rep, stab):
    cp = np.zeros(N_CORNER, np.int8)
    co = np.zeros(N_CORNER, np.int8)
    tcp = np.zeros(N_CORNER, np.int8)
    tco = np.zeros(N_CORNER, np.int8)
    ocp = np.zeros(N_CORNER, np.int8)
    oco = np.zeros(N_CORNER, np.int8)
    n_class = 0
    for c in range(N_CORNERS):
        if classidx[c] != 0xFFFF:
            continue
        coord.set_corners(cp, c)
        rep[n_class] = c
        mask = 0
        for s in range(16):
            i = inverse[s]
            _conj_corners(s_cp[s], s_co[s], s_cp[i], s_co[i], cp, co, tcp, tco, ocp, oco)
            image = coord.get_corners(ocp)
            if image == c:
                mask |= 1 << s
            if classidx[image] == 0xFFFF:
                classidx[image] = n_class
                sym[image] = inverse[s]
        stab[n_class] = mask
        n_class += 1
    return n_class


def build_sym_tables() -> dict[str, np.ndarray]:
    """Conjugation tables and the flip-slice and corner classes (see the module docstring)."""
    s_cp, s_co, s_ep, s_eo = sym_cubies()
    inverse, move_conj = sym_inverse_and_move_conj()
    twist_conj = np.zeros((N_TWIST, N_SYM), np.uint16)
    ud_edges_conj = np.zeros((N_UD_EDGES, N_SYM), np.uint16)
    _build_conj_tables(s_cp, s_co, s_ep, s_eo, inverse, twist_conj, ud_edges_conj)
    fs_classidx = np.full(N_FLIPSLICE, 0xFFFF, np.uint16)
    fs_sym = np.zeros(N_FLIPSLICE, np.uint8)
    fs_rep = np.zeros(N_FLIPSLICE_CLASS, np.uint32)
    fs_stab = np.zeros(N_FLIPSLICE_CLASS, np.uint16)
    n = _build_flipslice_classes(s_cp, s_co, s_ep, s_eo, inverse, fs_classidx, fs_sym, fs_rep,
                                 fs_stab)
    if n != N_FLIPSLICE_CLASS:
        raise AssertionError(f"{n} flip-slice classes, expected {N_FLIPSLICE_CLASS}")
    co_classidx = np.full(N_CORNERS, 0xFFFF, np.uint16)
    co_sym = np.zeros(N_CORNERS, np.uint8)
    co_rep = np.zeros(N_CORNER_CLASS, np.uint16)
    co_stab = np.zeros(N_CORNER_CLASS, np.uint16)
    n = _build_corner_classes(s_cp, s_co, s_ep, s_eo, inverse, co_classidx, co_sym, co_rep,
                              co_stab)
    if n != N_CORNER_CLASS:
        raise AssertionError(f"{n} corner classes, expected {N_CORNER_CLASS}")
    return {"sym_inverse": inverse, "move_conj": move_conj, "twist_conj": twist_conj,
            "ud_edges_conj": ud_edges_conj, "flipslice_classidx": fs_classidx,
            "flipslice_sym": fs_sym, "flipslice_rep": fs_rep, "flipslice_stab": fs_stab,
            "corner_classidx": co_classidx, "corner_sym": co_sym, "corner_rep": co_rep,
            "corner_stab": co_stab}
