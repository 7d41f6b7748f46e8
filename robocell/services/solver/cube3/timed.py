"""Driver of the robot-time search: a profile's block costs, the directions, the budget.

`profile_costs` reads what the search needs from the motion compiler's tables of a profile
(`robocell.services.solver.cube3.robot.motion_tables`): the least cost of every block from
every robot state the robot can reach to every other, the cost of ending, and the bound per
step of the cheaper-to-bound metric. Nothing of it is compiled in: a new robot is a TOML
file. `RobotTimeSearch` runs the numba search (`timed_search`) from several directions in
turns of `NODE_SLICE` nodes, each solution lowering the cost every direction must beat, until
the budget is spent or no direction can do better (then the best is the least robot time of
any two-phase solution, which for short scrambles is the least of all).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

import numpy as np

from robocell.common.cubie import CubieState
from robocell.common.facelets import FACES
from robocell.common.notation import Move
from robocell.common.profile import Profile
from robocell.services.solver.cube3 import axial
from robocell.services.solver.cube3 import timed_blocks as tb
from robocell.services.solver.cube3 import timed_search as ts
from robocell.services.solver.cube3.robot import motion_tables
from robocell.services.solver.cube3.search import Direction, make_directions
from robocell.services.solver.cube3.tables import load_tables
from robocell.services.solver.cube3.weighted import weighted_tables

NODE_SLICE = 1000
"""Steps (a phase-1 node visited every second one, about: a node's children have their reads
started in two steps) every active direction takes before the driver looks at the clock
again (`timed_search.search_turns`)."""
PHASE2_CAP = 5000
"""Phase-2 nodes one phase-1 path may take: past it, the path is left for the next one."""
AXIAL_GAIN = 1.2
"""Bound by the axial metric when its cost per step beats the face-turn metric's by this."""
N_KIND = axial.N_KIND


@dataclass(frozen=True)
class ProfileCosts:
    """A profile as the robot-time search sees it (see the module docstring)."""

    cost: np.ndarray
    """cost[kind, s, t]: least cost of a block of ``kind`` from state s to state t."""
    start: np.ndarray
    """Cost vector at the start: 0 for the start state, inf elsewhere."""
    finish: np.ndarray
    """finish[t]: least cost of ending from state t (re-orienting when the profile must)."""
    axial: bool
    """True: bound by the axial metric (the robot turns opposite faces at once)."""
    step: float
    """Least cost of a step of that metric."""
    reversible: bool
    """A block and its inverse cost the same from the one state: the inverse cube may be
    searched instead."""


def _reachable(block_cost: np.ndarray, start: int) -> list[int]:
    finite = np.isfinite(block_cost).any(axis=0)  # [s, t]
    seen = {start}
    frontier = [start]
    while frontier:
        s = frontier.pop()
        for t in np.nonzero(finite[s])[0]:
            if int(t) not in seen:
                seen.add(int(t))
                frontier.append(int(t))
    return sorted(seen)


