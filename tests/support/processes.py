"""Processes seen through /proc (Linux): a process tree, and whether its members are gone.

A process is named by ``(pid, start time)`` (a `Proc`), so that a pid reused by the system
after the process ended is never taken for it. A zombie counts as gone: it holds no memory
and no port, and only its parent (or init) can reap it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import NamedTuple

PROC = Path("/proc")


class Proc(NamedTuple):
    pid: int
    started: int
    """Start time in clock ticks after boot (/proc/PID/stat field 22)."""


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(parent pid, start time, state) of ``pid``, or None when it no longer exists."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
    except OSError:  # ended
        return None
    fields = text[text.rindex(b")") + 2:].split()  # after "pid (command) "
    return int(fields[1]), int(fields[19]), fields[0].decode()


def proc(pid: int) -> Proc | None:
    stat = _stat(pid)
    return None if stat is None else Proc(pid, stat[1])


def running() -> dict[int, tuple[int, int, str]]:
    """Every process now: pid -> (parent pid, start time, state)."""
    table = {}
    for name in os.listdir(PROC):
        if name.isdigit() and (stat := _stat(int(name))) is not None:
            table[int(name)] = stat
    return table


Table = dict[int, tuple[int, int, str]]


def descendants(pid: int, table: Table | None = None) -> set[Proc]:
    """Every live process below ``pid`` (children, their children, ...), in ``table``
    (default: `running()` now)."""
    table = running() if table is None else table
    below: dict[int, list[int]] = {}
    for child, (parent, _, _) in table.items():
        below.setdefault(parent, []).append(child)
    found: set[Proc] = set()
    todo = list(below.get(pid, []))
    while todo:
        child = todo.pop()
        found.add(Proc(child, table[child][1]))
        todo.extend(below.get(child, []))
    return found


def is_alive(p: Proc) -> bool:
    stat = _stat(p.pid)
    return stat is not None and stat[1] == p.started and stat[2] not in ("Z", "X")


def survivors(procs: set[Proc], within: float = 0.0) -> set[Proc]:
    """Those of ``procs`` still alive after waiting up to ``within`` seconds for them to end."""
    deadline = time.monotonic() + within
    while True:
        alive = {p for p in procs if is_alive(p)}
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


def command_line(pid: int) -> str:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return "?"


def carrying(variable: str, value: str, table: Table | None = None,
             since: int = 0) -> set[Proc]:
    """Live processes whose environment has ``variable=value`` (inherited from a test run),
    among those of ``table`` (default: `running()` now) started at ``since`` or later."""
    needle = f"{variable}={value}".encode()
    found: set[Proc] = set()
    table = running() if table is None else table
    for pid, (_, started, state) in table.items():
        if pid == os.getpid() or state in ("Z", "X") or started < since:
            continue
        try:
            environ = (PROC / str(pid) / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.add(Proc(pid, started))
    return found


def kill_all(procs: set[Proc]) -> None:
    """SIGKILL those of ``procs`` still alive (a test's own clean-up)."""
    for p in procs:
        if is_alive(p):
            try:
                os.kill(p.pid, 9)
            except ProcessLookupError:
                pass
