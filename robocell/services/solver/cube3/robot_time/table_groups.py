"""The tables of the robot-time search, for `robocell tables`: the axial-metric group (the
same for every robot) and each robot profile's own cost tables and phase-1 move words
(keyed by its digest)."""

from __future__ import annotations

from robocell.common.profile import available_profiles, load_profile
from robocell.common.tables import TableGroup
from robocell.services.solver.cube3.robot_time import axial_metric, cost_tables
from robocell.services.solver.cube3.robot_time.profile_costs import profile_costs
from robocell.services.solver.cube3.solver import is_move_count_metric


def table_groups(profile: str | None = None) -> list[TableGroup]:
    """With a profile name, the groups its robot-time search reads (none for a move-count
    profile); with None, those of every shipped 3x3 profile."""
    names = [profile] if profile is not None else available_profiles()
    groups: list[TableGroup] = []
    for name in names:
        chosen = load_profile(name)
        if not chosen.fits(3) or is_move_count_metric(chosen):
            continue
        if not groups:
            groups.extend(axial_metric.table_groups())
        cost = profile_costs(chosen).cost
        groups.append(cost_tables.table_group(chosen, cost))
        groups.append(cost_tables.moves_group(chosen, cost))
    return groups
