"""Consecutive simulated cycles per profile: failures, cycle overhead, solver-service latency.

For each profile the simulated cell (docker-compose.yml, profile `sim`) runs as local
processes with the motors sped up by --speed (default 1000, so simulated motor time is
almost nothing and a cycle's duration is its compute overhead: scanning images, reading,
planning, streaming, bus hops). Prints, per profile: cycles run and failed, cycle time
p50/p99 (interpolated, as numpy) and max, and per stage, and the solver service's latency
over the pure solve (service_ms - solve_ms of each plan, as measured inside the service)
plus the round trip seen by the cell. Then a burst: --burst solve requests (default 1,000)
sent at once by 100 client threads, each to be
answered with a plan or an explicit ``busy`` -- none may go unanswered.

Each cycle's compute overhead is also given apart from the robot's motion, read from the
cycle log: ``overhead`` = cycle wall time - the robot's motion time (the plan's
``measured_ms`` on the robot's clock, divided by --speed), and ``overhead - scan`` the same
less the scanning stage's wall time as well. With --physics FILE the simulated robot moves by
that file (docs/robot-physics.md), not by its profile. With --calibrate each profile is first
fitted to that robot and given its safe corner cut, and the cycles run with the result:
`robocell calibrate` against the running cell, `robocell calibrate --overlap --physics FILE`
on the fitted profile, `robocell tables build` for the result (the files in a temporary
folder; the tables under $ROBOCELL_TABLES, like any profile's).

    python bench/cell_cycles.py --cycles 100 --profiles soltvvo-2x2 six-motor
    python bench/cell_cycles.py --cycles 100 --profiles six-motor --speed 10 \
        --physics-of robot_timing --calibrate --burst 0
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

import robot_timing
from robot_timing_corners import start_cycle

from robocell.common.bus import CommandClient, Endpoints, Node
from robocell.deploy.launcher import Launcher, temporary_cell_env
from robocell.services.cell.history import HISTORY_ENV, CycleLog
from robocell.tools.cycle import follow_cycle

BURST_THREADS = 100
BURST_TIMEOUT_S = 60.0


def pct(values: list[float], q: float) -> float:
    """Percentile with linear interpolation between order statistics (numpy's default)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def burst(endpoints: Endpoints, size: int, n_requests: int) -> dict:
    """``n_requests`` solve requests at once from BURST_THREADS clients: outcome counts."""
    from robocell.common.cube import random_facelets

    cubes = [random_facelets(size, 90_000 + i) for i in range(n_requests)]
    outcomes: list[str | None] = [None] * n_requests
    examples: dict[str, str] = {}  # one message per kind of failure
    start = threading.Barrier(BURST_THREADS + 1)

    def ask(first: int) -> None:
        client = CommandClient(f"burst-{first}", endpoints)
        try:
            start.wait()
            for i in range(first, n_requests, BURST_THREADS):
                reply = client.request("solver", "solve", {"facelets": cubes[i]},
                                       timeout=BURST_TIMEOUT_S)
                outcomes[i] = "ok" if reply.ok else str(reply.error)
                if not reply.ok and reply.error != "busy":
                    examples.setdefault(str(reply.error), reply.message)
        finally:
            client.close()

    threads = [threading.Thread(target=ask, args=(k,)) for k in range(BURST_THREADS)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join(timeout=BURST_TIMEOUT_S * (n_requests // BURST_THREADS + 1))
    counts = collections.Counter(o if o is not None else "lost" for o in outcomes)
    return {"requests": n_requests, "seconds": round(time.perf_counter() - t0, 2),
            **dict(counts), **({"examples": examples} if examples else {})}


def overheads(env: dict[str, str], speed: float) -> tuple[list[float], list[float]]:
    """Per solved cycle of the cell's log: (wall - robot motion, wall - motion - scanning), ms."""
    log = CycleLog(Path(env[HISTORY_ENV]))
    try:
        records = [r for r in log.cycles() if r.result == "solved" and r.total_s is not None]
    finally:
        log.close()
    motion = [1000.0 * r.total_s - (r.measured_ms or 0.0) / speed for r in records]
    scan = [m - 1000.0 * r.stages.get("scanning", 0.0) for m, r in zip(motion, records,
                                                                       strict=True)]
    return motion, scan


def calibrated(profile: str, physics: Path, speed: float, folder: Path) -> str:
    """``profile`` fitted to the robot of ``physics`` and given its safe corner cut: the
    path of the overlapping profile file."""
    timing = folder / f"{profile}-calibrated.toml"
    robot_timing.cell_run(profile, physics, speed, range(0), "calibrate", timing)
    overlapping = folder / f"{profile}-calibrated-overlap.toml"
    robot_timing.robocell("calibrate", "--overlap", "--profile", str(timing), "--physics",
                          str(physics), "--out", str(overlapping), env=dict(os.environ))
    robot_timing.robocell("tables", "build", "--profile", str(overlapping), env=dict(os.environ))
    return str(overlapping)


def run_profile(profile: str, cycles: int, speed: float, n_burst: int,
                physics: Path | None = None) -> dict:
    extra = {**os.environ, "ROBOCELL_PHYSICS": str(physics)} if physics else None
    with temporary_cell_env(profile, speed, env=extra) as env:  # its log: removed after
        env["ROBOCELL_SOLVER_WORKERS"] = "2"
        launcher = Launcher("sim", env, quiet={"broker", "solver", "firmware-sim",
                                               "actuator-sim", "vision-sim", "cell", "monitor",
                                               "foxglove"})
        totals, failures, stages, service_over, round_trip = [], [], {}, [], []
        with launcher:
            launcher.start()
            bus = launcher.services[0].environment["ROBOCELL_BUS"]
            with Node("bench-cycles", Endpoints.resolve(bus), track_peers=False) as node:
                for i in range(cycles):
                    node.call("cell", "scramble", {"seed": 10_000 + i}, timeout=10.0)
                    started = start_cycle(node, "start")  # busy until it logged the last
                    result = follow_cycle(node, started["cycle_id"], 300.0, show=False)
                    if not result["ok"]:
                        failures.append(result.get("error"))
                        continue
                    totals.append(result["total_s"] * 1000)
                    for stage, seconds in result["stages_s"].items():
                        stages.setdefault(stage, []).append(seconds * 1000)
                # solver service over the pure solve, on the same profile's cubes
                from robocell.common.cube import random_facelets

                size = 2 if profile.endswith("2x2") else 3
                for i in range(200):
                    facelets = random_facelets(size, 50_000 + i)
                    t0 = time.perf_counter()
                    plan = node.call("solver", "solve", {"facelets": facelets}, timeout=10.0)
                    search = plan["search"]
                    round_trip.append((time.perf_counter() - t0) * 1000 - search["solve_ms"])
                    service_over.append(search["service_ms"] - search["solve_ms"])
                burst_result = burst(Endpoints.resolve(bus), size, n_burst) if n_burst else {}
        over_motion, over_scan = overheads(env, speed)
    return {"burst": burst_result, "profile": Path(profile).stem, "cycles": cycles,
            "failed": len(failures), "failures": failures[:5], "cycle_ms": totals,
            "stages_ms": stages, "service_over_ms": service_over,
            "round_trip_over_ms": round_trip, "overhead_ms": over_motion,
            "overhead_less_scan_ms": over_scan}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--speed", type=float, default=1000.0)
    parser.add_argument("--profiles", nargs="+", default=["soltvvo-2x2", "six-motor"])
    parser.add_argument("--burst", type=int, default=1000,
                        help="solve requests sent at once after the cycles (0: none)")
    parser.add_argument("--save", type=Path, default=Path(__file__).parent / "results" /
                        "cell_cycles.json")
    robot = parser.add_mutually_exclusive_group()
    robot.add_argument("--physics", type=Path, metavar="FILE",
                       help="the simulated robot's physics file (default: its profile)")
    robot.add_argument("--physics-of", choices=["robot_timing"],
                       help="the physics file of bench/robot_timing.py for each profile")
    parser.add_argument("--calibrate", action="store_true",
                        help="run with each profile calibrated to the robot, safe overlap")
    args = parser.parse_args()
    if args.calibrate and not (args.physics or args.physics_of):
        parser.error("--calibrate needs the robot to calibrate to: --physics or --physics-of")
    with tempfile.TemporaryDirectory(prefix="cell-cycles-") as name:
        folder = Path(name)
        rows = []
        for profile in args.profiles:
            physics = args.physics
            if args.physics_of:
                physics = folder / f"{profile}-physics.toml"
                physics.write_text(robot_timing.PHYSICS[profile], encoding="utf-8")
            used = calibrated(profile, physics, args.speed, folder) if args.calibrate else profile
            if used != profile:
                cut = [x for x in Path(used).read_text().splitlines() if "overlap_deg" in x]
                print(f"== {profile} calibrated, with overlap: {cut}", flush=True)
            rows.append(run_profile(used, args.cycles, args.speed, args.burst, physics))
    print(f"{'profile':<12} {'cycles':>6} {'failed':>6} {'cycle p50':>10} {'cycle p99':>10}"
          f" {'cycle max':>10} {'svc over p50':>13} {'svc over p99':>13} {'rtt over p50':>13}")
    for r in rows:
        print(f"{r['profile']:<12} {r['cycles']:>6} {r['failed']:>6} "
              f"{pct(r['cycle_ms'], .5):>8.0f}ms {pct(r['cycle_ms'], .99):>8.0f}ms "
              f"{max(r['cycle_ms'], default=float('nan')):>8.0f}ms "
              f"{pct(r['service_over_ms'], .5):>11.2f}ms {pct(r['service_over_ms'], .99):>11.2f}ms"
              f" {pct(r['round_trip_over_ms'], .5):>11.2f}ms")
        for key, label in (("overhead_ms", "overhead"), ("overhead_less_scan_ms",
                                                           "overhead - scan")):
            values = r[key]
            if values:
                print(f"    {label:<15} p50 {pct(values, .5):6.1f} ms  p99 "
                      f"{pct(values, .99):6.1f} ms  max {max(values):6.1f} ms  (n={len(values)})")
        for stage, values in r["stages_ms"].items():
            print(f"    {stage:<10} p50 {pct(values, .5):8.1f} ms  p99 {pct(values, .99):8.1f} ms"
                  f"  max {max(values):8.1f} ms  mean {statistics.fmean(values):8.1f} ms")
        for failure in r["failures"]:
            print(f"    failure: {failure}")
        if r["burst"]:
            b = r["burst"]
            others = {k: v for k, v in b.items()
                      if k not in ("requests", "seconds", "ok", "busy", "lost", "examples")}
            print(f"    burst: {b['requests']} solve requests at once -> {b.get('ok', 0)} plans, "
                  f"{b.get('busy', 0)} refused as busy, {b.get('lost', 0)} lost, other "
                  f"{others or 0}; all answered in {b['seconds']} s")
            for kind, message in b.get("examples", {}).items():
                print(f"      {kind}, for example: {message}")
    args.save.parent.mkdir(parents=True, exist_ok=True)
    args.save.write_text(json.dumps(rows, indent=1))
    return 0 if all(r["failed"] == 0 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
