"""`robocell calibrate --out FILE.toml` (without ``--overlap``): run a timing program on
the running cell's robot (simulated or real), fit its motors and primitive costs to what it
measured (`robocell.robot.calibration`), write the profile with the fitted values and print
declared against measured side by side. The command line itself (one `robocell calibrate`,
its ``--overlap`` probe on the firmware simulator too) is
`robocell.services.firmware.calibrate_cli`.

The timing program is plans of the profile's primitives, each plan every primitive
``--runs`` times in a seeded random order, handed to the actuator like any plan; then, on a
robot with single-motor turns on two axes, one plan per probe overlap of perpendicular turns
cutting corners by it (the plan's ``overlap_deg``: the motors' tails, which separate their
acceleration, settle and start latency; `robocell.robot.calibration.tail_program`). The
robot reports each line's time in ``actuator.result``. The cube is left as the program leaves
it: a cycle afterwards reads and solves it.
"""

from __future__ import annotations

import argparse
import math
import queue
import random
import uuid
from typing import Any

from robocell.common.bus import CommandFailed, Node
from robocell.common.bus.options import add_remote_options, endpoints_of
from robocell.common.profile import Profile, ProfileError, load_profile, parse_profile, profile_path
from robocell.errors import CommandError
from robocell.robot.calibration import (
    PROBE_OVERLAP_DEG,
    Observations,
    calibrated_text,
    fit,
    tail_program,
    with_overlap,
)
from robocell.robot.motion import load_motors
from robocell.robot.timing import predicted_plan_ms

PLAN_TIMEOUT_S = 600.0
"""Longest one timing plan may take (a real robot at 1x, a few hundred primitives)."""
DEFAULT_RUNS, DEFAULT_PLANS, DEFAULT_SEED = 6, 2, 1
MAX_TAIL_DEG = 15.0
"""Largest ``--tail-deg``: a tail plan measures a motor's braking, not how far a cube takes
a cut corner (that is ``--overlap``'s search, in simulation)."""


def add_timing_options(p: argparse.ArgumentParser) -> None:
    """The timing program's options (and the bus to reach the running cell)."""
    add_remote_options(p)
    p.add_argument("--runs", type=int, default=None,
                   help=f"times each primitive runs (default {DEFAULT_RUNS})")
    p.add_argument("--plans", type=int, default=None,
                   help=f"plans the runs are split over (default {DEFAULT_PLANS})")
    p.add_argument("--seed", type=int, default=None,
                   help=f"seed of the primitives' order (default {DEFAULT_SEED})")
    p.add_argument("--tail-deg", type=tail_degrees, default=None, metavar="DEG",
                   help="the largest corner the tail plans cut (they separate each motor's "
                        "acceleration, settle and start latency): default "
                        f"{PROBE_OVERLAP_DEG[-1]:g}, or the profile's own overlap_deg if "
                        "smaller; 0 for a robot or cube that must never cut a corner (the "
                        "fit then has whole moves only)")


def tail_degrees(text: str) -> float:
    """``--tail-deg``: a small angle, 0 (no tail plan) to `MAX_TAIL_DEG`."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= MAX_TAIL_DEG:
        raise argparse.ArgumentTypeError(
            f"{text}: the tail plans' largest corner cut, 0 (none) to {MAX_TAIL_DEG:g} "
            "degrees")
    return value


def timing_options_given(args: argparse.Namespace) -> list[str]:
    """The timing program's options given on the command line."""
    return [f"--{name.replace('_', '-')}" for name in ("runs", "plans", "seed", "tail_deg")
            if getattr(args, name) is not None]


def timing_program(profile: Profile, runs: int, plans: int, seed: int) -> list[list[str]]:
    """``plans`` plans holding every primitive ``runs`` times between them, each in a seeded
    random order (so each follows many others)."""
    rng = random.Random(seed)
    names = [p.name for p in profile.primitives]
    program: list[list[str]] = [[] for _ in range(plans)]
    for run in range(runs):
        program[run % plans] += names
    for plan in program:
        rng.shuffle(plan)
    return [plan for plan in program if plan]


