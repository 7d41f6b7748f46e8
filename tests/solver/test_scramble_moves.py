"""Scramble to a state: the solver's inverse plan reaches exactly the cube asked for."""

import pytest

from robocell.common.cube import apply_to_facelets, random_facelets, solved
from robocell.common.scramble import random_turns, scramble_to
from robocell.services.solver.api import solve


@pytest.mark.parametrize("size", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_scramble_sequence_reaches_exactly_the_state(size):
    for seed in range(25):
        facelets = random_facelets(size, seed)
        moves = scramble_to(facelets, solve(facelets, "htm").moves)
        assert apply_to_facelets(solved(size), moves) == facelets
        assert all(m.turns != -2 for m in moves)


def test_random_turns_never_turn_one_face_twice_in_a_row():
    for seed in range(20):
        turns = random_turns(40, seed)
        assert len(turns) == 40
        assert all(a.name != b.name for a, b in zip(turns, turns[1:], strict=False))
        assert turns == random_turns(40, seed)  # the same seed, the same scramble
