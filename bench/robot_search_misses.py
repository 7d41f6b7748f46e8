"""Does the robot-time search lose plans it reached? Checked against rob-twophase's plans.

For each seeded random cube, rob-twophase (one thread; AXQT mode by default, its metric the
nearest to six-motor's costs) and robocell's robot-time search (all its directions in one
process, from no bound) search for the same time. Where the peer's plan is the cheaper in the
profile's costs, it is split, in each of the search's directions, into its phase-1 part (up
to its last turn outside G1) and the rest within G1. If that phase-1 part costs no more than
a phase-1 threshold the direction had finished, the search reached its leaf, under a best
dearer than the peer's plan, and phase 2 should have found a finish at least as cheap: such a
cube is a *miss*, a plan the search lost (this is how phase 2's loss of the finishes between
its last threshold and the best was found). Cut-short phase-2 searches (`PHASE2_CAP`) are
counted beside, as they may lose a finish by design. A miss count above 0 is a defect.

    python bench/robot_search_misses.py [--profile six-motor] [--cubes 30] [--budget-ms 50]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peer_twophase import MODES, TwoPhasePeer, source_dir  # noqa: E402

from robocell.common.cubie import from_facelets  # noqa: E402
from robocell.common.notation import Move, simplify_moves  # noqa: E402
from robocell.common.profile import load_profile  # noqa: E402
from robocell.common.scramble import random_facelets  # noqa: E402
from robocell.services.solver.cube3.motion_compiler import compile_plan  # noqa: E402
from robocell.services.solver.cube3.robot_time.driver import RobotTimeSearch  # noqa: E402
from robocell.services.solver.cube3.solver import warm_up  # noqa: E402

ORDER = "URFDLB"
"""Canonical order within a block: U before D, R before L, F before B (as the search turns)."""


def blocks(moves: list[Move]) -> list[Move]:
    """Runs of one axis merged (`simplify_moves`; the peer writes a half turn as two quarter
    turns in its quarter-turn metric) and each run put in the search's canonical order."""
    out: list[Move] = []
    for move in simplify_moves(moves):
        run = []
        while out and out[-1].axis == move.axis:
            run.append(out.pop())
        out.extend(sorted([*run, move], key=lambda m: ORDER.index(m.name)))
    return out


def in_g1(move: Move) -> bool:
    return move.name in "UD" or move.quarter_turns == 2


def phase1_cost(plan: list[Move], direction, profile) -> float:
    """Cost of the plan's phase-1 part seen from ``direction`` (its turns up to the last one
    outside G1 in that direction's frame), priced in the cube's frame."""
    back = {v: k for k, v in direction.face_map.items()}
    seen = [Move(back[m.name], m.quarter_turns) for m in plan]
    if direction.inverse:
        seen = [m.inverse() for m in reversed(seen)]
    seen = blocks(seen)  # canonical in the direction's frame, as its search turns
    last = max((i for i, m in enumerate(seen) if not in_g1(m)), default=-1)
    part = [Move(direction.face_map[m.name], m.quarter_turns) for m in seen[:last + 1]]
    return compile_plan(part, profile)[1] if part else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="six-motor")
    parser.add_argument("--cubes", type=int, default=30)
    parser.add_argument("--budget-ms", type=int, default=50)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--mode", default="AXQT", choices=sorted(MODES))
    args = parser.parse_args(argv)
    if source_dir() is None:
        print("rob-twophase not found (../shared/peers/rob-twophase): nothing to check against")
        return 0
    profile = load_profile(args.profile)
    warm_up()
    for _ in RobotTimeSearch(from_facelets(random_facelets(3, 1)), profile).solutions(0.01):
        pass
    theirs, ours = [], []
    cheaper = misses = capped = 0
    with TwoPhasePeer(args.mode, 1, args.budget_ms) as peer:
        for i in range(args.cubes):
            facelets = random_facelets(3, np.random.default_rng([args.seed, i]))
            plan = blocks(peer.solve(facelets)[0])
            peer_cost = compile_plan(plan, profile)[1]
            search = RobotTimeSearch(from_facelets(facelets), profile)
            best = np.inf
            for _, cost in search.solutions(args.budget_ms / 1000):
                best = cost
            theirs.append(peer_cost)
            ours.append(best)
            capped += int(search.counters[0]["capped"])
            if peer_cost >= best - 1e-9:
                continue
            cheaper += 1
            lost = [ds.direction for ds in search.directions
                    if phase1_cost(plan, ds.direction, profile)
                    <= ds.control["previous_threshold"] + 1e-9]
            if lost:
                misses += 1
                names = ", ".join((d.rotation or "as given") + (" inverse" if d.inverse else "")
                                  for d in lost)
                print(f"  cube {i}: the peer's plan costs {peer_cost:g} against {best:g}; its "
                      f"phase-1 leaf lay inside a finished threshold ({names})")
    print(f"{args.profile}, {args.cubes} seeded cubes, {args.budget_ms} ms each, one process "
          f"(robocell: all {len(search.directions)} directions, from no bound) against "
          f"rob-twophase {args.mode} on one thread")
    print(f"  mean cost: robocell {np.mean(ours):.1f}, rob-twophase {np.mean(theirs):.1f} units")
    print(f"  the peer's plan cheaper: {cheaper} cubes; of them lost by the search (its "
          f"phase-1 leaf inside a finished threshold): {misses}")
    print(f"  phase-2 searches cut short at PHASE2_CAP: {capped}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
