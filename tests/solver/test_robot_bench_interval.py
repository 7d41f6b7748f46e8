"""The interval `bench/robot_profiles_3x3.py` prints under its table: the change of the
robot-time search's mean against a peer's, the plans paired cube by cube."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[2] / "bench"


def bench_module():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("robot_profiles_3x3",
                                                      BENCH / "robot_profiles_3x3.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_paired_change_is_the_ratio_of_means_and_its_interval_holds_the_truth_19_times_in_20():
    paired_change = bench_module().paired_change
    rng = np.random.default_rng(7)
    covered = 0
    draws = 400
    for _ in range(draws):  # cubes of a spread of robot times, a planner 10 % faster on them
        peer = rng.normal(2000, 150, 300)
        ours = peer * 0.9 + rng.normal(0, 40, 300)
        change, half = paired_change([{"robot": list(ours)}], [{"robot": list(peer)}])
        assert math.isclose(change, 100 * (ours.mean() / peer.mean() - 1))
        assert 0 < half < 1  # paired: far tighter than the cubes' own spread of 7.5 %
        covered += change - half < -10 < change + half
    assert 0.92 < covered / draws < 0.98


def test_one_plan_gives_no_interval_and_says_so():
    module = bench_module()
    change, half = module.paired_change([{"robot": [1900.0]}], [{"robot": [2000.0]}])
    assert math.isclose(change, -5.0)
    assert half is None
    assert module.interval_text(change, half) == "-5.0 % (one plan: no interval)"
    assert module.interval_text(-6.8, 0.65) == "-6.8 % (95 % interval -7.5 to -6.1 %)"
