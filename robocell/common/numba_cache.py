"""Keep numba's on-disk cache of compiled functions in step with the sources.

numba keeps a function compiled with ``cache=True`` in the ``__pycache__`` beside its module
and compiles it again only when that module's own file changes. A function that calls (and
so compiles into itself) a function of another module keeps the old callee when only the
callee's module changes, and a module's globals are frozen into it as they were: after a
``git pull`` that edits one module, the search can run yesterday's code of another, silently.
`sweep` keeps a stamp of every source file of the package (path, size, modification time) and,
when the stamp no longer matches, deletes the package's cached compiled functions, so they are
compiled again from the sources as they are. It runs when the package is imported (`robocell`;
a few milliseconds: the files are listed, not read).

An installation whose files cannot be written is left alone: numba then caches under the
user's cache folder, and an installer writes every file afresh, which numba notices itself.
With ``NUMBA_CACHE_DIR`` set the caller has chosen where the cache lives, and it is left alone
too.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

STAMP_NAME = "robocell-numba-sources.stamp"
CACHE_SUFFIXES = (".nbi", ".nbc")


def sources_stamp(root: Path) -> str:
    """Digest of the package's source files as listed: path, size and modification time."""
    lines = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                stat = os.stat(os.path.join(folder, name))
                lines.append(f"{os.path.relpath(folder, root)}/{name}\0{stat.st_size}\0"
                             f"{stat.st_mtime_ns}\n")
    return hashlib.sha256("".join(sorted(lines)).encode()).hexdigest()


def sweep(root: Path) -> int:
    """Delete the compiled functions numba cached under ``root`` if any source file changed
    since the last sweep; returns how many cache files were deleted."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return 0
    stamp_path = root / "__pycache__" / STAMP_NAME
    try:
        stamp = sources_stamp(root)
        if stamp_path.is_file() and stamp_path.read_text() == stamp:
            return 0
        deleted = 0
        for folder, _, files in os.walk(root):
            if os.path.basename(folder) != "__pycache__":
                continue
            for name in files:
                if name.endswith(CACHE_SUFFIXES):
                    Path(folder, name).unlink(missing_ok=True)
                    deleted += 1
        stamp_path.parent.mkdir(exist_ok=True)
        partial = stamp_path.with_name(f"{STAMP_NAME}.{os.getpid()}")
        partial.write_text(stamp)
        partial.replace(stamp_path)  # atomic: processes starting together agree
        return deleted
    except OSError:
        return 0  # a read-only installation (see the module docstring)
