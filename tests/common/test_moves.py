"""Move application: known strings, orders, agreement of facelet and cubie levels."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from robocell.common.cube import (
    CubieState,
    Move,
    MoveError,
    apply_to_cubies,
    apply_to_facelets,
    from_facelets,
    parse_moves,
    solved,
)
from robocell.common.notation import MOVE_NAMES

FACE_MOVES = [Move(f, t) for f in "URFDLB" for t in (1, 2, 3)]


def order(sequence: str, size: int = 3) -> int:
    moves = parse_moves(sequence)
    cube = apply_to_facelets(solved(size), moves)
    n = 1
    while cube != solved(size):
        cube = apply_to_facelets(cube, moves)
        n += 1
    return n


@pytest.mark.parametrize("sequence, expected", [
    ("R U", 105), ("R U R' U'", 6), ("R2 U2", 6), ("R", 4), ("M", 4), ("x y", 3)])
def test_move_orders(sequence, expected):
    assert order(sequence) == expected


def test_known_facelet_strings_match_kociemba_convention():
    assert apply_to_facelets(solved(3), "R") == (
        "UUFUUFUUFRRRRRRRRRFFDFFDFFDDDBDDBDDBLLLLLLLLLUBBUBBUBB")
    assert apply_to_facelets(solved(3), "U") == (
        "UUUUUUUUUBBBRRRRRRRRRFFFFFFDDDDDDDDDFFFLLLLLLLLLBBBBBB")
    assert apply_to_facelets(solved(2), "x") == "FFFFRRRRDDDDBBBBLLLLUUUU"


def test_rotations_and_slices_compose_from_face_turns():
    for composite, equivalent in [("x", "R M' L'"), ("y", "U E' D'"), ("z", "F S B'"),
                                  ("Rw", "R M'"), ("u", "U E'")]:
        assert apply_to_facelets(solved(3), composite) == apply_to_facelets(
            solved(3), equivalent)
    assert apply_to_facelets(solved(2), "Rw") == apply_to_facelets(solved(2), "x")


def test_slice_turn_on_2x2_is_refused():
    with pytest.raises(MoveError, match="3x3x3"):
        apply_to_facelets(solved(2), "M")


@given(st.lists(st.builds(Move, st.sampled_from(MOVE_NAMES), st.sampled_from([1, 2, 3])),
                max_size=30))
def test_cubie_and_facelet_levels_agree(moves):
    by_facelets = apply_to_facelets(solved(3), moves)
    by_cubies = apply_to_cubies(CubieState.solved(3), moves)
    assert by_cubies.to_facelets() == by_facelets
    assert from_facelets(by_facelets) == by_cubies


@given(st.lists(st.sampled_from(FACE_MOVES), max_size=30))
def test_2x2_cubie_level_agrees(moves):
    assert apply_to_cubies(CubieState.solved(2), moves).to_facelets() == apply_to_facelets(
        solved(2), moves)


@given(st.lists(st.sampled_from(FACE_MOVES), max_size=20),
       st.lists(st.sampled_from(FACE_MOVES), max_size=20))
def test_cubie_composition_is_sequencing(first, second):
    a = apply_to_cubies(CubieState.solved(3), first)
    b = apply_to_cubies(CubieState.solved(3), second)
    assert (a * b) == apply_to_cubies(CubieState.solved(3), first + second)
    assert (a * a.inverse()).is_solved()


def test_relabel_by_centres_names_colours_after_their_centre_position():
    from robocell.common.facelets import relabel_by_centres

    turned = apply_to_facelets(apply_to_facelets(solved(3), "R U F'"), "x y")
    relabelled = relabel_by_centres(turned)
    assert [relabelled[i] for i in (4, 13, 22, 31, 40, 49)] == list("URFDLB")
    # the same physical cube: undoing the turns in the rotated frame solves every face
    assert relabel_by_centres(solved(3)) == solved(3)
    assert relabel_by_centres(solved(2)) == solved(2)
