"""Fixtures of the Sokoban tests: the shared level collections."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def microban(shared_data: Path) -> Path:
    return shared_data / "sokoban" / "microban.txt"


@pytest.fixture(scope="session")
def xsokoban(shared_data: Path) -> Path:
    return shared_data / "sokoban" / "xsokoban-original-extra.txt"


@pytest.fixture(scope="session")
def boxoban_hard(shared_data: Path) -> Path:
    return shared_data / "sokoban" / "boxoban-hard-000.txt"
