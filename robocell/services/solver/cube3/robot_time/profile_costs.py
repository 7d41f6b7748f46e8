"""A robot profile as the robot-time search sees it: what every block costs, from every robot
state to every other, and what that many steps cost at least.

`profile_costs` reads the motion compiler's tables of a profile
(`robocell.services.solver.cube3.motion_compiler.motion_tables`): the least cost of every block
from every robot state the robot can reach to every other, the cost of ending, and the bound
per step of the cheaper-to-bound metric. Nothing of it is compiled in: a new robot is a TOML
file. `kind_map` renames block kinds between a direction's frame and the cube's;
`steps_bound` is the least cost of n more steps (``H``), the bound the search takes where its
tables say only how many steps are left.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from robocell.common.facelets import FACES
from robocell.common.profile import Profile
from robocell.services.solver.cube3.motion_compiler import motion_tables
from robocell.services.solver.cube3.robot_time import axial_metric
from robocell.services.solver.cube3.robot_time.search_state import LEVELS

AXIAL_GAIN = 1.2
"""Bound by the axial metric when its cost per step beats the face-turn metric's by this."""
N_KIND = axial_metric.N_KIND


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
    kinds = axial_metric.block_kinds()
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
    start[states.index(tables.start_state)] = tables.first_block  # corner cutting's credit
    final = tables.final_states[states]
    reorient = cost[0].copy()
    np.fill_diagonal(reorient, 0.0)
    finish = np.where(final[None, :], reorient, np.inf).min(axis=1)
    kinds = axial_metric.block_kinds()
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


def steps_bound(cost: np.ndarray, axial_steps: bool, levels: int = LEVELS,
                kinds: np.ndarray | None = None) -> np.ndarray:
    """H[n, t, a]: least cost of n more steps (blocks in the axial metric, face turns in the
    face-turn metric) from robot state t when the open block is of axis a (3: none). Blocks
    in a row are of different axes, which for a robot that re-orients the cube between them
    is what makes a turn dear. With ``kinds``, only those blocks may be steps: phase 2's,
    whose turns of the side faces are all half turns, bound phase 2 tighter."""
    n_states = cost.shape[1]
    H = np.zeros((levels, n_states, 4))
    kinds = axial_metric.block_kinds() if kinds is None else kinds
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


def cached_steps_bound(key: tuple, cost: np.ndarray, axial_steps: bool,
                       kinds: np.ndarray | None = None) -> np.ndarray:
    """`steps_bound`, worked out once per ``key`` in a process."""
    if key not in _STEPS:
        _STEPS[key] = steps_bound(cost, axial_steps, kinds=kinds)
    return _STEPS[key]
