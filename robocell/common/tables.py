"""Generated lookup tables on disk: build once with a progress bar, verify, memory-map read-only.

A *table group* is a directory under `tables_dir()` holding ``.npy`` arrays and a
``manifest.json`` with the format version, the parameters the content depends on, and per
array its dtype, shape, byte size and SHA-256. `load` memory-maps the arrays read-only (so
several solver processes share one copy in the page cache) after a quick check of the
manifest and file sizes; a group that is missing or stale (other format version or
parameters, missing or truncated files) is rebuilt first, with a message saying why. Of
several processes that find it so at once, one builds it under the group's lock file
(``.<group>.lock`` beside it, an advisory ``flock`` that dies with its holder) and the others
wait for it and load what it built. `verify` also recomputes every checksum.

A process may be held to some groups (`limit_loading`, what a solver's table budget chose):
`load` then refuses any other, so the process never maps more than it was allowed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

try:
    import fcntl
except ImportError:  # not a POSIX system: concurrent builders each build (still safe)
    fcntl = None

import numpy as np

from robocell.common.paths import tables_dir
from robocell.errors import RobocellError

TABLE_FORMAT_VERSION = 1
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class TableGroup:
    """A set of arrays built together. ``build()`` returns them by name (it shows its own
    progress with `robocell.common.progress.Progress`); ``params`` must name everything the
    content depends on (a code-version number included), as JSON-compatible values."""

    name: str
    params: dict
    build: Callable[[], dict[str, np.ndarray]] = field(compare=False)
    description: str = ""
    expected_mb: float = field(default=0.0, compare=False)
    """What a build writes, in MB (said before a build starts)."""
    expected_s: float = field(default=0.0, compare=False)
    """How long a build takes on two cores, in seconds, as measured (said before it starts)."""

    @property
    def path(self) -> Path:
        return tables_dir() / self.name


class TableError(RobocellError, RuntimeError):
    """A table group that cannot be used (and could not be rebuilt)."""


@dataclass(frozen=True)
class LoadingLimit:
    """The groups a process may load, and why (e.g. "the table budget of 128 MB")."""

    groups: frozenset[str]
    reason: str


_limit: list[LoadingLimit] = []
"""The process's limit, set by `limit_loading` (empty: any group may be loaded)."""


def limit_loading(groups: list[str] | frozenset[str], reason: str) -> None:
    """Hold this process to ``groups`` (their names): `load` refuses any other group."""
    _limit[:] = [LoadingLimit(frozenset(groups), reason)]


def lift_loading_limit() -> None:
    """Let this process load any group again."""
    _limit.clear()


def may_load(group: TableGroup) -> bool:
    """True when this process's limit (if any) allows the group."""
    return not _limit or group.name in _limit[0].groups


def group_bytes(group: TableGroup) -> int:
    """The bytes the group's files take (mapped, they take as much address space): from its
    manifest when built, else what a build is expected to write."""
    manifest = read_manifest(group)
    if manifest is None or staleness(group) is not None:
        return int(group.expected_mb * 1e6)
    return sum(int(info["file_bytes"]) for info in manifest["arrays"].values())


