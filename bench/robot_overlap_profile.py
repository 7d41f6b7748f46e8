"""The calibrated, overlapping six-motor profile the planner benches price plans with
(`profiles/six-motor-calibrated-overlap.toml`, kept in the repository as their input).

It is made as issue 47 makes it for a robot unlike its profile:

1. the simulated cell runs six-motor with `robot_timing`'s physics file (slower to
   accelerate, longer to settle, a start latency, a slower R motor; the cube takes a cut
   corner up to 17 degrees); `robocell calibrate` times that robot and fits the profile's
   motors and primitive costs to it;
2. `robocell calibrate --overlap` on the fitted profile finds the largest corner cut the
   simulated cube takes and backs off by its margin, and writes the profile with it.

Calibration on the simulated robot is deterministic, so running this again writes the same
file (the script says whether it changed).

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

PROFILE = Path(__file__).resolve().parent / "profiles" / "six-motor-calibrated-overlap.toml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", type=float, default=15.0,
                        help="simulation speed factor of the timing run (the robot's own "
                             "clock, which calibration reads, is not sped up; default 15)")
    parser.add_argument("--out", type=Path, default=PROFILE,
                        help="where to write the profile (default %(default)s)")
    args = parser.parse_args()
    before = args.out.read_text(encoding="utf-8") if args.out.exists() else None
    with tempfile.TemporaryDirectory(prefix="robot-overlap-profile-") as name:
        folder = Path(name)
        physics = folder / "physics.toml"
        physics.write_text(PHYSICS["six-motor"], encoding="utf-8")
        timed = folder / "six-motor-timing.toml"
        cell_run("six-motor", physics, args.speed, range(0), "calibrate", timed)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "robocell", "calibrate", "--overlap",
                        "--profile", str(timed), "--physics", str(physics),
                        "--out", str(args.out)], check=True)
    after = args.out.read_text(encoding="utf-8")
    print(f"{args.out.name}: " + ("new" if before is None else
                                  "unchanged" if before == after else "changed"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
