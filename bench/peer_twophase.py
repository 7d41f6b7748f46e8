"""rob-twophase (a peer, benchmark reference only): build it from ../shared/peers and drive it.

The peer is a C++ program; its solving metric is chosen when it is compiled (``-DAX``: the
axial metric; with ``-DQT`` too, the axial quarter-turn metric). Each mode is built once into
its own cache folder (``ROBOCELL_PEER_CACHE``, default ``~/.cache/robocell/peers``) and writes
its tables there on first start (up to 1.2 GB, a minute or two). robocell never imports,
links or ships it.

    python bench/peer_twophase.py HT AX AXQT   # build (and generate the tables of) the modes
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from robocell.common.notation import Move

MODES = {"HT": "", "AX": "-DAX", "AXQT": "-DAX -DQT"}
PEER_ENV = "ROBOCELL_PEERS"
"""Folder holding the peers (default: ../shared/peers relative to the repository)."""


def peers_dir() -> Path:
    default = Path(__file__).resolve().parent.parent.parent / "shared" / "peers"
    return Path(os.environ.get(PEER_ENV, default))


def source_dir() -> Path | None:
    """The peer's source folder, or None when absent (a clone without ../shared)."""
    path = peers_dir() / "rob-twophase"
    return path if (path / "makefile").exists() else None


def build_dir(mode: str) -> Path:
    cache = Path(os.environ.get("ROBOCELL_PEER_CACHE",
                                Path.home() / ".cache" / "robocell" / "peers"))
    return cache / f"rob-twophase-{mode}"


def build(mode: str) -> Path:
    """Compile the peer in ``mode`` (a key of `MODES`) unless built; returns the binary."""
    source = source_dir()
    if source is None:
        raise FileNotFoundError(f"rob-twophase not found under {peers_dir()}")
    target = build_dir(mode)
    binary = target / "twophase"
    if binary.exists():
        return binary
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, copy_function=shutil.copyfile)  # writable copies
    for folder in (target, *[p for p in target.rglob("*") if p.is_dir()]):
        folder.chmod(0o755)  # the tables are written next to the binary
    flags = f"-std=c++11 -lpthread -O3 {MODES[mode]}".strip()
    subprocess.run(["make", "-C", str(target), f"CPPFLAGS={flags}"], check=True,
                   stdout=subprocess.DEVNULL)
    return binary


ASKS = 5
"""Times a cube is asked before giving up: the peer prints no solution when its threads found
none in its time limit (seen on a loaded machine); it is then asked again."""


class TwoPhasePeer:
    """A running peer: ``solve(facelets)`` -> (face turns, search ms as it reports, every
    try counted); ``misses``: the tries that found no solution."""

    def __init__(self, mode: str, threads: int, millis: int) -> None:
        self.misses = 0
        binary = build(mode)
        self.process = subprocess.Popen(
            [str(binary), "-t", str(threads), "-m", str(millis)], cwd=binary.parent,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        while True:  # tables load (or are generated on the first start), then a warm-up
            line = self._line()
            if line.startswith("Ready"):
                break

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"rob-twophase ended (exit code {self.process.poll()})")
        return line.strip()

    def solve(self, facelets: str) -> tuple[list[Move], float]:
        spent = 0.0
        for _ in range(ASKS):
            found = self._solve_once(facelets)
            spent += found[1]
            if found[0] is not None:
                return found[0], spent
            self.misses += 1
        raise RuntimeError(f"rob-twophase found no solution for {facelets} in {ASKS} tries")

    def _solve_once(self, facelets: str) -> tuple[list[Move] | None, float]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"solve {facelets}\n")
        self.process.stdin.flush()
        line = self._line()
        while not line.endswith("ms"):
            if "error" in line.lower():
                raise RuntimeError(f"rob-twophase: {line} for {facelets}")
            line = self._line()
        millis = float(line[:-2])
        text = self._line()
        if text.startswith("Ready"):  # no solution line: the prompt for the next cube
            return None, millis
        tokens = text.replace("(", " ").replace(")", " ").split()[:-1]  # last: the length
        return [Move(t[0], {"": 1, "2": 2, "'": 3}[t[1:]]) for t in tokens], millis

    def close(self) -> None:
        self.process.kill()  # it does not end on end of input
        self.process.wait()

    def __enter__(self) -> TwoPhasePeer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: list[str]) -> int:
    for mode in argv or list(MODES):
        started = time.monotonic()
        with TwoPhasePeer(mode, 2, 10):
            pass
        print(f"rob-twophase {mode}: ready in {time.monotonic() - started:.0f} s "
              f"({build_dir(mode)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
