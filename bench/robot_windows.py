"""How far a robot's plans are from the cheapest within short stretches of them, and what
repairing those stretches gives, also inside the search budget.

The robot-time search is two-phase: every plan passes through the subgroup G1, and in the
budget only the cheaper ways into it are tried. Here each plan found in the profile's budget
is looked at a window at a time: for every run of ``--min-window`` to ``--max-window`` blocks
(a block: what the robot does about one axis between moves of others), is there a cheaper
sequence of blocks that does the same to the cube? Meet in the middle: every cube within
``--depth`` blocks of solved is kept with its least cost and the last block of that way, in
an open-addressing hash table keyed by a 64-bit Zobrist hash (with a bit filter before it),
and from the cube a window makes every sequence of up to ``--probe-depth`` blocks is looked
up there, so a window is matched exactly by any sequence of up to ``depth + probe-depth``
blocks. The window whose replacement saves most is replaced (again until none saves); each
replacement is rebuilt from the table, checked on the cube model, and the plan is priced again
by the motion compiler. Every search is split over two solver processes with the whole
budget each, as the solver service does.

With ``--in-budget SHARE`` the repair runs inside the budget instead, as a solver mode would:
each process searches for (1 - SHARE) of the budget and repairs its own plan until the budget
is spent; printed beside plans searched the whole budget, cube by cube.

For robots that never re-orient the cube and make every block of one axis with one primitive
(six-motor), where a sequence costs the sum of its blocks.

    python bench/robot_windows.py [--profile six-motor] [--cubes 40] [--seed 5000]
        [--depth 4] [--probe-depth 2] [--min-window 2] [--max-window 10] [--in-budget SHARE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from robot_rolling import PARTS, _warm, search  # noqa: E402

from robocell.common.cubie import CubieState  # noqa: E402
from robocell.common.moves import apply_to_cubies  # noqa: E402
from robocell.common.notation import Move  # noqa: E402
from robocell.common.profile import Profile, ProfileError, load_profile  # noqa: E402
from robocell.common.scramble import random_cubie_state  # noqa: E402
from robocell.services.solver.cube3.motion_compiler import (  # noqa: E402
    MotionCompileError,
    compile_plan,
    primitive_moves,
    sequence_blocks,
)
from robocell.services.solver.cube3.moves import move_of_index  # noqa: E402
from robocell.services.solver.cube3.robot_time import axial_metric  # noqa: E402
from robocell.services.solver.cube3.robot_time.profile_costs import profile_costs  # noqa: E402

N_KINDS = 45  # 3 axes x 15 ways to turn the two faces of one
SLOTS = 20  # 8 corners (position * 3 + twist), 12 edges (position * 2 + flip)
TABLE_BITS = 22  # slots for the up to 1.26 million cubes of depth 4
FILTER_BITS = 24  # a 2-MB bit filter: most probes never read the 32-MB table
WALK_STEPS = 16  # blocks walked back from a cube to solved before giving up
EMPTY = np.int64(0)


def kind_moves(kind: int) -> list[Move]:
    """The face turns of a block kind."""
    return [move_of_index(m) for m in axial_metric.face_moves_of_kind(kind)]


def encode(state: CubieState) -> np.ndarray:
    return np.concatenate([state.corner_perm.astype(np.int64) * 3 + state.corner_twist,
                           state.edge_perm.astype(np.int64) * 2 + state.edge_flip])


def check_profile(profile: Profile) -> str | None:
    """Why the bench cannot take the profile, or None."""
    if profile.puzzle != "3x3" or profile.search_budget_s is None:
        return "give a 3x3 robot profile with a search_budget_ms (six-motor)"
    costs = profile_costs(profile)
    if costs.start.size != 1 or not costs.reversible:
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


@cache
def _block_effects() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(perm[kind], turn[kind], inverse[kind], zobrist): what each block does to the slots."""
    solved = CubieState.solved(3)
    perm = np.zeros((axial_metric.N_KIND, SLOTS), np.int64)
    turn = np.zeros((axial_metric.N_KIND, SLOTS), np.int64)
    inverse = np.full(axial_metric.N_KIND, -1, np.int64)
    for kind in axial_metric.block_kinds():
        state = apply_to_cubies(solved, kind_moves(int(kind)))
        perm[kind] = np.concatenate([state.corner_perm, state.edge_perm])
        turn[kind] = np.concatenate([state.corner_twist, state.edge_flip])
        r1, r2 = divmod(int(kind) % 16, 4)
        inverse[kind] = (kind // 16) * 16 + (-r1 % 4) * 4 + (-r2 % 4)
    zobrist = np.random.default_rng(20).integers(1, 2**62, (SLOTS, 24), np.int64)
    return perm, turn, inverse, zobrist


_TWIST = np.array([[(v // 3) * 3 + (v % 3 + t) % 3 for t in range(3)] for v in range(24)]
                  + [[(v // 2) * 2 + (v % 2 + t) % 2 for t in range(2)] + [0]
                     for v in range(24)], np.int64)
"""_TWIST[v, t]: corner slot value v twisted by t; _TWIST[24 + v, t]: edge value v flipped."""


@njit(cache=True)
def _apply(s, perm, turn, out):
    for i in range(8):
        out[i] = _TWIST[s[perm[i]], turn[i]]
    for i in range(8, SLOTS):
        out[i] = _TWIST[24 + s[8 + perm[i]], turn[i]]


@njit(cache=True)
def _hash(s, zobrist):
    x = np.int64(0)
    for i in range(SLOTS):
        x ^= zobrist[i, s[i]]
    return x | 1  # never EMPTY


@njit(cache=True)
def _slot(keys, x):
    """The slot holding ``x``, or the empty one where it would go."""
    mask = keys.size - 1
    i = (x ^ (x >> 29)) & mask
    while keys[i] != EMPTY and keys[i] != x:
        i = (i + 1) & mask
    return i


@njit(cache=True)
def _mark(x, bits):
    f = (x >> 8) & (bits.size * 64 - 1)
    bits[f >> 6] |= np.int64(1) << (f & 63)


@njit(cache=True)
def _marked(x, bits):
    f = (x >> 8) & (bits.size * 64 - 1)
    return bits[f >> 6] & (np.int64(1) << (f & 63)) != 0


@njit(cache=True)
def _walk(start, depth, limit, collect, kinds, block_cost, perm, turn, zobrist, keys, costs,
          last, bits, path):
    """Every sequence of up to ``depth`` blocks from ``start``, no two of one axis in a row.
    With ``collect``: each cube reached goes into the table with its least cost and the last
    block of that way. Otherwise: the least cost below ``limit`` of such a sequence C plus the
    table's cost of the cube it reaches, C left in ``path`` (-1 after its end). Returns (cubes
    the table gained, that least cost or ``limit``)."""
    stack = np.empty((depth + 1, SLOTS), np.int64)
    nxt = np.zeros(depth + 1, np.int64)
    spent = np.zeros(depth + 1)
    axis = np.full(depth + 1, -1, np.int64)
    trail = np.full(depth + 1, -1, np.int64)
    stack[0] = start
    best, kept = limit, 0
    x = _hash(start, zobrist)
    i = _slot(keys, x)
    if collect and keys[i] == EMPTY:
        keys[i], costs[i], last[i] = x, 0.0, -1
        _mark(x, bits)
        kept += 1
    elif not collect and keys[i] == x and costs[i] < best:
        best = costs[i]
        path[:] = -1
    sp = 0
    while sp >= 0:
        j = nxt[sp]
        if j >= kinds.size or sp == depth:
            sp -= 1
            continue
        nxt[sp] = j + 1
        k = kinds[j]
        if k // 16 == axis[sp]:
            continue
        c = spent[sp] + block_cost[k]
        if c >= best:
            continue
        # the block's effect and the hash, inline (no array views in the hot loop)
        x = np.int64(0)
        for i in range(8):
            v = _TWIST[stack[sp, perm[k, i]], turn[k, i]]
            stack[sp + 1, i] = v
            x ^= zobrist[i, v]
        for i in range(8, SLOTS):
            v = _TWIST[24 + stack[sp, 8 + perm[k, i]], turn[k, i]]
            stack[sp + 1, i] = v
            x ^= zobrist[i, v]
        x |= 1
        trail[sp] = k
        if collect:
            i = _slot(keys, x)
            if keys[i] == EMPTY:
                keys[i], costs[i], last[i] = x, c, k
                _mark(x, bits)
                kept += 1
            elif c < costs[i]:
                costs[i], last[i] = c, k
        elif _marked(x, bits):
            i = _slot(keys, x)
            if keys[i] == x and c + costs[i] < best:
                best = c + costs[i]
                path[:] = -1
                path[:sp + 1] = trail[:sp + 1]
        spent[sp + 1] = c
        axis[sp + 1] = k // 16
        nxt[sp + 1] = 0
        sp += 1
    return kept, best


@njit(cache=True)
def _window_cube(plan, start, stop, perm, turn, out):
    """The cube blocks ``plan[start:stop]`` make from solved."""
    tmp = np.empty(SLOTS, np.int64)
    for i in range(SLOTS):
        out[i] = i * 3 if i < 8 else (i - 8) * 2
    for b in range(start, stop):
        _apply(out, perm[plan[b]], turn[plan[b]], tmp)
        out[:] = tmp


class WindowTable:
    """The cubes near solved of one profile's block costs (module docstring)."""

    def __init__(self, block_cost: np.ndarray, depth: int) -> None:
        self.block_cost = np.ascontiguousarray(block_cost, dtype=np.float64)
        self.kinds = axial_metric.block_kinds()
        self.perm, self.turn, self.inverse, self.zobrist = _block_effects()
        size = 1 << TABLE_BITS
        self.keys = np.zeros(size, np.int64)
        self.costs = np.zeros(size, np.float64)
        self.last = np.zeros(size, np.int64)
        self.bits = np.zeros(1 << (FILTER_BITS - 6), np.int64)
        solved = encode(CubieState.solved(3))
        self.size, _ = self._walk(solved, depth, np.inf, True, np.zeros(depth + 1, np.int64))
        self.depth = depth

    def _walk(self, start, depth, limit, collect, path):
        return _walk(start, depth, limit, collect, self.kinds, self.block_cost, self.perm,
                     self.turn, self.zobrist, self.keys, self.costs, self.last, self.bits, path)

    def plan_cost(self, plan: np.ndarray) -> float:
        return float(self.block_cost[plan].sum())

    def replacement(self, plan: np.ndarray, start: int, stop: int,
                    probe_depth: int) -> list[int] | None:
        """Block kinds doing what ``plan[start:stop]`` does, for less; None when the table
        and the probes find nothing cheaper."""
        target = np.empty(SLOTS, np.int64)
        _window_cube(plan, start, stop, self.perm, self.turn, target)
        limit = self.plan_cost(plan[start:stop]) - 1e-9
        path = np.full(probe_depth + 1, -1, np.int64)
        _, best = self._walk(target, probe_depth, limit, False, path)
        if not np.isfinite(best) or best >= limit:
            return None
        # target * C = solved * D, so the window's cube is D then C's inverse
        probe = [int(k) for k in path if k >= 0]
        reached = target.copy()
        tmp = np.empty(SLOTS, np.int64)
        for k in probe:
            _apply(reached, self.perm[k], self.turn[k], tmp)
            reached[:] = tmp
        way = self._walk_back(reached)
        if way is None:
            return None
        out = way + [int(self.inverse[k]) for k in reversed(probe)]
        check = np.empty(SLOTS, np.int64)
        _window_cube(np.array(out, np.int64), 0, len(out), self.perm, self.turn, check)
        if not np.array_equal(check, target):
            return None  # two cubes of one hash
        return out

    def _walk_back(self, cube: np.ndarray) -> list[int] | None:
        """The table's cheapest blocks from solved to ``cube``."""
        out: list[int] = []
        tmp = np.empty(SLOTS, np.int64)
        cube = cube.copy()
        # each block back lowers the cost: a few more steps than the depth at most
        for _ in range(WALK_STEPS):
            x = _hash(cube, self.zobrist)
            slot = _slot(self.keys, x)
            if self.keys[slot] != x:
                return None
            k = int(self.last[slot])
            if k < 0:
                return out[::-1]
            out.append(k)
            _apply(cube, self.perm[self.inverse[k]], self.turn[self.inverse[k]], tmp)
            cube[:] = tmp
        return None


def repair(moves: list[Move], table: WindowTable, deadline: float, windows: tuple[int, int, bool],
           probe_depth: int) -> tuple[list[Move], list[str]]:
    """(the plan's face turns with cheaper windows in, what was replaced). Each round takes
    the window whose replacement saves most, until none saves or ``deadline``
    (`time.perf_counter`) passes; blocks of one axis that meet at a window's ends join.
    ``windows``: the fewest and most blocks a window holds, and whether only the windows at
    the plan's ends are looked at."""
    kinds = np.array(sequence_blocks(moves)[0], np.int64)
    replaced: list[str] = []
    while True:
        cost = table.plan_cost(kinds)
        best: tuple[float, np.ndarray, str] | None = None
        for start, width in _windows(kinds.size, *windows):
            if time.perf_counter() >= deadline:
                break
            out = table.replacement(kinds, start, start + width, probe_depth)
            if out is None:
                continue
            new = _joined(np.concatenate([kinds[:start], np.array(out, np.int64),
                                          kinds[start + width:]]))
            new_cost = table.plan_cost(new)
            if new_cost < cost - 1e-9 and (best is None or new_cost < best[0]):
                what = (f"blocks {start + 1}-{start + width} of {kinds.size}: "
                        f"{_text(kinds[start:start + width])} -> {_text(out)}")
                best = (new_cost, new, what)
        if best is None:
            return [m for k in kinds for m in kind_moves(int(k))], replaced
        kinds = best[1]
        replaced.append(best[2])


def _text(kinds) -> str:
    return " ".join(str(m) for k in kinds for m in kind_moves(int(k)))


def _windows(n: int, fewest: int, most: int, at_ends: bool = False) -> list[tuple[int, int]]:
    """(start, width) of every window, nearest an end of the plan first: there the
    two-phase search leaves what a repair finds (phase 2 at the end, or at the start when
    the inverse cube was searched), so a repair cut short by its deadline looks there.
    ``at_ends``: only the windows that hold the plan's first or last block."""
    out = [(start, width) for width in range(fewest, min(most, n) + 1)
           for start in range(n - width + 1)
           if not at_ends or start == 0 or start + width == n]
    return sorted(out, key=lambda w: (min(w[0], n - w[0] - w[1]), w[1]))


def _joined(kinds: np.ndarray) -> np.ndarray:
    """Blocks of one axis in a row joined into one (and dropped when they cancel)."""
    return np.array(sequence_blocks([m for k in kinds for m in kind_moves(int(k))])[0],
                    np.int64)


@cache
def _table(profile_path: str, depth: int) -> WindowTable:
    return WindowTable(profile_costs(load_profile(profile_path)).cost[:, 0, 0], depth)


def _search_repaired(facelets: str, profile_path: str, budget_s: float, share: float,
                     part: int, depth: int, probe_depth: int, windows: tuple[int, int, bool]
                     ) -> tuple[list[str], float]:
    """One process's share of a split search that keeps ``share`` of the budget to repair
    its own plan (the table built before the clock starts)."""
    from robocell.services.solver.cube3.solver import solve_3x3

    profile = load_profile(profile_path)
    table = _table(profile_path, depth)
    started = time.perf_counter()
    plan = solve_3x3(facelets, profile, timeout=budget_s * (1 - share), part=(part, PARTS))
    moves, _ = repair(primitive_moves(list(plan.primitives), profile), table,
                      started + budget_s, windows, probe_depth)
    return compile_plan(moves, profile)


def _warm_repaired(profile_path: str, depth: int, probe_depth: int) -> None:
    _warm(profile_path)
    _table(profile_path, depth).replacement(np.array([1, 17], np.int64), 0, 2, probe_depth)


def in_budget(pool: ProcessPoolExecutor, args: argparse.Namespace, profile: Profile) -> None:
    """Plans searched the whole budget beside plans searched (1 - share) of it and repaired
    in the rest, cube by cube, the order alternating."""
    budget_s, share = profile.search_budget_s, args.in_budget
    windows = (args.min_window, args.max_window, args.at_ends)
    for f in [pool.submit(_warm_repaired, str(profile.path), args.depth, args.probe_depth)
              for _ in range(PARTS)]:
        f.result()
    started = time.perf_counter()
    plain, repaired = [], []
    for i in range(args.cubes):
        facelets = random_cubie_state(3, args.seed + i).to_facelets()
        for first in ((True, False) if i % 2 == 0 else (False, True)):
            if first:
                plain.append(search(pool, facelets, profile, budget_s)[1])
                continue
            futures = [pool.submit(_search_repaired, facelets, str(profile.path), budget_s,
                                   share, k, args.depth, args.probe_depth, windows)
                       for k in range(PARTS)]
            repaired.append(min(f.result()[1] for f in futures))
    diff = [b - a for a, b in zip(plain, repaired, strict=True)]
    print(f"{profile.name}: {args.cubes} seeded random cubes (seed {args.seed}), "
          f"{budget_s * 1000:g} ms a cube on {PARTS} processes; windows of {windows[0]} to "
          f"{windows[1]} blocks{' at the ends' if windows[2] else ''}, sequences of up to "
          f"{args.depth + args.probe_depth} blocks; "
          f"{time.perf_counter() - started:.0f} s")
    print(f"{'plan':52s} {'mean robot time':>16s} {'change':>8s}")
    a, b = profile.cost_ms(statistics.mean(plain)), profile.cost_ms(statistics.mean(repaired))
    print(f"{'searched the whole budget':52s} {a:13,.0f} ms {'':>8s}")
    print(f"{f'searched {1 - share:.0%} of it, repaired in the rest':52s} {b:13,.0f} ms "
          f"{(b / a - 1) * 100:+7.2f} %")
    print(f"cube by cube: repaired cheaper on {sum(d < 0 for d in diff)}, dearer on "
          f"{sum(d > 0 for d in diff)}, the same on {sum(d == 0 for d in diff)}")


def after_budget(pool: ProcessPoolExecutor, args: argparse.Namespace, profile: Profile) -> None:
    """Plans found in the budget, repaired with no time limit."""
    budget_s = profile.search_budget_s
    windows = (args.min_window, args.max_window, args.at_ends)
    started = time.perf_counter()
    table = WindowTable(profile_costs(profile).cost[:, 0, 0], args.depth)
    built = time.perf_counter() - started
    table.replacement(np.array([1, 17], np.int64), 0, 2, args.probe_depth)  # compiled first
    plans, repaired, counts, seconds = [], [], [], []
    for f in [pool.submit(_warm, str(profile.path)) for _ in range(PARTS)]:
        f.result()
    for i in range(args.cubes):
        state = random_cubie_state(3, args.seed + i)
        primitives, cost = search(pool, state.to_facelets(), profile, budget_s)
        moves = primitive_moves(primitives, profile)
        t = time.perf_counter()
        better, what = repair(moves, table, np.inf, windows, args.probe_depth)
        seconds.append(time.perf_counter() - t)
        if not apply_to_cubies(state, better).is_solved():
            raise RuntimeError(f"cube {i}: the repaired plan does not solve the cube")
        new_cost = compile_plan(better, profile)[1]
        plans.append(profile.cost_ms(cost))
        repaired.append(profile.cost_ms(new_cost))
        counts.append(len(what))
        if what:
            print(f"  cube {i} (seed {args.seed + i}): {cost:g} -> {new_cost:g} units, "
                  f"{len(what)} window(s) replaced ({'; '.join(what)})", flush=True)
    plain, local = statistics.mean(plans), statistics.mean(repaired)
    gains = sorted((a - b for a, b in zip(plans, repaired, strict=True)), reverse=True)
    print(f"{profile.name}: {args.cubes} seeded random cubes (seed {args.seed}), plans "
          f"searched {budget_s * 1000:g} ms on {PARTS} processes; windows of {windows[0]} to "
          f"{windows[1]} blocks{' at the ends' if windows[2] else ''} matched by sequences of "
          f"up to {args.depth + args.probe_depth} blocks ({table.size:,} cubes within {args.depth} "
          f"of solved, built in {built:.1f} s); {time.perf_counter() - started:.0f} s")
    print(f"{'plan':40s} {'mean robot time':>16s} {'change':>8s}")
    print(f"{'as found in the budget':40s} {plain:13,.0f} ms {'':>8s}")
    print(f"{'its windows replaced by cheaper ones':40s} {local:13,.0f} ms "
          f"{(local / plain - 1) * 100:+7.1f} %")
    print(f"plans bettered: {sum(1 for n in counts if n)} of {args.cubes}; largest gains "
          f"{', '.join(f'{g:,.0f}' for g in gains[:3])} ms; repair "
          f"{statistics.median(seconds) * 1000:.1f} ms a cube (median), "
          f"{max(seconds) * 1000:.1f} ms at most")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="six-motor")
    parser.add_argument("--cubes", type=int, default=40)
    parser.add_argument("--seed", type=int, default=5000)
    parser.add_argument("--depth", type=int, default=4,
                        help="blocks from solved kept in the table (1-4)")
    parser.add_argument("--probe-depth", type=int, default=2,
                        help="blocks tried from a window's cube (1-4; 1,396 sequences at 2)")
    parser.add_argument("--min-window", type=int, default=2,
                        help="shortest window looked at, in blocks (2 or more)")
    parser.add_argument("--max-window", type=int, default=10,
                        help="longest window looked at, in blocks (at least --min-window)")
    parser.add_argument("--at-ends", action="store_true",
                        help="only windows that hold the plan's first or last block (what an "
                             "endgame at phase 2's end could reach)")
    parser.add_argument("--in-budget", type=float, default=None, metavar="SHARE",
                        help="repair inside the budget: search 1 - SHARE of it (0 < SHARE < 1)")
    args = parser.parse_args()
    if args.cubes < 1:
        parser.error(f"--cubes {args.cubes}: give at least one cube")
    if not 1 <= args.depth <= 4:
        parser.error(f"--depth {args.depth}: give 1 to 4 (4 keeps 1.19 million cubes)")
    if not 1 <= args.probe_depth <= 4:
        parser.error(f"--probe-depth {args.probe_depth}: give 1 to 4 (4 tries 1.26 million "
                     "sequences a window)")
    if args.min_window < 2 or args.max_window < args.min_window:
        parser.error(f"--min-window {args.min_window} --max-window {args.max_window}: give "
                     "2 or more, the longest at least the shortest")
    if args.in_budget is not None and not 0 < args.in_budget < 1:
        parser.error(f"--in-budget {args.in_budget:g}: give a share between 0 and 1 (0.1)")
    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        parser.error(str(exc))
    why = check_profile(profile)
    if why:
        parser.error(f"--profile {args.profile}: {why}")
    with ProcessPoolExecutor(PARTS) as pool:
        if args.in_budget is None:
            after_budget(pool, args, profile)
        else:
            in_budget(pool, args, profile)


if __name__ == "__main__":
    main()