def run_plan(node: Node, results: queue.Queue, profile: Profile, primitives: list[str],
             overlap_deg: float | None = None) -> dict[str, Any]:
    """Execute one plan of ``primitives`` on the robot (every stepper cutting corners by
    ``overlap_deg`` if given): its ``actuator.result``."""
    plan_id = f"calibrate-{uuid.uuid4().hex[:8]}"
    size = profile.size or 3
    plan = {"plan_id": plan_id, "puzzle": f"{size}x{size}x{size}", "profile": profile.name,
            "facelets": "", "primitives": primitives, "face_turns": [],
            "predicted_ms": predicted_plan_ms(profile if overlap_deg is None
                                              else with_overlap(profile, overlap_deg),
                                              primitives), "search": {}}
    if overlap_deg is not None:
        plan["overlap_deg"] = overlap_deg
    try:
        node.call("actuator", "execute", {"plan": plan}, timeout=10.0)
    except CommandFailed as exc:
        raise CommandError(f"the actuator refused the timing program: {exc}") from None
    while True:
        try:
            result = results.get(timeout=PLAN_TIMEOUT_S)
        except queue.Empty:
            raise CommandError(f"no result of timing plan {plan_id} within "
                               f"{PLAN_TIMEOUT_S:.0f} s: check the actuator") from None
        if result.get("plan_id") == plan_id:
            break
    if not result["ok"]:
        raise CommandError(f"timing plan {plan_id} stopped: {result.get('error')}")
    if result.get("line_ms") is None:
        raise CommandError("the robot does not report its motion times (protocol 1 "
                           "firmware): update the firmware")
    return result


def side_by_side(profile: Profile, fitted_motors: dict, observed: Observations,
                 new: Profile) -> list[str]:
    """Declared against measured, one line per motor and per primitive."""
    declared = load_motors(profile)
    lines = [f"{'motor':<10} {'declared':>40}   {'fitted':>40}   (speed accel settle +latency)"]
    for name, motor in declared.items():
        fitted = fitted_motors[name]

        def show(m: Any) -> str:
            accel = f" {m.accel_dps2:8.0f} dps2" if m.kind == "stepper" else " " * 14
            return (f"{m.speed_dps:7.1f} dps{accel} {m.settle_ms:6.1f} ms "
                    f"+{m.start_latency_ms:4.1f}")
        lines.append(f"{name:<10} {show(motor):>40}   {show(fitted):>40}")
    lines.append(f"{'primitive':<10} {'declared ms':>12} {'measured ms':>12} {'runs':>5}")
    for prim in profile.primitives:
        runs = observed.primitives.get(prim.name, [])
        measured = new.cost_ms(new.primitive(prim.name).cost)
        lines.append(f"{prim.name:<10} {profile.cost_ms(prim.cost):>12.1f} {measured:>12.1f} "
                     f"{len(runs):>5}")
    return lines


def calibrate_timing(args: argparse.Namespace) -> int:
    """`robocell calibrate --out FILE.toml`: time the running cell's robot, write the
    fitted profile."""
    try:
        profile = load_profile(args.profile)
        text = profile_path(args.profile).read_text(encoding="utf-8")
        load_motors(profile)
    except (ProfileError, OSError) as exc:
        raise CommandError(f"--profile {args.profile}: {exc}") from None
    name = args.out.stem
    runs = DEFAULT_RUNS if args.runs is None else args.runs
    plans = DEFAULT_PLANS if args.plans is None else args.plans
    if runs < 2 or plans < 1:
        raise CommandError("--runs: at least 2 (a spread needs two), --plans at least 1")
    observed = Observations()
    results: queue.Queue = queue.Queue()
    program = timing_program(profile, runs, plans,
                             DEFAULT_SEED if args.seed is None else args.seed)
    with Node("calibrate", endpoints_of(args), track_peers=False) as node:
        node.subscribe("actuator.result", lambda env: results.put(env.payload))
        for number, primitives in enumerate(program, 1):
            print(f"timing plan {number}/{len(program)}: {len(primitives)} primitives",
                  flush=True)
            result = run_plan(node, results, profile, primitives)
            observed.add_plan(profile, primitives, result["line_ms"], result["primitive_ms"])
        seed = DEFAULT_SEED if args.seed is None else args.seed
        max_deg = PROBE_OVERLAP_DEG[-1] if args.tail_deg is None else args.tail_deg
        for overlap_deg, primitives in tail_program(profile, seed, max_deg=max_deg):
            print(f"tail plan at {overlap_deg:g} deg overlap: {len(primitives)} primitives",
                  flush=True)
            result = run_plan(node, results, profile, primitives, overlap_deg)
            observed.add_plan(with_overlap(profile, overlap_deg), primitives,
                              result["line_ms"], result["primitive_ms"])
    fitted = fit(profile, observed)
    written = calibrated_text(profile, text, fitted, name)
    new = parse_profile(written, args.out)
    args.out.write_text(written, encoding="utf-8")
    for line in side_by_side(profile, fitted.motors, observed, new):
        print(line)
    print(f"wrote {args.out} (profile {name}); run the cell with --profile {args.out}")
    return 0
