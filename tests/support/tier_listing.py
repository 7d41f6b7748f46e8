"""A pytest plugin that lists every collected test with its tier markers, for
tests/test_tiers.py: with ``-p support.tier_listing --collect-only`` each test is one line
``selected|deselected <node id> <markers, comma-separated>``, deselected ones being those a
``-m`` (or ``--fast``) left out."""

from __future__ import annotations

import pytest

from support.tiers import HEAVY


def _line(config: pytest.Config, kind: str, item: pytest.Item) -> None:
    marks = ",".join(mark for mark in HEAVY if item.get_closest_marker(mark))
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    reporter.write_line(f"{kind} {item.nodeid} {marks}")


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        _line(item.config, "deselected", item)


def pytest_collection_finish(session: pytest.Session) -> None:
    for item in session.items:
        _line(session.config, "selected", item)
