"""Solving schedules: parsing, scaling, and running the stages in turn, or in lanes."""

from __future__ import annotations

import os
import time

import pytest

from robocell.sokoban import schedule
from robocell.sokoban.level import load_level, parse_levels
from robocell.sokoban.lurd import replay
from robocell.sokoban.schedule import (
    DEFAULT_SCHEDULE,
    LaneError,
    Stage,
    default_lanes,
    default_schedule,
    lanes_text,
    parse_lanes,
    parse_schedule,
    solve_lanes,
    solve_scheduled,
    stage_options,
    usable_lanes,
)
from robocell.sokoban.solver import FEATURE_HEAP_EVERY, SolveResult


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
    (stage,) = parse_schedule("2foml/0:20")
    assert stage.pack_layers and str(stage) == "2foml/0:20"
    assert stage_options(stage)["pack_layers"]
    with pytest.raises(ValueError, match="flags h, r, u, e and l"):
        parse_schedule("2l:5")


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


CORNERED = "######\n#$@ .#\n#  $.#\n######"
"""A box in a corner: optimal A* proves at once that there is no solution."""


@pytest.fixture
def forks(monkeypatch):
    """The pids of the lane processes forked during the test."""
    pids: list[int] = []
    real_fork = os.fork

    def fork() -> int:
        pid = real_fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return pids


def gone(pid: int) -> bool:
    """Whether no process of ours has this pid any more (ended and reaped)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.fixture
def stalling_stage(monkeypatch):
    """In the lanes' processes (forked after the patch) stages of weight 5 sleep 60 s, 6
    sleep 3 s, 7 raise, 8 return at once with the time they were given as their seconds; the
    others search for real."""
    real_solve = schedule.solve

    def solve(board, **options):
        if options["weight"] == 5:
            time.sleep(60)
            return SolveResult("timeout", options["metric"])
        if options["weight"] == 7:
            raise RuntimeError("a lane's own failure")
        if options["weight"] == 6:  # overruns a 1 s share by 2 s
            time.sleep(3)
            return SolveResult("timeout", options["metric"], seconds=3.0)
        if options["weight"] == 8:  # says what time it was given
            return SolveResult("timeout", options["metric"], seconds=options["timeout"])
        return real_solve(board, **options)

    monkeypatch.setattr(schedule, "solve", solve)


def test_lane_strings_round_trip_and_name_the_bad_lane():
    lanes = parse_lanes("1:2,2fom/0:58|2fom/2:15,3:15,2fo/2:30")
    assert [len(stages) for stages in lanes] == [2, 3]
    assert lanes_text(lanes) == "1:2,2fom/0:58|2fom/2:15,3:15,2fo/2:30"
    assert parse_lanes("1:5,2fo:25") == [parse_schedule("1:5,2fo:25")]
    with pytest.raises(ValueError, match="lane 2: schedule stage 'x:3'"):
        parse_lanes("1:2|x:3")


def test_the_default_lanes_fill_the_budget_and_one_lane_is_the_default_schedule():
    for metric in ("pushes", "moves"):
        assert default_lanes(metric, 30.0, 1) == [default_schedule(metric, 30.0)]
        lanes = default_lanes(metric, 30.0, 2)
        assert len(lanes) == 2
        assert all(sum(s.seconds for s in stages) == pytest.approx(30.0) for stages in lanes)
        assert len(default_lanes(metric, 30.0, 8)) == 2
    assert 1 <= usable_lanes() <= min(2, len(os.sched_getaffinity(0)))


def test_one_lane_is_the_schedule_run_here(xsokoban, monkeypatch):
    # the same result as solve_scheduled, and no process forked for it
    level = load_level(xsokoban, 60)
    stages = parse_schedule("1:0.5,2fo:60")
    expected, _ = solve_scheduled(level, stages)

    def no_fork() -> int:
        raise AssertionError("one lane must not fork")

    monkeypatch.setattr(os, "fork", no_fork)
    result, spent = solve_lanes(level, [stages])
    assert (result.lurd, result.expanded, result.stage) == (expected.lurd, expected.expanded,
                                                            "2fo:60")
    assert result.seconds < spent


def test_two_lanes_solve_a_level_in_two_processes(microban, forks):
    # Microban 2: both lanes search for real and solve it; optimal A* proves its solution
    # in a moment, so the feature search's, if first, waits for it (as in one lane, where
    # optimal A* runs first); the solution replays, and no lane's process is left after
    level = load_level(microban, 2)
    log: list[dict] = []
    result, spent = solve_lanes(level, parse_lanes("1:20|2fo:20"), log=log)
    assert result.solved and result.optimal and replay(level, result.lurd).solved
    assert result.stage == "1:20" and spent < 20
    assert {entry["stage"] for entry in log} <= {"1:20", "2fo:20"}
    assert len(forks) == 2 and all(gone(pid) for pid in forks)


def test_a_solution_waits_for_optimal_a_star_only_for_its_share(xsokoban, stalling_stage):
    # XSokoban 60: optimal A* does not solve it in 3 s; the feature search's solution,
    # found before, is taken when that stage ends, not when the lane's next stage does
    level = load_level(xsokoban, 60)
    result, spent = solve_lanes(level, parse_lanes("1:3,5:60|2fo:60"))
    assert result.solved and result.stage == "2fo:60" and not result.optimal
    assert 2.5 < spent < 15


def test_the_winner_stops_a_lane_still_searching(xsokoban, forks, stalling_stage):
    # XSokoban 60: the feature search solves it in a few seconds; the other lane would
    # sleep a minute and is killed at once
    level = load_level(xsokoban, 60)
    result, spent = solve_lanes(level, parse_lanes("5:60|2fo:60"))
    assert result.solved and result.stage == "2fo:60" and replay(level, result.lurd).solved
    assert spent < 30
    assert len(forks) == 2 and all(gone(pid) for pid in forks)


def test_a_proof_of_no_solution_ends_every_lane(forks, stalling_stage):
    (level,) = parse_levels(CORNERED)
    started = time.monotonic()
    result, spent = solve_lanes(level, parse_lanes("5:60|1:5,2fo:60"))
    assert result.status == "no solution" and result.optimal and result.stage == "1:5"
    assert spent < 5 and time.monotonic() - started < 10
    assert all(gone(pid) for pid in forks)


def test_a_lane_that_fails_is_reported_and_the_others_stopped(forks, stalling_stage):
    (level,) = parse_levels(CORNERED)
    started = time.monotonic()
    with pytest.raises(LaneError, match="lane 2 \\(7:5\\) failed") as err:
        solve_lanes(level, parse_lanes("5:60|7:5"))
    assert "RuntimeError: a lane's own failure" in str(err.value)  # its traceback
    assert time.monotonic() - started < 10
    assert all(gone(pid) for pid in forks)


def test_a_stage_that_overruns_takes_the_time_from_its_lane_not_the_budget(stalling_stage):
    # lane 1: 6:1 takes 3 s, so 8:5 gets the 3 s left of the lane's 6; lane 2 ends at once
    (level,) = parse_levels(CORNERED)
    log: list[dict] = []
    result, spent = solve_lanes(level, parse_lanes("6:1,8:5|8:1"), log=log)
    assert result.status == "timeout" and result.stage == "8:5"
    assert 2.0 < result.seconds < 3.5 and spent < 6.5
    assert [entry["stage"] for entry in log] == ["8:1", "6:1", "8:5"]
