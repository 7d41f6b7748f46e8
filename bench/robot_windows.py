"""How far a robot's plans are from the cheapest within short stretches of them.

The robot-time search is two-phase: every plan passes through the subgroup G1, and in the
budget only the cheaper ways into it are tried. Here each plan found in the profile's budget
is looked at a window at a time: for every run of up to ``--max-window`` blocks (a block: the
turns of one axis between turns of another), is there a cheaper sequence of primitives that
does the same to the cube? Meet in the middle: every cube within ``--depth`` primitives of
solved, with its least cost, is kept (sorted by a 64-bit hash), and from the cube the window
makes, every sequence of up to ``--depth`` primitives is looked up there, so a window of up to
twice ``--depth`` primitives is matched exactly. A cheaper one replaces the window (again until
none is found), is checked on the cube model, and the plan is priced again by the motion
compiler. Every search is split over two solver processes with the whole budget each, as the
solver service does.

It measures how much a local repair would give, not a mode of the solver: it takes seconds a
cube. For robots that never re-orient the cube and make every block of one axis with one
primitive (six-motor), where a sequence costs the sum of its primitives.

    python bench/robot_windows.py [--profile six-motor] [--cubes 40] [--seed 5000]
        [--depth 4] [--max-window 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from robot_rolling import PARTS, _warm, search  # noqa: E402

from robocell.common.cubie import CubieState  # noqa: E402
from robocell.common.moves import apply_to_cubies  # noqa: E402
from robocell.common.profile import Profile, ProfileError, load_profile  # noqa: E402
from robocell.common.scramble import random_cubie_state  # noqa: E402
from robocell.services.solver.cube3.robot import (  # noqa: E402
    MotionCompileError,
    compile_plan,
    primitive_moves,
    sequence_blocks,
)
from robocell.services.solver.cube3.timed import profile_costs  # noqa: E402

N_KINDS = 45  # 3 axes x 15 ways to turn the two faces of one
SLOTS = 20  # 8 corners (position * 3 + twist), 12 edges (position * 2 + flip)
SOLVED = CubieState.solved(3)


def encode(state: CubieState) -> np.ndarray:
    return np.concatenate([state.corner_perm.astype(np.int64) * 3 + state.corner_twist,
                           state.edge_perm.astype(np.int64) * 2 + state.edge_flip])


class Blocks:
    """The profile's primitives as blocks: what each does to the cubies, its cost and axis."""

    def __init__(self, profile: Profile) -> None:
        self.names: list[str] = []
        perm, turn, cost, axis = [], [], [], []
        for p in profile.primitives:
            kinds, _ = sequence_blocks(list(p.moves))  # raises on a re-orienting primitive
            if len(kinds) != 1:
                continue
            state = apply_to_cubies(SOLVED, list(p.moves))
            self.names.append(p.name)
            perm.append(np.concatenate([state.corner_perm, state.edge_perm]))
            turn.append(np.concatenate([state.corner_twist, state.edge_flip]))
            cost.append(float(p.cost))
            axis.append(kinds[0] // 16)
        self.perm = np.array(perm, np.int64)
        self.turn = np.array(turn, np.int64)
        self.cost = np.array(cost)
        self.axis = np.array(axis, np.int64)
        self.zobrist = np.random.default_rng(1).integers(0, 2**62, (SLOTS, 24), np.int64)
        states = [apply_to_cubies(SOLVED, list(profile.primitive(n).moves))
                  for n in self.names]
        self.inverse = []
        for name, state in zip(self.names, states, strict=True):
            undo = [j for j, other in enumerate(states) if other == state.inverse()]
            if not undo:
                raise ValueError(f"primitive {name} has no inverse among the primitives")
            self.inverse.append(undo[0])


def check_profile(profile: Profile) -> str | None:
    """Why the bench cannot take the profile, or None."""
    if profile.puzzle != "3x3" or profile.search_budget_s is None:
        return "give a 3x3 robot profile with a search_budget_ms (six-motor)"
    if profile_costs(profile).start.size != 1:
        return ("its robot re-orients the cube or has a sequencing rule, so a window's cost "
                "depends on what comes before it; give one that never does (six-motor)")
    try:
        kinds = {sequence_blocks(list(p.moves))[0][0] for p in profile.primitives}
    except (MotionCompileError, IndexError):
        return "a primitive turns no layer or re-orients the cube; give six-motor"
    if len(kinds) != N_KINDS:
        return (f"its primitives make {len(kinds)} of the {N_KINDS} blocks of one axis in one "
                "move each; give one that makes all (six-motor)")
    return None


@njit(cache=True)
def _apply(s, perm, turn, out):
    for i in range(8):
        v = s[perm[i]]
        out[i] = (v // 3) * 3 + (v % 3 + turn[i]) % 3
    for i in range(8, SLOTS):
        v = s[8 + perm[i]]
        out[i] = (v // 2) * 2 + (v % 2 + turn[i]) % 2


@njit(cache=True)
def _hash(s, zobrist):
    x = np.int64(0)
    for i in range(SLOTS):
        x ^= zobrist[i, s[i]]
    return x


@njit(cache=True)
def _walk(start, depth, limit, perm, turn, cost, axis, zobrist, keys, costs, hashes, found):
    """Every sequence of up to ``depth`` primitives from ``start``, no two of one axis in a
    row, cheaper than ``limit``. With ``hashes`` empty: each cube reached and its cost go to
    ``keys``/``costs``. Otherwise: the least cost + hashes' cost over the cubes reached that
    ``hashes`` holds, below ``limit``, its sequence left in ``found``. Returns (cubes kept,
    that least)."""
    stack = np.empty((depth + 1, SLOTS), np.int64)
    nxt = np.zeros(depth + 1, np.int64)
    spent = np.zeros(depth + 1)
    last = np.full(depth + 1, -1, np.int64)
    path = np.full(depth + 1, -1, np.int64)
    collect = hashes.size == 0
    best = limit
    n = 0
    stack[0] = start
    sp = 0
    x = _hash(start, zobrist)
    if collect:
        keys[0], costs[0] = x, 0.0
        n = 1
    else:
        i = np.searchsorted(hashes, x)
        if i < hashes.size and hashes[i] == x and costs[i] < best:
            best = costs[i]
            found[:] = -1
    while sp >= 0:
        k = nxt[sp]
        if k >= perm.shape[0] or sp == depth:
            sp -= 1
            continue
        nxt[sp] = k + 1
        if axis[k] == last[sp]:
            continue
        c = spent[sp] + cost[k]
        if c >= best:
            continue
        _apply(stack[sp], perm[k], turn[k], stack[sp + 1])
        spent[sp + 1] = c
        last[sp + 1] = axis[k]
        path[sp] = k
        nxt[sp + 1] = 0
        x = _hash(stack[sp + 1], zobrist)
        if collect:
            keys[n], costs[n] = x, c
            n += 1
        else:
            i = np.searchsorted(hashes, x)
            if i < hashes.size and hashes[i] == x and c + costs[i] < best:
                best = c + costs[i]
                found[:] = -1
                found[:sp + 1] = path[:sp + 1]
        sp += 1
    return n, best


class Windows:
    def __init__(self, profile: Profile, depth: int) -> None:
        self.profile = profile
        self.depth = depth
        self.b = Blocks(profile)
        count = 1 + sum(len(self.b.names) * 30 ** (d - 1) for d in range(1, depth + 1))
        keys, costs = np.empty(count, np.int64), np.empty(count)
        none = np.empty(0, np.int64)
        n, _ = _walk(encode(SOLVED), depth, np.inf, *self._arrays(), keys, costs, none,
                  np.empty(1, np.int64))
        order = np.lexsort((costs[:n], keys[:n]))
        keys, costs = keys[:n][order], costs[:n][order]
        first = np.ones(n, np.bool_)
        first[1:] = keys[1:] != keys[:-1]
        self.keys, self.costs = keys[first], costs[first]
        self.solved_key = np.array([_hash(encode(SOLVED), self.b.zobrist)])

    def _arrays(self):
        return self.b.perm, self.b.turn, self.b.cost, self.b.axis, self.b.zobrist

    def _cheaper(self, moves: list) -> list | None:
        """Moves doing what ``moves`` do, for less, from a sequence of up to twice the depth;
        None when there is none."""
        limit = compile_plan(moves, self.profile)[1] - 1e-9
        target = apply_to_cubies(SOLVED, moves)
        found = np.full(self.depth + 1, -1, np.int64)
        unused = np.empty(0)
        _, best = _walk(encode(target), self.depth, limit, *self._arrays(), unused, self.costs,
                     self.keys, found)
        if best >= limit:
            return None
        # target * C lies within depth of solved: D from there to solved, so moves = (C D)^-1
        c = [int(k) for k in found if k >= 0]
        there = target
        for k in c:
            there = apply_to_cubies(there, list(self.profile.primitive(self.b.names[k]).moves))
        rest = np.full(self.depth + 1, -1, np.int64)
        _walk(encode(there), self.depth, np.inf, *self._arrays(), unused, np.zeros(1),
              self.solved_key, rest)
        seq = c + [int(k) for k in rest if k >= 0]
        out = [m for k in reversed(seq)
               for m in self.profile.primitive(self.b.names[self.b.inverse[k]]).moves]
        if apply_to_cubies(SOLVED, out) != target:
            return None  # two cubes of one hash: not the window's cube after all
        return out

    def repair(self, moves: list, max_window: int) -> tuple[list, list[str]]:
        """(the plan's moves with cheaper windows in, what was replaced)."""
        replaced: list[str] = []
        cost = compile_plan(moves, self.profile)[1]
        while True:
            kinds, members = sequence_blocks(moves)
            best = None
            for w in range(2, min(max_window, len(kinds)) + 1):
                for i in range(len(kinds) - w + 1):
                    window = [moves[j] for b in range(i, i + w) for j in members[b]]
                    cheaper = self._cheaper(window)
                    if cheaper is None:
                        continue
                    before = [moves[j] for b in range(i) for j in members[b]]
                    after = [moves[j] for b in range(i + w, len(kinds)) for j in members[b]]
                    new = before + cheaper + after
                    new_cost = compile_plan(new, self.profile)[1]
                    if new_cost < cost - 1e-9 and (best is None or new_cost < best[1]):
                        what = (f"blocks {i + 1}-{i + w} of {len(kinds)}: "
                                f"{' '.join(map(str, window))} -> {' '.join(map(str, cheaper))}")
                        best = (new, new_cost, what)
            if best is None:
                return moves, replaced
            moves, cost, what = best
            replaced.append(what)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="six-motor")
    parser.add_argument("--cubes", type=int, default=40)
    parser.add_argument("--seed", type=int, default=5000)
    parser.add_argument("--depth", type=int, default=4,
                        help="primitives on each side of the meet in the middle (1-5)")
    parser.add_argument("--max-window", type=int, default=10,
                        help="longest window looked at, in blocks (2 or more)")
    args = parser.parse_args()
    if args.cubes < 1:
        parser.error(f"--cubes {args.cubes}: give at least one cube")
    if not 1 <= args.depth <= 5:
        parser.error(f"--depth {args.depth}: give 1 to 5 (5 keeps about 37 million cubes)")
    if args.max_window < 2:
        parser.error(f"--max-window {args.max_window}: give 2 or more")
    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        parser.error(str(exc))
    why = check_profile(profile)
    if why:
        parser.error(f"--profile {args.profile}: {why}")
    budget_s = profile.search_budget_s
    started = time.perf_counter()
    windows = Windows(profile, args.depth)
    built = time.perf_counter() - started
    plans, repaired, counts, seconds = [], [], [], []
    with ProcessPoolExecutor(PARTS) as pool:
        for f in [pool.submit(_warm, str(profile.path)) for _ in range(PARTS)]:
            f.result()
        for i in range(args.cubes):
            state = random_cubie_state(3, args.seed + i)
            primitives, cost = search(pool, state.to_facelets(), profile, budget_s)
            moves = primitive_moves(primitives, profile)
            t = time.perf_counter()
            better, what = windows.repair(moves, args.max_window)
            n = len(what)
            seconds.append(time.perf_counter() - t)
            if not apply_to_cubies(state, better).is_solved():
                raise RuntimeError(f"cube {i}: the repaired plan does not solve the cube")
            new_cost = compile_plan(better, profile)[1]
            plans.append(profile.cost_ms(cost))
            repaired.append(profile.cost_ms(new_cost))
            counts.append(n)
            if n:
                print(f"  cube {i} (seed {args.seed + i}): {cost:g} -> {new_cost:g} units, "
                      f"{n} window(s) replaced ({'; '.join(what)})", flush=True)
    plain, local = statistics.mean(plans), statistics.mean(repaired)
    gains = sorted((a - b for a, b in zip(plans, repaired, strict=True)), reverse=True)
    print(f"{profile.name}: {args.cubes} seeded random cubes (seed {args.seed}), plans "
          f"searched {budget_s * 1000:g} ms on {PARTS} processes; windows of up to "
          f"{args.max_window} blocks matched by sequences of up to {2 * args.depth} "
          f"primitives ({windows.keys.size:,} cubes within {args.depth} of solved, built in "
          f"{built:.1f} s); {time.perf_counter() - started:.0f} s")
    print(f"{'plan':40s} {'mean robot time':>16s} {'change':>8s}")
    print(f"{'as found in the budget':40s} {plain:13,.0f} ms {'':>8s}")
    print(f"{'its windows replaced by cheaper ones':40s} {local:13,.0f} ms "
          f"{(local / plain - 1) * 100:+7.1f} %")
    print(f"plans bettered: {sum(1 for n in counts if n)} of {args.cubes}; largest gains "
          f"{', '.join(f'{g:,.0f}' for g in gains[:3])} ms; repair "
          f"{statistics.median(seconds):.1f} s a cube (median)")


if __name__ == "__main__":
    main()
