"""A lower bound on the least robot time of a random 3x3x3, for any planner: a counting bound.

There are N = 43,252,003,274,489,856,000 cubes. A plan of a robot's primitives does to the cube
what its face turns do in the cube's own frame, and those group into *blocks* (maximal runs of
one axis, each one of the 15 non-trivial turns of that axis's two faces), consecutive blocks on
different axes. The motion compiler prices a block sequence exactly: the least cost of any
primitives that do it, re-orientations included (`motion_compiler.MotionTables.block_cost`).
Every plan costs at least what its block sequence costs, and different cubes need different
block sequences. So the number of cubes a robot can solve within cost C is at most the number
of block sequences the compiler prices at C or less, and

    P(least cost of a random cube <= C) <= min(1, sequences(<= C) / N).

Counting the sequences by cost is a dynamic programme over (last axis, the compiler's costs
per end orientation less their least): the same min-plus step as
`motion_compiler._chain_blocks`, with counts in place of paths. From the counts, the mean
least cost of a uniformly random cube is at least sum over C of (1 - min(1, sequences(<= C)
/ N)) in steps of the costs' common divisor.

It is a bound on what an optimal planner can do on average, not a plan: it says where a
target lies out of every planner's reach. The argument needs primitives that either turn
layers or re-orient the cube (not both) and no sequencing rule, so that dropping the turns of
a run that cancels out leaves a plan the robot can still do; other profiles get an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np

from robocell.common.profile import Profile
from robocell.errors import RobocellError
from robocell.services.solver.cube3.motion_compiler import (
    N_AXES,
    N_REMAINDERS,
    NO_TURN,
    motion_tables,
    primitive_effect,
)

N_CUBES = 43_252_003_274_489_856_000
"""Cubes of the 3x3x3 group (centres fixed)."""
MAX_KEYS = 200_000
"""Guard on the programme's states (the real profiles need a few hundred at most)."""


class BoundError(RobocellError, ValueError):
    """A profile the counting bound cannot take (says which and why)."""


