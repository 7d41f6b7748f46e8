"""Every exception robocell raises on purpose derives from `RobocellError`, and a user-facing
command failure is a `CommandError`.

Each error class keeps the built-in base that says what kind of failure it is
(``ValueError`` for bad input, ``RuntimeError`` for a failed operation), so existing
``except ValueError`` clauses keep working, and adds `RobocellError`, so a caller can tell
robocell's own failures from a bug with one ``except RobocellError``.
"""

from __future__ import annotations


class RobocellError(Exception):
    """Base of robocell's exceptions: the message says what is wrong, where, and what to do."""


class CommandError(RobocellError):
    """A user-facing failure of a `robocell` command: printed as one line on stderr, exit 2."""
