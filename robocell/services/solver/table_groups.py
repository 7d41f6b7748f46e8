"""Which table groups the solver has: every group of the shipped robot profiles, or those one
profile needs (`all_groups`), from the modules that provide them; and which of a cell's
groups fit a table budget (`choose_tables`)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from robocell.common import config
from robocell.common.profile import ProfileError, load_profile
from robocell.common.tables import group_bytes
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


ROBOT_TIME_PROVIDER = "robocell.services.solver.cube3.robot_time.table_groups"
RERANKED_QUALITY = ("plans take more robot time (six-motor at 50 ms: +5.7 % on average over "
                    "200 cubes, bench/results/solver_budget.txt)")
"""What re-ranking instead of the robot-time search costs a plan, as measured by
bench/solver_budget.py."""


@dataclass(frozen=True)
class TableChoice:
    """The tables a solver maps for a cell of one profile within a budget (MB, None: no
    budget), the search they allow, and what was left out."""

    profile: str
    budget_mb: float | None
    groups: tuple
    left_out: tuple
    search: str
    quality: str

    @property
    def megabytes(self) -> float:
        return sum(group_bytes(group) for group in self.groups) / 1e6

    @property
    def names(self) -> frozenset[str]:
        return frozenset(group.name for group in self.groups)

    def describe(self) -> str:
        """One line for the operator: which tables, what they cost in memory and in plan
        quality."""
        names = ", ".join(group.name for group in self.groups)
        budget = "no table budget" if self.budget_mb is None else \
            f"table budget {self.budget_mb:,.0f} MB"
        line = f"solver: {budget}: mapping {names} ({self.megabytes:,.0f} MB): {self.search}"
        if self.left_out:
            out = sum(group_bytes(group) for group in self.left_out) / 1e6
            line += (f"; left out {', '.join(group.name for group in self.left_out)} "
                     f"({out:,.0f} MB): {self.quality}")
        return line


def choose_tables(profile: str | None, budget_mb: float | None) -> TableChoice:
    """The best tables of a cell's profile (`cell_groups`) that fit ``budget_mb``: every
    one when they fit (or no budget is set); else, for a robot profile, the two-phase
    tables alone, the motion compiler re-ranking the face-turn search's candidates instead
    of the robot-time search (whose tables are the big ones). Raises CommandError when
    not even those fit, naming the least budget that does."""
    name = profile or "htm"
    every = cell_groups(profile)
    robot_time = {g.name for g in _provided(ROBOT_TIME_PROVIDER, name)}
    full = TableChoice(name, budget_mb, tuple(every), (), _search_of(robot_time), "")
    if budget_mb is None or full.megabytes <= budget_mb:
        return full
    if robot_time:
        reduced = TableChoice(
            name, budget_mb, tuple(g for g in every if g.name not in robot_time),
            tuple(g for g in every if g.name in robot_time),
            "the motion compiler re-ranks the face-turn search's candidates",
            "no robot-time search: " + RERANKED_QUALITY)
        if reduced.megabytes <= budget_mb:
            return reduced
    else:
        reduced = full
    raise CommandError(
        f"table budget {budget_mb:g} MB: profile {name} needs at least "
        f"{reduced.megabytes:,.0f} MB of tables ({', '.join(g.name for g in reduced.groups)});"
        f" give --table-budget {int(reduced.megabytes) + 1} or more (every table of the "
        f"profile: {full.megabytes:,.0f} MB), or unset {config.TABLE_BUDGET_ENV}")


def _search_of(robot_time: set[str]) -> str:
    return "the robot-time search" if robot_time else "the search of the profile"


def _provided(module_name: str, profile: str) -> list:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError:
        return []
    return module.table_groups(profile)
