"""Block moves and the axial-metric pruning tables of the robot-time search.

A *block* is what a robot does about one axis between two moves of other axes: net quarter
turns of the axis's first face (U, R, F) and of its second (D, L, B). Block kind
``axis * 16 + r1 * 4 + r2`` (``r1``, ``r2`` in 0..3, not both 0) numbers the 45 blocks; a
robot that turns two opposite faces at once (an axial move) does any block in one motion.

The axial metric counts blocks. Its distance tables have the layout of the face-turn tables
(`robocell.services.solver.cube3.pruning`), sym-reduced and stored mod 3, because a block is
a move of the metric and the set of blocks is closed under inverse and under the 16 UD
symmetries; a single face turn is a block too, so a search that steps by face turns still
changes the axial distance by at most one a step and may follow it by residues. A profile's
robot-time lower bound is then the cheapest block it has times the axial distance.

The tables depend on the metric only, not on a profile: one group, ``cube3-axial``, built on
first use (about a minute on one core) with a progress bar.
"""

from __future__ import annotations

import sys
import time
from functools import cache
from typing import NamedTuple

import numpy as np

from robocell.common.tables import TableGroup, load
from robocell.services.solver.cube3 import pruning, symmetries
from robocell.services.solver.cube3.defs import N_FLIP, N_MOVE, N_PERM_4, N_SLICE, N_TWIST, UNSET
from robocell.services.solver.cube3.tables import SYM_BITS, load_tables

AXIAL_CODE_VERSION = 1
"""Bump when any axial table's content changes."""
GROUP_NAME = "cube3-axial"
N_KIND = 48
"""Block kinds 0..47; ``kind % 16 == 0`` (nothing turned) is not a block."""
N_AXIS = 3


def block_kinds() -> np.ndarray:
    """The 45 block kinds."""
    return _BLOCK_KINDS.copy()


def phase2_block_kinds() -> np.ndarray:
    """The 21 blocks that keep a cube in G1: any U/D turns, half turns of R, L, F, B."""
    return _PHASE2_BLOCK_KINDS.copy()


