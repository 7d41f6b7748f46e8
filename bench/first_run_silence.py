"""The longest silence of a first run: a command run with fresh table and compile caches.

Runs one command (default ``robocell demo``) with ``ROBOCELL_TABLES`` and ``NUMBA_CACHE_DIR``
pointing at new empty folders, reads its output (stdout and stderr joined) line by line as it
comes, and prints: the longest gap between two lines (from the start to the first line, and
from the last line to the exit, count too), where it was, the time to "solver is up", the
time to the first solve ("SOLVED"), and the total. Target: never silent for more than 10 s.

    python bench/first_run_silence.py                                   # robocell demo
    python bench/first_run_silence.py --label six-motor -- demo --profile six-motor
    python bench/first_run_silence.py --robocell VENV/bin/robocell --label wheel -- demo

The figures are appended to bench/results/first_run_silence.txt (``--out``), each run with
its command, its label and the whole timed transcript in bench/results/first_run_silence/.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET_SILENCE_S = 10.0
READY_MARK = "solver is up"
SOLVED_MARK = "SOLVED"


@dataclass
class Run:
    exit_code: int
    lines: list[tuple[float, str]]
    total_s: float

    def silences(self) -> list[tuple[float, float, str]]:
        """(gap in seconds, when it ended, the line that ended it) for every gap, the start
        to the first line and the last line to the exit included."""
        gaps, before = [], 0.0
        for at, line in self.lines:
            gaps.append((at - before, at, line))
            before = at
        gaps.append((self.total_s - before, self.total_s, f"(exit {self.exit_code})"))
        return gaps

    def first(self, mark: str) -> float | None:
        return next((at for at, line in self.lines if mark in line), None)


def timed_run(command: list[str], env: dict[str, str], timeout_s: float) -> Run:
    """Run ``command``; every output line with the seconds since the start it came at."""
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, text=True, errors="replace", bufsize=1)
    lines = []
    try:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append((time.monotonic() - started, line.rstrip("\n")))
            if time.monotonic() - started > timeout_s:
                proc.terminate()
        code = proc.wait(60)
    except BaseException:
        proc.kill()
        raise
    return Run(code, lines, time.monotonic() - started)


def report(label: str, command: list[str], run: Run) -> str:
    gap, ended, line = max(run.silences())
    ready, solved = run.first(READY_MARK), run.first(SOLVED_MARK)
    verdict = "ok" if gap <= TARGET_SILENCE_S else f"OVER the {TARGET_SILENCE_S:g} s target"
    return "\n".join([
        f"## {label}: {shlex.join(command)}  "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
        f"longest silence {gap:.1f} s ({verdict}), ended at {ended:.1f} s by: {line[:100]}",
        f"solver is up at {'-' if ready is None else f'{ready:.1f} s'}; first solve at "
        f"{'-' if solved is None else f'{solved:.1f} s'}; total {run.total_s:.1f} s; "
        f"exit {run.exit_code}; {len(run.lines)} lines",
        "silences over 8 s: " + (", ".join(f"{g:.1f} s before {at:.1f} s" for g, at, _ in
                                           run.silences() if g > 8.0) or "none"),
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robocell", default=None,
                        help="the robocell command to run (default: this Python's -m robocell)")
    parser.add_argument("--label", default="checkout", help="name of this run in the results")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds (default 3600)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "first_run_silence.txt")
    parser.add_argument("args", nargs="*", default=["demo"],
                        help="robocell's arguments, after -- (default: demo)")
    args = parser.parse_args()
    base = [args.robocell] if args.robocell else [sys.executable, "-m", "robocell"]
    command = [*base, *args.args]
    with tempfile.TemporaryDirectory(prefix="robocell-first-run-") as fresh:
        env = {**os.environ, "ROBOCELL_TABLES": str(Path(fresh) / "tables"),
               "NUMBA_CACHE_DIR": str(Path(fresh) / "numba"), "PYTHONUNBUFFERED": "1"}
        if args.robocell:
            env.pop("PYTHONPATH", None)  # an installed robocell: none of a checkout's code
        run = timed_run(command, env, args.timeout)
    # the results name no folder of this machine: the fresh one is FRESH, files by name
    run.lines = [(at, line.replace(fresh, "FRESH")) for at, line in run.lines]
    shown = [Path(word).name if word.startswith("/") else word for word in command]
    text = report(args.label, shown, run)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "a") as out:
        out.write(text + "\n\n")
    transcript = args.out.with_suffix("") / f"{args.label}.txt"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_text("".join(f"{at:8.1f}  {line}\n" for at, line in run.lines))
    return 0 if run.exit_code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
