"""2x2x2 solver figures: table build time and peak memory, solve latency, plan cost.

For each profile (default: htm, qtm, soltvvo-2x2):
- build its table from scratch in a fresh process (`robocell tables build --force`) into a
  temporary tables directory: wall time, the build proper from the manifest, peak RSS of
  that process (targets: <= 30 s, <= 300 MB on the 2-core box);
- solve N random states (default 10,000, uniform over all states in all orientations) in
  batch mode (`robocell solve -`, one JSON line per cube): p50/p99/max of ``solve_ms``
  (target p99 <= 1 ms) and the batch's wall time per cube;
- mean plan cost, and the exact distribution of optimal plan cost over all robot-frame
  states (every rotation class stands for 24 states with the same cost), side by side with
  the reference robot: 21.4 units per plan, 31 ms mean / 290 ms worst per solve.

Run: ``python bench/solver_2x2.py [--profiles htm,soltvvo-2x2] [--cubes 10000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REFERENCE_MEAN_COST = 21.4
REFERENCE_SOLVE_MS_MEAN = 31.0
REFERENCE_SOLVE_MS_WORST = 290.0
BUILD_TARGET_S = 30.0
MEMORY_TARGET_MB = 300.0
LATENCY_TARGET_P99_MS = 1.0
DEFAULT_PROFILES = ("htm", "qtm", "soltvvo-2x2")
REPO = Path(__file__).resolve().parent.parent


def _env(tables: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    if tables is not None:
        env["ROBOCELL_TABLES"] = str(tables)
    return env


def measure_build(profile: str) -> dict:
    """Build one profile's table in a fresh process; wall time and peak RSS."""
    with tempfile.TemporaryDirectory(prefix="robocell-bench-") as tmp:
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "robocell", "tables", "build", "--force",
             "--profile", profile], env=_env(Path(tmp)),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - started
        stderr = proc.stderr.read() if proc.stderr else ""
        if status != 0:
            raise SystemExit(f"build of {profile} failed:\n{stderr}")
        manifest = json.loads((Path(tmp) / f"cube2-{profile}" / "manifest.json").read_text())
    return {"wall_s": wall, "build_s": manifest["build_seconds"],
            "peak_mb": usage.ru_maxrss / 1024.0,
            "table_mb": sum(a["bytes"] for a in manifest["arrays"].values()) / 1e6}


def measure_solves(profile: str, cubes: list[str]) -> dict:
    """Solve every cube in one batch-mode process; latencies and costs from its JSON lines."""
    # tables in the default directory: built there first if missing (not timed here)
    subprocess.run([sys.executable, "-m", "robocell", "tables", "build", "--profile", profile],
                   env=_env(), check=True, capture_output=True)
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "robocell", "solve", "--puzzle", "2x2", "--profile", profile,
         "-"], input="\n".join(cubes) + "\n", env=_env(), capture_output=True, text=True)
    wall = time.monotonic() - started
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    errors = [r for r in rows if "error" in r]
    if errors or len(rows) != len(cubes):
        raise SystemExit(f"batch solve of {profile} failed: {errors[:3]} {out.stderr[-500:]}")
    solve_ms = np.array([r["solve_ms"] for r in rows])
    cost = np.array([r["cost"] for r in rows])
    return {"p50_ms": float(np.percentile(solve_ms, 50)),
            "p99_ms": float(np.percentile(solve_ms, 99)), "max_ms": float(solve_ms.max()),
            "mean_ms": float(solve_ms.mean()), "wall_per_cube_ms": 1000 * wall / len(cubes),
            "mean_cost": float(cost.mean()), "max_cost": float(cost.max())}


def cost_distribution(profile: str) -> tuple[list[int], float]:
    """Exact distribution of optimal plan cost over all robot-frame states, and its mean."""
    from robocell.common.profile import load_profile
    from robocell.services.solver.cube2.solver import plan_costs

    costs, scale = plan_costs(load_profile(profile))
    counts = np.bincount(costs[costs >= 0]) * 24  # each class: 24 robot-frame states
    values = np.arange(len(counts)) / scale
    return counts.tolist(), float((counts * values).sum() / counts.sum())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default=",".join(DEFAULT_PROFILES))
    parser.add_argument("--cubes", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    from robocell.common.scramble import random_facelets

    rng = np.random.default_rng(args.seed)
    cubes = [random_facelets(2, rng) for _ in range(args.cubes)]
    profiles = args.profiles.split(",")
    print(f"2x2x2 solver, {args.cubes} random states (seed {args.seed}), "
          f"{os.cpu_count()} cores\n")
    header = (f"{'profile':<12} {'build s':>8} {'(proper)':>8} {'peak MB':>8} {'table MB':>8} "
              f"{'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'wall/cube':>9} {'mean cost':>9}")
    print(header)
    print("-" * len(header))
    results = {}
    for profile in profiles:
        build = measure_build(profile)
        solves = measure_solves(profile, cubes)
        results[profile] = (build, solves)
        print(f"{profile:<12} {build['wall_s']:8.1f} {build['build_s']:8.1f} "
              f"{build['peak_mb']:8.0f} {build['table_mb']:8.2f} {solves['p50_ms']:8.4f} "
              f"{solves['p99_ms']:8.4f} {solves['max_ms']:8.3f} "
              f"{solves['wall_per_cube_ms']:9.3f} {solves['mean_cost']:9.3f}")
    print(f"{'targets':<12} {BUILD_TARGET_S:8.0f} {'':>8} {MEMORY_TARGET_MB:8.0f} {'':>8} "
          f"{'':>8} {LATENCY_TARGET_P99_MS:8.1f}")
    print(f"{'reference':<12} {'':>8} {'':>8} {'':>8} {'':>8} "
          f"{REFERENCE_SOLVE_MS_MEAN:>8.0f}* {'':>7} {REFERENCE_SOLVE_MS_WORST:8.0f} "
          f"{'':>9} {REFERENCE_MEAN_COST:9.1f}")
    print("  * reference robot: mean solve time (CPython IDA*), worst case, mean plan cost "
          "(not guaranteed optimal)\n")
    for profile in profiles:
        counts, mean = cost_distribution(profile)
        total = sum(counts)
        print(f"{profile}: optimal plan cost over all {total:,} robot-frame states, "
              f"mean {mean:.4f} units (max {len(counts) - 1})")
        print("  " + ", ".join(f"{c}: {n}" for c, n in enumerate(counts) if n))
        if profile == "soltvvo-2x2":
            print(f"  vs reference robot {REFERENCE_MEAN_COST} units per plan: "
                  f"{mean - REFERENCE_MEAN_COST:+.3f} units "
                  f"({100 * (mean / REFERENCE_MEAN_COST - 1):+.2f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
