"""Where the robot-time search refuses without a full look. The phase-1 leaf precheck
(`timed_phase2.leaf_precheck`): the corner permutation and slice edges it follows along the
path by the move tables are the cube's, however much of the path changed since it last
looked, and the bound it refuses on is never over the one `phase2_root` would refuse on (so it
refuses no leaf phase 2 would take). A node's children tested all at once on its word
(`timed_search.word_passing`) as they would be one by one."""

from __future__ import annotations

import numpy as np

from robocell.common.profile import load_profile
from robocell.common.scramble import random_cubie_state
from robocell.services.solver.cube3 import coord, timed_blocks, timed_phase2, timed_search
from robocell.services.solver.cube3.defs import N_CORNERS, N_MOVE, N_PERM_4, N_UD_EDGES
from robocell.services.solver.cube3.search import allowed_after
from robocell.services.solver.cube3.timed import RobotTimeSearch
from robocell.services.solver.cube3.timed_blocks import (
    KIND,
    LCO,
    LSS,
    MV,
    VALID_LEAF,
    WHERE,
    WORD,
    WSYM,
)
from robocell.services.solver.cube3.weighted import corner_slice2, move_bound, weighted2


def _replayed(T, cp, ep, moves):
    """Corner and slice coordinates after each move, from the permutations (as
    `timed_phase2.leaf_phase2` works them out)."""
    out = []
    for m in moves:
        cp = cp[T.move_corner_perm[m]]
        ep = ep[T.move_edge_perm[m]]
        out.append((coord.get_corners(cp), coord.get_slice_sorted(ep)))
    return out


def test_the_followed_corners_and_slice_edges_are_the_cubes() -> None:
    search = RobotTimeSearch(random_cubie_state(3, 4), load_profile("six-motor"))
    T, D, W = search.T, search.D, search.W
    ds = search.directions[0]
    cp = np.asarray(ds.direction.start_cp, np.int64)
    ep = np.asarray(ds.direction.start_ep, np.int64)
    ints, ctl = ds.ints, ds.ctl
    assert ctl[VALID_LEAF] == 0
    assert (ints[0, LCO], ints[0, LSS]) == (coord.get_corners(cp), coord.get_slice_sorted(ep))
    rng = np.random.default_rng(5)
    moves = [int(m) for m in rng.integers(0, N_MOVE, 14)]
    checked = 0
    for _ in range(40):
        # a new tail from a random level on, as the search's stack rewrites it
        keep = int(rng.integers(0, len(moves)))
        moves[keep:] = [int(m) for m in rng.integers(0, N_MOVE, len(moves) - keep)]
        ints[1:len(moves) + 1, MV] = moves
        ctl[VALID_LEAF] = min(ctl[VALID_LEAF], keep)
        sp = int(rng.integers(keep + 1, len(moves) + 1))
        # best = -inf: refused at once, after the coordinates are brought up to date
        assert not timed_phase2.leaf_precheck(T, D, W, ds.H2, ints, ds.after, ds.g, sp,
                                              -np.inf, ctl)
        assert ctl[VALID_LEAF] == sp
        for level, (corners, slice_sorted) in enumerate(_replayed(T, cp, ep, moves[:sp]), 1):
            assert (ints[level, LCO], ints[level, LSS]) == (corners, slice_sorted), level
            checked += 1
    assert checked > 200


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
    """`timed_search.word_passing` lets through exactly the children the word bound puts
    under the threshold and the best, and leaves the least bound over the threshold."""
    search = RobotTimeSearch(random_cubie_state(3, 9), load_profile("six-motor"))
    W = search.W
    checked = 0
    for ds in search.directions:
        ints, fctl = ds.ints, ds.fctl
        # the root (no block open), then a child of a U turn (a D or L turn may join it)
        for last in (-1, 0):
            if last >= 0:
                ints[1] = ints[0]
                ints[1, MV] = last
                ints[1, KIND] = timed_blocks.FACE_KIND[last]
                ds.after[1] = ds.after[0] + 10.0
                ds.before[1] = ds.after[0]
            sp = 0 if last < 0 else 1
            bounds = {}
            for m in range(N_MOVE):
                if not allowed_after(last, m):
                    continue
                joins = last >= 0 and m // 3 % 3 == last // 3 % 3
                kind = timed_blocks.merge_kind(ints[sp, KIND], m) if joins else \
                    timed_blocks.FACE_KIND[m]
                gc = timed_blocks.chain_least(ds.before[sp] if joins else ds.after[sp],
                                              ds.exits, kind)
                bounds[m] = gc + move_bound(W, ints[sp, WORD], ints[sp, WSYM], ints[sp, WHERE],
                                            m)
            for c1, best in ((min(bounds.values()), np.inf), (np.median(list(bounds.values())),
                                                              np.inf),
                             (max(bounds.values()), np.median(list(bounds.values())))):
                fctl[timed_blocks.NEXT_C1] = np.inf
                counters = np.zeros(4, np.int64)
                got = timed_search.word_passing(W, ds.exits, ints, ds.before, ds.after, sp,
                                                c1, best, fctl, counters)
                want = {m for m, f in bounds.items() if f <= c1 + 1e-9 and f < best - 1e-9}
                assert {m for m in range(N_MOVE) if got >> m & 1} == want
                assert counters[timed_blocks.REFUSED] == len(bounds) - len(want)
                over = [f for f in bounds.values() if f > c1 + 1e-9]
                assert fctl[timed_blocks.NEXT_C1] == (min(over) if over else np.inf)
                checked += 1
    assert checked >= 18
