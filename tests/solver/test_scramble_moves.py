"""Scramble to a state: the solver's inverse plan reaches exactly the cube asked for."""

import pytest

from robocell.common.cube import apply_to_facelets, random_facelets, solved
from robocell.services.solver.scramble import scramble_moves


@pytest.mark.parametrize("size", [2, 3])
def test_scramble_sequence_reaches_exactly_the_state(size):
    for seed in range(25):
        facelets = random_facelets(size, seed)
        moves = scramble_moves(facelets)
        assert apply_to_facelets(solved(size), moves) == facelets
        assert all(m.turns != -2 for m in moves)
