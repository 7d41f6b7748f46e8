"""The robot time of each primitive from the firmware's (start, end) reports: overlapped
starts counted once, the robot standing idle not at all."""

from __future__ import annotations

from robocell.services.actuator.executor import Job, Line, measured_steps


def _job() -> Job:
    return Job("plan", ["R", "U"], [
        Line("MARK step=0 R", 0, 0.0, starts_step=True), Line("MOVE R:200", 0, 100.0),
        Line("MARK step=1 U", 1, 0.0, starts_step=True), Line("MOVE U:200", 1, 100.0)])


def test_back_to_back_motions_are_their_durations():
    spans = {0: (1000, 1000), 1: (1000, 101_000), 2: (101_000, 101_000),
             3: (101_000, 203_000)}
    assert measured_steps(_job(), spans) == [100.0, 102.0]


def test_an_idle_gap_is_not_robot_time_and_an_overlap_counts_once():
    idle = {0: (0, 0), 1: (0, 100_000), 2: (400_000, 400_000), 3: (400_000, 500_000)}
    assert measured_steps(_job(), idle) == [100.0, 100.0]
    # U starts 30 ms before R ends (corner cut): the robot was busy 170 ms in all
    overlap = {0: (0, 0), 1: (0, 100_000), 2: (70_000, 70_000), 3: (70_000, 170_000)}
    assert measured_steps(_job(), overlap) == [100.0, 70.0]


def test_without_every_lines_report_there_is_no_measurement():
    assert measured_steps(_job(), {0: (0, 0), 1: (0, 100_000)}) is None
    assert measured_steps(_job(), {0: None, 1: None, 2: None, 3: None}) is None
