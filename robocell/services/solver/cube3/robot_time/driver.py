"""Driver of the robot-time search: the directions, their records, the budget.

`RobotTimeSearch` runs the compiled search (`phase1_search.search_turns`) from several
directions in turns of `NODE_SLICE` steps, each solution lowering the cost every direction
must beat, until the budget is spent or no direction can do better (then the best is the
least robot time of any two-phase solution, which for short scrambles is the least of all).
A direction's prices come from the profile (`profile_costs`), renamed into the direction's
frame; its stack and control words are the records of `search_state`, every direction's
stacked on a first axis.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from robocell.common.cubie import CubieState
from robocell.common.notation import Move
from robocell.common.profile import Profile
from robocell.services.solver.cube3.robot_time import axial_metric
from robocell.services.solver.cube3.robot_time.cost_tables import weighted_tables
from robocell.services.solver.cube3.robot_time.phase1_search import init_direction, search_turns
from robocell.services.solver.cube3.robot_time.profile_costs import (
    ProfileCosts,
    cached_steps_bound,
    kind_map,
    profile_costs,
)
from robocell.services.solver.cube3.robot_time.search_state import (
    CONTROL,
    COUNTERS,
    FOUND,
    Phase1Stack,
    Prices,
    phase1_stacks,
    phase2_stack,
)
from robocell.services.solver.cube3.search import Direction, make_directions
from robocell.services.solver.cube3.tables import load_tables

NODE_SLICE = 1000
"""Steps (a phase-1 node visited every second one, about: a node's children have their reads
started in two steps) every active direction takes before the driver looks at the clock
again (`phase1_search.search_turns`)."""
PHASE2_CAP = 5000
"""Phase-2 nodes one phase-1 path may take: past it, the path is left for the next one."""


def direction_prices(directions: list[Direction], costs: ProfileCosts) -> Prices:
    """The directions' prices stacked on a first axis: the profile's block costs with the
    kinds renamed from each direction's frame into the cube's."""
    block_cost, exits, steps, steps2 = [], [], [], []
    for direction in directions:
        kinds = kind_map(direction.face_map)
        cost = np.ascontiguousarray(costs.cost[kinds])
        block_cost.append(cost)
        exits.append(cost.min(axis=2))
        key = (id(costs), kinds.tobytes())
        steps.append(cached_steps_bound(key, cost, costs.axial))
        steps2.append(cached_steps_bound(key + (2,), cost, costs.axial,
                                         axial_metric.phase2_block_kinds()))
    n, n_states = len(directions), costs.cost.shape[1]
    if n == 0:
        return Prices(np.zeros((0, 1, n_states, n_states)), np.zeros((0, 1, n_states)),
                      costs.finish, np.zeros((0, 1, n_states, 4)),
                      np.zeros((0, 1, n_states, 4)), float(costs.step))
    return Prices(np.stack(block_cost), np.ascontiguousarray(np.stack(exits)), costs.finish,
                  np.stack(steps), np.stack(steps2), float(costs.step))


class _DirectionState:
    """A direction and its resumable robot-time search: views of its row of the stacked
    records."""

    def __init__(self, direction: Direction, i: int, prices: Prices, stacks: Phase1Stack,
                 controls: np.ndarray) -> None:
        self.direction = direction
        self.prices = Prices(*(a if name in ("finish", "step") else a[i]
                               for name, a in zip(Prices._fields, prices, strict=True)))
        self.stack = Phase1Stack(*(a[i] for a in stacks))
        self.control = controls[i]
        """The direction's `search_state.CONTROL` words (a view: it follows the search)."""
        self.exhausted = False


class RobotTimeSearch:
    """Search a cube for plans of least robot time under a profile (module docstring)."""

    def __init__(self, state: CubieState, profile: Profile,
                 part: tuple[int, int] = (0, 1)) -> None:
        index, parts = part
        if not 0 <= index < parts:
            raise ValueError(f"search part {index} of {parts}: give 0 <= k < n")
        self.costs = profile_costs(profile)
        self.T = axial_metric.block_tables()
        self.D = axial_metric.distances(self.costs.axial)
        self.W = weighted_tables(profile, self.costs.cost)
        directions = [d for d in make_directions(state, load_tables())
                      if self.costs.reversible or not d.inverse][index::parts]
        n, n_states = len(directions), self.costs.cost.shape[1]
        self.prices = direction_prices(directions, self.costs)
        self.stacks = phase1_stacks(n, n_states, [d.start_cp for d in directions],
                                    [d.start_ep for d in directions])
        self.controls = np.zeros(n, CONTROL)
        self.phase2_stack = phase2_stack(n_states, PHASE2_CAP)
        self.counters = np.zeros(1, COUNTERS)
        self.exhausted = False
        self.directions = [_DirectionState(d, i, self.prices, self.stacks, self.controls)
                           for i, d in enumerate(directions)]
        for ds in self.directions:
            init_direction(self.T, self.D, self.W, ds.direction.root[:3].copy(), ds.stack,
                           ds.control, self.costs.start)

    @property
    def nodes(self) -> int:
        return int(self.counters[0]["nodes"] + self.counters[0]["phase2_nodes"])

    def solutions(self, timeout: float | None, best: float = np.inf
                  ) -> Iterator[tuple[list[Move], float]]:
        """Yield (moves in the cube's frame, cost in profile units), each cheaper than the
        one before and than ``best``, until ``timeout`` seconds are spent or nothing cheaper
        exists (then ``exhausted`` is True)."""
        deadline = None if timeout is None else time.perf_counter() + timeout
        active = np.array([not ds.exhausted for ds in self.directions], dtype=np.bool_)
        while True:
            if not active.any():
                # complete unless a phase-2 search was cut short at PHASE2_CAP
                self.exhausted = not self.counters[0]["capped"]
                return
            status, i, cost, length = search_turns(
                self.T, self.D, self.W, self.prices, self.stacks, self.controls, active,
                NODE_SLICE * int(active.sum()), best, self.phase2_stack, self.counters)
            for ds, on in zip(self.directions, active, strict=True):
                ds.exhausted = not on
            if status == FOUND:
                best = float(cost)
                solution = self.phase2_stack.solution[:length]
                yield self.directions[i].direction.to_original(solution), best
            if deadline is not None and time.perf_counter() >= deadline:
                return