def _inverse_kind(kind: int) -> int:
    r1, r2 = divmod(kind % 16, 4)
    return (kind // 16) * 16 + (-r1 % 4) * 4 + (-r2 % 4)


def sparse_ends(cost: np.ndarray) -> np.ndarray:
    """The block costs with every end state left out (inf) that another end state and a
    re-orientation after it reach as cheaply: the search then carries only the states a
    block really ends in, and the next block re-orients from there. Exact only while a block's
    cost already includes the cheapest re-orientation before it (checked: else unchanged)."""
    n = cost.shape[1]
    if n == 1:
        return cost
    reorient = cost[0].copy()
    np.fill_diagonal(reorient, 0.0)
    kinds = axial.block_kinds()
    tol = 1e-9
    # re-orientations compose (a closure), and a block from s costs no more than
    # re-orienting first and doing it from there
    if not np.all((reorient[:, :, None] + reorient[None, :, :]).min(axis=1) >= reorient - tol):
        return cost
    for k in kinds:
        if not np.all((reorient[:, :, None] + cost[k][None, :, :]).min(axis=1)
                      >= cost[k] - tol):
            return cost
    out = cost.copy()
    for k in kinds:
        keep = list(range(n))
        for t in range(n):
            others = [u for u in keep if u != t]
            if not others:
                continue
            via = (cost[k][:, others] + reorient[others, t][None, :]).min(axis=1)
            if np.all(via <= cost[k][:, t] + tol):
                keep.remove(t)
        drop = [t for t in range(n) if t not in keep]
        out[k][:, drop] = np.inf
    return out


@cache
def _profile_costs(key: tuple[str, str], profile: Profile) -> ProfileCosts:
    tables = motion_tables(profile)
    states = _reachable(tables.block_cost, tables.start_state)
    cost = sparse_ends(np.ascontiguousarray(tables.block_cost[:, states][:, :, states]))
    start = np.full(len(states), np.inf)
    start[states.index(tables.start_state)] = 0.0
    final = tables.final_states[states]
    reorient = cost[0].copy()
    np.fill_diagonal(reorient, 0.0)
    finish = np.where(final[None, :], reorient, np.inf).min(axis=1)
    kinds = axial.block_kinds()
    least = np.array([cost[k].min() for k in kinds])
    faces = np.array([int(k % 16 >= 4) + int(k % 4 > 0) for k in kinds])
    if not np.isfinite(least).all():
        # a block the robot cannot do: the search never takes it, the bounds ignore it
        least = np.where(np.isfinite(least), least, np.inf)
    step_axial = float(least.min())
    step_face = float((least / faces).min())
    use_axial = step_axial > AXIAL_GAIN * step_face
    reversible = len(states) == 1 and all(
        cost[k, 0, 0] == cost[_inverse_kind(k), 0, 0] for k in kinds)
    return ProfileCosts(cost=cost, start=start, finish=finish, axial=bool(use_axial),
                        step=step_axial if use_axial else step_face, reversible=reversible)


def profile_costs(profile: Profile) -> ProfileCosts:
    """The search's view of a profile (built once per process, well under a second)."""
    return _profile_costs((profile.name, profile.content_hash), profile)


def kind_map(face_map: dict[str, str]) -> np.ndarray:
    """Block kind in a direction's frame -> block kind in the cube's frame."""
    return _kind_map(tuple(face_map[f] for f in FACES))


@cache
def _kind_map(images: tuple[str, ...]) -> np.ndarray:
    face_map = dict(zip(FACES, images, strict=True))
    out = np.zeros(N_KIND, dtype=np.int64)
    for kind in range(N_KIND):
        axis, rest = divmod(kind, 16)
        r1, r2 = divmod(rest, 4)
        first = FACES.index(face_map[FACES[axis]])
        if first < 3:
            out[kind] = first * 16 + r1 * 4 + r2
        else:
            out[kind] = (first - 3) * 16 + r2 * 4 + r1
    out.flags.writeable = False
    return out


def steps_bound(cost: np.ndarray, axial_steps: bool, levels: int = tb.LEVELS,
                kinds: np.ndarray | None = None) -> np.ndarray:
    """H[n, t, a]: least cost of n more steps (blocks in the axial metric, face turns in the
    face-turn metric) from robot state t when the open block is of axis a (3: none). Blocks
    in a row are of different axes, which for a robot that re-orients the cube between them
    is what makes a turn dear. With ``kinds``, only those blocks may be steps: phase 2's,
    whose turns of the side faces are all half turns, bound phase 2 tighter."""
    n_states = cost.shape[1]
    H = np.zeros((levels, n_states, 4))
    kinds = axial.block_kinds() if kinds is None else kinds
    steps = [1 if axial_steps else int(k % 16 >= 4) + int(k % 4 > 0) for k in kinds]
    for n in range(1, levels):
        for a in range(4):
            best = np.full(n_states, np.inf)
            for k, step in zip(kinds, steps, strict=True):
                if k // 16 == a:
                    continue
                rest = H[max(n - step, 0), :, k // 16]
                best = np.minimum(best, (cost[k] + rest[None, :]).min(axis=1))
            H[n, :, a] = best
    return H


_STEPS: dict[tuple, np.ndarray] = {}


def _steps_for(key: tuple, cost: np.ndarray, axial_steps: bool,
               kinds: np.ndarray | None = None) -> np.ndarray:
    if key not in _STEPS:
        _STEPS[key] = steps_bound(cost, axial_steps, kinds=kinds)
    return _STEPS[key]


_STACKED = ("cost", "exits", "H", "H2", "ints", "before", "after", "g", "ctl", "perms", "fctl")
"""The arrays of a direction that `RobotTimeSearch` stacks over its directions."""


class _DirectionState:
    """A direction and its resumable robot-time search."""

    def __init__(self, direction: Direction, costs: ProfileCosts, T, D, W) -> None:
        self.direction = direction
        kinds = kind_map(direction.face_map)
        self.cost = np.ascontiguousarray(costs.cost[kinds])
        self.exits = np.ascontiguousarray(self.cost.min(axis=2))
        """exits[kind, s]: least cost of a block of ``kind`` from state s, to any state."""
        self.H = _steps_for((id(costs), kinds.tobytes()), self.cost, costs.axial)
        self.H2 = _steps_for((id(costs), kinds.tobytes(), 2), self.cost, costs.axial,
                             axial.phase2_block_kinds())
        n = costs.cost.shape[1]
        self.ints = np.zeros((tb.LEVELS, tb.N_FIELDS), np.int64)
        self.before = np.zeros((tb.LEVELS, n))
        self.after = np.zeros((tb.LEVELS, n))
        self.g = np.zeros(tb.LEVELS)
        self.ctl = np.zeros(2, np.int64)
        self.perms = np.zeros((tb.LEVELS, 20), np.int64)
        """Corner and edge permutations along the phase-1 path (`timed_phase2.leaf_phase2`)."""
        self.fctl = np.zeros(4)
        self.exhausted = False
        root = direction.root[:3].copy()
        ts.init_direction(T, D, W, root, direction.start_cp, direction.start_ep, costs.start,
                          self.ints, self.before, self.after, self.g, self.ctl, self.fctl)


class RobotTimeSearch:
    """Search a cube for plans of least robot time under a profile (module docstring)."""

    def __init__(self, state: CubieState, profile: Profile,
                 part: tuple[int, int] = (0, 1)) -> None:
        index, parts = part
        if not 0 <= index < parts:
            raise ValueError(f"search part {index} of {parts}: give 0 <= k < n")
        self.costs = profile_costs(profile)
        self.T = axial.block_tables()
        self.D = axial.distances(self.costs.axial)
        self.W = weighted_tables(profile, self.costs.cost)
        directions = [d for d in make_directions(state, load_tables())
                      if self.costs.reversible or not d.inverse]
        self.directions = [_DirectionState(d, self.costs, self.T, self.D, self.W)
                           for d in directions[index::parts]]
        n = self.costs.cost.shape[1]
        self.path = np.zeros(tb.LEVELS, np.int64)
        self.out_path = np.zeros(tb.LEVELS, np.int64)
        self.work = np.zeros((3, tb.LEVELS), np.int64)
        self.ints2 = np.zeros((tb.LEVELS, tb.N_FIELDS), np.int64)
        self.before2 = np.zeros((tb.LEVELS, n))
        self.after2 = np.zeros((tb.LEVELS, n))
        self.g2 = np.zeros(tb.LEVELS)
        self.counters = np.zeros(4, np.int64)
        self.exhausted = False
        self.phase2_cap = PHASE2_CAP
        # the directions' stacks and tables on a first axis, for `timed_search.search_turns`
        # (each direction's own arrays become views of them)
        self._stacked = {}
        for name in _STACKED:
            arrays = [getattr(ds, name) for ds in self.directions]
            self._stacked[name] = np.stack(arrays) if arrays else np.zeros((0, 1))
            for ds, view in zip(self.directions, self._stacked[name], strict=True):
                setattr(ds, name, view)
        self._start_cp = np.ascontiguousarray(
            [ds.direction.start_cp for ds in self.directions], dtype=np.int64)
        self._start_ep = np.ascontiguousarray(
            [ds.direction.start_ep for ds in self.directions], dtype=np.int64)

    @property
    def nodes(self) -> int:
        return int(self.counters[tb.NODES] + self.counters[tb.P2NODES])

    def solutions(self, timeout: float | None, best: float = np.inf
                  ) -> Iterator[tuple[list[Move], float]]:
        """Yield (moves in the cube's frame, cost in profile units), each cheaper than the
        one before and than ``best``, until ``timeout`` seconds are spent or nothing cheaper
        exists (then ``exhausted`` is True)."""
        deadline = None if timeout is None else time.perf_counter() + timeout
        active = np.array([not ds.exhausted for ds in self.directions], dtype=np.bool_)
        a = self._stacked
        while True:
            if not active.any():
                # complete unless a phase-2 search was cut short at PHASE2_CAP
                self.exhausted = not self.counters[tb.CAPPED]
                return
            status, i, cost, length = ts.search_turns(
                self.T, self.D, self.W, a["cost"], a["exits"], self.costs.finish, a["H"],
                a["H2"], self.costs.step, self._start_cp, self._start_ep, a["ints"],
                a["before"], a["after"], a["g"], a["ctl"], a["fctl"], active,
                NODE_SLICE * int(active.sum()), best, self.path, self.work, self.ints2,
                self.before2, self.after2, self.g2, self.out_path, self.counters,
                self.phase2_cap, a["perms"])
            for ds, on in zip(self.directions, active, strict=True):
                ds.exhausted = not on
            if status == tb.FOUND:
                best = float(cost)
                yield self.directions[i].direction.to_original(self.out_path[:length]), best
            if deadline is not None and time.perf_counter() >= deadline:
                return
