"""Notation: parsing, formatting, errors with positions, inverse and simplification."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from robocell.common.cube import (
    Move,
    NotationError,
    apply_to_facelets,
    format_moves,
    invert_moves,
    parse_moves,
    simplify_moves,
    solved,
)
from robocell.common.notation import MOVE_NAMES

moves_3x3 = st.lists(
    st.builds(Move, st.sampled_from(MOVE_NAMES), st.sampled_from([1, 2, 3, -2])), max_size=25)


def test_parses_every_kind_of_token():
    moves = parse_moves("R U' F2 D2' Lw r M' E2 S x y' z2 B")
    assert [str(m) for m in moves] == [
        "R", "U'", "F2", "D2'", "Lw", "Rw", "M'", "E2", "S", "x", "y'", "z2", "B"]


def test_parses_without_spaces_and_with_commas():
    assert format_moves(parse_moves("RUR'U'")) == "R U R' U'"
    assert format_moves(parse_moves("R,U,  R'\tU'\n")) == "R U R' U'"
    assert format_moves(parse_moves("R’ X")) == "R' x"


@pytest.mark.parametrize("text, position", [
    ("R U Q", 4), ("R3", 1), ("R''", 2), ("R U2'' F", 5), ("  k", 2), ("R2 U 2", 5)])
def test_unknown_token_reported_with_its_position(text, position):
    with pytest.raises(NotationError) as info:
        parse_moves(text)
    assert info.value.position == position
    assert f"position {position}" in str(info.value)


@given(moves_3x3)
def test_format_then_parse_round_trips(moves):
    assert parse_moves(format_moves(moves)) == moves


@given(moves_3x3)
def test_inverse_undoes_the_sequence(moves):
    cube = apply_to_facelets(solved(3), moves)
    assert apply_to_facelets(cube, invert_moves(moves)) == solved(3)


@given(moves_3x3)
def test_simplify_keeps_the_state_and_never_lengthens(moves):
    simple = simplify_moves(moves)
    assert len(simple) <= len(moves)
    assert apply_to_facelets(solved(3), simple) == apply_to_facelets(solved(3), moves)
    assert simplify_moves(simple) == simple


@pytest.mark.parametrize("text, expected", [
    ("R R", "R2"), ("R R'", ""), ("R L R", "R2 L"), ("U D U'", "D"), ("R2 R2'", ""),
    ("F B F B", "F2 B2"), ("R U U' R'", ""), ("x x x", "x'"), ("R M R", "R2 M"),
    ("R U R", "R U R"),
])
def test_simplify_cancels_and_merges_commuting_turns(text, expected):
    assert format_moves(simplify_moves(parse_moves(text))) == expected
