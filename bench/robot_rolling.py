"""What the robot would gain if the rest of its plan were searched again while it moves.

Without it the cell waits for the plan (the profile's budget), then executes it whole. Here the
robot is simulated as starting the plan at once and the solver as going on meanwhile: while
the robot executes the primitives up to the first that turns a layer, the rest is searched
again from the cube as the robot will then hold it (colours renamed after the centres, so a
re-orienting robot's frame is the new frame), for as long as those primitives take less a
margin; a cheaper rest replaces the old one. The robot's time is the sum of what it executed.
Every search is split over two solver processes with the whole budget each, as the solver
service does; the robot's motions are not waited for (only the searches take real time).

It measures the searches alone, with no robot; the cell does the same while its robot moves
(`robocell.services.cell.rolling`), measured in `bench/cell_rolling.py`. With ``--first-ms``
the first plan gets another budget than the profile's: whether a shorter first search, the
rest left to the rolling search, ends sooner (search and execution together). Run it on a
quiet machine.

    python bench/robot_rolling.py [--profile six-motor] [--cubes 40] [--seed 2000]
        [--margin-ms 10] [--first-ms MS]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from robocell.common.facelets import relabel_by_centres, solved  # noqa: E402
from robocell.common.moves import apply_to_facelets  # noqa: E402
from robocell.common.profile import Profile, ProfileError, load_profile  # noqa: E402
from robocell.common.scramble import random_cubie_state  # noqa: E402

ROTATIONS = frozenset({"x", "y", "z"})
PARTS = 2


def robot_profile(parser: argparse.ArgumentParser, name: str) -> Profile:
    """The 3x3 robot profile ``--profile`` names; a parser error that says what to give
    when there is none or it has no search budget."""
    try:
        profile = load_profile(name)
    except ProfileError as exc:
        parser.error(str(exc))
    if profile.puzzle != "3x3" or profile.search_budget_s is None:
        parser.error(f"--profile {name}: give a 3x3 robot profile with a "
                     "search_budget_ms (six-motor, tilt-spin)")
    return profile


def _search(facelets: str, profile_name: str, budget_s: float, part: int
            ) -> tuple[list[str], float]:
    from robocell.services.solver.cube3.solver import solve_3x3

    plan = solve_3x3(facelets, profile_name, timeout=budget_s, part=(part, PARTS))
    return list(plan.primitives), float(plan.cost)


def _warm(profile_name: str) -> None:
    _search(random_cubie_state(3, 1).to_facelets(), profile_name, 0.01, 0)


def search(pool: ProcessPoolExecutor, facelets: str, profile: Profile, budget_s: float
           ) -> tuple[list[str], float]:
    """The cheaper of the two processes' plans, each searching its share for the budget."""
    futures = [pool.submit(_search, facelets, str(profile.path), budget_s, k)
               for k in range(PARTS)]
    return min((f.result() for f in futures), key=lambda plan: plan[1])


def rolled(pool: ProcessPoolExecutor, facelets: str, profile: Profile, budget_s: float,
           margin_s: float) -> tuple[float, float, int]:
    """(cost of the plan found in the budget, cost of what the robot executed, rests
    replaced), in profile units."""
    from robocell.services.solver.cube3.motion_compiler import primitive_moves

    rest, cost = search(pool, facelets, profile, budget_s)
    first, executed, replaced = cost, 0.0, 0
    while rest:
        k = 0
        while k < len(rest):  # up to and including the first primitive that turns a layer
            k += 1
            if any(m.name not in ROTATIONS for m in primitive_moves([rest[k - 1]], profile)):
                break
        head, rest = rest[:k], rest[k:]
        spent = sum(profile.primitive(p).cost for p in head)
        executed += spent
        cost -= spent
        facelets = relabel_by_centres(
            apply_to_facelets(facelets, primitive_moves(head, profile)))
        if not rest:
            break
        window = spent * profile.unit_ms / 1000 - margin_s
        if window > 0:
            again, again_cost = search(pool, facelets, profile, window)
            if again_cost < cost - 1e-9:
                rest, cost, replaced = again, again_cost, replaced + 1
    if facelets != solved(3):  # relabelled after the centres: solved in any orientation
        raise RuntimeError(f"the executed primitives leave {facelets}, not a solved cube")
    return first, executed, replaced


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="six-motor")
    parser.add_argument("--cubes", type=int, default=40)
    parser.add_argument("--seed", type=int, default=2000)
    parser.add_argument("--first-ms", type=float, default=None,
                        help="budget of the first plan (default: the profile's)")
    parser.add_argument("--margin-ms", type=float, default=10.0,
                        help="the rest's search ends this long before the robot needs it")
    args = parser.parse_args()
    if args.cubes < 1:
        parser.error(f"--cubes {args.cubes}: give at least one cube")
    if args.margin_ms < 0:
        parser.error(f"--margin-ms {args.margin_ms:g}: give 0 or more")
    profile = robot_profile(parser, args.profile)
    if args.first_ms is not None and args.first_ms <= 0:
        parser.error(f"--first-ms {args.first_ms:g}: give a budget above 0 ms")
    budget_s = profile.search_budget_s if args.first_ms is None else args.first_ms / 1000
    with ProcessPoolExecutor(PARTS) as pool:
        for f in [pool.submit(_warm, str(profile.path)) for _ in range(PARTS)]:
            f.result()
        started = time.perf_counter()
        firsts, executed, replaced = [], [], []
        for i in range(args.cubes):
            facelets = random_cubie_state(3, args.seed + i).to_facelets()
            a, b, n = rolled(pool, facelets, profile, budget_s, args.margin_ms / 1000)
            firsts.append(profile.cost_ms(a))
            executed.append(profile.cost_ms(b))
            replaced.append(n)
    plain, rolling = statistics.mean(firsts), statistics.mean(executed)
    print(f"{profile.name}: {args.cubes} seeded random cubes (seed {args.seed}), first plan "
          f"searched {budget_s * 1000:g} ms on {PARTS} processes, the rest searched again "
          f"while the robot moves (margin {args.margin_ms:g} ms); "
          f"{time.perf_counter() - started:.0f} s")
    print(f"{'plan':44s} {'mean robot time':>16s} {'change':>8s}")
    print(f"{'executed as found in the budget':44s} {plain:13,.0f} ms {'':>8s}")
    print(f"{'its rest searched again while the robot moves':44s} {rolling:13,.0f} ms "
          f"{(rolling / plain - 1) * 100:+7.1f} %")
    print(f"{'first search and execution, rest searched again':44s} "
          f"{budget_s * 1000 + rolling:13,.0f} ms")
    print(f"rests replaced: {sum(replaced)} in {args.cubes} cubes "
          f"(mean {statistics.mean(replaced):.1f} a cube)")


if __name__ == "__main__":
    main()
