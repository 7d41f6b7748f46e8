"""What each face turn does to a profile's phase-1 bound, for every entry of its phase-1 table.

The robot-time search looks at up to 18 children a node and refuses most of them on the
profile's full phase-1 table (`cost_tables`): each refusal costs a move-table lookup per
coordinate and a random read of a 141 MB table. This table lets it refuse them without
either. For every entry ``E`` of the phase-1 table (a flip-slice class's representative with
a twist) and every face turn ``m``, it holds ``y = ticks[m] + h(E m) - T[E]`` in 3 bits, where
``T`` is the phase-1 table in ticks, ``ticks[m]`` is the turn's cost in ticks and ``h`` is the
bound the search takes for the child: the least of ``T`` over the child and the child with a
turn of the opposite face joined (what the search takes while the block is open; for a
turn of the second face of an axis the search takes ``T`` of the child alone, which is no
smaller). Stored as ``min(7, (y - lo[m]) // step)``: ``lo[m]`` is the least ``y`` can be
(joining the opposite face may cost more than the turn alone), so the stored value gives a
lower bound of the child's bound, tight while it is under 7.

18 turns x 3 bits fit one 64-bit word an entry: 1.13 GB for a profile, memory-mapped. The
search reads a node's word once, and for each child the turn's 3 bits, remapped through the
symmetry that took the node to its table entry (``move_conj``). A child whose bound, so
worked out, is over the threshold is refused without a lookup; the others go on as before,
so the search refuses no child the full table would have let through.

Built from the phase-1 table in about half a minute a profile (45 reads an entry, a class's
row at a time so the reads stay in cache), cached under ``tables/cube3-robot-<profile>-moves``
keyed by the profile's digest like the table it is made from.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from robocell.common.profile import Profile
from robocell.common.progress import Progress
from robocell.common.tables import TableGroup, load
from robocell.services.solver.cube3 import symmetries
from robocell.services.solver.cube3.defs import N_FLIP, N_FLIPSLICE_CLASS, N_MOVE, N_TWIST
from robocell.services.solver.cube3.robot_time import axial_metric
from robocell.services.solver.cube3.tables import SYM_BITS

MOVES_CODE_VERSION = 3
"""Bump when the content of this table changes."""
BITS = 3
TOP = (1 << BITS) - 1
HERE_SHIFT = 56
"""The entry's own value in the phase-1 table (ticks) is kept in the word's top byte."""
STEP = 2
"""Ticks per stored unit: 7 units reach 14 ticks past ``lo`` (the bound's slack rarely does)."""
SYM_MASK = (1 << SYM_BITS) - 1
FACE_KIND = axial_metric.FACE_KIND
CLASSES_PER_CALL = 2048


def joined_kinds(m: int) -> list[int]:
    """Blocks face turn ``m`` makes alone and with each turn of the opposite face."""
    face, q = divmod(m, 3)
    axis = face % 3
    if face < 3:
        return [axis * 16 + (q + 1) * 4 + j for j in range(4)]
    return [axis * 16 + i * 4 + q + 1 for i in range(4)]


def move_ticks(kind_ticks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ticks of each face turn alone, the least ``y`` can be for it): a block joined from the
    turn costs no more than its ticks, so h(E m) >= T[E] - ticks(block)."""
    ticks = np.array([kind_ticks[FACE_KIND[m]] for m in range(N_MOVE)], np.int64)
    lo = np.array([ticks[m] - max(kind_ticks[k] for k in joined_kinds(m))
                   for m in range(N_MOVE)], np.int64)
    return ticks, lo


@njit(cache=True, parallel=True)
def _build_rows(first, last, table, rep, slice_move, flip_move, twist_move, classsym,
                twist_conj, ticks, lo, step, out):
    """Words of the classes first..last-1 (see the module docstring)."""
    for c in prange(first, last):
        row = np.empty((48, N_TWIST), np.int16)
        fs = np.int64(rep[c])
        slc = fs // N_FLIP
        flip = fs % N_FLIP
        for k in range(48):
            if k % 16 == 0:
                continue
            cs = np.int64(classsym[np.int64(slice_move[slc, k]) * N_FLIP + flip_move[flip, k]])
            base = (cs >> SYM_BITS) * N_TWIST
            s = cs & SYM_MASK
            for t in range(N_TWIST):
                row[k, t] = table[base + twist_conj[twist_move[t, k], s]]
        base = np.int64(c) * N_TWIST
        for t in range(N_TWIST):
            here = np.int64(table[base + t])
            word = np.uint64(here) << np.uint64(HERE_SHIFT)
            for m in range(N_MOVE):
                face = m // 3
                q = m % 3 + 1
                axis = face % 3
                h = np.int64(255)
                for j in range(4):
                    k = axis * 16 + (q * 4 + j if face < 3 else j * 4 + q)
                    if row[k, t] < h:
                        h = row[k, t]
                v = (ticks[m] + h - here) // step
                if v > TOP:
                    v = TOP
                if v < 0:
                    v = 0
                word |= np.uint64(v) << np.uint64(BITS * m)
            out[base + t] = word


def build_moves(phase1: np.ndarray, kind_ticks: np.ndarray, name: str) -> dict[str, np.ndarray]:
    """The table from a profile's phase-1 table and its blocks' ticks (module docstring)."""
    T = axial_metric.block_tables()
    sym = symmetries.build_sym_tables()
    ticks, lo = move_ticks(kind_ticks)
    if np.any(lo > 0):
        raise AssertionError(f"lo {lo}: a joined block cheaper than its first turn")
    out = np.zeros(N_FLIPSLICE_CLASS * N_TWIST, np.uint64)
    phase1 = np.asarray(phase1)
    args = (phase1, sym["flipslice_rep"], np.asarray(T.slice_move), np.asarray(T.flip_move),
            np.asarray(T.twist_move), np.asarray(T.flipslice_classsym),
            np.asarray(T.twist_conj), ticks, lo, STEP, out)
    with Progress(f"{name}: phase-1 moves", N_FLIPSLICE_CLASS) as progress:
        for first in range(0, N_FLIPSLICE_CLASS, CLASSES_PER_CALL):
            last = min(first + CLASSES_PER_CALL, N_FLIPSLICE_CLASS)
            _build_rows(first, last, *args)
            progress.update(last)
    _, move_conj = symmetries.sym_inverse_and_move_conj()
    return {"words": out, "ticks": ticks, "lo": lo, "step": np.array([STEP], np.int64),
            "move_conj": move_conj.astype(np.int64)}


def table_group(profile: Profile, weighted_group: TableGroup, kind_ticks_of) -> TableGroup:
    """The group of a profile's phase-1 move words, built from its weighted group."""

    def build() -> dict[str, np.ndarray]:
        phase1 = load(weighted_group)["phase1"]
        return build_moves(phase1, kind_ticks_of(), profile.name)

    return TableGroup(
        name=f"cube3-robot-{profile.name}-moves",
        params={"code_version": MOVES_CODE_VERSION, "profile": profile.name,
                "profile_digest": profile.search_hash,
                "weighted": weighted_group.params},
        build=build,
        description=f"3x3x3 robot-time search for profile {profile.name}: what each face "
                    "turn adds to the phase-1 bound, 3 bits a turn, per phase-1 entry",
        expected_mb=1127.0, expected_s=35.0)
