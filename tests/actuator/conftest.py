"""Fixtures of the actuator tests: a real `robocell firmware-sim` process on loopback, its
log, and reference plans (a random primitive scramble and its inverse in primitives)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from robocell.common.facelets import solved
from robocell.common.moves import apply_to_facelets
from robocell.common.profile import Profile
from robocell.services.firmware.avr_build import (
    AVR_PACKAGES,
    SIM_PACKAGES,
    ToolchainError,
    require_avr_toolchain,
    simavr_available,
)

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 20.0


@dataclass
class FirmwareProcess:
    """A running firmware simulator: its serial URL, log file and process."""

    url: str
    log_path: Path
    process: subprocess.Popen

    def __post_init__(self) -> None:
        self._entries: list[dict] = []
        self._offset = 0

    def log(self) -> list[dict]:
        """Every log entry so far (read incrementally: only complete new lines are parsed)."""
        with open(self.log_path, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1
        self._entries += [json.loads(line) for line in data[:end].splitlines() if line.strip()]
        self._offset += end
        return self._entries

    def executed(self) -> list[dict]:
        return [entry for entry in self.log() if entry["ev"] == "exec"]

    def wait_executed(self, line: int, timeout: float = 10.0) -> list[dict]:
        """The exec entries once ``line`` has run: the host may learn that a line finished
        from a status report (sent at once) before its ``done`` (queued behind other
        reports) reaches the log."""
        deadline = time.monotonic() + timeout
        while True:
            executed = self.executed()
            if (executed and executed[-1]["line"] >= line) or time.monotonic() > deadline:
                return executed
            time.sleep(0.01)

    def twin_facelets(self) -> str:
        return self.executed()[-1]["facelets"]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def start_firmware(tmp_path: Path, *args: str, profile: str = "soltvvo-2x2",
                   speed: float = 500.0, name: str = "fw", avr: bool = False) -> FirmwareProcess:
    """A `robocell firmware-sim` process: the Python simulator, or with ``avr`` the compiled
    AVR firmware in simavr (same options, same log format)."""
    log_path = tmp_path / f"{name}.jsonl"
    if avr:
        args = ("--avr", *args)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    process = subprocess.Popen(
        [sys.executable, "-m", "robocell", "firmware-sim", "--profile", profile,
         *(() if "--pty" in args else ("--port", "0")),
         "--speed", str(speed), "--log", str(log_path), "--max-runtime", "600", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    line = process.stdout.readline()
    if not line.startswith("listening"):
        process.kill()
        raise RuntimeError(f"firmware-sim did not start: {line!r} {process.stderr.read()}")
    return FirmwareProcess(line.split()[1], log_path, process)


def avr_tools_missing() -> str | None:
    """Why the AVR firmware cannot be built and run here (None if it can)."""
    try:
        require_avr_toolchain()
    except ToolchainError:
        return f"needs the AVR toolchain (apt-get install {AVR_PACKAGES}) (absent)"
    if not simavr_available():
        return f"needs simavr (apt-get install {SIM_PACKAGES}) (absent)"
    return None


def _factory(tmp_path: Path, avr: bool) -> Iterator:
    started: list[FirmwareProcess] = []

    def factory(*args: str, **kwargs) -> FirmwareProcess:
        fw = start_firmware(tmp_path, *args, name=f"fw{len(started)}", avr=avr, **kwargs)
        started.append(fw)
        return fw

    yield factory
    for fw in started:
        fw.stop()


@pytest.fixture
def firmware_factory(tmp_path: Path) -> Iterator:
    yield from _factory(tmp_path, avr=False)


@pytest.fixture(params=["python", pytest.param("avr", marks=pytest.mark.avr)])
def any_firmware(request, tmp_path: Path) -> Iterator:
    """A firmware factory for each firmware that speaks the protocol: the Python simulator
    and the compiled AVR firmware in simavr. ``factory.avr`` says which."""
    avr = request.param == "avr"
    if avr and (reason := avr_tools_missing()):
        pytest.skip(reason)
    gen = _factory(tmp_path, avr)
    factory = next(gen)
    factory.avr = avr
    yield factory
    next(gen, None)


def primitive_inverses(profile: Profile, max_length: int = 3) -> dict[str, list[str]]:
    """For each primitive, the shortest primitive sequence that undoes it exactly (found by a
    breadth-first search over the cube model)."""
    size = profile.size or 3
    start = solved(size)
    labelled = "".join(chr(0x30 + i) for i in range(len(start)))
    effect = {p.name: apply_to_facelets(labelled, list(p.moves), size) for p in profile.primitives}
    inverses: dict[str, list[str]] = {}
    frontier = [([], labelled)]
    seen = {labelled: []}
    for _ in range(max_length):
        nxt = []
        for seq, state in frontier:
            for p in profile.primitives:
                new = apply_to_facelets(state, list(p.moves), size)
                if new not in seen:
                    seen[new] = seq + [p.name]
                    nxt.append((seq + [p.name], new))
        frontier = nxt
    for p in profile.primitives:
        # the sequence s with p then s == identity: s leads from effect[p] back to labelled,
        # i.e. s applied to labelled equals the inverse permutation of p's effect
        target = "".join(labelled[effect[p.name].index(ch)] for ch in labelled)
        if target not in seen:
            raise AssertionError(f"no inverse of {p.name} within {max_length} primitives")
        inverses[p.name] = seen[target]
    return inverses


def reference_case(profile: Profile, rng: random.Random, length: int,
                   inverses: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """A random scramble of ``length`` primitives (alternating groups where the profile
    says so) and the plan that undoes it."""
    scramble: list[str] = []
    last_group = None
    for _ in range(length):
        choices = [p for p in profile.primitives
                   if profile.sequencing != "alternate-groups" or p.group != last_group]
        prim = rng.choice(choices)
        scramble.append(prim.name)
        last_group = prim.group
    plan = [name for prim in reversed(scramble) for name in inverses[prim]]
    return scramble, plan
