"""`robocell tables`: build, verify and describe the solver's generated tables."""

from __future__ import annotations

import argparse
import importlib
import json

from robocell.common import tables
from robocell.common.profile import ProfileError, load_profile
from robocell.errors import CommandError

# Modules providing `table_groups(profile: str | None) -> list[TableGroup]`: with a profile
# name, the groups that profile needs; with None, every group of the shipped profiles.
TABLE_PROVIDERS = (
    "robocell.services.solver.cube2.tables",
    "robocell.services.solver.cube3.tables",
    "robocell.services.solver.cube3.robot_tables",
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("tables", help="build, verify and describe solver tables")
    sub = parser.add_subparsers(dest="tables_command", metavar="ACTION", required=True)
    for action, helptext in (("build", "build missing or stale tables (or --force all)"),
                             ("verify", "check manifests and checksums; exit 1 on a problem"),
                             ("info", "list table groups with sizes and build times")):
        p = sub.add_parser(action, help=helptext)
        p.add_argument("--profile", help="only the tables this robot profile needs")
        p.add_argument("--json", action="store_true")
        if action == "build":
            p.add_argument("--force", action="store_true", help="rebuild even if up to date")
        p.set_defaults(func=globals()[f"cmd_{action}"])


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


def cmd_build(args: argparse.Namespace) -> int:
    for group in all_groups(args.profile):
        reason = "--force" if args.force else tables.staleness(group)
        if reason is None:
            print(f"{group.name}: up to date")
            continue
        tables.build(group, reason)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    status = 0
    for group in all_groups(args.profile):
        problems = tables.verify(group)
        if problems:
            status = 1
        if args.json:
            print(json.dumps({"group": group.name, "ok": not problems, "problems": problems}))
        else:
            print(f"{group.name}: " + ("ok" if not problems else "; ".join(problems)))
    return status


def cmd_info(args: argparse.Namespace) -> int:
    for group in all_groups(args.profile):
        manifest = tables.read_manifest(group) or {}
        arrays = manifest.get("arrays", {})
        row = {
            "group": group.name, "description": group.description,
            "status": tables.staleness(group) or "ok", "path": str(group.path),
            "megabytes": round(sum(a["bytes"] for a in arrays.values()) / 1e6, 2),
            "build_seconds": manifest.get("build_seconds"), "params": group.params,
            "arrays": {k: {"dtype": v["dtype"], "shape": v["shape"]} for k, v in arrays.items()},
        }
        if args.json:
            print(json.dumps(row))
        else:
            print(f"{row['group']}: {row['status']}, {row['megabytes']} MB, "
                  f"built in {row['build_seconds']}s — {row['description']}")
    return 0
