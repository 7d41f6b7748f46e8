"""The progress bar: an ETA only once it means something."""

from __future__ import annotations

import io
import time

from robocell.common.progress import Progress, Ticker, eta_text


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_eta_from_the_first_sliver_of_work():
    # the first redraw of a table build: 0.0001 % done after 2.8 s would read "2817380.6s"
    assert eta_text(1e-6, 2.8) == "  2.8s, eta --"
    assert eta_text(0.5, 0.2) == "  0.2s, eta --"


def test_eta_once_meaningful():
    assert eta_text(0.25, 10.0) == "eta  30.0s"


def test_the_bar_on_a_terminal_shows_no_absurd_eta():
    stream = Terminal()
    with Progress("tables", 1_000_000, stream=stream) as bar:
        bar.update(1)
    first = stream.getvalue().split("\r")[1]
    assert "eta --" in first


def test_a_job_without_measurable_progress_still_says_it_is_going():
    stream = io.StringIO()
    with Ticker("compiling the search", expected_s=30, every_s=0.2, stream=stream):
        time.sleep(0.75)
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 4, lines  # the start, at least two ticks, the end
    assert lines[0].startswith("compiling the search") and "about 30 s" in lines[0]
    assert "done in" in lines[-1]


def test_a_short_job_says_nothing_before_its_delay():
    stream = io.StringIO()
    with Ticker("compiling the search", after_s=5.0, stream=stream):
        pass
    assert stream.getvalue() == ""
