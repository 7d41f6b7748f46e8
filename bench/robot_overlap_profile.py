"""The calibrated six-motor profiles the robot benches take as input, kept in the repository:
`profiles/six-motor-calibrated.toml` (fitted to the robot, no corner cutting) and
`profiles/six-motor-calibrated-overlap.toml` (the same with the safe overlap), the one the
planner benches price plans with.

It is made as issue 47 makes it for a robot unlike its profile:

1. the simulated cell runs six-motor with `robot_timing`'s physics file (slower to
   accelerate, longer to settle, a start latency, a slower R motor; the cube takes a cut
   corner up to 17 degrees); `robocell calibrate` times that robot and fits the profile's
   motors and primitive costs to it;
   (`six-motor-calibrated`);
2. `robocell calibrate --overlap` on the fitted profile finds the largest corner cut the
   simulated cube takes and backs off by its margin, and writes the profile with it
   (`six-motor-calibrated-overlap`).

Calibration on the simulated robot is deterministic, so running this again writes the same
files (the script says whether they changed).

    python bench/robot_overlap_profile.py [--speed 15]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from robot_timing import PHYSICS, cell_run  # noqa: E402  (a sibling bench module)

FOLDER = Path(__file__).resolve().parent / "profiles"
CALIBRATED = FOLDER / "six-motor-calibrated.toml"
OVERLAPPING = FOLDER / "six-motor-calibrated-overlap.toml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", type=float, default=15.0,
                        help="simulation speed factor of the timing run (the robot's own "
                             "clock, which calibration reads, is not sped up; default 15)")
    args = parser.parse_args()
    before = {path: path.read_text(encoding="utf-8") if path.exists() else None
              for path in (CALIBRATED, OVERLAPPING)}
    FOLDER.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="robot-overlap-profile-") as name:
        physics = Path(name) / "physics.toml"
        physics.write_text(PHYSICS["six-motor"], encoding="utf-8")
        cell_run("six-motor", physics, args.speed, range(0), "calibrate", CALIBRATED)
        subprocess.run([sys.executable, "-m", "robocell", "calibrate", "--overlap",
                        "--profile", str(CALIBRATED), "--physics", str(physics),
                        "--out", str(OVERLAPPING)], check=True)
    for path, text in before.items():
        after = path.read_text(encoding="utf-8")
        print(f"{path.name}: " + ("new" if text is None else
                                  "unchanged" if text == after else "changed"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
