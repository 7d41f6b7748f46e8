"""Solving schedules: parsing, scaling, and running the stages in turn."""

from __future__ import annotations

import pytest

from robocell.sokoban.level import load_level, parse_levels
from robocell.sokoban.lurd import replay
from robocell.sokoban.schedule import (
    DEFAULT_SCHEDULE,
    Stage,
    default_schedule,
    parse_schedule,
    solve_scheduled,
    stage_options,
)
from robocell.sokoban.solver import FEATURE_HEAP_EVERY


def test_schedule_strings_round_trip():
    stages = parse_schedule("1:5, 2fo:25,100fo/2:30,100p:7.5,3f/0:1,2fomc/0:4")
    assert stages == [
        Stage(1, 5.0), Stage(2, 25.0, packing=True, features=True),
        Stage(100, 30.0, packing=True, features=True, heap_every=2),
        Stage(100, 7.5, plain=True), Stage(3, 1.0, features=True, heap_every=0),
        Stage(2, 4.0, packing=True, features=True, heap_every=0, box_moves=True,
              deep_corrals=True)]
    assert ",".join(map(str, stages)) == "1:5,2fo:25,100fo/2:30,100p:7.5,3f/0:1,2fomc/0:4"
    assert stages[1].heap_every == FEATURE_HEAP_EVERY


def test_the_packing_layers_flag():
    (stage,) = parse_schedule("2fomr/0:20")
    assert stage.pack_layers and str(stage) == "2fomr/0:20"
    assert stage_options(stage)["pack_layers"]
    with pytest.raises(ValueError, match="flag r"):
        parse_schedule("2r:5")


@pytest.mark.parametrize("bad, says", [
    ("", "empty schedule"), ("2:", "'2:'"), ("x:5", "'x:5'"), ("2fq:5", "'2fq:5'"),
    ("0:5", "'0:5'"), ("2:0", "'2:0'"), ("2/3:5", "'2/3:5'"), ("2f/-1:5", "'2f/-1:5'"),
    ("1f:5", "need a weight above 1"), ("1o:5", "need a weight above 1"), ("25", "'25'")])
def test_a_bad_schedule_names_the_stage(bad, says):
    with pytest.raises(ValueError, match="W\\[flags\\]|empty|above 1") as err:
        parse_schedule(bad)
    assert says in str(err.value)


def test_the_default_schedule_is_scaled_to_the_budget():
    for metric in ("pushes", "moves"):
        stages = default_schedule(metric, 12.0)
        assert sum(s.seconds for s in stages) == pytest.approx(12.0)
        assert [s.weight for s in stages] == [s.weight for s in
                                              parse_schedule(DEFAULT_SCHEDULE[metric])]
    assert default_schedule("pushes", 60.0)[0] == Stage(1, 2.0)
    assert any(s.box_moves for s in default_schedule("pushes", 60.0))
    assert any(s.pack_layers for s in default_schedule("pushes", 60.0))


def test_stages_run_until_one_solves(xsokoban):
    # XSokoban 60: optimal A* cannot finish in half a second; the feature search then solves.
    level = load_level(xsokoban, 60)
    result, spent = solve_scheduled(level, parse_schedule("1:0.5,2fo:60,100:60"))
    assert result.solved and not result.optimal and replay(level, result.lurd).solved
    assert result.seconds < spent < 0.5 + result.seconds + 5.0


def test_an_optimal_stage_that_proves_no_solution_ends_the_schedule():
    (level,) = parse_levels("######\n#$@ .#\n#  $.#\n######")   # a box in a corner
    result, spent = solve_scheduled(level, parse_schedule("1:5,2fo:60"))
    assert result.status == "no solution" and result.optimal and spent < 5
