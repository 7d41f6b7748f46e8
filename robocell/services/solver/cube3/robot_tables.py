"""The tables of the robot-time search, for `robocell tables`: the axial-metric group (the
same for every robot) and each robot profile's own weighted group and phase-1 move words
(keyed by its digest)."""

from __future__ import annotations

from robocell.common.profile import available_profiles, load_profile
from robocell.common.tables import TableGroup
from robocell.services.solver.cube3 import axial, weighted
from robocell.services.solver.cube3.solver import is_move_count_metric
from robocell.services.solver.cube3.timed import profile_costs


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
            groups.extend(axial.table_groups())
        cost = profile_costs(chosen).cost
        groups.append(weighted.table_group(chosen, cost))
        groups.append(weighted.moves_group(chosen, cost))
    return groups
