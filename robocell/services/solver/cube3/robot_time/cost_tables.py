"""A profile's own cost tables: exact least cost, in the profile's units, of parts of the cube.

The big pruning tables count steps (face turns or blocks); a robot's half turn may cost more
than a quarter turn, and the step bound cannot see it. These tables can: each is the exact
least cost of what is left after the block under way, every block priced at the least it
costs after a block of another axis (`block_costs_after_turn`: on a robot that re-orients the
cube that includes re-orienting it), of

- ``corner_slice`` / ``edge_slice``: phase 2's corners / U and D edges with the order of
  the slice edges (to solved, within G1);
- ``phase1``: the whole of phase 1, every (flip-slice class, conjugated twist) to G1, the
  layout of the face-turn search's phase-1 table (140,908,410 entries);
- ``phase2``: the whole of phase 2 but the slice order, every (corner class, conjugated U/D
  edges) to solved within G1 (111,605,760 entries).

A part of the cube costs no more than the whole, so each is a lower bound (admissible) for
every node but the root, whose first block follows none. The two small ones (about a million
entries each, float32) are built in seconds by relaxation sweeps. The two full ones take one
byte an entry, in ticks of a tenth of the cheapest block (``phase1_tick``, ``phase2_tick``):
every block's cost rounded down to whole ticks and made the same for blocks the 16 UD
symmetries map onto each other (the least of them), so they stay lower bounds; values past 254
ticks are stored as 254 (255: not reached below that). They are built by a Dijkstra sweep over
the classes, a level of ticks at a time (about 50 s each on one core). They are what makes
the robot-time search fast: the step distances times the cheapest block miss what half turns
cost, and a phase-1 leaf no longer walks the phase-2 residues before it can be refused.
Phase 1 reads its table through `move_words`, whose words also tell what each turn adds.

All are cached under ``tables/cube3-robot-<profile>`` with the profile's digest in the
manifest: a changed profile gets new tables.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from robocell.common.profile import Profile
from robocell.common.progress import Progress
from robocell.common.tables import TableGroup, load, may_load
from robocell.services.solver.cube3 import symmetries
from robocell.services.solver.cube3.defs import (
    N_CORNER_CLASS,
    N_CORNERS,
    N_FLIP,
    N_FLIPSLICE_CLASS,
    N_PERM_4,
    N_SLICE,
    N_SYM,
    N_TWIST,
    N_UD_EDGES,
    UNSET,
)
from robocell.services.solver.cube3.robot_time import axial_metric, move_words
from robocell.services.solver.cube3.robot_time.profile_costs import profile_costs

WEIGHTED_CODE_VERSION = 4
"""Bump when the content of these tables changes."""
TICKS_PER_BLOCK = 10
"""The full phase-1 table counts in ticks of the cheapest block's cost / this."""
TICK_CAP = 254
"""Largest stored phase-1 value (a lower bound for anything dearer)."""


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


@njit(cache=True)
def _tick_level(depth, d, kinds, ticks, n_inner, rep, outer_move_a, outer_move_b, outer_split,
                classidx, symidx, stab, inner_move, inner_conj):
    """Settle every entry of a class x inner table at ``d`` ticks: lower each neighbour to
    ``d`` + the block's ticks (entries are final when their level comes: every block costs a
    tick or more). The layout is `pruning._bfs_level`'s. Returns entries reached first."""
    reached = 0
    buf = np.empty(n_inner, np.int64)
    for c in range(rep.size):
        base = c * n_inner
        n = 0
        for i in range(n_inner):
            if depth[base + i] == d:
                buf[n] = i
                n += 1
        if n == 0:
            continue
        outer = np.int64(rep[c])
        a = outer // outer_split
        b = outer % outer_split
        for j in range(kinds.size):
            m = kinds[j]
            v = min(d + ticks[j], TICK_CAP)
            outer1 = np.int64(outer_move_a[a, m]) * outer_split + outer_move_b[b, m]
            base1 = np.int64(classidx[outer1]) * n_inner
            s1 = symidx[outer1]
            mask = stab[classidx[outer1]]
            for k in range(n):
                i1 = np.int64(inner_conj[inner_move[buf[k], m], s1])
                if depth[base1 + i1] > v:
                    reached += depth[base1 + i1] == UNSET
                    depth[base1 + i1] = v
                if mask != 1:
                    for s in range(1, N_SYM):
                        if (mask >> s) & 1:
                            i2 = np.int64(inner_conj[i1, s])
                            if depth[base1 + i2] > v:
                                reached += depth[base1 + i2] == UNSET
                                depth[base1 + i2] = v
    return reached