@dataclass(frozen=True)
class CostCounts:
    """Block sequences by least cost: ``counts[k]`` sequences cost exactly ``k * unit``
    profile units (``counts[0] = 1``: the empty plan)."""

    profile_name: str
    unit: int
    counts: np.ndarray

    def cumulative(self) -> np.ndarray:
        return np.cumsum(self.counts)

    def share_within(self, cost_units: float) -> float:
        """Upper bound on the share of all cubes a plan of at most ``cost_units`` solves."""
        k = int(cost_units // self.unit)
        if k < 0:
            return 0.0
        cum = self.cumulative()
        return min(1.0, float(cum[min(k, cum.size - 1)]) / N_CUBES)

    def mean_units(self) -> float:
        """Lower bound on the mean least cost (profile units) of a uniformly random cube."""
        share = np.minimum(1.0, self.cumulative() / N_CUBES)
        return float(np.sum(1.0 - share) * self.unit)

    def quantile_units(self, q: float) -> float:
        """A cost below which at most a share ``q`` of all cubes can be solved."""
        share = np.minimum(1.0, self.cumulative() / N_CUBES)
        return float(np.searchsorted(share, q, side="left") * self.unit)


def _cost_unit(profile: Profile) -> int:
    unit = 0
    for prim in profile.primitives:
        if prim.cost <= 0 or prim.cost != int(prim.cost):
            raise BoundError(
                f"profile {profile.name}: primitive {prim.name!r} costs {prim.cost}; the "
                "counting bound needs positive whole-unit costs (scale unit_ms to make them so)")
        unit = gcd(unit, int(prim.cost))
    return unit


def _check_profile(profile: Profile) -> None:
    if profile.puzzle not in ("3x3", "any"):
        raise BoundError(f"profile {profile.name} is for the {profile.puzzle}; the counting "
                         "bound is for 3x3x3 profiles (six-motor, tilt-spin, htm, qtm)")
    if profile.sequencing != "none":
        raise BoundError(
            f"profile {profile.name}: sequencing rule {profile.sequencing!r}; the counting "
            "bound needs rule 'none' (dropping a cancelled run of turns must leave a plan the "
            "robot can do)")
    for prim in profile.primitives:
        effect = primitive_effect(prim.moves)
        if effect is None:
            raise BoundError(f"profile {profile.name}: primitive {prim.name!r} turns layers "
                             "of more than one axis; the motion compiler cannot price it")
        turns = effect.axis != NO_TURN
        rotates = effect.rotation != tuple(range(len(effect.rotation)))
        if turns and rotates:
            raise BoundError(
                f"profile {profile.name}: primitive {prim.name!r} both turns a layer and "
                "re-orients the cube; the counting bound needs each primitive to do one of "
                "the two")


def count_by_cost(profile: Profile, max_levels: int | None = None) -> CostCounts:
    """Block sequences counted by their least cost under ``profile``, up to the cost where
    they outnumber all cubes (or ``max_levels`` cost steps, when given)."""
    _check_profile(profile)
    unit = _cost_unit(profile)
    tables = motion_tables(profile)
    if tables.first_block:
        raise BoundError(f"profile {profile.name} cuts corners (overlap_deg): its blocks cost "
                         "no whole number of units; the counting bound is for profiles "
                         "without overlap")
    n_states = tables.n_states
    block = tables.block_cost / unit  # whole numbers or inf
    # cost of finishing after the last block: none when any orientation is solved, else the
    # re-orientation back to the start (block kind 0 = a pure re-orient of axis 0)
    if profile.solved_any_orientation:
        finish = np.where(tables.final_states, 0.0, np.inf)
    else:
        finish = block[0][:, tables.start_state]

    kinds = [a * N_REMAINDERS + r for a in range(N_AXES) for r in range(1, N_REMAINDERS)]
    start = tuple(0.0 if s == tables.start_state else np.inf for s in range(n_states))
    keys: dict[tuple[int, tuple[float, ...]], int] = {(-1, start): 0}
    order = [(-1, start)]
    edges: list[tuple[int, int, int]] = []  # (source key, target key, base cost)
    i = 0
    while i < len(order):
        last_axis, offsets = order[i]
        off = np.array(offsets)
        for kind in kinds:
            axis = kind // N_REMAINDERS
            if axis == last_axis:
                continue
            new = (off[:, None] + block[kind]).min(axis=0)
            base = new.min()
            if base == np.inf:
                continue
            key = (axis, tuple((new - base).tolist()))
            if key not in keys:
                if len(keys) >= MAX_KEYS:
                    raise BoundError(f"profile {profile.name}: more than {MAX_KEYS} states in "
                                     "the counting programme")
                keys[key] = len(order)
                order.append(key)
            edges.append((i, keys[key], round(base)))
        i += 1
    if any(base <= 0 for _, _, base in edges):
        raise BoundError(f"profile {profile.name}: a block costs nothing; no bound exists")

    # cost to finish from each key's best state (-1: it cannot finish)
    ends = [(np.array(offsets) + finish).min() for _, offsets in order]
    extra = np.array([round(e) if e < np.inf else -1 for e in ends], dtype=np.int64)

    src = np.array([e[0] for e in edges], dtype=np.int64)
    dst = np.array([e[1] for e in edges], dtype=np.int64)
    base = np.array([e[2] for e in edges], dtype=np.int64)
    levels = max_levels or 64 * int(base.max())
    while True:
        counts = _count(len(order), src, dst, base, extra, levels)
        if max_levels is not None or np.sum(counts) >= N_CUBES:
            break
        levels *= 2
    return CostCounts(profile.name, unit, counts)


def _count(n_keys: int, src: np.ndarray, dst: np.ndarray, base: np.ndarray, extra: np.ndarray,
           levels: int) -> np.ndarray:
    """Sequences per exact cost level (float64: the counts pass 1e20)."""
    reach = np.zeros((levels + int(base.max()) + 1, n_keys))
    reach[0, 0] = 1.0
    counts = np.zeros(levels + 1)
    ends = extra >= 0
    by_base = [(b, src[base == b], dst[base == b]) for b in np.unique(base)]
    for c in range(levels + 1):
        row = reach[c]
        if not row.any():
            continue
        ks = np.nonzero((row > 0) & ends)[0]
        at = c + extra[ks]
        keep = at <= levels
        np.add.at(counts, at[keep], row[ks[keep]])
        for b, s, d in by_base:
            np.add.at(reach[c + b], d, row[s])
    return counts
