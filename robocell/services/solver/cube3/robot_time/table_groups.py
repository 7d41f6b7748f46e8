"""The tables of the robot-time search, for `robocell tables`: the axial-metric group (the
same for every robot) and each robot profile's own cost tables and phase-1 move words
(keyed by its digest)."""

from __future__ import annotations

from robocell.common.profile import Profile, available_profiles, load_profile
from robocell.common.tables import TableGroup
from robocell.services.solver.cube3.robot_time import cost_tables
from robocell.services.solver.cube3.solver import is_move_count_metric


def table_groups(profile: str | None = None) -> list[TableGroup]:
    """With a profile name, the groups its robot-time search reads (none for a move-count
    profile); with None, those of every shipped 3x3 profile."""
    names = [profile] if profile is not None else available_profiles()
    groups: list[TableGroup] = []
    for name in names:
        for group in profile_groups(load_profile(name)):
            if group not in groups:
                groups.append(group)
    return groups


def profile_groups(profile: Profile) -> list[TableGroup]:
    """The groups the robot-time search of ``profile`` reads (none for a move-count one)."""
    if not profile.fits(3) or is_move_count_metric(profile):
        return []
    return cost_tables.search_groups(profile)
