"""Optimal 2x2x2 plans for a robot profile, read off the cost-to-go table by descent.

From the cube as it sits in the robot, the plan's cost is the least ``cost(p) + h(s*p, q_p)``
over all primitives ``p`` (no sequencing constraint before the first one). Then, step by
step, the first primitive allowed after the last one whose successor's cost-to-go is exactly
the current cost minus its own cost is taken, until the cube is solved in some orientation.
Each step is a handful of move-transition and table reads, so a plan takes microseconds;
it is optimal because the table is the exact cost-to-go.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from robocell.common import tables
from robocell.common.cubie import from_facelets
from robocell.common.facelets import puzzle_name
from robocell.common.profile import Profile
from robocell.common.tables import TableError
from robocell.errors import RobocellError
from robocell.services.solver.cube2.coord import N_STATES, SOLVED
from robocell.services.solver.cube2.moves import class_of, perm8_rank, twist7_rank
from robocell.services.solver.cube2.robot import RobotModel, compile_profile
from robocell.services.solver.cube2.search import UNREACHED, table_value
from robocell.services.solver.cube2.tables import (
    LAYOUT_BITS,
    classes_group,
    group_for,
    load_tables,
)
from robocell.services.solver.solution import Solution

MAX_PLAN_STEPS = 512
NO_PLAN = -1
"""Descent result: the robot cannot solve this state with its primitives."""
TABLE_MISMATCH = -2
"""Descent result: no primitive continues the plan (the table does not fit the profile)."""


class UnsolvableForRobot(RobocellError, ValueError):
    """A valid cube that this robot's primitives cannot bring to solved."""


@njit(cache=True)
def _successor_cost(perm8, twist7, row, tab, perm_moves, twist_moves, packed, bits,
                    class_perm, class_twist_offset, twist_add):  # pragma: no cover - compiled
    """Cost-to-go after the motion in transition row ``row``, read from table row ``tab``."""
    coord = class_of(perm_moves[row, perm8], twist_moves[row, twist7], class_perm,
                     class_twist_offset, twist_add)
    return table_value(packed, bits, tab, coord)


@njit(cache=True)
def descend(perm8, twist7, perm_moves, twist_moves, prim_row, lookup_row, prim_cost,
            prim_state, allowed, table_of_state, packed, bits, unreached, class_perm,
            class_twist_offset, twist_add, out):  # pragma: no cover - compiled
    """Fill ``out`` with the optimal plan's primitive indices from the robot-frame state
    (perm8, twist7); returns (steps, cost) with steps = NO_PLAN or TABLE_MISMATCH on
    failure. Costs in scaled units."""
    n_prims = prim_cost.shape[0]
    if class_of(perm8, twist7, class_perm, class_twist_offset, twist_add) == SOLVED:
        return 0, 0
    best = -1
    for p in range(n_prims):
        h = _successor_cost(perm8, twist7, lookup_row[p], table_of_state[prim_state[p]],
                            perm_moves, twist_moves, packed, bits, class_perm,
                            class_twist_offset, twist_add)
        if h != unreached and (best < 0 or prim_cost[p] + h < best):
            best = prim_cost[p] + h
    if best < 0:
        return NO_PLAN, 0
    remaining = best
    state = -1
    steps = 0
    while class_of(perm8, twist7, class_perm, class_twist_offset, twist_add) != SOLVED:
        if steps == out.shape[0]:
            return TABLE_MISMATCH, best
        chosen = -1
        for p in range(n_prims):
            if state >= 0 and not allowed[state, p]:
                continue
            if prim_cost[p] > remaining:
                continue
            h = _successor_cost(perm8, twist7, lookup_row[p], table_of_state[prim_state[p]],
                                perm_moves, twist_moves, packed, bits, class_perm,
                                class_twist_offset, twist_add)
            if h != unreached and prim_cost[p] + h == remaining:
                chosen = p
                break
        if chosen < 0:
            return TABLE_MISMATCH, best
        perm8 = perm_moves[prim_row[chosen], perm8]
        twist7 = twist_moves[prim_row[chosen], twist7]
        remaining -= prim_cost[chosen]
        state = prim_state[chosen]
        out[steps] = chosen
        steps += 1
    if remaining != 0:
        return TABLE_MISMATCH, best
    return steps, best


