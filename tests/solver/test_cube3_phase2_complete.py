"""Phase 2 of the robot-time search misses no finish: given a bound (the best plan so far), it
returns a finish under it whenever one exists. Its IDA* raises the threshold by a step at
least; a step that takes the threshold past the bound must still search up to the bound, or
every finish between the last threshold and the bound is lost (it was: a phase-1 leaf whose
cheapest finish cost 205 units, searched under a best of 206, came back empty)."""

from __future__ import annotations

import numpy as np
import pytest

from robocell.common.cubie import CubieState
from robocell.common.moves import apply_to_cubies
from robocell.common.notation import Move
from robocell.common.profile import load_profile
from robocell.common.scramble import random_cubie_state
from robocell.services.solver.cube3 import coord
from robocell.services.solver.cube3.defs import FIRST_SLICE_EDGE
from robocell.services.solver.cube3.robot_time import block_costs, phase2_search
from robocell.services.solver.cube3.robot_time.axial_metric import FACE_KIND
from robocell.services.solver.cube3.robot_time.driver import RobotTimeSearch
from robocell.services.solver.cube3.robot_time.search_state import COUNTERS, phase2_stack
from robocell.services.solver.cube3.search import move_of_index

G1_TURNS = [Move(face, turns) for face in "URFDLB" for turns in (1, 2, 3)
            if face in "UD" or turns == 2]
LEAF_TURNS = [i for i in range(18) if move_of_index(i).name in "RFLB"
              and move_of_index(i).quarter_turns != 2]
"""Phase 1 ends on a quarter turn of a side face (`phase1_search`)."""
NO_CAP = 10**9


def _finish(search: RobotTimeSearch, cube: CubieState, last: int, best: float
            ) -> tuple[float, int]:
    """`phase2_search.phase2` from a phase-1 leaf: ``cube`` in G1, reached by a path whose
    last turn is ``last`` (its block open), from the direction's start state."""
    prices = search.directions[0].prices
    ep = cube.edge_perm.astype(np.int64)
    kind = int(FACE_KIND[last])
    stack = phase2_stack(search.costs.start.shape[0], NO_CAP)
    stack.before[0] = search.costs.start
    stack.g[0] = block_costs.chain(stack.before[0], prices.block_cost, kind, stack.after[0])
    leaf = stack.levels[0]
    leaf["corners"] = coord.get_corners(cube.corner_perm.astype(np.int64))
    leaf["ud_edges"] = coord.get_ud_edges(ep)
    leaf["slice_sorted"] = coord.perm_rank(ep[FIRST_SLICE_EDGE:] - FIRST_SLICE_EDGE, 4)
    leaf["move"], leaf["kind"] = last, kind
    stack.path[0] = last
    return phase2_search.phase2(search.T, search.D, search.W, prices, stack, 1, best,
                                np.zeros(1, COUNTERS)[0])


@pytest.mark.parametrize("profile_name", ["six-motor", "tilt-spin"])
def test_phase2_finds_a_finish_under_the_bound_whenever_one_exists(profile_name: str) -> None:
    search = RobotTimeSearch(random_cubie_state(3, 0), load_profile(profile_name))
    rng = np.random.default_rng(22)
    checked = missed = 0
    for _ in range(40):
        scramble = [G1_TURNS[i] for i in rng.integers(0, len(G1_TURNS), 9)]
        cube = apply_to_cubies(CubieState.solved(3), scramble)
        if cube.is_solved():
            continue
        last = int(rng.choice(LEAF_TURNS))
        least, length = _finish(search, cube, last, np.inf)
        assert length > 0 and np.isfinite(least), scramble
        # half a unit over the cheapest finish: only it (and any as cheap) is under the bound
        got, length = _finish(search, cube, last, least + 0.5)
        checked += 1
        missed += got != least
    assert checked >= 30
    assert missed == 0, f"{missed} of {checked} leaves lost a finish under the bound"
