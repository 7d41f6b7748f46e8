"""Fixtures of the monitor tests: broker + monitor processes per module, Debian's Chromium
driven by Playwright (never a downloaded browser)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.monitor import TOKEN, Cell, start_broker, start_monitor


@pytest.fixture(scope="module")
def cell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cell]:
    tmp = tmp_path_factory.mktemp("cell")
    broker, bus = start_broker(tmp, ["--stats-period", "0.5"])
    try:
        monitor, url = start_monitor(tmp, bus, ["--token", TOKEN])
    except BaseException:
        broker.stop()
        raise
    yield Cell(bus, url, broker, monitor, tmp)
    monitor.stop()
    broker.stop()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.js_errors = errors
    yield page
    context.close()
