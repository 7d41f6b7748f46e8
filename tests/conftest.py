"""Shared test fixtures: where the real data lives (skipping only when it is absent), and the
reference robot profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from robocell.common.paths import shared_data_dir
from robocell.common.profile import Profile, load_profile


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
