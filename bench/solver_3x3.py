"""Benchmark of the 3x3x3 two-phase solver against kociemba (C) and RubikTwoPhase (Python).

Every solver gets the same seeded random cubes, one after another in one process. For each
configuration it prints the average and maximum solution length and the median and 99th
percentile wall time per cube; results are saved to bench/results/solver_3x3.json (a later
run with --configs updates only the configurations it ran). A reference that is not
installed (or, for RubikTwoPhase, whose tables are not built) is skipped with the reason.

    python bench/solver_3x3.py                      # everything, 300 cubes (about 15 min)
    python bench/solver_3x3.py --configs ours-first,ours-10ms,kociemba --cubes 100

RubikTwoPhase writes its tables to ./twophase of the working directory on first import and
takes half an hour or more to build them; pass --rubiktwophase-dir DIR holding that folder.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from robocell.common.cube import apply_to_facelets, random_facelets, solved

ROOT = Path(__file__).resolve().parent.parent

OUR_BUDGETS = {"ours-first": 0.0, "ours-10ms": 0.01, "ours-100ms": 0.1, "ours-1s": 1.0}
RTP_BUDGETS = {"rubiktwophase-100ms": 0.1, "rubiktwophase-1s": 1.0}
ALL_CONFIGS = ["kociemba", *RTP_BUDGETS, *OUR_BUDGETS, "robot-six-motor", "robot-tilt-spin"]
RESULTS = ROOT / "bench" / "results" / "solver_3x3.json"


def bench_cubes(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [random_facelets(3, rng) for _ in range(n)]


def summarise(name: str, lengths: list[int], seconds: list[float], note: str = "",
              cpu_seconds: list[float] | None = None) -> dict:
    ms = 1000 * np.array(seconds)
    cpu = 1000 * np.array(cpu_seconds if cpu_seconds else [np.nan])
    return {"config": name, "cubes": len(lengths), "avg_length": round(float(np.mean(lengths)), 3),
            "max_length": int(max(lengths)), "p50_ms": round(float(np.percentile(ms, 50)), 3),
            "p99_ms": round(float(np.percentile(ms, 99)), 3), "note": note,
            "cpu_p50_ms": round(float(np.percentile(cpu, 50)), 3),
            "load_average": round(os.getloadavg()[0], 2)}


def check(facelets: str, moves: str, who: str) -> int:
    if apply_to_facelets(facelets, moves) != solved(3):
        raise AssertionError(f"{who}: {moves!r} does not solve {facelets}")
    return len(moves.split())


def run_ours(cubes: list[str], name: str, budget: float) -> dict:
    from robocell.services.solver.api import solve
    from robocell.services.solver.cube3.solver import warm_up

    warm_up()
    lengths, seconds, cpu = [], [], []
    for facelets in cubes:
        started, cpu_started = time.perf_counter(), time.process_time()
        plan = solve(facelets, "htm", timeout=budget)
        seconds.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
        lengths.append(check(facelets, " ".join(str(m) for m in plan.moves), name))
    return summarise(name, lengths, seconds, f"timeout={budget}s" if budget else
                     "first solution (timeout=0)", cpu)


def run_kociemba(cubes: list[str]) -> dict | str:
    try:
        import kociemba
    except ImportError:
        return "kociemba is not installed (pip install kociemba; benchmark only, GPL)"
    kociemba.solve(cubes[0])  # loads its tables
    lengths, seconds, cpu = [], [], []
    for facelets in cubes:
        started, cpu_started = time.perf_counter(), time.process_time()
        moves = kociemba.solve(facelets)
        seconds.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
        lengths.append(check(facelets, moves, "kociemba"))
    return summarise("kociemba", lengths, seconds, "kociemba.solve(cube), C, default depth",
                     cpu)


def run_rubiktwophase(cubes: list[str], name: str, budget: float, tables: str | None) -> dict | str:
    if tables is None or not (Path(tables) / "twophase").is_dir():
        return ("RubikTwoPhase skipped: pass --rubiktwophase-dir with its built tables "
                "(./twophase; building them takes half an hour or more)")
    try:
        import twophase  # noqa: F401
    except ImportError:
        return "RubikTwoPhase is not installed (pip install RubikTwoPhase)"
    here = os.getcwd()
    os.chdir(tables)
    try:
        import twophase.solver as sv

        sv.solve(cubes[0], 0, 0.01)
        lengths, seconds = [], []
        for facelets in cubes:
            started = time.perf_counter()
            text = sv.solve(facelets, 0, budget)
            seconds.append(time.perf_counter() - started)
            moves = " ".join(t[0] + {"1": "", "2": "2", "3": "'"}[t[1]]
                             for t in text.split() if not t.startswith("("))
            lengths.append(check(facelets, moves, name))
    finally:
        os.chdir(here)
    return summarise(name, lengths, seconds, f"solve(cube, 0, {budget}), CPython")


def run_robot(cubes: list[str], profile: str, timeout: float) -> dict | str:
    from robocell.common.profile import load_profile
    from robocell.services.solver.api import solve

    try:
        import robocell.services.solver.cube3.motion_compiler  # noqa: F401
    except ImportError:
        return f"robot-{profile}: motion compiler not installed"
    unit_ms = load_profile(profile).unit_ms
    best, shortest, lengths, seconds, candidates = [], [], [], [], []
    for facelets in cubes:
        started = time.perf_counter()
        plan = solve(facelets, profile, timeout=timeout)
        seconds.append(time.perf_counter() - started)
        best.append(plan.cost_ms)
        shortest.append(plan.stats["shortest_cost"] * unit_ms)
        lengths.append(plan.stats["face_turn_count"])
        candidates.append(plan.stats["candidates"])
    row = summarise(f"robot-{profile}", lengths, seconds, f"timeout={timeout}s")
    row.update({"robot_ms_shortest": round(float(np.mean(shortest)), 1),
                "robot_ms_best": round(float(np.mean(best)), 1),
                "candidates_mean": round(float(np.mean(candidates)), 1)})
    return row


def table_figures() -> dict:
    from robocell.common.tables import read_manifest
    from robocell.services.solver.cube3.tables import table_groups

    manifest = read_manifest(table_groups()[0]) or {}
    arrays = manifest.get("arrays", {})
    return {"table_build_s": manifest.get("build_seconds"),
            "table_mb": round(sum(a["bytes"] for a in arrays.values()) / 1e6, 1)}


def print_table(results: dict) -> None:
    print(f"\n{'config':<22}{'cubes':>6}{'avg len':>9}{'max':>5}{'p50 ms':>10}{'p99 ms':>10}"
          f"{'cpu p50':>9}{'load':>6}  note")
    for name in ALL_CONFIGS:
        row = results["rows"].get(name)
        if row is None or name.startswith("robot-"):
            continue
        print(f"{name:<22}{row['cubes']:>6}{row['avg_length']:>9.2f}{row['max_length']:>5}"
              f"{row['p50_ms']:>10.2f}{row['p99_ms']:>10.2f}{row.get('cpu_p50_ms', 0):>9.2f}"
              f"{row['load_average']:>6.1f}  "
              f"{row['note']}")
    for name in ("robot-six-motor", "robot-tilt-spin"):
        row = results["rows"].get(name)
        if row is not None:
            print(f"{name:<22}{row['cubes']:>6} cubes: robot time of the shortest solution "
                  f"{row['robot_ms_shortest']:.0f} ms, of the robot-time-best "
                  f"{row['robot_ms_best']:.0f} ms ({row['candidates_mean']:.0f} candidates, "
                  f"{row['avg_length']:.2f} face turns, {row['note']})")
    for reason in results.get("skipped", {}).values():
        print(f"skipped: {reason}")
    tables = results.get("tables", {})
    print(f"tables: {tables.get('table_mb')} MB, built in {tables.get('table_build_s')} s")
    print("times are wall clock per cube on a shared machine; cpu p50 is the process CPU time "
          "(what the solver got); load = 1-minute load average when the row finished")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cubes", type=int, default=300)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--configs", default=",".join(ALL_CONFIGS),
                        help=f"comma-separated subset of {ALL_CONFIGS}")
    parser.add_argument("--rubiktwophase-dir", default=os.environ.get("RUBIKTWOPHASE_DIR"))
    parser.add_argument("--robot-cubes", type=int, default=50)
    parser.add_argument("--robot-timeout", type=float, default=0.5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    configs = [c for c in args.configs.split(",") if c]
    unknown = set(configs) - set(ALL_CONFIGS)
    if unknown:
        parser.error(f"unknown configs {sorted(unknown)}; choose from {ALL_CONFIGS}")
    cubes = bench_cubes(args.cubes, args.seed)
    results = {"rows": {}, "skipped": {}}
    if args.out.is_file():
        previous = json.loads(args.out.read_text())
        if previous.get("cubes") == args.cubes and previous.get("seed") == args.seed:
            results = previous
    results.update({"cubes": args.cubes, "seed": args.seed, "tables": table_figures()})
    for name in configs:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        if name == "kociemba":
            row = run_kociemba(cubes)
        elif name in RTP_BUDGETS:
            row = run_rubiktwophase(cubes, name, RTP_BUDGETS[name], args.rubiktwophase_dir)
        elif name in OUR_BUDGETS:
            row = run_ours(cubes, name, OUR_BUDGETS[name])
        else:
            row = run_robot(cubes[: args.robot_cubes], name.removeprefix("robot-"),
                            args.robot_timeout)
        if isinstance(row, str):
            results["skipped"][name] = row
            results["rows"].pop(name, None)
        else:
            results["skipped"].pop(name, None)
            results["rows"][name] = row
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))
    print_table(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
