"""The 2x2x2 table groups: one exact cost-to-go table per robot profile, built on demand.

Group ``cube2-<profile>`` holds ``cost_to_go`` (packed, see `search.pack`; rows are the
sequencing-state tables of `robot.RobotModel`, columns the 3,674,160 rotation classes of
`coords`) and ``layout`` = [bits per entry, cost scale, number of rows]. Its parameters name
the profile's content hash, so editing a profile makes its table stale and it is rebuilt on
next use. For ``htm`` and ``qtm`` the table is the breadth-first distance table.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from robocell.common import tables
from robocell.common.profile import Profile, available_profiles, load_profile
from robocell.services.solver.cube2.coords import N_STATES
from robocell.services.solver.cube2.robot import ProfileNotSupported, compile_profile

CODE_VERSION = 1
"""Bump when the coordinates, the search or the packing change: every table goes stale."""
PLAIN_METRICS = ("htm", "qtm")
LAYOUT_BITS, LAYOUT_SCALE, LAYOUT_ROWS = range(3)


def group_for(profile: Profile) -> tables.TableGroup:
    """The table group of one (validated, 2x2-capable) profile."""
    compile_profile(profile)  # refuse unsupported profiles before anything is built
    return tables.TableGroup(
        name=f"cube2-{profile.name}",
        params={"code_version": CODE_VERSION, "profile": profile.name,
                "profile_hash": profile.content_hash, "n_states": N_STATES},
        build=partial(_build, profile),
        description=f"2x2x2 optimal cost-to-go for profile {profile.name} over "
                    f"{N_STATES:,} rotation classes x sequencing states",
    )


def _build(profile: Profile) -> dict[str, np.ndarray]:
    from robocell.services.solver.cube2.search import cost_to_go, pack

    model = compile_profile(profile)
    packed, bits = pack(cost_to_go(model))
    layout = np.zeros(3, dtype=np.int64)
    layout[LAYOUT_BITS] = bits
    layout[LAYOUT_SCALE] = model.cost_scale
    layout[LAYOUT_ROWS] = model.n_tables
    return {"cost_to_go": packed, "layout": layout}


def table_groups(profile: str | None) -> list[tables.TableGroup]:
    """The groups a profile needs (by name or file path), or with None those of every shipped
    profile a 2x2x2 can use: the plain metrics and every profile whose puzzle is 2x2."""
    if profile is not None:
        loaded = load_profile(profile)
        if not loaded.fits(2):
            return []
        return [group_for(loaded)]
    groups = []
    for name in available_profiles():
        loaded = load_profile(name)
        if loaded.puzzle == "2x2" or name in PLAIN_METRICS:
            groups.append(group_for(loaded))
        elif loaded.fits(2):
            try:
                groups.append(group_for(loaded))
            except ProfileNotSupported:
                continue  # a metric meant for the 3x3x3 only
    return groups


def load_tables(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(cost_to_go, layout) of a profile, memory-mapped; built first if missing or stale."""
    arrays = tables.load(group_for(profile))
    return arrays["cost_to_go"], arrays["layout"]
