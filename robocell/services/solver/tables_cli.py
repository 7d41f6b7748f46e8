"""`robocell tables`: build, verify and describe the solver's generated tables."""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from robocell.common import tables
from robocell.common.profile import ProfileError, load_profile
from robocell.errors import CommandError

# Modules providing `table_groups(profile: str | None) -> list[TableGroup]`: with a profile
# name, the groups that profile needs; with None, every group of the shipped profiles.
TABLE_PROVIDERS = (
    "robocell.services.solver.cube2.tables",
    "robocell.services.solver.cube3.tables",
    "robocell.services.solver.cube3.robot_time.table_groups",
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
        if tables.ensure_built(group, force=args.force) is None:
            print(f"{group.name}: up to date")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    unbuilt, damaged = [], []
    for group in all_groups(args.profile):
        problems = tables.verify(group)
        if tables.staleness(group) is not None:
            unbuilt.append(group.name)
        elif problems:
            damaged.append(group.name)
        if args.json:
            print(json.dumps({"group": group.name, "ok": not problems, "problems": problems}))
        else:
            print(f"{group.name}: " + ("ok" if not problems else "; ".join(problems)))
    hint = rebuild_hint(unbuilt, damaged, args.profile)
    if hint:
        print(hint, file=sys.stderr)
    return 1 if unbuilt or damaged else 0


def rebuild_hint(unbuilt: list[str], damaged: list[str], profile: str | None) -> str:
    """What to run when ``verify`` found groups missing or stale (``unbuilt``) or with a
    checksum mismatch (``damaged``); empty when there is nothing to do."""
    only = f" --profile {profile}" if profile else ""
    lines = []
    if unbuilt:
        lines.append(f"{len(unbuilt)} table group(s) in {tables.tables_dir()} are not usable "
                     f"({', '.join(unbuilt)}): build them with `robocell tables build{only}` "
                     "(the solver also builds what it needs on first use, with a progress "
                     "bar)")
    if damaged:
        lines.append(f"checksum mismatch in {', '.join(damaged)}: rebuild with `robocell "
                     f"tables build --force{only}`")
    return "\n".join(lines)


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
            print(f"{row['group']}: {_info_status(row)} — {row['description']}")
    return 0


def _info_status(row: dict) -> str:
    """Status, size and build time of one row of `tables info`, as far as they are known."""
    if not row["arrays"]:
        return row["status"]  # e.g. "not built yet": no size, no build time
    seconds = row["build_seconds"]
    built = "build time not recorded" if seconds is None else f"built in {seconds:.1f} s"
    return f"{row['status']}, {row['megabytes']} MB, {built}"
