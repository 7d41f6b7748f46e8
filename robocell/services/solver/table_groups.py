"""Which table groups the solver has: every group of the shipped robot profiles, or those one
profile needs (`all_groups`), from the modules that provide them."""

from __future__ import annotations

import importlib

from robocell.common.profile import ProfileError, load_profile
from robocell.errors import CommandError

# Modules providing `table_groups(profile: str | None) -> list[TableGroup]`: with a profile
# name, the groups that profile needs; with None, every group of the shipped profiles.
TABLE_PROVIDERS = (
    "robocell.services.solver.cube2.tables",
    "robocell.services.solver.cube3.tables",
    "robocell.services.solver.cube3.robot_time.table_groups",
)


def cell_groups(profile: str | None) -> list:
    """The groups a solver serving a cell of robot ``profile`` needs before it answers: that
    profile's alone (a 2x2 cell builds no 3x3 table); without a profile, the plain metric's
    (htm) of both sizes."""
    return all_groups(profile or "htm")


def all_groups(profile: str | None = None) -> list:
    size = None
    if profile is not None:
        try:
            size = load_profile(profile).size
        except ProfileError as exc:
            raise CommandError(str(exc)) from None
    groups = []
    for module_name in TABLE_PROVIDERS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            continue
        if size is not None and f"cube{size}" not in module_name:
            continue
        groups.extend(module.table_groups(profile))
    return groups
