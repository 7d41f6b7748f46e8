"""Corner cutting in the simulated cell (issue 47's corner-cutting figures; the prediction
figures are `robot_timing`'s).

1. `robocell calibrate --overlap` on the simulated robot (--physics, a robot unlike its
   profile whose cube takes a cut corner up to its ``cut_tolerance_deg``) gives the safe
   overlap, starting from the profile calibrated to that robot
   (`profiles/six-motor-calibrated.toml`, made by `robot_overlap_profile.py`); the profile
   it writes must be the kept `profiles/six-motor-calibrated-overlap.toml`.
2. The same --cubes seeded cubes in the simulated cell, real time, with the calibrated
   profile without the overlap and with it (each planning for its own robot): execution
   time (the robot's own clock: the plan's ``measured_ms`` from the firmware's ``done
   start= end=`` reports, an overlapped start counted once; the actuator's wall time beside
   it), jams, and SOLVED cycles whose twin is
   not solved (false SOLVED; must be 0).
3. The cube's tolerance set 8 degrees below the overlap: every cycle must fail naming a jam
   (none SOLVED), and after each a `cell.recover` cycle must home the robot and scan the cube
   again (it then jams again, the overlap still being too large for that cube).

--profile tilt-spin: its robot turns one layer (the turntable under D), so `calibrate
--overlap` finds no corner to cut and says so; the bench then declares six-motor's overlap
(`DECLARED_DEG`) on tilt-spin anyway and measures what that changes on the same cubes, with
the robot of `robot_timing.PHYSICS` and the cube's tolerance.

    python bench/robot_timing_corners.py --cubes 12
    python bench/robot_timing_corners.py --cubes 12 --profile tilt-spin --speed 10
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from robocell.common.bus import CommandFailed, Endpoints, Node
from robocell.common.profile import load_profile
from robocell.deploy.launcher import Launcher, temporary_cell_env
from robocell.tools.cycle import follow_cycle

sys.path.insert(0, str(Path(__file__).resolve().parent))
from robot_overlap_profile import CALIBRATED, OVERLAPPING  # noqa: E402  (a sibling bench module)
from robot_timing import PHYSICS as TIMING_PHYSICS  # noqa: E402

PHYSICS = TIMING_PHYSICS["six-motor"].replace("cut_tolerance_deg = 17",
                                              "cut_tolerance_deg = {tolerance}")
"""The robot the calibrated profiles were fitted to (`robot_timing`'s six-motor physics),
its cube's tolerance left to fill in."""
QUIET = {"broker", "solver", "firmware-sim", "actuator-sim", "vision-sim", "cell", "monitor",
         "foxglove"}
SEED = 47_000
BELOW_DEG = 8.0
DECLARED_DEG = 14.0
"""The overlap declared on a robot where `calibrate --overlap` finds no corner to cut
(six-motor's calibrated one)."""


def physics_text(profile: str, tolerance: float) -> str:
    """The simulated robot: `robot_timing`'s for the profile, the cube's tolerance filled in."""
    if profile == "six-motor":
        return PHYSICS.format(tolerance=tolerance)
    return f"{TIMING_PHYSICS[profile]}[cube]\ncut_tolerance_deg = {tolerance:g}\n"


def declared(folder: Path, profile: str, overlap: float) -> Path:
    """The profile's file with ``[motion] overlap_deg`` declared, named ``<profile>-overlap``."""
    text = load_profile(profile).path.read_text(encoding="utf-8")
    text = re.sub(r'^name\s*=\s*"[^"]*"', f'name = "{profile}-overlap"', text, count=1,
                  flags=re.MULTILINE)
    first = re.search(r"^\[", text, re.MULTILINE)
    text = (text[:first.start()] + f"[motion]\n# declared by bench/robot_timing_corners.py\n"
            f"overlap_deg = {overlap:g}\n\n" + text[first.start():])
    out = folder / f"{profile}-overlap.toml"
    out.write_text(text, encoding="utf-8")
    return out


def no_corner(folder: Path, physics: Path, profile: str) -> tuple[Path, float]:
    """`robocell calibrate --overlap` on a robot with no corner to cut: what it says, and the
    profile with `DECLARED_DEG` declared instead."""
    done = subprocess.run([sys.executable, "-m", "robocell", "calibrate", "--overlap",
                           "--profile", profile, "--physics", str(physics), "--out",
                           str(folder / f"{profile}-found.toml")],
                          text=True, capture_output=True, check=False)
    print(done.stdout + done.stderr, end="", flush=True)
    if done.returncode != 2 or "no corner to cut" not in done.stderr:
        raise SystemExit(f"calibrate --overlap found a corner to cut on {profile}: use it")
    print(f"declared instead: overlap_deg = {DECLARED_DEG:g}", flush=True)
    return declared(folder, profile, DECLARED_DEG), DECLARED_DEG


def calibrate(folder: Path, physics: Path) -> tuple[Path, float]:
    """`robocell calibrate --overlap` from the calibrated profile: the overlapping profile
    (the kept one, which it must match) and its overlap."""
    out = folder / OVERLAPPING.name
    subprocess.run([sys.executable, "-m", "robocell", "calibrate", "--overlap", "--profile",
                    str(CALIBRATED), "--physics", str(physics), "--out", str(out)], check=True)
    if out.read_text() != OVERLAPPING.read_text():
        raise SystemExit(f"{OVERLAPPING} is not what calibrate --overlap writes now: run "
                         "bench/robot_overlap_profile.py")
    for line in out.read_text().splitlines():
        if line.startswith("overlap_deg"):
            return OVERLAPPING, float(line.split("=")[1])
    raise RuntimeError(f"{out} has no overlap_deg")


class Watch:
    """The actuator's results and the twin's latest state, as the bench's node sees them."""

    def __init__(self, node: Node) -> None:
        self.lock = threading.Lock()
        self.executions: list[tuple[float, float | None]] = []
        """(wall ms, robot ms) of each plan execution the actuator reported, in order."""
        self.twin: dict = {}
        node.subscribe("actuator.result", self.on_result)
        node.subscribe("sim.twin_state", self.on_twin)

    def on_result(self, envelope) -> None:
        payload = envelope.payload
        with self.lock:
            if payload.get("ok"):
                self.executions.append((payload["duration_s"] * 1000.0,
                                        payload.get("measured_ms")))

    def on_twin(self, envelope) -> None:
        with self.lock:
            self.twin = dict(envelope.payload)


def start_cycle(node: Node, command: str) -> dict:
    """``cell.start`` or ``cell.recover``, once the cell takes it: it answers busy from its
    ``cell.result`` until it has logged the cycle before."""
    deadline = time.monotonic() + 30.0
    while True:
        try:
            return node.call("cell", command, {}, timeout=5.0)
        except CommandFailed as exc:
            if exc.code != "busy" or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def run_cell(profile: str, physics: Path, cubes: int, recover: bool = False,
             speed: float = 1.0) -> dict:
    """The seeded cubes in a simulated cell (motors at ``speed`` times real time): per cycle
    ok, error, execution ms, twin solved; with ``recover``, a `cell.recover` cycle after each
    failure."""
    rows, recoveries = [], []
    with temporary_cell_env(profile, speed, env={**os.environ,
                                                 "ROBOCELL_PHYSICS": str(physics)}) as env:
        env["ROBOCELL_SOLVER_WORKERS"] = "2"
        env["ROBOCELL_ROLLING"] = "0"  # the plan as planned: the same cubes, the same plans
        with Launcher("sim", env, quiet=QUIET) as launcher:
            launcher.start()
            bus = launcher.services[0].environment["ROBOCELL_BUS"]
            with Node("bench-corners", Endpoints.resolve(bus), track_peers=False) as node:
                watch = Watch(node)
                for i in range(cubes):
                    node.call("cell", "scramble", {"seed": SEED + i}, timeout=10.0)
                    with watch.lock:
                        before = len(watch.executions)
                    started = start_cycle(node, "start")
                    result = follow_cycle(node, started["cycle_id"], 300.0, show=False)
                    with watch.lock:
                        twin = dict(watch.twin)
                        wall, robot = (watch.executions[-1] if len(watch.executions) > before
                                       else (None, None))
                    rows.append({"ok": result["ok"], "error": result.get("error"),
                                 "execution_ms": robot, "wall_ms": wall,
                                 "twin_solved": twin.get("solved"),
                                 "jammed": twin.get("jammed")})
                    if recover and not result["ok"]:
                        again = start_cycle(node, "recover")
                        back = follow_cycle(node, again["cycle_id"], 300.0, show=False)
                        recoveries.append({"ok": back["ok"], "homed": back.get("homed"),
                                           "failed_stage": back.get("failed_stage"),
                                           "error": back.get("error"),
                                           "scanned": "scanning" in back["stages_s"]
                                           and back.get("failed_stage") != "scanning"})
    return {"profile": profile, "cycles": rows, "recoveries": recoveries}


def corner_cutting_figures(cubes: int, profile: str = "six-motor", speed: float = 1.0) -> None:
    """The three figures of the module docstring, printed."""
    with tempfile.TemporaryDirectory(prefix="robocell-corners-") as name:
        folder = Path(name)
        physics = folder / "physics.toml"
        physics.write_text(physics_text(profile, 17))
        if profile == "six-motor":
            overlapping, overlap = calibrate(folder, physics)
            start = str(CALIBRATED)
        else:
            overlapping, overlap = no_corner(folder, physics, profile)
            start = profile
        subprocess.run([sys.executable, "-m", "robocell", "tables", "build", "--profile",
                        str(overlapping)], check=True)  # before the cell: no wait in it
        plain = run_cell(start, physics, cubes, speed=speed)
        cut = run_cell(str(overlapping), physics, cubes, speed=speed)
        for run in (plain, cut):
            rows = run["cycles"]
            times = [r["execution_ms"] for r in rows if r["execution_ms"] is not None]
            false = sum(1 for r in rows if r["ok"] and not r["twin_solved"])
            jams = sum(1 for r in rows if r["error"] and "jam" in r["error"])
            mean = statistics.fmean(times) if times else float("nan")
            walls = [r["wall_ms"] for r in rows if r["wall_ms"] is not None]
            wall = statistics.fmean(walls) if walls else float("nan")
            print(f"{Path(run['profile']).stem}: {sum(r['ok'] for r in rows)}/{len(rows)} "
                  f"SOLVED, {jams} jams, {false} false SOLVED, execution mean {mean:.0f} ms "
                  f"robot time (n={len(times)}; wall {wall:.0f} ms); "
                  f"failures: {[r['error'] for r in rows if not r['ok']][:2]}")
        paired = [(a["execution_ms"], b["execution_ms"]) for a, b in zip(
            plain["cycles"], cut["cycles"], strict=True) if a["execution_ms"] and b["execution_ms"]]
        if paired:
            before, after = (statistics.fmean(x) for x in zip(*paired, strict=True))
            print(f"overlap {overlap:g} deg: execution {1 - after / before:.1%} shorter in "
                  f"robot time ({before:.0f} -> {after:.0f} ms, {len(paired)} cubes paired)")
        tight = folder / "tight.toml"
        tight.write_text(physics_text(profile, overlap - BELOW_DEG))
        jammed = run_cell(str(overlapping), tight, cubes, recover=True, speed=speed)
        rows = jammed["cycles"]
        named = sum(1 for r in rows if not r["ok"] and r["error"] and "fault jam" in r["error"])
        print(f"tolerance {overlap - BELOW_DEG:g} deg (8 below the overlap): "
              f"{named}/{len(rows)} cycles failed naming a jam, "
              f"{sum(r['ok'] for r in rows)} SOLVED")
        backs = jammed["recoveries"]
        print(f"  recover: {sum(1 for b in backs if b['homed'] and b['scanned'])}/{len(backs)} "
              "homed and rescanned the cube; then "
              + ", ".join(sorted({str(b['failed_stage']) for b in backs})))
        if rows and rows[0]["error"]:
            print(f"  e.g. {rows[0]['error']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cubes", type=int, default=12)
    parser.add_argument("--profile", default="six-motor", choices=["six-motor", "tilt-spin"])
    parser.add_argument("--speed", type=float, default=1.0,
                        help="simulation speed factor (the robot's clock is not sped up)")
    args = parser.parse_args()
    corner_cutting_figures(args.cubes, args.profile, args.speed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
