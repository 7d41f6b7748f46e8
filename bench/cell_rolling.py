"""The rolling search in the simulated cell: what the robot executes, with and without it.

The simulated cell (docker-compose.yml, profile `sim`) runs as local processes at simulation
speed 1, so the robot's motions take their real time and the rest of each plan is searched
for as long as the robot executes the steps before it (`robocell.services.cell.rolling`).
The same seeded scrambles run twice, in a cell with rolling on (``ROBOCELL_ROLLING=1``, the
default) and in one with it off. Printed, per cell: cycles and failures, the mean robot time
of the plan as the solver found it and of the plan the robot executed (both from the
profile's costs, as the motion compiler prices them), the executing stage's wall time, and
the rests replaced. Beside them, in the same run, on the cubes the cell read: rob-twophase in
HT and AX modes (50 ms a cube, ``-t 2``; skipped when ../shared/peers is absent), their
plans priced by robocell's motion compiler.

    python bench/cell_rolling.py [--profile six-motor] [--cycles 40] [--seed 20000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from robocell.common.bus import Endpoints, Node
from robocell.common.profile import load_profile
from robocell.deploy.launcher import Launcher, temporary_cell_env
from robocell.services.solver.cube3.motion_compiler import compile_plan
from robocell.tools.cycle import follow_cycle

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_twophase import TwoPhasePeer, source_dir  # noqa: E402  (a sibling bench module)
from robot_rolling import robot_profile  # noqa: E402  (a sibling bench module)

PEER_MILLIS = 50
PEER_THREADS = 2
QUIET = {"broker", "solver", "firmware-sim", "actuator-sim", "vision-sim", "cell", "monitor",
         "foxglove"}


def run_cell(profile: str, rolling: bool, cycles: int, seed: int) -> dict:
    """Cycles of one simulated cell at speed 1: the log's plans and stage times."""
    with temporary_cell_env(profile, 1.0) as env:  # its cycle log: removed after
        env["ROBOCELL_SOLVER_WORKERS"] = "2"
        env["ROBOCELL_ROLLING"] = "1" if rolling else "0"
        launcher = Launcher("sim", env, quiet=QUIET)
        with launcher:
            launcher.start()
            bus = launcher.services[0].environment["ROBOCELL_BUS"]
            with Node("bench-rolling", Endpoints.resolve(bus), track_peers=False) as node:
                failures = []
                for i in range(cycles):
                    node.call("cell", "scramble", {"seed": seed + i}, timeout=10.0)
                    started = node.call("cell", "start", {}, timeout=5.0)
                    result = follow_cycle(node, started["cycle_id"], 300.0, show=False)
                    if not result["ok"]:
                        failures.append(result.get("error"))
                records = node.call("cell", "history", {"limit": cycles},
                                    timeout=10.0)["cycles"]
    return {"failures": failures, "records": [r for r in records if r["result"] == "solved"]}


def summary(profile_name: str, cell: dict) -> dict:
    profile = load_profile(profile_name)
    found, executed, executing, replaced, searches = [], [], [], [], []
    for record in cell["records"]:
        plan = record["plan"]
        found.append(plan.get("found_predicted_ms", plan["predicted_ms"]))
        units = sum(profile.primitive(p).cost for p in plan["primitives"])
        executed.append(profile.cost_ms(units))
        executing.append(record["stages"]["executing"] * 1000)
        rolled = plan.get("rolling") or {}
        replaced.append(rolled.get("replaced", 0))
        searches.append(rolled.get("searches", 0))
    return {"n": len(cell["records"]), "failed": len(cell["failures"]),
            "found": statistics.fmean(found), "executed": statistics.fmean(executed),
            "executing": statistics.fmean(executing), "replaced": sum(replaced),
            "searches": sum(searches), "facelets": [r["facelets"] for r in cell["records"]]}


def peer_mean(mode: str, cubes: list[str], profile_name: str) -> float:
    profile = load_profile(profile_name)
    times = []
    with TwoPhasePeer(mode, PEER_THREADS, PEER_MILLIS) as peer:
        for facelets in cubes:
            moves, _ = peer.solve(facelets)
            times.append(profile.cost_ms(compile_plan(moves, profile)[1]))
    return statistics.fmean(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="six-motor")
    parser.add_argument("--cycles", type=int, default=40)
    parser.add_argument("--seed", type=int, default=20_000)
    args = parser.parse_args()
    if args.cycles < 1:
        parser.error(f"--cycles {args.cycles}: give at least one")
    robot_profile(parser, args.profile)
    started = time.perf_counter()
    on = summary(args.profile, run_cell(args.profile, True, args.cycles, args.seed))
    off = summary(args.profile, run_cell(args.profile, False, args.cycles, args.seed))
    print(f"{args.profile}: {args.cycles} cycles of the simulated cell at speed 1 (seeds "
          f"{args.seed}..{args.seed + args.cycles - 1}), rolling on and off; "
          f"{time.perf_counter() - started:.0f} s")
    base = None
    if source_dir() is None:
        print("rob-twophase: skipped (../shared/peers/rob-twophase is absent; set "
              "ROBOCELL_PEERS to its folder)")
    else:
        cubes = on["facelets"]
        peers = {mode: peer_mean(mode, cubes, args.profile) for mode in ("HT", "AX")}
        base = peers["HT"]
        print(f"rob-twophase on the {len(cubes)} cubes the rolling cell read, {PEER_MILLIS} ms "
              f"a cube, -t {PEER_THREADS}: HT {peers['HT']:,.0f} ms, AX {peers['AX']:,.0f} ms")

    def against(ms: float) -> str:
        return "" if base is None else f"{(ms / base - 1) * 100:+7.1f} %"

    print(f"{'cell':<12} {'cycles':>6} {'failed':>6} {'plan found':>11} {'executed':>10} "
          f"{'vs HT':>8} {'executing stage':>16} {'rests replaced':>15}")
    for name, row in (("rolling on", on), ("rolling off", off)):
        print(f"{name:<12} {row['n']:>6} {row['failed']:>6} {row['found']:>8,.0f} ms "
              f"{row['executed']:>7,.0f} ms {against(row['executed']):>8} "
              f"{row['executing']:>13,.0f} ms {row['replaced']:>6} of {row['searches']:>3} "
              "searches")
    if base is not None:
        print(f"rolling on, executed, against rob-twophase AX: "
              f"{(on['executed'] / peers['AX'] - 1) * 100:+.1f} %")
    return 0 if on["failed"] == off["failed"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
