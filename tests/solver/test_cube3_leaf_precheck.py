"""Where the robot-time search refuses without a full look. The phase-1 leaf precheck
(`phase2_search.leaf_precheck`): the corner permutation and slice edges the stack carries for
it are the cube's, and the bound it refuses on is never over the one `phase2_root` would
refuse on (so it refuses no leaf phase 2 would take). A node's children tested all at once
on its word (`phase1_search.word_passing`) as they would be one by one, and what visiting
those that pass reads started ahead (`phase1_search.prefetch_children`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.common.profile import load_profile
from robocell.common.scramble import random_cubie_state
from robocell.services.solver.cube3 import coord
from robocell.services.solver.cube3.defs import N_CORNERS, N_MOVE, N_PERM_4, N_UD_EDGES
from robocell.services.solver.cube3.robot_time import block_costs, phase1_search
from robocell.services.solver.cube3.robot_time.axial_metric import FACE_KIND
from robocell.services.solver.cube3.robot_time.cost_lookups import (
    corner_slice2,
    move_bound,
    weighted2,
)
from robocell.services.solver.cube3.robot_time.driver import RobotTimeSearch
from robocell.services.solver.cube3.robot_time.search_state import COUNTERS
from robocell.services.solver.cube3.search import allowed_after


def _replayed(T, cp, ep, moves):
    """Corner and slice coordinates after each move, from the permutations (as
    `phase2_search.leaf_phase2` works them out)."""
    out = []
    for m in moves:
        cp = cp[T.move_corner_perm[m]]
        ep = ep[T.move_edge_perm[m]]
        out.append((coord.get_corners(cp), coord.get_slice_sorted(ep)))
    return out


def test_the_stacks_corners_and_slice_edges_are_the_cubes() -> None:
    """Stopped many times along the way, every level of every direction's phase-1 stack carries
    the corner and slice coordinates of the cube after its path."""
    search = RobotTimeSearch(random_cubie_state(3, 4), load_profile("six-motor"))
    T = search.T
    checked = 0
    for _ in range(25):
        for _ in search.solutions(0.002):
            pass
        for ds in search.directions:
            cp = np.asarray(ds.direction.start_cp, np.int64)
            ep = np.asarray(ds.direction.start_ep, np.int64)
            levels, sp = ds.stack.levels, int(ds.control["top"])
            assert (levels[0]["corners"], levels[0]["slice_sorted"]) == (
                coord.get_corners(cp), coord.get_slice_sorted(ep))
            path = [int(m) for m in levels[1:sp + 1]["move"]]
            for level, (corners, slice_sorted) in enumerate(_replayed(T, cp, ep, path), 1):
                assert (levels[level]["corners"], levels[level]["slice_sorted"]) == (
                    corners, slice_sorted), level
                checked += 1
    assert checked > 300


def test_the_corner_bound_is_never_over_phase2s() -> None:
    search = RobotTimeSearch(random_cubie_state(3, 4), load_profile("six-motor"))
    T, W = search.T, search.W
    rng = np.random.default_rng(6)
    under = 0
    for _ in range(4000):
        corners = int(rng.integers(N_CORNERS))
        ud_edges = int(rng.integers(N_UD_EDGES))
        slice_perm = int(rng.integers(N_PERM_4))
        last = int(rng.integers(N_MOVE))
        ext = int(last // 3 < 3 and rng.integers(2))
        got = corner_slice2(T, W, corners, slice_perm, last, ext)
        full = weighted2(T, W, corners, ud_edges, slice_perm, last, ext, -np.inf)
        assert got <= full, (corners, ud_edges, slice_perm, last, ext)
        if not ext:
            assert got == W.corner_slice[corners * N_PERM_4 + slice_perm]
        under += got < full
    assert under > 0  # the edges' half is what it leaves out


def test_a_nodes_children_are_refused_on_its_word_all_at_once_as_one_by_one() -> None:
    """`phase1_search.word_passing` lets through exactly the children the word bound puts
    under the threshold and the best, and leaves the least bound over the threshold."""
    search = RobotTimeSearch(random_cubie_state(3, 9), load_profile("six-motor"))
    W = search.W
    checked = 0
    for ds in search.directions:
        levels, before, after, exits = ds.stack.levels, ds.stack.before, ds.stack.after, \
            ds.prices.exits
        # the root (no block open), then a child of a U turn (a D or L turn may join it)
        for last in (-1, 0):
            if last >= 0:
                levels[1] = levels[0]
                levels[1]["move"] = last
                levels[1]["kind"] = FACE_KIND[last]
                after[1] = after[0] + 10.0
                before[1] = after[0]
            sp = 0 if last < 0 else 1
            node = levels[sp]
            bounds = {}
            for m in range(N_MOVE):
                if not allowed_after(last, m):
                    continue
                joins = last >= 0 and m // 3 % 3 == last // 3 % 3
                kind = block_costs.merge_kind(node["kind"], m) if joins else FACE_KIND[m]
                g = block_costs.chain_least(before[sp] if joins else after[sp], exits, kind)
                bounds[m] = g + move_bound(W, node["word"], node["word_sym"],
                                           node["entry_ticks"], m)
            for threshold, best in ((min(bounds.values()), np.inf),
                                    (np.median(list(bounds.values())), np.inf),
                                    (max(bounds.values()), np.median(list(bounds.values())))):
                ds.control["next_threshold"] = np.inf
                counters = np.zeros(1, COUNTERS)
                got = phase1_search.word_passing(W, exits, node, before[sp], after[sp],
                                                 threshold, best, ds.control, counters[0])
                want = {m for m, f in bounds.items()
                        if f <= threshold + 1e-9 and f < best - 1e-9}
                assert {m for m in range(N_MOVE) if got >> m & 1} == want
                assert counters[0]["refused"] == len(bounds) - len(want)
                over = [f for f in bounds.values() if f > threshold + 1e-9]
                assert ds.control["next_threshold"] == (min(over) if over else np.inf)
                checked += 1
    assert checked >= 18


def test_the_reads_started_ahead_are_prefetches_of_the_passing_childrens_entries() -> None:
    """`phase1_search.prefetch_children` starts the reads of each passing child's flip-slice
    class, then (``words``) of its move word and its corner and slice-edge moves, with
    prefetch instructions, which hold nothing up and change nothing: the compiled code has
    them, and the stack is as it was."""
    search = RobotTimeSearch(random_cubie_state(3, 11), load_profile("six-motor"))
    T, W = search.T, search.W
    for _ in search.solutions(0.005):
        pass
    ds = search.directions[0]
    levels = ds.stack.levels
    before = levels.copy()
    # compiled afresh: code loaded from numba's cache keeps no assembly to look at
    fn = njit(_nrt=False)(phase1_search.prefetch_children.py_func)
    for sp in range(int(ds.control["top"]) + 1):
        for words in (False, True):
            fn(T, W, levels[sp], (1 << N_MOVE) - 1, words)
    assert np.array_equal(levels, before)
    asm = fn.inspect_asm(fn.signatures[0])
    assert asm.count("prefetch") >= 4  # the class; the word, the corner move, the slice move
