"""A dependency-free progress bar for long jobs (table builds, benchmarks) on stderr, and a
ticker for jobs whose progress cannot be measured (a compile, a wait)."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

ETA_MIN_FRACTION = 0.02
"""An ETA is shown once this much of the job is done: before that, the rate of the first
moments (start-up, the first small chunk) says little about the rest."""
ETA_MIN_ELAPSED_S = 1.0
"""...and once the job has run this long."""


def eta_text(fraction: float, elapsed: float) -> str:
    """The tail of the bar: ``eta 12.3s`` once an estimate means something, else the time
    elapsed so far."""
    if fraction < ETA_MIN_FRACTION or elapsed < ETA_MIN_ELAPSED_S:
        return f"{elapsed:5.1f}s, eta --"
    return f"eta {elapsed / fraction - elapsed:5.1f}s"


class Progress:
    """Progress of one job with a known total amount of work.

    Use as a context manager; call ``advance(n)`` or ``update(done)``. Redraws at most
    ten times a second; when stderr is not a terminal it prints a line every 10 %.
    """

    def __init__(self, label: str, total: float, stream: TextIO | None = None,
                 enabled: bool = True) -> None:
        self.label = label
        self.total = max(float(total), 1e-12)
        self.done = 0.0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = time.monotonic()
        self._last_draw = 0.0
        self._last_decile = -1

    def __enter__(self) -> Progress:
        self._draw(force=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.done = self.total
        self._draw(force=True, final=True)

    def advance(self, amount: float = 1.0) -> None:
        self.update(self.done + amount)

    def update(self, done: float) -> None:
        self.done = min(float(done), self.total)
        self._draw()

    def _draw(self, force: bool = False, final: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        fraction = self.done / self.total
        elapsed = now - self.started
        if self.tty:
            if not force and now - self._last_draw < 0.1:
                return
            width = 30
            filled = int(width * fraction)
            bar = "#" * filled + "-" * (width - filled)
            tail = f"{elapsed:5.1f}s" if final else eta_text(fraction, elapsed)
            self.stream.write(f"\r{self.label} [{bar}] {100 * fraction:5.1f}% {tail}")
            if final:
                self.stream.write("\n")
        else:
            decile = int(fraction * 10)
            if decile == self._last_decile and not final:
                return
            self._last_decile = decile
            self.stream.write(f"{self.label}: {100 * fraction:5.1f}% ({elapsed:.1f}s)\n")
        self.stream.flush()
        self._last_draw = now


class Ticker:
    """Says that a job without measurable progress (a compile, a wait) is still going: a line
    once it has run ``after_s`` (none for a job that ends sooner), then one every ``every_s``
    with the time so far and the time expected, and the time it took at the end. Use as a
    context manager; the lines come from a thread of their own."""

    def __init__(self, label: str, expected_s: float | None = None, after_s: float = 0.0,
                 every_s: float = 5.0, stream: TextIO | None = None) -> None:
        self.label = label
        self.expected_s = expected_s
        self.after_s = after_s
        self.every_s = every_s
        self.stream = stream if stream is not None else sys.stderr
        self.started = time.monotonic()
        self.said = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ticker", daemon=True)

    def __enter__(self) -> Ticker:
        self.started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        if self.said:
            self._say(f"{self.label}: done in {time.monotonic() - self.started:.1f} s")

    def _run(self) -> None:
        """Say the start once ``after_s`` has passed, then every ``every_s`` (ends with the
        job)."""
        if self._done.wait(self.after_s):
            return
        expected = f" (about {self.expected_s:.0f} s)" if self.expected_s else ""
        self._say(f"{self.label}{expected}...")
        self.said = True
        while not self._done.wait(self.every_s):
            so_far = time.monotonic() - self.started
            of = f" of about {self.expected_s:.0f} s" if self.expected_s else ""
            self._say(f"{self.label}: {so_far:.0f} s so far{of}")

    def _say(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()
