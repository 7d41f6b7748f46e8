"""The table budget: a solver maps the best of its profile's tables that fit, and no more."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import time

import pytest

from robocell.common import config, tables
from robocell.common.cube import apply_to_facelets, parse_moves, random_facelets, solved
from robocell.errors import CommandError
from robocell.services.solver.pool import SolverPool
from robocell.services.solver.table_groups import choose_tables
from robocell.services.solver.worker import solve_in_worker

ROBOT_TIME_GROUPS = {"cube3-axial", "cube3-robot-six-motor", "cube3-robot-six-motor-moves"}


def test_a_small_budget_keeps_the_two_phase_tables_and_drops_the_robot_time_search():
    choice = choose_tables("six-motor", 128)
    assert choice.names == {"cube3-twophase"}
    assert {g.name for g in choice.left_out} == ROBOT_TIME_GROUPS
    assert choice.megabytes <= 128
    line = choice.describe()
    assert "re-ranks" in line and "cube3-robot-six-motor-moves" in line
    assert "robot time" in line  # what leaving them out costs in plan quality


def test_without_a_budget_or_with_room_every_table_is_kept():
    every = choose_tables("six-motor", None)
    assert every.names == {"cube3-twophase"} | ROBOT_TIME_GROUPS and not every.left_out
    roomy = choose_tables("six-motor", every.megabytes + 1)
    assert roomy.names == every.names and "robot-time search" in roomy.search


def test_a_budget_below_the_smallest_set_names_the_least_that_fits():
    least = choose_tables("six-motor", 128).megabytes
    with pytest.raises(CommandError) as caught:
        choose_tables("six-motor", least - 1)
    message = str(caught.value)
    assert "cube3-twophase" in message and f"--table-budget {int(least) + 1}" in message


@pytest.mark.parametrize("text", ["0", "-5", "lots"])
def test_a_malformed_budget_variable_is_named(text):
    with pytest.raises(config.ConfigError, match=config.TABLE_BUDGET_ENV):
        config.table_budget_mb({config.TABLE_BUDGET_ENV: text})
    assert config.table_budget_mb({config.TABLE_BUDGET_ENV: "128"}) == 128.0
    assert config.table_budget_mb({}) is None


def test_a_process_held_to_a_budget_refuses_any_other_group():
    outside = choose_tables("six-motor", 128).left_out[0]
    tables.limit_loading({"cube3-twophase"}, "the table budget of 128 MB")
    try:
        with pytest.raises(tables.TableError, match="not within the table budget of 128 MB"):
            tables.load(outside)
    finally:
        tables.lift_loading_limit()
    assert tables.may_load(outside)


@pytest.mark.slow
def test_the_solver_refuses_a_budget_too_small_before_it_maps_anything():
    done = subprocess.run([sys.executable, "-m", "robocell", "solver", "--profile",
                           "six-motor", "--table-budget", "20"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "--table-budget 76" in done.stderr or "needs at least" in done.stderr, done.stderr


@pytest.mark.slow
def test_workers_within_128_mb_map_only_those_tables_and_still_plan_in_robot_primitives():
    choice = choose_tables("six-motor", 128)
    limit = tables.LoadingLimit(choice.names, "the table budget of 128 MB")
    pool = SolverPool(1, ("six-motor",), queue_limit=2, table_limit=limit)
    pool.start()
    try:
        for seed in range(3):
            facelets = random_facelets(3, seed)
            outcome = pool.solve((solve_in_worker, facelets, "six-motor", None, 0.05),
                                 time.monotonic() + 60)
            plan = outcome["plan"]
            assert plan["stats"]["tables"] == "two-phase, re-ranked"
            assert plan["primitives"] and plan["robot_ms"] > 0
            turns = parse_moves(plan["stats"]["face_turns"])
            assert apply_to_facelets(facelets, turns) == solved(3)
        (worker,) = multiprocessing.active_children()
        mapped = tables.mapped_groups(worker.pid)
    finally:
        pool.close()
    assert set(mapped) == {"cube3-twophase"}
    assert sum(mapped.values()) <= 128e6
