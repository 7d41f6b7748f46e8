"""The cube drawn for Foxglove: cubies and sticker colours, and the layer turn between two
states of the twin found and drawn part way."""

from __future__ import annotations

import pytest
from support.foxglove import decoded, expected_colours, sticker_colours

from robocell.common.cube import apply_to_facelets, solved
from robocell.common.notation import parse_moves
from robocell.services.foxglove.scene import (
    STICKER_RGB,
    CubeLabel,
    Turn,
    apply_turn,
    cube_scene,
    find_turn,
    find_turns,
)

LABEL = CubeLabel("twin", "twin")
SCRAMBLE = "R U F' D2 L B"


@pytest.mark.parametrize("size,move,expected", [
    (3, "R", Turn("R", 1, 1)), (3, "U'", Turn("U", 1, -1)), (3, "F2", Turn("F", 1, 2)),
    (3, "D", Turn("D", 1, 1)), (3, "L'", Turn("L", 1, -1)), (3, "B", Turn("B", 1, 1)),
    (3, "Rw", Turn("R", 2, 1)), (3, "x", Turn("R", 3, 1)), (3, "y'", Turn("U", 3, -1)),
    (2, "R", Turn("R", 1, 1)), (2, "z", Turn("F", 2, 1)),
])
def test_the_turn_between_two_states_is_found_and_moves_stickers_as_the_cube_model(
        size, move, expected):
    before = apply_to_facelets(solved(size), parse_moves(SCRAMBLE), size)
    after = apply_to_facelets(before, parse_moves(move), size)
    assert apply_turn(before, expected) == after
    turn = find_turn(before, after, prefer=[expected.face])
    assert turn is not None and apply_turn(before, turn) == after


def test_states_no_single_turn_explains_have_no_turn():
    before = solved(3)
    assert find_turn(before, before) is None
    assert find_turn(before, apply_to_facelets(before, parse_moves("R U"), 3)) is None
    assert find_turn(before, solved(2)) is None


@pytest.mark.parametrize("move,expected", [
    ("U D'", (Turn("U", 1, 1), Turn("D", 1, -1))), ("R2 L", (Turn("R", 1, 2), Turn("L", 1, 1))),
    ("F' B2", (Turn("F", 1, -1), Turn("B", 1, 2))),
])
def test_an_axial_move_is_found_as_two_turns_of_one_axis(move, expected):
    """A six-motor robot turns both faces of an axis in one motion: the twin publishes once,
    and both turns are found (a single turn explains none of these)."""
    before = apply_to_facelets(solved(3), parse_moves(SCRAMBLE), 3)
    after = apply_to_facelets(before, parse_moves(move), 3)
    assert find_turn(before, after) is None
    turns = find_turns(before, after, prefer=[t.face for t in expected])
    assert turns is not None and set(turns) == set(expected)
    assert find_turns(before, apply_to_facelets(before, parse_moves("R"), 3)) == (
        Turn("R", 1, 1),)
    assert find_turns(before, apply_to_facelets(before, parse_moves("R U"), 3)) is None
    # a 2x2's two layers of one axis turned opposite ways (not a whole-cube rotation)
    small = apply_to_facelets(solved(2), parse_moves(SCRAMBLE), 2)
    turns = find_turns(small, apply_to_facelets(small, parse_moves("R L"), 2), prefer="RL")
    assert turns is not None and set(turns) == {Turn("R", 1, 1), Turn("L", 1, 1)}


def test_an_axial_move_part_way_rotates_both_layers_each_its_own_way():
    halfway = decoded(cube_scene(solved(3), LABEL, (Turn("U", 1, 1), Turn("D", 1, -1)),
                                 0.5)).entities
    turned = {e.id: e.cubes[0].pose.orientation for e in halfway
              if any(abs(b.pose.orientation.w) < 0.999 for b in e.cubes)}
    assert len(turned) == 18
    # U clockwise seen from above and D counter-clockwise seen from below: the same way
    # round the vertical axis, 45 degrees each
    assert {round(q.z, 4) for q in turned.values()} == {-0.3827}


def sticker_boxes(entities):
    """(entity id, colour) of every sticker box (each cubie's first box is its body)."""
    return [(e.id, box.color) for e in entities for box in e.cubes[1:]]


@pytest.mark.parametrize("size,cubies", [(3, 27), (2, 8)])
def test_every_cubie_is_drawn_with_its_stickers(size, cubies):
    entities = decoded(cube_scene(solved(size), LABEL)).entities
    assert len(entities) == cubies + 1  # and the label
    assert len(sticker_boxes(entities)) == 6 * size * size
    assert entities[-1].texts[0].text == "twin"
    rgb = {(round(c.r * 255), round(c.g * 255), round(c.b * 255))
           for _, c in sticker_boxes(entities)}
    assert rgb == set(STICKER_RGB.values())


def test_a_turn_part_way_rotates_only_the_cubies_of_its_layer():
    facelets = solved(3)
    still = decoded(cube_scene(facelets, LABEL)).entities
    halfway = decoded(cube_scene(facelets, LABEL, Turn("R", 1, 1), 0.5)).entities
    turned = [e.id for e in halfway if any(abs(b.pose.orientation.w) < 0.999 for b in e.cubes)]
    assert len(turned) == 9
    assert all(abs(b.pose.orientation.w) == 1.0 for e in still for b in e.cubes)
    # 45 degrees: w = cos(22.5 degrees)
    box = next(e for e in halfway if e.id == turned[0]).cubes[0]
    assert box.pose.orientation.w == pytest.approx(0.92388, abs=1e-4)


@pytest.mark.parametrize("size", [2, 3])
def test_each_face_shows_the_colours_of_its_facelets(size):
    facelets = apply_to_facelets(solved(size), parse_moves(SCRAMBLE), size)
    scene = decoded(cube_scene(facelets, LABEL))
    assert sticker_colours(scene) == expected_colours(facelets, STICKER_RGB)
