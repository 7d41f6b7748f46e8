"""Shared test fixtures: where the real data lives, and skipping only when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from robocell.common.paths import shared_data_dir


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared real-data directory; skips (the one acceptable skip) when it is absent."""
    root = shared_data_dir()
    if not root.is_dir():
        pytest.skip(f"shared data not found at {root} (set ROBOCELL_DATA to its location)")
    return root