def mapped_groups(pid: int | str = "self") -> dict[str, int]:
    """The table groups process ``pid`` has mapped (Linux: its /proc maps), each with the
    bytes of its files mapped: what a table budget holds a solver to."""
    root = tables_dir().resolve()
    mapped: dict[str, int] = {}
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) < 6:
                continue
            path = Path(fields[5].strip().removesuffix(" (deleted)"))
            if not path.is_relative_to(root):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            group = path.relative_to(root).parts[0]
            mapped[group] = mapped.get(group, 0) + end - start
    return mapped


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def read_manifest(group: TableGroup) -> dict | None:
    try:
        return json.loads((group.path / MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def staleness(group: TableGroup) -> str | None:
    """Why the group must be (re)built, or None when it is usable (quick check)."""
    manifest = read_manifest(group)
    if manifest is None:
        return "not built yet"
    if manifest.get("format_version") != TABLE_FORMAT_VERSION:
        return f"format version {manifest.get('format_version')} != {TABLE_FORMAT_VERSION}"
    if manifest.get("params") != json.loads(json.dumps(group.params)):
        return "built with other parameters"
    for name, info in manifest.get("arrays", {}).items():
        file = group.path / info["file"]
        if not file.is_file() or file.stat().st_size != info["file_bytes"]:
            return f"array {name} is missing or truncated"
    return None


def build_plan(groups: list[TableGroup], needed_by: str) -> str | None:
    """What building the missing or stale ``groups`` (those ``needed_by`` needs) will write
    and take, said before it starts; None when every one is usable."""
    todo = [group for group in groups if staleness(group) is not None]
    if not todo:
        return None
    megabytes = sum(group.expected_mb for group in todo)
    seconds = sum(group.expected_s for group in todo)
    names = ", ".join(f"{group.name} ({group.expected_mb:,.0f} MB)" for group in todo)
    return (f"tables: {needed_by} needs {len(todo)} table group(s) built once: {names}; "
            f"about {megabytes:,.0f} MB on disk in {tables_dir()} and about {seconds:.0f} s "
            "on two cores")


def build(group: TableGroup, reason: str = "requested") -> dict:
    """Build a group from scratch into a temporary directory, then swap it in atomically."""
    root = tables_dir()
    root.mkdir(parents=True, exist_ok=True)
    print(f"tables: building {group.name} ({reason})", file=sys.stderr)
    started = time.monotonic()
    arrays = group.build()
    tmp = root / f".{group.name}.{os.getpid()}.tmp"  # concurrent builders never share one
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    entries = {}
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        file = tmp / f"{name}.npy"
        np.save(file, array, allow_pickle=False)
        entries[name] = {
            "file": file.name, "dtype": str(array.dtype), "shape": list(array.shape),
            "bytes": int(array.nbytes), "file_bytes": file.stat().st_size,
            "sha256": _sha256(file),
        }
    manifest = {
        "format_version": TABLE_FORMAT_VERSION, "group": group.name,
        "description": group.description, "params": group.params, "arrays": entries,
        "build_seconds": round(time.monotonic() - started, 3),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2))
    final = group.path
    old = root / f".{group.name}.{os.getpid()}.old"
    if final.exists():
        if old.exists():
            shutil.rmtree(old)
        try:
            final.rename(old)
        except FileNotFoundError:  # another builder swapped it out first
            pass
    try:
        tmp.rename(final)
    except OSError:  # another builder finished first: its identical result stands
        shutil.rmtree(tmp, ignore_errors=True)
    if old.exists():
        shutil.rmtree(old, ignore_errors=True)
    print(f"tables: {group.name} built in {manifest['build_seconds']:.1f}s, "
          f"{sum(e['bytes'] for e in entries.values()) / 1e6:.1f} MB", file=sys.stderr)
    return manifest


@contextlib.contextmanager
def _build_lock(group: TableGroup) -> Iterator[None]:
    """Hold the group's build lock (module docstring); say so when another process has it."""
    if fcntl is None:
        yield
        return
    root = tables_dir()
    root.mkdir(parents=True, exist_ok=True)
    with (root / f".{group.name}.lock").open("a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"tables: waiting for another process building {group.name}",
                  file=sys.stderr)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ensure_built(group: TableGroup, force: bool = False) -> str | None:
    """Build the group if missing or stale (always with ``force``), under its lock: of
    several processes wanting it at once one builds, the others wait and find it built.
    Returns why it was built, None when it was up to date (then nothing is written: the
    tables may be on a read-only mount)."""
    if not force and staleness(group) is None:
        return None
    with _build_lock(group):
        # looked at under the lock: the process that held it may have built it meanwhile
        reason = "--force" if force else staleness(group)
        if reason is not None:
            build(group, reason)
        return reason


def load(group: TableGroup, build_if_needed: bool = True) -> dict[str, np.ndarray]:
    """The group's arrays, memory-mapped read-only; builds it first if missing or stale
    (`ensure_built`). Raises TableError for a group this process's limit leaves out
    (`limit_loading`)."""
    if not may_load(group):
        limit = _limit[0]
        raise TableError(f"tables {group.name}: not within {limit.reason} (this process may "
                         f"map {', '.join(sorted(limit.groups)) or 'no table'}); raise the "
                         "budget to use it")
    reason = staleness(group)
    if reason is not None:
        if not build_if_needed:
            raise TableError(f"tables {group.name}: {reason}; run `robocell tables build`")
        ensure_built(group)
    manifest = read_manifest(group)
    assert manifest is not None
    return {
        name: np.load(group.path / info["file"], mmap_mode="r", allow_pickle=False)
        for name, info in manifest["arrays"].items()
    }


def verify(group: TableGroup) -> list[str]:
    """Problems found (empty when the group is intact): quick check plus every checksum."""
    reason = staleness(group)
    if reason is not None:
        return [reason]
    manifest = read_manifest(group)
    assert manifest is not None
    problems = []
    for name, info in manifest["arrays"].items():
        if _sha256(group.path / info["file"]) != info["sha256"]:
            problems.append(f"array {name}: checksum mismatch (file changed or corrupted)")
    return problems
