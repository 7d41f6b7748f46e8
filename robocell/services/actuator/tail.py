"""The part of a stream of firmware commands that may still change while the stream runs
(`robocell.services.actuator.link.Link.stream`; see `robocell.services.actuator.amend`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence


class Tail:
    """The commands of a stream that may still change, shared by the streaming thread and
    the one that amends them: command ``hold`` (an index into ``commands``) is not sent
    until the hold is released, and every command from it on may be replaced until then.

    A hold is released by `splice` (with new commands or none), or by the stream itself once
    the firmware has finished every command sent before it (the robot would stand idle):
    the commands run as they are and a later splice at that index is refused.
    """

    def __init__(self, commands: Sequence[str], hold: int | None = None,
                 pause_points: frozenset[int] = frozenset()) -> None:
        self.lock = threading.Lock()
        self.commands = list(commands)
        self.hold = hold
        self.pause_points = pause_points
        self.sent = 0
        """How many commands were ever sent (a resend goes back; this does not)."""
        self.released_idle: list[int] = []
        """Holds the stream released itself, the robot having reached them."""

    def splice(self, at: int, commands: Sequence[str] | None, hold: int | None,
               pause_points: frozenset[int] | None = None,
               also: Callable[[], None] | None = None) -> bool:
        """Replace the commands from ``at`` on (None: keep them) and move the hold to
        ``hold`` (None: no hold), if the stream is held at ``at`` and has sent nothing from
        it on; ``also`` runs under the same lock (the caller's own bookkeeping). False
        (nothing changed) when the hold at ``at`` was released already."""
        with self.lock:
            if self.hold != at or self.sent > at:
                return False
            n = len(self.commands) if commands is None else at + len(commands)
            if hold is not None and not at < hold < n:
                raise ValueError(f"hold at command {hold}: give one after {at} and before "
                                 f"the last ({n})")
            if commands is not None:
                self.commands[at:] = list(commands)
            if pause_points is not None:
                self.pause_points = pause_points
            self.hold = hold
            if also is not None:
                also()
            return True
