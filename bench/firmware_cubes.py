"""Random cubes executed through the real AVR firmware in simavr, faults injected on the line:
for each robot profile, scramble the twin with random primitives, plan the solution (the
solver, else the scramble's inverse), execute it through the actuator's link, and check that
the twin ends solved and that the firmware's log shows every primitive executed exactly once.

Run: PYTHONPATH=. python bench/firmware_cubes.py [--cubes N] [--profiles a,b]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from robocell.common.profile import load_profile
from tests.actuator.conftest import start_firmware
from tests.actuator.test_execution import solve_random_cubes

FAULTS = ("--drop-rate", "0.001", "--corrupt-rate", "0.001", "--fault-seed", "11")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cubes", type=int, default=100)
    parser.add_argument("--profiles", default="soltvvo-2x2,six-motor,tilt-spin")
    args = parser.parse_args()
    failed = 0
    for name in args.profiles.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            fw = start_firmware(Path(tmp), *FAULTS, profile=name, speed=1000, avr=True,
                                name=name)
            started = time.monotonic()
            try:
                events: list[str] = []
                solve_random_cubes(fw, load_profile(name), args.cubes, seed=23, events=events)
                log = fw.log()
                executed = [e for e in log if e["ev"] == "exec"]
                lines, sim_s = len(executed), executed[-1]["end"] / 1e3
                print(f"{name}: {args.cubes} cubes solved by the twin, {lines} lines each run "
                      f"exactly once under line noise; "
                      f"{sim_s:.0f} s of robot time in {time.monotonic() - started:.0f} s")
            except AssertionError as exc:
                failed += 1
                print(f"{name}: FAILED: {exc}")
            finally:
                fw.stop()
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