_BLOCK_KINDS = np.array([k for k in range(N_KIND) if k % 16], dtype=np.int64)
_PHASE2_BLOCK_KINDS = np.array(
    [k for k in _BLOCK_KINDS if k // 16 == 0 or (k % 16) in (2 * 4, 2, 2 * 4 + 2)],
    dtype=np.int64)


def face_moves_of_kind(kind: int) -> list[int]:
    """Face-turn move numbers (3 * face + quarter turns - 1) a block kind is made of."""
    axis, rest = divmod(kind, 16)
    r1, r2 = divmod(rest, 4)
    out = []
    if r1:
        out.append(3 * axis + r1 - 1)
    if r2:
        out.append(3 * (axis + N_AXIS) + r2 - 1)
    return out


def merge_face_move(kind: int, move: int) -> int:
    """Block kind after face turn ``move`` (3 * face + quarter turns - 1) joins ``kind`` (0:
    no block yet; else the move must be of the block's axis)."""
    face, q = divmod(move, 3)
    if kind % 16 == 0:
        kind = (face % N_AXIS) * 16
    elif kind // 16 != face % N_AXIS:
        raise ValueError(f"face turn {move} is not of block {kind}'s axis")
    r1, r2 = divmod(kind % 16, 4)
    if face < N_AXIS:
        r1 = (r1 + q + 1) % 4
    else:
        r2 = (r2 + q + 1) % 4
    return (kind // 16) * 16 + r1 * 4 + r2


def compose_move_table(table: np.ndarray) -> np.ndarray:
    """A face-turn move table (values x moves) extended to the 48 block kinds (identity for
    the empty kinds)."""
    n = table.shape[0]
    out = np.empty((n, N_KIND), dtype=table.dtype)
    ident = np.arange(n, dtype=table.dtype)
    for kind in range(N_KIND):
        values = ident
        for m in face_moves_of_kind(kind):
            values = table[values, m]
        out[:, kind] = values
    return out


def _slice_move(move_tables: dict) -> np.ndarray:
    return (np.asarray(move_tables["slice_sorted_move"])[::N_PERM_4] // N_PERM_4).astype(
        np.uint16)


def build_axial() -> dict[str, np.ndarray]:
    """The axial-metric distance tables (mod 3 where large)."""
    started = time.monotonic()
    T = load_tables()
    move_tables = {name: np.asarray(getattr(T, name)) for name in
                   ("twist_move", "flip_move", "slice_sorted_move", "corners_move",
                    "ud_edges_move")}
    sym_tables = symmetries.build_sym_tables()
    print(f"tables: symmetry tables in {time.monotonic() - started:.1f}s", file=sys.stderr)
    kinds = block_kinds()
    p2_kinds = phase2_block_kinds()
    twist = compose_move_table(move_tables["twist_move"])
    flip = compose_move_table(move_tables["flip_move"])
    slc = compose_move_table(_slice_move(move_tables))
    corners = compose_move_table(move_tables["corners_move"])
    ud_edges = compose_move_table(move_tables["ud_edges_move"])
    slice_sorted = compose_move_table(move_tables["slice_sorted_move"])
    phase1 = pruning._sym_bfs(
        pruning.N_FLIPSLICE_CLASS, N_TWIST, kinds, sym_tables["flipslice_rep"], slc, flip,
        N_FLIP, sym_tables["flipslice_classidx"], sym_tables["flipslice_sym"],
        sym_tables["flipslice_stab"], twist, sym_tables["twist_conj"], "axial phase-1 pruning")
    zero = np.zeros((1, N_KIND), np.uint16)
    phase2 = pruning._sym_bfs(
        pruning.N_CORNER_CLASS, pruning.N_UD_EDGES, p2_kinds, sym_tables["corner_rep"], zero,
        corners, pruning.N_CORNERS, sym_tables["corner_classidx"], sym_tables["corner_sym"],
        sym_tables["corner_stab"], ud_edges, sym_tables["ud_edges_conj"],
        "axial phase-2 pruning")
    cornslice = np.full(pruning.N_CORNERS * N_PERM_4, UNSET, np.uint8)
    pruning._pair_bfs(corners, slice_sorted, N_PERM_4, p2_kinds, cornslice)
    slice_twist = np.full(N_SLICE * N_TWIST, UNSET, np.uint8)
    pruning._pair_bfs(slc, twist, N_TWIST, kinds, slice_twist)
    slice_flip = np.full(N_SLICE * N_FLIP, UNSET, np.uint8)
    pruning._pair_bfs(slc, flip, N_FLIP, kinds, slice_flip)
    return {"phase1_pruning": pruning.pack_mod3(phase1),
            "phase2_pruning": pruning.pack_mod3(phase2), "cornslice_depth": cornslice,
            "slice_twist_depth": slice_twist, "slice_flip_depth": slice_flip}


def table_groups(profile: str | None = None) -> list[TableGroup]:
    """The axial group (the same for every profile that turns two faces at once)."""
    return [TableGroup(
        name=GROUP_NAME, params={"code_version": AXIAL_CODE_VERSION, "metric": "axial",
                                 "sym_bits": SYM_BITS},
        build=build_axial,
        description="3x3x3 two-phase in the axial metric (a block of one axis = one move): "
                    "sym-reduced phase-1 and phase-2 distances mod 3, small exact tables",
        expected_mb=66.0, expected_s=20.0)]


class Distances(NamedTuple):
    """One metric's distance tables, as the robot-time search reads them."""

    phase1_pruning: np.ndarray
    phase2_pruning: np.ndarray
    cornslice_depth: np.ndarray
    slice_twist_depth: np.ndarray
    slice_flip_depth: np.ndarray
    moves1: np.ndarray
    """The metric's moves in phase 1 (face turns, or block kinds), as columns of the
    `BlockTables` move tables."""
    moves2: np.ndarray


class BlockTables(NamedTuple):
    """Move tables by block kind (48 columns) and the symmetry tables the search reads."""

    twist_move: np.ndarray
    flip_move: np.ndarray
    slice_move: np.ndarray
    slice_sorted_move: np.ndarray
    corners_move: np.ndarray
    ud_edges_move: np.ndarray
    twist_conj: np.ndarray
    ud_edges_conj: np.ndarray
    flipslice_classsym: np.ndarray
    corner_classidx: np.ndarray
    corner_sym: np.ndarray
    move_corner_perm: np.ndarray
    move_edge_perm: np.ndarray


FACE_KIND = np.array([(m // 3 % 3) * 16 + ((m % 3 + 1) * 4 if m // 3 < 3 else m % 3 + 1)
                      for m in range(N_MOVE)], dtype=np.int64)
"""Block kind of each single face turn."""


@cache
def block_tables() -> BlockTables:
    """The face-turn move tables extended to block kinds (built in memory, a second or so)."""
    T = load_tables()
    perm_c = np.asarray(T.move_corner_perm)
    perm_e = np.asarray(T.move_edge_perm)
    return BlockTables(
        twist_move=compose_move_table(np.asarray(T.twist_move)),
        flip_move=compose_move_table(np.asarray(T.flip_move)),
        slice_move=compose_move_table(np.asarray(T.slice_move)),
        slice_sorted_move=compose_move_table(np.asarray(T.slice_sorted_move)),
        corners_move=compose_move_table(np.asarray(T.corners_move)),
        ud_edges_move=compose_move_table(np.asarray(T.ud_edges_move)),
        twist_conj=np.asarray(T.twist_conj), ud_edges_conj=np.asarray(T.ud_edges_conj),
        flipslice_classsym=np.asarray(T.flipslice_classsym),
        corner_classidx=np.asarray(T.corner_classidx), corner_sym=np.asarray(T.corner_sym),
        move_corner_perm=perm_c, move_edge_perm=perm_e)


@cache
def distances(axial: bool) -> Distances:
    """Distance tables of the face-turn metric (``axial`` False) or the axial metric."""
    if axial:
        arrays = {k: np.asarray(v) for k, v in load(table_groups()[0]).items()}
        moves1, moves2 = block_kinds(), phase2_block_kinds()
    else:
        T = load_tables()
        arrays = {k: np.asarray(getattr(T, k)) for k in Distances._fields[:5]}
        moves1 = FACE_KIND.copy()
        moves2 = FACE_KIND[list(pruning.PHASE2_MOVES)].copy()
    return Distances(**{k: arrays[k] for k in Distances._fields[:5]}, moves1=moves1,
                     moves2=moves2)
