"""Random states: valid, seedable, uniform (chi-square on coordinates)."""

import numpy as np
import pytest

from robocell.common.cube import random_cubie_state, random_facelets, validate
from robocell.common.notation import format_moves, simplify_moves
from robocell.common.scramble import random_turns

# chi-square critical values at p = 0.001 by degrees of freedom
CHI2_CRITICAL_0_001 = {2: 13.816, 7: 24.322, 11: 31.264, 23: 49.728}


def chi_square(counts: np.ndarray) -> float:
    expected = counts.sum() / len(counts)
    return float(((counts - expected) ** 2 / expected).sum())


def test_seeded_scrambles_repeat_and_are_valid():
    assert random_facelets(3, 42) == random_facelets(3, 42)
    assert random_facelets(3, 42) != random_facelets(3, 43)
    for seed in range(300):
        validate(random_facelets(3, seed))
        validate(random_facelets(2, seed))


@pytest.mark.parametrize("size", [2, 3])
def test_scrambles_are_uniform_on_coordinates(size):
    rng = np.random.default_rng(2024)
    samples = 6000
    where_is_cubie0 = np.zeros(8)
    twist_of_cubie0 = np.zeros(3)
    edge_place = np.zeros(12)
    twist_pairs = np.zeros(24)  # (position of cubie 0) x (its twist)
    for _ in range(samples):
        state = random_cubie_state(size, rng)
        pos = int(np.flatnonzero(state.corner_perm == 0)[0])
        twist = int(state.corner_twist[pos])
        where_is_cubie0[pos] += 1
        twist_of_cubie0[twist] += 1
        twist_pairs[pos * 3 + twist] += 1
        if size == 3:
            edge_place[int(np.flatnonzero(state.edge_perm == 0)[0])] += 1
    assert chi_square(where_is_cubie0) < CHI2_CRITICAL_0_001[7]
    assert chi_square(twist_of_cubie0) < CHI2_CRITICAL_0_001[2]
    assert chi_square(twist_pairs) < CHI2_CRITICAL_0_001[23]
    if size == 3:
        assert chi_square(edge_place) < CHI2_CRITICAL_0_001[11]



def test_random_turns_never_cancel_even_across_the_opposite_face():
    """`F' B F`: F' and F commute past B and cancel; a person's scramble never does that."""
    for seed in range(300):
        turns = random_turns(25, seed)
        assert len(simplify_moves(turns)) == len(turns), format_moves(turns)