def symmetric_costs(kind_cost: np.ndarray) -> np.ndarray:
    """Each block kind's cost lowered to the least of the kinds the 16 UD symmetries map it
    to, so a sym-reduced table may use it."""
    _, move_conj = symmetries.sym_inverse_and_move_conj()
    out = kind_cost.copy()
    for k in axial_metric.block_kinds():
        for s in range(N_SYM):
            image = 0
            for m in axial_metric.face_moves_of_kind(int(k)):
                image = axial_metric.merge_face_move(image, int(move_conj[s, m]))
            out[k] = min(out[k], kind_cost[image])
    return out


def block_ticks(kind_cost: np.ndarray, of: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(tick, blocks, ticks of each): the blocks ``of`` the robot can do and their symmetric
    costs rounded down to ticks (at least one)."""
    sym = symmetric_costs(kind_cost)
    kinds = np.array([k for k in of if np.isfinite(sym[k])], np.int64)
    tick = float(sym[kinds].min()) / TICKS_PER_BLOCK
    ticks = np.maximum(1, np.floor(sym[kinds] / tick + 1e-9)).astype(np.int64)
    return tick, kinds, ticks


def _tick_table(n_class: int, n_inner: int, kinds: np.ndarray, ticks: np.ndarray,
                tables: tuple, label: str) -> np.ndarray:
    """Least cost in ticks of every entry of a sym-reduced class x inner table (``tables``:
    rep, outer_move_a, outer_move_b, outer_split, classidx, symidx, stab, inner_move,
    inner_conj, as `_tick_level` takes them)."""
    total = n_class * n_inner
    depth = np.full(total, UNSET, np.uint8)
    depth[0] = 0
    filled = 1
    with Progress(label, total) as progress:
        for d in range(TICK_CAP):
            if filled == total and not np.any((depth > d) & (depth < TICK_CAP)):
                break  # everything reached and settled
            filled += _tick_level(depth, np.uint8(d), kinds, ticks, n_inner, *tables)
            progress.update(filled)
    return depth


def build_full(kind_cost: np.ndarray, name: str) -> dict[str, np.ndarray]:
    """The full phase-1 and phase-2 tables in ticks and their ticks (module docstring)."""
    T = axial_metric.block_tables()
    sym = symmetries.build_sym_tables()
    out = {}
    tick, kinds, ticks = block_ticks(kind_cost, axial_metric.block_kinds())
    out["phase1_tick"] = np.array([tick])
    out["phase1"] = _tick_table(
        N_FLIPSLICE_CLASS, N_TWIST, kinds, ticks,
        (sym["flipslice_rep"], np.asarray(T.slice_move), np.asarray(T.flip_move), N_FLIP,
         sym["flipslice_classidx"], sym["flipslice_sym"], sym["flipslice_stab"],
         np.asarray(T.twist_move), sym["twist_conj"]), f"{name}: phase-1 costs")
    tick, kinds, ticks = block_ticks(kind_cost, axial_metric.phase2_block_kinds())
    out["phase2_tick"] = np.array([tick])
    zero = np.zeros((1, axial_metric.N_KIND), np.uint16)
    out["phase2"] = _tick_table(
        N_CORNER_CLASS, N_UD_EDGES, kinds, ticks,
        (sym["corner_rep"], zero, np.asarray(T.corners_move), N_CORNERS,
         sym["corner_classidx"], sym["corner_sym"], sym["corner_stab"],
         np.asarray(T.ud_edges_move), sym["ud_edges_conj"]), f"{name}: phase-2 costs")
    return out


class WeightedTables(NamedTuple):
    """The tables as the search reads them (float32 profile units; ``phase1`` in ticks of
    ``phase1_tick[0]`` units)."""

    corner_slice: np.ndarray
    edge_slice: np.ndarray
    phase1: np.ndarray
    phase1_tick: np.ndarray
    phase2: np.ndarray
    phase2_tick: np.ndarray
    moves: np.ndarray
    """`move_words`: per phase-1 entry, what each face turn adds to the bound (3 bits)."""
    move_ticks: np.ndarray
    move_lo: np.ndarray
    move_step: np.ndarray
    move_conj: np.ndarray


def block_least_costs(cost: np.ndarray) -> np.ndarray:
    """The cheapest each block kind costs anywhere in the robot (inf: it cannot), from the
    block costs ``cost[kind, s, t]``."""
    return np.array([cost[k].min() if k % 16 else 0.0 for k in range(axial_metric.N_KIND)])


def block_costs_after_turn(cost: np.ndarray) -> np.ndarray:
    """The cheapest each block kind costs after a block of another axis (inf: it cannot), from
    the block costs ``cost[kind, s, t]`` (their end states left sparse,
    `profile_costs.sparse_ends`): from any state such a block ends in. Every block of a
    solution but its first follows one, and a robot that re-orients the cube pays for it there
    (on tilt-spin a quarter turn costs 75 units at least, 135 after a turn of another axis).
    For a robot of one state it is `block_least_costs`."""
    ends = {int(k): np.isfinite(cost[k]).any(axis=0) for k in axial_metric.block_kinds()}
    out = np.zeros(axial_metric.N_KIND)
    for k in axial_metric.block_kinds():
        starts = np.zeros(cost.shape[1], np.bool_)
        for j, end in ends.items():
            if j // 16 != k // 16:
                starts |= end
        out[k] = cost[k][starts].min() if starts.any() else np.inf
    return out


def build_weighted(profile: Profile, cost: np.ndarray) -> dict[str, np.ndarray]:
    """The tables of a profile (see the module docstring): least costs of what is left after
    the block under way, so its blocks cost what they do after a block of another axis."""
    T = axial_metric.block_tables()
    kind_cost = block_costs_after_turn(cost)
    p2 = np.array([k for k in axial_metric.phase2_block_kinds() if np.isfinite(kind_cost[k])],
                  np.int64)
    # in G1 the slice-sorted coordinate is the order of the slice edges (< 24)
    slice_perm = np.ascontiguousarray(np.asarray(T.slice_sorted_move)[:N_PERM_4])
    return {
        **build_full(kind_cost, profile.name),
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
                "profile_digest": profile.search_hash, "slices": N_SLICE},
        build=lambda: build_weighted(profile, cost),
        description=f"3x3x3 robot-time search for profile {profile.name}: exact least cost "
                    "of each phase, and of corner-slice and edge-slice",
        expected_mb=260.0, expected_s=70.0)


def kind_ticks(cost: np.ndarray) -> np.ndarray:
    """Each block kind's cost in the phase-1 table's ticks (255: the robot cannot do it)."""
    _, kinds, ticks = block_ticks(block_costs_after_turn(cost), axial_metric.block_kinds())
    out = np.full(axial_metric.N_KIND, 255, np.int64)
    out[kinds] = ticks
    return out


def moves_group(profile: Profile, cost: np.ndarray) -> TableGroup:
    """The group of `move_words` words, made from the profile's phase-1 table."""
    return move_words.table_group(profile, table_group(profile, cost),
                                      lambda: kind_ticks(cost))


def search_groups(profile: Profile) -> list[TableGroup]:
    """Every group the robot-time search of ``profile`` reads: the axial metric's, the
    profile's weighted tables and their move words."""
    cost = profile_costs(profile).cost
    return [*axial_metric.table_groups(), table_group(profile, cost), moves_group(profile, cost)]


def robot_time_allowed(profile: Profile) -> bool:
    """True unless this process is held to tables that leave out the robot-time search's
    (a table budget, `robocell.common.tables.limit_loading`)."""
    return all(may_load(group) for group in search_groups(profile))


_LOADED: dict[tuple[str, str], WeightedTables] = {}


def weighted_tables(profile: Profile, cost: np.ndarray) -> WeightedTables:
    """A profile's weighted tables (``cost``: its block costs), memory-mapped, built first
    when missing or stale."""
    key = (profile.name, profile.content_hash)
    if key not in _LOADED:
        arrays = load(table_group(profile, cost))
        moves = load(moves_group(profile, cost))
        for field, name in (("moves", "words"), ("move_ticks", "ticks"), ("move_lo", "lo"),
                            ("move_step", "step"), ("move_conj", "move_conj")):
            arrays[field] = moves[name]
        _LOADED[key] = WeightedTables(**{k: np.asarray(arrays[k])
                                         for k in WeightedTables._fields})
    return _LOADED[key]


PAGE = 4096


def touch_loaded() -> int:
    """Map every page of the robot tables this process has loaded (a byte a page; about 0.15 s
    for a profile's 1.4 GB once they are in the page cache), so that a search does not take
    the page faults: a worker does it while warming up. Returns the pages touched."""
    pages = 0
    for tables in _LOADED.values():
        for name in ("moves", "phase1", "phase2"):
            view = getattr(tables, name).view(np.uint8).reshape(-1)
            pages += int(view[::PAGE].size)
            view[::PAGE].max()
    return pages