class Cube2Solver:
    """One profile's compiled model and memory-mapped tables, ready to plan."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.model: RobotModel = compile_profile(profile)
        self.classes, arrays = load_tables(profile)
        self.perm_moves = arrays["perm_moves"]
        self.twist_moves = arrays["twist_moves"]
        self.packed = arrays["cost_to_go"]
        self.bits = int(arrays["layout"][LAYOUT_BITS])
        self.unreached = UNREACHED[self.bits]
        # first call loads the compiled descent, so that solve_ms measures only solving
        self.plan_indices(np.arange(8, dtype=np.int8), np.zeros(8, dtype=np.int8))

    def plan_indices(self, corner_perm: np.ndarray, corner_twist: np.ndarray,
                     ) -> tuple[list[int], int]:
        """Primitive indices of an optimal plan and its cost in scaled units."""
        m = self.model
        c = self.classes
        out = np.empty(MAX_PLAN_STEPS, dtype=np.int64)  # per call: solvers may share threads
        steps, cost = descend(
            perm8_rank(np.ascontiguousarray(corner_perm, dtype=np.int8)),
            twist7_rank(np.ascontiguousarray(corner_twist, dtype=np.int8)),
            self.perm_moves, self.twist_moves, m.prim_row, m.lookup_row, m.prim_cost,
            m.prim_state, m.allowed, m.table_of_state, self.packed, self.bits, self.unreached,
            c["class_perm"], c["class_twist_offset"], c["twist_add"], out)
        if steps == NO_PLAN:
            raise UnsolvableForRobot(
                f"profile {self.profile.name}: this cube cannot be solved with the robot's "
                "primitives (its cost-to-go is unreachable); check the profile's primitives")
        if steps == TABLE_MISMATCH:
            raise self.table_mismatch()
        return [int(i) for i in out[:steps]], int(cost)

    def table_mismatch(self) -> TableError:
        """Why the tables led the descent astray: a checksum mismatch when `tables.verify`
        finds one (a damaged file), else tables that do not fit the profile."""
        rebuild = f"rebuild with `robocell tables build --force --profile {self.profile.name}`"
        for group in (classes_group(), group_for(self.profile)):
            damaged = [p for p in tables.verify(group) if "checksum mismatch" in p]
            if damaged:
                return TableError(f"tables {group.name}: {'; '.join(damaged)}; {rebuild}")
        return TableError(f"tables for profile {self.profile.name} do not fit the profile; "
                          f"{rebuild}")

    def solve(self, facelets: str) -> Solution:
        """The optimal plan for a validated 2x2x2 facelet string."""
        started = time.perf_counter()
        state = from_facelets(facelets)
        indices, scaled_cost = self.plan_indices(state.corner_perm, state.corner_twist)
        prims = [self.profile.primitives[i] for i in indices]
        moves = [move for p in prims for move in p.moves]
        cost = scaled_cost / self.model.cost_scale
        solve_ms = (time.perf_counter() - started) * 1000.0
        return Solution(
            puzzle=puzzle_name(2), profile=self.profile.name, facelets=facelets,
            primitives=[p.name for p in prims], moves=moves, cost=cost,
            cost_ms=self.profile.cost_ms(cost), solve_ms=solve_ms, optimal=True,
            stats={"steps": len(prims)},
        )


_SOLVERS: dict[tuple[str, str], Cube2Solver] = {}


def solver_for(profile: Profile) -> Cube2Solver:
    """The (cached) solver of a profile; loads or builds its table on first use."""
    key = (profile.name, profile.content_hash)
    if key not in _SOLVERS:
        _SOLVERS[key] = Cube2Solver(profile)
    return _SOLVERS[key]


def solve_2x2(facelets: str, profile: Profile) -> Solution:
    """Optimal plan for a validated 2x2x2 facelet string (any orientation) and a profile."""
    return solver_for(profile).solve(facelets)


@njit(cache=True)
def _plan_costs(carrier_row, table_of_state, perm_moves, twist_moves, packed, bits,
                unreached, class_perm, class_twist_offset, twist_add, normal_perm8,
                out):  # pragma: no cover - compiled
    # before the first motion every primitive is allowed, and each is allowed after some
    # sequencing state, so the plan cost is the least h(s, q) over the states q
    n_seq = table_of_state.shape[0]
    for coord in range(out.shape[0]):
        perm8 = normal_perm8[coord // 729]
        twist7 = (coord % 729) * 3
        best = -1
        for q in range(n_seq):
            h = _successor_cost(perm8, twist7, carrier_row[q], table_of_state[q],
                                perm_moves, twist_moves, packed, bits, class_perm,
                                class_twist_offset, twist_add)
            if h != unreached and (best < 0 or h < best):
                best = h
        out[coord] = best


def plan_costs(profile: Profile) -> tuple[np.ndarray, int]:
    """The optimal plan cost (scaled units, -1 if unsolvable) of every rotation class as the
    cube sits in the robot before the first motion, and the cost scale. Each class stands
    for 24 robot-frame states (the same cube recoloured), all with this cost."""
    solver = solver_for(profile)
    m = solver.model
    c = solver.classes
    out = np.empty(N_STATES, dtype=np.int32)
    _plan_costs(m.carrier_row, m.table_of_state, solver.perm_moves, solver.twist_moves,
                solver.packed, solver.bits, solver.unreached, c["class_perm"],
                c["class_twist_offset"], c["twist_add"], c["normal_perm8"], out)
    return out, m.cost_scale
