"""LURD replay: accepts a solution, rejects a wrong one and says at which step and why."""

from __future__ import annotations

from robocell.sokoban.level import load_level
from robocell.sokoban.lurd import replay

SOLUTION_1 = "dlUrrrdLullddrUluRuulDrddrruLdlUU"


def test_correct_solution_is_accepted(microban):
    result = replay(load_level(microban, 1), SOLUTION_1)
    assert result.solved and (result.moves, result.pushes) == (33, 8)


def test_walk_into_a_box_fails_at_that_step(microban):
    result = replay(load_level(microban, 1), SOLUTION_1[:-1] + "u")
    assert not result.solved and result.failed_step == 33
    assert "without pushing" in result.error


def test_push_against_wall_names_the_squares(microban):
    result = replay(load_level(microban, 1), SOLUTION_1 + "U")
    assert result.failed_step == 34 and "wall at row 1, column 3" in result.error


def test_legal_but_unfinished_solution_is_rejected(microban):
    result = replay(load_level(microban, 1), SOLUTION_1[:-2])
    assert result.legal and not result.solved and "not on goals" in result.error


def test_bad_letter_and_empty_push_are_reported(microban):
    assert "not a LURD letter" in replay(load_level(microban, 1), "dx").error
    assert "push with no box" in replay(load_level(microban, 1), "R").error
