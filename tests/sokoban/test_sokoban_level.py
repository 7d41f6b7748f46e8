"""XSB parsing and validation: real collections, run-length rows, and errors naming squares."""

from __future__ import annotations

import pytest

from robocell.sokoban.level import LevelError, load_level, load_levels, parse_levels

MICROBAN_1 = """\
####
# .#
#  ###
#*@  #
#  $ #
#  ###
####"""


def test_real_collections_parse_with_counts_and_titles(microban, xsokoban, boxoban_hard):
    micro = load_levels(microban)
    assert len(micro) == 155
    assert [lv.title for lv in micro[:3]] == ["1", "2", "3"]
    assert micro[0].xsb() == MICROBAN_1
    xs = load_levels(xsokoban)
    assert len(xs) == 90 and xs[-1].title == "90"
    box = load_levels(boxoban_hard)
    assert len(box) == 1000
    assert box[0].title == "0" and box[999].title == "999"   # Boxoban titles precede levels
    for level in micro + xs + box[:100]:
        level.validate()
        assert len(level.boxes) == len(level.goals)


def test_floor_aliases_comments_and_several_levels():
    text = "; my set\n\n#####\n#@$.#\n#####\n; first\n\n#####\n#.$@#\n#-_-#\n#####\n; second\n"
    levels = parse_levels(text)
    assert [lv.title for lv in levels] == ["first", "second"]
    assert levels[1].rows[2] == "#   #"
    for lv in levels:
        lv.validate()


def test_title_line_and_run_length_rows():
    text = "Title: Tiny\n5#|#@$.#|5#\n"
    (level,) = parse_levels(text)
    assert level.title == "Tiny"
    assert level.xsb() == "#####\n#@$.#\n#####"
    level.validate()
    assert parse_levels("3#\n#@$.#\n#2 #\n4#-#")[0].rows[2].rstrip() == "#  #"


@pytest.mark.parametrize("text, fragment", [
    ("#####\n#@$. \n#####", "not enclosed"),
    ("#####\n#@$.#\n#  $#\n#####", "2 boxes but 1 goals"),
    ("#####\n# $.#\n#####", "no player"),
    ("######\n#@$.@#\n######", "2 players at row 2, column 2; row 2, column 5"),
    ("#######\n#@$.#$#\n#####.#\n#######", "box at row 2, column 6 is off goal and out of"),
])
def test_invalid_levels_say_what_and_where(text, fragment):
    (level,) = parse_levels(text)
    with pytest.raises(LevelError, match=fragment):
        level.validate()


def test_not_enclosed_names_the_square():
    (level,) = parse_levels("#####\n#@$. \n#####")
    with pytest.raises(LevelError, match=r"row 2, column 5"):
        level.validate()


def test_bad_character_inside_a_level_names_line_and_column():
    with pytest.raises(LevelError, match=r"line 2, column 3: 'x'"):
        parse_levels("#####\n#@x.#\n#####")


def test_level_number_out_of_range(microban):
    with pytest.raises(LevelError, match="has levels 1..155, not 156"):
        load_level(microban, 156)
