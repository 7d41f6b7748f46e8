"""The counting bound on a robot's least time: its counts of block sequences by cost are at
least the cubes an exhaustive search solves within that cost (equal where no two short plans
meet), so the bound it gives holds for any planner."""

from __future__ import annotations

import heapq

import numpy as np
import pytest
from support.cube import solved_orientations

from robocell.common.cube import solved
from robocell.common.moves import move_facelet_permutation
from robocell.common.profile import Profile, load_profile, parse_profile
from robocell.services.solver.cube3.robot_time.counting_bound import (
    N_CUBES,
    BoundError,
    count_by_cost,
)

SOLVED = solved(3)
CENTRES = [9 * f + 4 for f in range(6)]


def _solvable_within(profile: Profile, max_cost: float) -> np.ndarray:
    """Exact: how many cubes (centres where the robot starts) a plan of the profile's primitives
    costing at most k solves, for each k up to ``max_cost``. Dijkstra backward from the 24
    orientations of the solved cube over sticker strings, with the primitives undone;
    independent of the motion compiler and the bound."""
    inverse = []
    for prim in profile.primitives:
        perm = np.arange(54)
        for move in prim.moves:
            perm = perm[move_facelet_permutation(move, 3)]
        inverse.append((np.argsort(perm).tolist(), float(prim.cost)))
    goals = solved_orientations()
    dist = dict.fromkeys(goals, 0.0)
    heap = [(0.0, g) for g in goals]
    least = []
    while heap:
        d, state = heapq.heappop(heap)
        if d > dist[state]:
            continue
        if all(state[c] == SOLVED[c] for c in CENTRES):
            least.append(d)  # a cube that starts as the robot holds it at the start
        for perm, cost in inverse:
            nd = d + cost
            if nd > max_cost:
                continue
            prev = "".join(state[i] for i in perm)
            if nd < dist.get(prev, np.inf):
                dist[prev] = nd
                heapq.heappush(heap, (nd, prev))
    least_arr = np.array(least)
    return np.array([(least_arr <= k).sum() for k in range(int(max_cost) + 1)])


@pytest.mark.parametrize(("name", "max_cost"), [("htm", 3), ("six-motor", 30), ("tilt-spin", 300)])
def test_the_counts_bound_the_cubes_solvable_within_each_cost(name: str, max_cost: int) -> None:
    profile = load_profile(name)
    counts = count_by_cost(profile, max_levels=max_cost)
    exact = _solvable_within(profile, max_cost)
    cumulative = np.cumsum(counts.counts)
    for k in range(max_cost + 1):
        bound = cumulative[k // counts.unit]
        assert bound >= exact[k], (name, k, bound, exact[k])
    # short plans do not meet, so here the count is exact: the programme prices every block
    # sequence at the least robot time, not below it
    assert cumulative[max_cost // counts.unit] == exact[max_cost]


def test_face_turn_counts_are_the_canonical_sequences() -> None:
    """HTM: 1, 18, 243, 3,240, 43,254, 577,368 canonical sequences of 0-5 turns (43,239 and
    574,908 cubes: the first meetings come at 4 turns)."""
    counts = count_by_cost(load_profile("htm"), max_levels=5).counts
    assert counts.tolist() == [1, 18, 243, 3240, 43254, 577368]


def test_the_bounds_of_the_robots() -> None:
    """Every cube within the bound's reach: the counts pass N_CUBES before the mean, and the
    bound sits below what the planners reach (face turns: 17.5 against about 17.7 for optimal
    solutions of random cubes)."""
    htm = count_by_cost(load_profile("htm"))
    assert np.sum(htm.counts) >= N_CUBES
    assert 17.0 < htm.mean_units() < 17.7
    assert htm.quantile_units(0.5) == 18  # half of all cubes need at least 18 face turns
    tilt = count_by_cost(load_profile("tilt-spin"))
    # the tilt-spin robot needs at least 2,900 units (29 s) a random cube on average
    assert tilt.mean_units() > 2900
    assert tilt.share_within(2640) < 0.01


def test_profiles_the_bound_cannot_take() -> None:
    with pytest.raises(BoundError, match="3x3x3 profiles"):
        count_by_cost(load_profile("soltvvo-2x2"))
    text = load_profile("tilt-spin").path.read_text().replace('moves = "x\'"', 'moves = "D x\'"')
    with pytest.raises(BoundError, match="both turns a layer and re-orients"):
        count_by_cost(parse_profile(text, "tilt-spin.toml"))
