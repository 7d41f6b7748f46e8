"""The 3x3x3 solver's table group: move, symmetry and pruning tables, built and memory-mapped.

`table_groups` is what `robocell tables build/verify/info` asks for; `load_tables` gives the
search its arrays (built first, with a progress bar, when missing or stale).
"""

from __future__ import annotations

import sys
import time
from functools import cache
from typing import NamedTuple

import numpy as np

from robocell.common.tables import TableGroup, load
from robocell.services.solver.cube3 import moves, pruning, symmetries
from robocell.services.solver.cube3.defs import N_PERM_4

TABLES_CODE_VERSION = 3
"""Bump when any table's content changes."""
GROUP_NAME = "cube3-twophase"
SYM_BITS = 4
"""flipslice_classsym = class << SYM_BITS | symmetry."""


def build_all() -> dict[str, np.ndarray]:
    """Every table of the two-phase search (about 25 s on one core)."""
    started = time.monotonic()
    move_tables = moves.build_move_tables()
    sym_tables = symmetries.build_sym_tables()
    print(f"tables: move and symmetry tables in {time.monotonic() - started:.1f}s",
          file=sys.stderr)
    phase1 = pruning.pack_mod3(pruning.phase1_depth(move_tables, sym_tables))
    phase2 = pruning.pack_mod3(pruning.phase2_depth(move_tables, sym_tables))
    cp, _, ep, _ = moves.basic_cubies()
    keep = ("twist_conj", "ud_edges_conj", "corner_classidx", "corner_sym")
    # class and symmetry of a flip-slice value in one word: one memory read in the search
    flipslice_classsym = ((sym_tables["flipslice_classidx"].astype(np.uint32) << SYM_BITS)
                          | sym_tables["flipslice_sym"])
    return {**move_tables, **{k: sym_tables[k] for k in keep},
            "flipslice_classsym": flipslice_classsym,
            "phase1_pruning": phase1, "phase2_pruning": phase2,
            "cornslice_depth": pruning.cornslice_depth(move_tables),
            **pruning.phase1_pair_depths(move_tables),
            "move_corner_perm": cp, "move_edge_perm": ep}


def table_groups(profile: str | None = None) -> list[TableGroup]:
    """The groups a 3x3x3 profile needs (every profile uses the same two-phase tables)."""
    return [TableGroup(
        name=GROUP_NAME, params={"code_version": TABLES_CODE_VERSION, "metric": "htm"},
        build=build_all,
        description="3x3x3 two-phase: move tables, 16 UD symmetries, sym-reduced phase-1 and "
                    "phase-2 pruning (distance mod 3, 2 bits an entry)",
        expected_mb=75.0, expected_s=20.0)]


class TwoPhaseTables(NamedTuple):
    """The arrays the numba search reads (read-only views of the memory-mapped files)."""

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
    phase1_pruning: np.ndarray
    phase2_pruning: np.ndarray
    cornslice_depth: np.ndarray
    slice_twist_depth: np.ndarray
    slice_flip_depth: np.ndarray
    move_corner_perm: np.ndarray
    move_edge_perm: np.ndarray


@cache
def load_tables(build_if_needed: bool = True) -> TwoPhaseTables:
    """The tables, memory-mapped (built first when missing or stale)."""
    arrays = {k: np.asarray(v) for k, v in load(table_groups()[0], build_if_needed).items()}
    arrays["slice_move"] = np.ascontiguousarray(
        arrays["slice_sorted_move"][::N_PERM_4] // N_PERM_4).astype(np.uint16)
    return TwoPhaseTables(**{k: arrays[k] for k in TwoPhaseTables._fields})
