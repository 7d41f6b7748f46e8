"""The 2x2x2 table groups: shared class tables, and per robot profile its move-transition
tables and exact cost-to-go, built on demand.

Group ``cube2-classes`` (any profile): the tables of `moves.class_tables` that map
robot-frame coordinates to rotation classes.

Group ``cube2-<profile>``: ``perm_moves`` and ``twist_moves``, the move-transition tables of
every motion the profile's search and descent use (`robot.RobotModel.motion_cp`);
``cost_to_go`` (packed, see `search.pack`; rows are the sequencing-state tables, columns the
3,674,160 rotation classes) and ``layout`` = [bits per entry, cost scale, number of rows].
Its parameters name the profile's content hash, so editing a profile makes its tables stale
and they are rebuilt on next use. For ``htm`` and ``qtm`` the cost-to-go is the
breadth-first distance table.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from robocell.common import tables
from robocell.common.profile import Profile, available_profiles, load_profile
from robocell.services.solver.cube2.coord import N_STATES
from robocell.services.solver.cube2.moves import class_tables, move_tables
from robocell.services.solver.cube2.robot import ProfileNotSupported, compile_profile
from robocell.services.solver.cube2.search import cost_to_go, pack

CODE_VERSION = 3
"""Bump when the coordinates, the search or the packing change: every table goes stale."""
PLAIN_METRICS = ("htm", "qtm")
LAYOUT_BITS, LAYOUT_SCALE, LAYOUT_ROWS = range(3)


def classes_group() -> tables.TableGroup:
    """The profile-independent tables from robot-frame coordinates to rotation classes."""
    return tables.TableGroup(
        name="cube2-classes",
        params={"code_version": CODE_VERSION, "n_states": N_STATES},
        build=_build_classes,
        description="2x2x2 robot-frame coordinates -> rotation classes (and back)",
        expected_mb=1.6, expected_s=2.0,
    )


def _build_classes() -> dict[str, np.ndarray]:
    return class_tables()


def group_for(profile: Profile) -> tables.TableGroup:
    """The table group of one (validated, 2x2-capable) profile."""
    compile_profile(profile)  # refuse unsupported profiles before anything is built
    return tables.TableGroup(
        name=f"cube2-{profile.name}",
        params={"code_version": CODE_VERSION, "profile": profile.name,
                "profile_hash": profile.search_hash, "n_states": N_STATES},
        build=partial(_build, profile),
        description=f"2x2x2 optimal cost-to-go for profile {profile.name} over "
                    f"{N_STATES:,} rotation classes x sequencing states",
        expected_mb=6.0, expected_s=3.0,
    )


def _build(profile: Profile) -> dict[str, np.ndarray]:
    model = compile_profile(profile)
    classes = tables.load(classes_group())
    perm_moves, twist_moves = move_tables(model.motion_cp, model.motion_co)
    packed, bits = pack(cost_to_go(model, perm_moves, twist_moves, classes))
    layout = np.zeros(3, dtype=np.int64)
    layout[LAYOUT_BITS] = bits
    layout[LAYOUT_SCALE] = model.cost_scale
    layout[LAYOUT_ROWS] = model.n_tables
    return {"perm_moves": perm_moves, "twist_moves": twist_moves, "cost_to_go": packed,
            "layout": layout}


def table_groups(profile: str | None) -> list[tables.TableGroup]:
    """The groups a profile needs (by name or file path), or with None those of every shipped
    profile a 2x2x2 can use: the plain metrics and every profile whose puzzle is 2x2."""
    if profile is not None:
        loaded = load_profile(profile)
        if not loaded.fits(2):
            return []
        return [classes_group(), group_for(loaded)]
    groups = [classes_group()]
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


def load_tables(profile: Profile) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(class tables, the profile's tables), memory-mapped; built first if missing or stale."""
    classes = tables.load(classes_group())
    return classes, tables.load(group_for(profile))
