"""A process's lifetime tied to its parent's: the kernel signals it when the parent ends.

Linux's parent-death signal (``prctl(PR_SET_PDEATHSIG)``) is delivered however the parent
ends -- normal exit, exception, SIGTERM or SIGKILL -- which no clean-up code in the parent
can promise. Two ways in: `follow_parent` at the start of a child we write (a solver worker,
a vision reader), `follow_parent_at_exec` as a ``subprocess.Popen(preexec_fn=...)`` for a
child that runs another program (the services `robocell up` starts).

The kernel's "parent" is the *thread* that started the child: start children that must
live on from a thread that lives as long as the process (the main thread, or one made for
it), or they are signalled when that thread ends. Elsewhere than Linux these do nothing.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
"""prctl option: the signal this process gets when its parent thread ends (linux/prctl.h)."""

_prctl: Callable[..., int] | None = None
if sys.platform.startswith("linux"):
    _prctl = ctypes.CDLL(None, use_errno=True).prctl


def follow_parent(parent_pid: int, signum: int = signal.SIGKILL) -> None:
    """From now on, get ``signum`` when the parent ends; and if ``parent_pid`` (the parent
    as it started this process) has already ended, get it now."""
    if _prctl is None:
        return
    _prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent ended before the request was made
        os.kill(os.getpid(), signum)


def follow_parent_at_exec(signum: int = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn`` making the child follow this process (`follow_parent`); it keeps
    the signal across the exec of the child's program."""
    parent_pid = os.getpid()

    def follow() -> None:
        follow_parent(parent_pid, signum)

    return follow
