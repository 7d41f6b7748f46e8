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
from robocell.services.solver.cube3 import coord, timed_blocks, timed_phase2
from robocell.services.solver.cube3.defs import FIRST_SLICE_EDGE
from robocell.services.solver.cube3.search import move_of_index
from robocell.services.solver.cube3.timed import RobotTimeSearch

G1_TURNS = [Move(face, turns) for face in "URFDLB" for turns in (1, 2, 3)
            if face in "UD" or turns == 2]
LEAF_TURNS = [i for i in range(18) if move_of_index(i).name in "RFLB"
              and move_of_index(i).quarter_turns != 2]
"""Phase 1 ends on a quarter turn of a side face (`timed_search`)."""
NO_CAP = 10**9


def _finish(search: RobotTimeSearch, cube: CubieState, last: int, best: float
            ) -> tuple[float, int]:
    """`timed_phase2.phase2` from a phase-1 leaf: ``cube`` in G1, reached by a path whose
    last turn is ``last`` (its block open), from the direction's start state."""
    ds = search.directions[0]
    ep = cube.edge_perm.astype(np.int64)
    corners = coord.get_corners(cube.corner_perm.astype(np.int64))
    slice_perm = coord.perm_rank(ep[FIRST_SLICE_EDGE:] - FIRST_SLICE_EDGE, 4)
    kind = int(timed_blocks.FACE_KIND[last])
    before = search.costs.start.copy()
    after = np.zeros_like(before)
    g0 = timed_blocks.chain(before, ds.cost, kind, after)
    levels, n = timed_blocks.LEVELS, before.shape[0]
    path = np.zeros(levels, np.int64)
    path[0] = last
    return timed_phase2.phase2(
        search.T, search.D, search.W, ds.cost, ds.exits, search.costs.finish, ds.H2,
        search.costs.step, corners, coord.get_ud_edges(ep), slice_perm, before, after, kind,
        last, g0, best, 1, path, np.zeros((levels, timed_blocks.N_FIELDS), np.int64),
        np.zeros((levels, n)), np.zeros((levels, n)), np.zeros(levels),
        np.zeros(levels, np.int64), np.zeros(4, np.int64), NO_CAP)


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
