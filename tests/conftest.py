"""Shared test fixtures: where the real data lives (skipping only when it is absent), the
reference robot profile, the simulated cell, the browser and the AVR toolchain.

Tiers: a test is marked by the fixtures it uses (``support.tiers``): ``cell`` when it starts
the whole cell, ``browser`` when it drives Chromium, ``avr`` when it builds or runs the
compiled firmware; ``slow`` is marked by hand. ``--fast`` runs the tests that carry none of
these (``FAST_TIER``), the whole suite runs without it.

And a guard over the whole run: no process started by a test may outlive the run. Every
process this run starts carries ``ROBOCELL_TEST_RUN`` (set here, inherited through the
environment) or is found below this process; after each test's teardown, the processes of
the run that are new and still alive are noted with the test's name, and at the end of the
session those still alive fail the run, named with their test, and are killed. (A process
kept by a module or session fixture is noted with the first test that used it: it passes
when the fixture ends it.)
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from actuator.conftest import avr_tools_missing
from support.cell import Launcher, running_cell, temporary_cell_env
from support.monitor import CHROMIUM, CHROMIUM_ARGS
from support.processes import (
    Proc,
    command_line,
    descendants,
    kill_all,
    proc,
    running,
    survivors,
)
from support.processes import carrying as carrying_variable
from support.tiers import FAST_TIER, tier_marks

from robocell.common.paths import shared_data_dir
from robocell.common.profile import Profile, load_profile

RUN_VARIABLE = "ROBOCELL_TEST_RUN"
RUN_ID = f"{os.getpid()}-{time.time_ns()}"
os.environ[RUN_VARIABLE] = RUN_ID
LEFT_OVER_GRACE_S = 5.0
"""How long processes still ending at the end of the run (a stop just sent) may take."""

_seen: set[Proc] = set()
_started_by: dict[Proc, str] = {}
_left_over: dict[Proc, str] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fast", action="store_true",
                     help=f"the fast tier: only tests that are {FAST_TIER!r} (with any -m)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("fast"):
        given = config.option.markexpr
        config.option.markexpr = f"({given}) and ({FAST_TIER})" if given else FAST_TIER


@pytest.hookimpl(tryfirst=True)  # before -m deselects by these markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for mark in sorted(tier_marks(item.fixturenames)):
            item.add_marker(mark)


def _processes_of_this_run() -> set[Proc]:
    table = running()
    this = proc(os.getpid())
    return (carrying_variable(RUN_VARIABLE, RUN_ID, table, since=this.started if this else 0)
            | descendants(os.getpid(), table))


def _ends_with_this_process(p: Proc, table: dict[int, tuple[int, int, str]]) -> bool:
    """multiprocessing's resource tracker of this very process: it ends when this one does."""
    return (table.get(p.pid, (0,))[0] == os.getpid()
            and "multiprocessing.resource_tracker" in command_line(p.pid))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if not _seen:  # before the first test: what collection started is nobody's
        _seen.update(_processes_of_this_run())
    yield  # setup, call, teardown
    for p in _processes_of_this_run() - _seen:
        _started_by[p] = item.nodeid
        _seen.add(p)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    table = running()
    candidates = {p for p in _started_by if not _ends_with_this_process(p, table)}
    left = survivors(candidates, within=LEFT_OVER_GRACE_S)
    _left_over.update({p: f"{_started_by[p]}: pid {p.pid}, {command_line(p.pid)[:150]}"
                       for p in left})
    kill_all(left)
    if left:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _left_over:
        return
    terminalreporter.section("processes left running", sep="=", red=True, bold=True)
    terminalreporter.line(f"{len(_left_over)} processes started by these tests were still "
                          "running at the end of the run (now killed); each test must end "
                          "what it starts, also when it fails:", red=True)
    for line in sorted(_left_over.values()):
        terminalreporter.line(f"  {line}")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared real-data directory; skips (the one acceptable skip) when it is absent."""
    root = shared_data_dir()
    if not root.is_dir():
        pytest.skip(f"shared data not found at {root} (set ROBOCELL_DATA to its location)")
    return root


@pytest.fixture(scope="session")
def soltvvo() -> Profile:
    """The reference 2x2 robot profile (four counter-clockwise arms with grippers)."""
    return load_profile("soltvvo-2x2")


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's Chromium driven by Playwright's sync API, one for the whole run: the sync API
    keeps an event loop running on the test thread while it is open, so a second one (or
    ``asyncio.run`` on that thread) cannot start beside it (see ``support.monitor.run_async``)."""
    from playwright.sync_api import sync_playwright

    if not os.path.exists(CHROMIUM):
        raise RuntimeError(f"{CHROMIUM} is missing: install Debian's chromium "
                           "(`./dev test` does it with apt-get)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def launch_cell() -> Callable[..., AbstractContextManager[Launcher]]:
    """How a test starts the whole simulated cell: ``with launch_cell(profile, speed) as
    cell:`` (``support.cell.running_cell``). Using it marks the test ``cell``. The tests of a
    module that kill or restart no service share one cell, from a module-scoped fixture that
    uses this one."""
    return running_cell


@pytest.fixture
def cell_env() -> Iterator[dict[str, str]]:
    """The environment of a simulated 2x2 cell on free ports with a cycle log of its own, for a
    test that starts the cell itself (``robocell up --sim``); using it marks the test ``cell``."""
    with temporary_cell_env("soltvvo-2x2", 50.0) as env:
        yield env


@pytest.fixture(scope="session")
def avr_toolchain() -> None:
    """The AVR toolchain and simavr, needed to build and run the compiled firmware; skips naming
    the packages to install when they are absent. Using it marks the test ``avr``."""
    if reason := avr_tools_missing():
        pytest.skip(reason)
