"""The phase-1 move words (`move_words`): from a node's word alone, the bound the search
takes for each child is never over what the full phase-1 table gives for it (the search would
refuse a child it must look at), and is that bound to within a stored step where the word
holds it exactly (it is no use otherwise)."""

from __future__ import annotations

import numpy as np
import pytest

from robocell.common.profile import load_profile
from robocell.services.solver.cube3.defs import N_FLIP, N_MOVE, N_SLICE, N_TWIST
from robocell.services.solver.cube3.robot_time import axial_metric
from robocell.services.solver.cube3.robot_time.cost_lookups import (
    move_bound,
    moves_word,
    phase1_index,
)
from robocell.services.solver.cube3.robot_time.cost_tables import (
    PAGE,
    kind_ticks,
    touch_loaded,
    weighted_tables,
)
from robocell.services.solver.cube3.robot_time.move_words import TOP, joined_kinds, move_ticks
from robocell.services.solver.cube3.robot_time.profile_costs import profile_costs

SAMPLES = 1500


@pytest.mark.parametrize("name", ["six-motor", "tilt-spin"])
def test_a_word_bounds_every_child_as_the_full_table_does(name: str) -> None:
    profile = load_profile(name)
    cost = profile_costs(profile).cost
    W = weighted_tables(profile, cost)
    B = axial_metric.block_tables()
    tick = float(W.phase1_tick[0])
    rng = np.random.default_rng(11)
    exact = clipped = 0
    for _ in range(SAMPLES):
        twist, flip, slc = (int(rng.integers(N_TWIST)), int(rng.integers(N_FLIP)),
                            int(rng.integers(N_SLICE)))
        word, sym, here = moves_word(B, W, twist, flip, slc)
        assert here == int(W.phase1[phase1_index(B, twist, flip, slc)])
        for m in range(N_MOVE):
            # the child's bound with the turn's block open: the least over joining a turn of
            # the opposite face (none included), in ticks
            child = min(int(W.phase1[phase1_index(B, int(B.twist_move[twist, k]),
                                                  int(B.flip_move[flip, k]),
                                                  int(B.slice_move[slc, k]))])
                        for k in joined_kinds(m))
            got = move_bound(W, word, sym, here, m) / tick
            assert got <= child + 1e-6, (name, twist, flip, slc, m)
            v = (word >> (3 * int(W.move_conj[sym, m]))) & TOP
            if 0 < v < TOP:
                assert got > child - int(W.move_step[0]) - 1e-6, (name, twist, flip, slc, m)
                exact += 1
            clipped += v == TOP
    # the word must refuse children: most are held to a step, not clipped
    assert exact > 0.3 * SAMPLES * N_MOVE
    assert clipped < 0.3 * SAMPLES * N_MOVE


def test_a_turn_joined_by_the_opposite_face_bounds_how_low_its_child_can_be() -> None:
    profile = load_profile("six-motor")
    ticks, lo = move_ticks(kind_ticks(profile_costs(profile).cost))
    # a quarter turn is 10 ticks; U then D2 is a 17-tick block, so the child may be 7 lower
    assert list(ticks[:3]) == [10, 17, 10]
    assert list(lo[:3]) == [-7, 0, -7]


def test_a_warming_worker_maps_every_page_of_the_loaded_robot_tables() -> None:
    profile = load_profile("six-motor")
    W = weighted_tables(profile, profile_costs(profile).cost)
    pages = -(-W.moves.nbytes // PAGE) + -(-W.phase1.nbytes // PAGE) + -(-W.phase2.nbytes // PAGE)
    assert touch_loaded() >= pages
