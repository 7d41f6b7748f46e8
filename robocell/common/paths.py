"""Where robocell finds things on disk: the repository, generated tables, shared test data."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
"""The installed `robocell` package directory."""

REPO_DIR = PACKAGE_DIR.parent
"""The source checkout when running from a clone (as `./dev` does); for an installed package
this is site-packages, so nothing is read or written there unless it is a checkout."""


def is_checkout() -> bool:
    """Whether robocell runs from a source checkout (its pyproject.toml beside the package)."""
    return (REPO_DIR / "pyproject.toml").is_file()


def tables_dir() -> Path:
    """Directory of generated tables, always writable: $ROBOCELL_TABLES, else `tables/` of the
    checkout, else the user's cache ($XDG_CACHE_HOME or ~/.cache)/robocell/tables for an
    installation without a checkout."""
    env = os.environ.get("ROBOCELL_TABLES")
    if env:
        return Path(env)
    if is_checkout():
        return REPO_DIR / "tables"
    return user_cache_dir() / "tables"


def user_cache_dir() -> Path:
    """The user's cache folder for robocell ($XDG_CACHE_HOME or ~/.cache)/robocell: what an
    installation without a checkout builds."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "robocell"


def shared_data_dir() -> Path:
    """Real data that the project does not own (camera photos, colour scans, Sokoban
    collections): $ROBOCELL_DATA, else `../shared/data` beside the checkout. It may be
    absent on a user's clone; tests that need it skip with a reason (see `require_shared_data`)."""
    env = os.environ.get("ROBOCELL_DATA")
    if env:
        return Path(env)
    return REPO_DIR.parent / "shared" / "data"


def data_dir() -> Path:
    """Where the cell keeps what it must remember across restarts (the cycle log):
    $ROBOCELL_DATA_DIR, else `var/` of the checkout, else the user's data directory
    ($XDG_DATA_HOME or ~/.local/share)/robocell for an installation without a checkout."""
    env = os.environ.get("ROBOCELL_DATA_DIR")
    if env:
        return Path(env)
    if is_checkout():
        return REPO_DIR / "var"
    share = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(share) / "robocell"


HISTORY_ENV = "ROBOCELL_HISTORY"
HISTORY_FILE_NAME = "cycles.sqlite3"


def history_path() -> Path:
    """The cell's cycle log: $ROBOCELL_HISTORY, else cycles.sqlite3 in the data directory."""
    env = os.environ.get(HISTORY_ENV)
    return Path(env) if env else data_dir() / HISTORY_FILE_NAME
