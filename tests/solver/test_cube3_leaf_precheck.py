"""The phase-1 leaf precheck of the robot-time search (`timed_search.leaf_precheck`): the
corner permutation and slice edges it follows along the path by the move tables are the
cube's, however much of the path changed since it last looked, and the bound it refuses on is
never over the one `phase2_root` would refuse on (so it refuses no leaf phase 2 would take)."""

from __future__ import annotations

import numpy as np

from robocell.common.profile import load_profile
from robocell.common.scramble import random_cubie_state
from robocell.services.solver.cube3 import coord, timed_search
from robocell.services.solver.cube3.defs import N_CORNERS, N_MOVE, N_PERM_4, N_UD_EDGES
from robocell.services.solver.cube3.timed import RobotTimeSearch
from robocell.services.solver.cube3.timed_search import LCO, LSS, MV, VALID_LEAF
from robocell.services.solver.cube3.weighted import corner_slice2, weighted2


def _replayed(T, cp, ep, moves):
    """Corner and slice coordinates after each move, from the permutations (as
    `timed_search.leaf_phase2` works them out)."""
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
        assert not timed_search.leaf_precheck(T, D, W, ds.H2, ints, ds.after, ds.g, sp,
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
