"""A profile's full phase-1 and phase-2 cost tables: every entry is the least cost over its
neighbours (the Bellman equation of the least cost, in the table's ticks), zero only at the
goal, and never above a real solution's cost, so the search's bound stays admissible."""

from __future__ import annotations

import numpy as np
import pytest

from robocell.common.profile import load_profile
from robocell.services.solver.cube3.defs import N_CORNERS, N_FLIP, N_SLICE, N_TWIST, N_UD_EDGES
from robocell.services.solver.cube3.robot_time import axial_metric
from robocell.services.solver.cube3.robot_time.cost_lookups import phase1_cost, phase2_cost
from robocell.services.solver.cube3.robot_time.cost_tables import (
    TICK_CAP,
    block_costs_after_turn,
    block_least_costs,
    block_ticks,
    symmetric_costs,
    weighted_tables,
)
from robocell.services.solver.cube3.robot_time.profile_costs import profile_costs
from robocell.services.solver.cube3.tables import SYM_BITS, load_tables

SAMPLES = 3000


def _phase1_ticks(T, W, twist: int, flip: int, slc: int) -> int:
    classsym = int(T.flipslice_classsym[slc * N_FLIP + flip])
    sym = classsym & ((1 << SYM_BITS) - 1)
    return int(W.phase1[(classsym >> SYM_BITS) * N_TWIST + int(T.twist_conj[twist, sym])])


def _phase2_ticks(T, W, corners: int, ud_edges: int) -> int:
    index = (int(T.corner_classidx[corners]) * N_UD_EDGES
             + int(T.ud_edges_conj[ud_edges, int(T.corner_sym[corners])]))
    return int(W.phase2[index])


@pytest.mark.parametrize("name", ["six-motor", "tilt-spin"])
def test_every_entry_is_the_least_over_its_neighbours(name: str) -> None:
    profile = load_profile(name)
    cost = profile_costs(profile).cost
    W = weighted_tables(profile, cost)
    T, B = load_tables(), axial_metric.block_tables()
    kind_cost = block_costs_after_turn(cost)
    rng = np.random.default_rng(7)
    _, kinds1, ticks1 = block_ticks(kind_cost, axial_metric.block_kinds())
    for _ in range(SAMPLES):
        twist, flip, slc = (int(rng.integers(N_TWIST)), int(rng.integers(N_FLIP)),
                            int(rng.integers(N_SLICE)))
        value = _phase1_ticks(T, W, twist, flip, slc)
        if (twist, flip, slc) == (0, 0, 0):
            assert value == 0
            continue
        assert 0 < value < 255
        least = min(int(t) + _phase1_ticks(T, W, int(B.twist_move[twist, k]),
                                           int(B.flip_move[flip, k]), int(B.slice_move[slc, k]))
                    for k, t in zip(kinds1, ticks1, strict=True))
        assert value == min(least, TICK_CAP), (twist, flip, slc)
    _, kinds2, ticks2 = block_ticks(kind_cost, axial_metric.phase2_block_kinds())
    for _ in range(SAMPLES):
        corners, ud_edges = int(rng.integers(N_CORNERS)), int(rng.integers(N_UD_EDGES))
        value = _phase2_ticks(T, W, corners, ud_edges)
        if (corners, ud_edges) == (0, 0):
            assert value == 0
            continue
        assert value > 0
        least = min(int(t) + _phase2_ticks(T, W, int(B.corners_move[corners, k]),
                                           int(B.ud_edges_move[ud_edges, k]))
                    for k, t in zip(kinds2, ticks2, strict=True))
        assert value == min(least, TICK_CAP) or (value == 255 and least >= TICK_CAP), \
            (corners, ud_edges)


def test_units_are_a_lower_bound_of_the_blocks_costs() -> None:
    """Ticks times the tick never exceed the cost of the blocks they stand for, and the
    symmetric costs are the least of each kind's images under the 16 UD symmetries."""
    for name in ("six-motor", "tilt-spin", "qtm"):
        cost = profile_costs(load_profile(name)).cost
        kind_cost = block_costs_after_turn(cost)
        sym = symmetric_costs(kind_cost)
        assert np.all(sym[axial_metric.block_kinds()] <= kind_cost[axial_metric.block_kinds()])
        tick, kinds, ticks = block_ticks(kind_cost, axial_metric.block_kinds())
        assert np.all(ticks * tick <= sym[kinds] + 1e-9)
        assert np.all(ticks >= 1)
    profile = load_profile("six-motor")
    W = weighted_tables(profile, profile_costs(profile).cost)
    T = axial_metric.block_tables()
    # a solved cube costs nothing; one quarter turn of R from G1 costs a quarter turn's 10
    assert phase1_cost(T, W, 0, 0, 0) == 0.0
    r = 3  # R
    col = axial_metric.FACE_KIND[r]
    assert phase1_cost(T, W, int(T.twist_move[0, col]), int(T.flip_move[0, col]),
                       int(T.slice_move[0, col])) == pytest.approx(10.0)
    assert phase2_cost(T, W, 0, 0) == 0.0


def test_a_reorienting_robot_pays_for_reorienting_after_a_turn_of_another_axis() -> None:
    """tilt-spin turns only the bottom layer: after a block of another axis every block costs a
    re-orientation more than its cheapest; a robot of one state has nothing to add."""
    tilt = profile_costs(load_profile("tilt-spin")).cost
    least, after = block_least_costs(tilt), block_costs_after_turn(tilt)
    kinds = axial_metric.block_kinds()
    assert np.all(after[kinds] >= least[kinds])
    u_turn = axial_metric.FACE_KIND[0]
    assert after[u_turn] == 135.0 and least[u_turn] == 75.0
    six = profile_costs(load_profile("six-motor")).cost
    assert np.array_equal(block_costs_after_turn(six)[kinds], block_least_costs(six)[kinds])
