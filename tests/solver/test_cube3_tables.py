"""The 3x3x3 table group: offered to `robocell tables`, intact, within its size limit."""

from __future__ import annotations

from robocell.cli import main
from robocell.common import tables
from robocell.services.solver.cube3.tables import GROUP_NAME, load_tables, table_groups

SIZE_LIMIT_BYTES = 100_000_000


def test_group_is_built_intact_and_small_enough() -> None:
    load_tables()
    (group,) = table_groups("htm")
    assert group.name == GROUP_NAME
    assert tables.verify(group) == []
    manifest = tables.read_manifest(group)
    assert manifest is not None
    assert sum(a["bytes"] for a in manifest["arrays"].values()) <= SIZE_LIMIT_BYTES
    assert {"phase1_pruning", "phase2_pruning", "flipslice_classsym"} <= set(manifest["arrays"])


def test_loaded_tables_are_read_only_views() -> None:
    loaded = load_tables()
    assert not loaded.phase1_pruning.flags.writeable
    assert loaded.phase1_pruning.nbytes == (64430 * 2187 + 3) // 4


def test_tables_cli_lists_the_group(capsys) -> None:
    assert main(["tables", "info", "--profile", "six-motor"]) == 0
    assert f"{GROUP_NAME}: ok" in capsys.readouterr().out
