"""Two checkouts of robocell side by side on the same bench inputs, in one run: the 3x3 solver
bench (`solver_3x3.py`) and the Sokoban collections bench (`sokoban_collections.py`).

Each checkout runs its own copy of each bench script in a subprocess with PYTHONPATH set to
that checkout, so its own code is imported (and its own numba cache used); the two take turns
run by run, in the other order every second round, so the machine's drift falls on both alike.
A short warm-up run of each first fills the numba caches, so no measured run compiles. Printed
side by side, medians over the rounds, with the change of ``--after`` against ``--before``.

The inputs are bounded to a few minutes a checkout and round: the two-phase search's first
solution and 10 ms budget on seeded random cubes (a control where the face-turn search did not
change), the robot-time search on two profiles at the solver's default robot budget (the
same budget: a faster search ends with cheaper plans; tilt-spin spends 90 % of it on its
face-turn start), and Sokoban levels that mostly solve within their timeout, whose
expansions are the same when the search is (a level whose count differs is named).

    python bench/compare_checkouts.py --before ../wt-before --after . [--rounds 2]
        [--cubes 100] [--robot-cubes 30] [--robot-timeout 0.5] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLVER_CONFIGS = ("ours-first", "ours-10ms", "robot-six-motor", "robot-tilt-spin")
SOKOBAN_RUNS = {
    "microban 95-124, optimal A*, 10 s": ["microban", "--start", "95", "--first", "30",
                                          "--timeout", "10"],
    "xsokoban 1-6, weight 2, 10 s": ["xsokoban", "--first", "6", "--weight", "2",
                                     "--timeout", "10"],
    "xsokoban 1-6, feature search + box moves, 10 s": ["xsokoban", "--first", "6",
                                                       "--schedule", "2fom/0:10"],
}
"""Sokoban inputs: a name -> the arguments of `sokoban_collections.py`."""
RUN_TIMEOUT_S = 1800


class BenchRunError(RuntimeError):
    """A bench script failed in one checkout (the message holds its stderr's end)."""


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_script(checkout: Path, script: str, args: list[str]) -> tuple[str, float]:
    """Run ``bench/<script>`` of ``checkout`` with its own code: (its stdout, the CPU seconds
    its process took, start-up included)."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    cpu = children_cpu_s()
    out = subprocess.run([sys.executable, str(checkout / "bench" / script), *args], env=env,
                         cwd=checkout, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                         check=False)
    if out.returncode != 0:
        raise BenchRunError(f"{script} {' '.join(args)} in {checkout} exited "
                            f"{out.returncode}:\n{out.stderr[-3000:]}")
    return out.stdout, children_cpu_s() - cpu


def solver_figures(checkout: Path, args: argparse.Namespace, out: Path,
                   cubes: int, robot_cubes: int) -> dict[str, dict]:
    """The rows `solver_3x3.py` writes to ``out`` (per config: length, wall and CPU times,
    robot ms)."""
    out.unlink(missing_ok=True)
    run_script(checkout, "solver_3x3.py", [
        "--configs", ",".join(SOLVER_CONFIGS), "--cubes", str(cubes), "--seed", str(args.seed),
        "--robot-cubes", str(robot_cubes), "--robot-timeout", str(args.robot_timeout),
        "--out", str(out)])
    return json.loads(out.read_text())["rows"]


def sokoban_rows(checkout: Path, run_args: list[str], out: Path) -> tuple[list[dict], float]:
    """The per-level rows `sokoban_collections.py` writes to its markdown table ``out``, and
    the CPU seconds of its process."""
    _, cpu = run_script(checkout, "sokoban_collections.py", [*run_args, "--out", str(out)])
    rows = []
    for line in out.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 9 and cells[0].isdigit():
            rows.append({"level": int(cells[0]), "status": cells[3], "pushes": cells[4],
                         "expanded": int(cells[7]), "seconds": float(cells[8])})
    return rows, cpu


def sokoban_figures(run: tuple[list[dict], float]) -> dict[str, float]:
    rows, cpu = run
    solved = [r for r in rows if r["status"] == "solved"]
    expanded = sum(r["expanded"] for r in rows)
    seconds = sum(r["seconds"] for r in rows)
    return {"solved": len(solved), "levels": len(rows), "expanded": expanded,
            "seconds": seconds, "expanded_per_s": expanded / seconds if seconds else 0.0,
            "cpu_seconds": cpu}


def one_round(checkouts: dict[str, Path], args: argparse.Namespace, scratch: Path,
              order: list[str]) -> dict[str, dict]:
    """Every input once in each checkout, taking turns in ``order``."""
    results: dict[str, dict] = {name: {"solver": {}, "sokoban": {}} for name in checkouts}
    for name in order:
        print(f"  {name}: solver_3x3 ...", file=sys.stderr, flush=True)
        results[name]["solver"] = solver_figures(checkouts[name], args,
                                                 scratch / f"solver-{name}.json", args.cubes,
                                                 args.robot_cubes)
    for label, run_args in SOKOBAN_RUNS.items():
        for name in order:
            print(f"  {name}: {label} ...", file=sys.stderr, flush=True)
            results[name]["sokoban"][label] = sokoban_rows(checkouts[name], run_args,
                                                           scratch / f"sokoban-{name}.md")
    return results


def median_of(rounds: list[dict], name: str, *path: str) -> float:
    values = []
    for result in rounds:
        value = result[name]
        for key in path:
            value = value[key]
        values.append(value)
    return statistics.median(values)


def change(before: float, after: float) -> str:
    return f"{(after - before) / before * 100:+.1f} %" if before else "-"


def solver_table(rounds: list[dict]) -> list[str]:
    lines = ["| 3x3 config | figure | before | after | change |", "|---|---|---:|---:|---:|"]
    figures = {"ours": (("avg_length", "face turns"), ("p50_ms", "p50 ms"),
                        ("p99_ms", "p99 ms"), ("cpu_p50_ms", "CPU p50 ms")),
               "robot": (("robot_ms_best", "robot ms of the plan (mean)"),
                         ("candidates_mean", "plans found, the first included (mean)"),
                         ("p50_ms", "p50 ms"))}
    for config in SOLVER_CONFIGS:
        for key, label in figures[config.split("-")[0]]:
            before = median_of(rounds, "before", "solver", config, key)
            after = median_of(rounds, "after", "solver", config, key)
            lines.append(f"| {config} | {label} | {before:,.2f} | {after:,.2f} | "
                         f"{change(before, after)} |")
    return lines


def sokoban_table(rounds: list[dict]) -> list[str]:
    lines = ["| Sokoban input | figure | before | after | change |", "|---|---|---:|---:|---:|"]
    for label in SOKOBAN_RUNS:
        figures = {name: [sokoban_figures(r[name]["sokoban"][label]) for r in rounds]
                   for name in ("before", "after")}
        for key, text in (("solved", "solved"), ("expanded", "expansions"),
                          ("seconds", "seconds, all levels"),
                          ("expanded_per_s", "expansions a second"),
                          ("cpu_seconds", "CPU seconds of the process")):
            before = statistics.median(f[key] for f in figures["before"])
            after = statistics.median(f[key] for f in figures["after"])
            shown = (f"{before:,.2f} | {after:,.2f}" if "seconds" in key
                     else f"{before:,.0f} | {after:,.0f}")
            lines.append(f"| {label} | {text} | {shown} | {change(before, after)} |")
    return lines


def differing_levels(rounds: list[dict]) -> list[str]:
    """Levels finished in both checkouts (not at their timeout) whose expansions differ."""
    notes = []
    for label in SOKOBAN_RUNS:
        before = {r["level"]: r for r in rounds[0]["before"]["sokoban"][label][0]}
        after = {r["level"]: r for r in rounds[0]["after"]["sokoban"][label][0]}
        finished = [lv for lv in before if lv in after and before[lv]["status"] == "solved"
                    and after[lv]["status"] == "solved"]
        differ = [lv for lv in finished if before[lv]["expanded"] != after[lv]["expanded"]]
        notes.append(f"{label}: {len(finished) - len(differ)} of {len(finished)} levels solved "
                     "in both took the same expansions"
                     + (f"; differing: {', '.join(map(str, differ))}" if differ else ""))
    return notes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="root of a checkout")
    parser.add_argument("--after", type=Path, required=True, help="root of a checkout")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cubes", type=int, default=100)
    parser.add_argument("--robot-cubes", type=int, default=30)
    parser.add_argument("--robot-timeout", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", type=Path, help="also write the tables as markdown here")
    args = parser.parse_args()
    checkouts = {"before": args.before.resolve(), "after": args.after.resolve()}
    for name, path in checkouts.items():
        if not (path / "robocell").is_dir() or not (path / "bench" / "solver_3x3.py").is_file():
            parser.error(f"--{name} {path}: not the root of a robocell checkout with bench/")
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        for name, path in checkouts.items():
            print(f"warm-up (numba caches) of {name} ...", file=sys.stderr, flush=True)
            solver_figures(path, args, scratch / f"solver-{name}.json", 2, 2)
            sokoban_rows(path, ["microban", "--first", "1", "--timeout", "5"],
                         scratch / f"sokoban-{name}.md")
        rounds = []
        for k in range(args.rounds):
            print(f"round {k + 1} of {args.rounds}", file=sys.stderr, flush=True)
            order = ["before", "after"] if k % 2 == 0 else ["after", "before"]
            rounds.append(one_round(checkouts, args, scratch, order))
    lines = [
        f"before: {checkouts['before']}", f"after:  {checkouts['after']}",
        f"{args.rounds} rounds, the checkouts taking turns; medians over the rounds. 3x3: "
        f"{args.cubes} seeded cubes (seed {args.seed}), the robot profiles on the first "
        f"{args.robot_cubes} at {args.robot_timeout:g} s a cube.", "",
        *solver_table(rounds), "", *sokoban_table(rounds), "", *differing_levels(rounds), "",
        f"wall time {time.monotonic() - started:.0f} s; load average at the end "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (times are wall clock per cube or "
        "level on a shared machine; a CPU figure is what the process got)"]
    print("\n".join(lines))
    if args.out:
        command = " ".join(["python bench/compare_checkouts.py", *sys.argv[1:]])
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join([f"# {args.before.name} against {args.after.name}", "",
                                       "```", command, "```", "", *lines]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
