"""A profile's own distance tables: exact least cost, in the profile's units, of small parts.

The big pruning tables count steps (face turns or blocks); a robot's half turn may cost more
than a quarter turn, and the step bound cannot see it. These four tables can: each is the
exact least cost, every block priced at its cheapest in the profile, of

- ``slice_twist`` / ``slice_flip``: phase 1's slice positions with the corner twist / the
  edge flip (to G1);
- ``corner_slice`` / ``edge_slice``: phase 2's corners / U and D edges with the order of
  the slice edges (to solved, within G1).

A part of the cube costs no more than the whole, so each is a lower bound (admissible). They
are small (about a million entries each) and built per profile in seconds by relaxation sweeps
(any non-negative costs), cached under ``tables/cube3-robot-<profile>`` with the profile's
digest in the manifest: a changed profile gets new tables.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from robocell.common.profile import Profile
from robocell.common.progress import Progress
from robocell.common.tables import TableGroup, load
from robocell.services.solver.cube3 import axial
from robocell.services.solver.cube3.defs import N_FLIP, N_PERM_4, N_SLICE, N_TWIST

WEIGHTED_CODE_VERSION = 1
"""Bump when the content of these tables changes."""


@njit(cache=True)
def _relax(move_a, move_b, n_b, kinds, kind_cost, dist):
    """One sweep: every entry's cost from its neighbours' (moves are closed under inverse, so
    pulling from a neighbour = pushing to it). Returns the number of entries lowered."""
    changed = 0
    for i in range(dist.size):
        a = i // n_b
        b = i % n_b
        best = dist[i]
        for j in range(kinds.size):
            k = kinds[j]
            nb = np.int64(move_a[a, k]) * n_b + move_b[b, k]
            c = dist[nb] + kind_cost[k]
            if c < best:
                best = c
        if best < dist[i]:
            dist[i] = best
            changed += 1
    return changed


def _pair_costs(move_a: np.ndarray, move_b: np.ndarray, n_b: int, kinds: np.ndarray,
                kind_cost: np.ndarray, label: str) -> np.ndarray:
    dist = np.full(move_a.shape[0] * n_b, np.inf, dtype=np.float32)
    dist[0] = 0.0
    with Progress(label, 1) as progress:
        while _relax(move_a, move_b, n_b, kinds, kind_cost.astype(np.float32), dist):
            pass
        progress.update(1)
    return dist


class WeightedTables(NamedTuple):
    """The four tables as the search reads them (float32, profile units)."""

    slice_twist: np.ndarray
    slice_flip: np.ndarray
    corner_slice: np.ndarray
    edge_slice: np.ndarray


def block_least_costs(cost: np.ndarray) -> np.ndarray:
    """The cheapest each block kind costs anywhere in the robot (inf: it cannot), from the
    block costs ``cost[kind, s, t]``."""
    return np.array([cost[k].min() if k % 16 else 0.0 for k in range(axial.N_KIND)])


def build_weighted(profile: Profile, cost: np.ndarray) -> dict[str, np.ndarray]:
    """The four tables of a profile (see the module docstring)."""
    T = axial.block_tables()
    kind_cost = block_least_costs(cost)
    kinds = np.array([k for k in axial.block_kinds() if np.isfinite(kind_cost[k])], np.int64)
    p2 = np.array([k for k in axial.phase2_block_kinds() if np.isfinite(kind_cost[k])],
                  np.int64)
    slice_move = np.asarray(T.slice_move)
    # in G1 the slice-sorted coordinate is the order of the slice edges (< 24)
    slice_perm = np.ascontiguousarray(np.asarray(T.slice_sorted_move)[:N_PERM_4])
    return {
        "slice_twist": _pair_costs(slice_move, np.asarray(T.twist_move), N_TWIST, kinds,
                                   kind_cost, f"{profile.name}: slice-twist costs"),
        "slice_flip": _pair_costs(slice_move, np.asarray(T.flip_move), N_FLIP, kinds,
                                  kind_cost, f"{profile.name}: slice-flip costs"),
        "corner_slice": _pair_costs(np.asarray(T.corners_move), slice_perm, N_PERM_4, p2,
                                    kind_cost, f"{profile.name}: corner-slice costs"),
        "edge_slice": _pair_costs(np.asarray(T.ud_edges_move), slice_perm, N_PERM_4, p2,
                                  kind_cost, f"{profile.name}: edge-slice costs"),
    }


def table_group(profile: Profile, cost: np.ndarray) -> TableGroup:
    """The group of a profile's weighted tables, stale when the profile changes."""
    return TableGroup(
        name=f"cube3-robot-{profile.name}",
        params={"code_version": WEIGHTED_CODE_VERSION, "profile": profile.name,
                "profile_digest": profile.content_hash, "slices": N_SLICE},
        build=lambda: build_weighted(profile, cost),
        description=f"3x3x3 robot-time search for profile {profile.name}: exact least cost "
                    "of slice-twist, slice-flip, corner-slice and edge-slice")


_LOADED: dict[tuple[str, str], WeightedTables] = {}


def weighted_tables(profile: Profile, cost: np.ndarray) -> WeightedTables:
    """A profile's weighted tables (``cost``: its block costs), memory-mapped, built first
    when missing or stale."""
    key = (profile.name, profile.content_hash)
    if key not in _LOADED:
        arrays = load(table_group(profile, cost))
        _LOADED[key] = WeightedTables(**{k: np.asarray(arrays[k])
                                         for k in WeightedTables._fields})
    return _LOADED[key]
