"""The two-phase search: IDA* to G1 feeding IDA* within G1, from six directions at once.

Each *direction* is the cube seen along one of the three axes (a whole-cube rotation with
the colours renamed after the centres), or the inverse of that cube; a solution of any of
them gives one of the original cube. The phase-1 search of each direction is an explicit-stack
depth-first search whose whole state is a few small integer arrays, so it can stop after a
budget of nodes and resume exactly where it stopped: the driver `TwoPhaseSearch` gives the six
directions turns of `NODE_SLICE` nodes until the time budget is spent, and after every
solution lowers the length bound (to the best length - 1, or, when collecting candidates for
a robot, to the best length + ``keep_within``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from robocell.common.cubie import CubieState, from_facelets
from robocell.common.facelets import FACES, centre_facelets, solved
from robocell.common.moves import apply_to_facelets
from robocell.common.notation import Move, simplify_moves
from robocell.services.solver.cube3 import coord
from robocell.services.solver.cube3.defs import (
    FIRST_SLICE_EDGE,
    MAX_LENGTH,
    N_CORNER,
    N_EDGE,
    N_FLIP,
    N_MOVE,
    N_PERM_4,
    N_PHASE2_MOVE,
    N_TWIST,
    N_UD_EDGES,
    PHASE2_MOVES,
)
from robocell.services.solver.cube3.moves import move_of_index
from robocell.services.solver.cube3.pruning import mod3, next_depth
from robocell.services.solver.cube3.tables import SYM_BITS, TwoPhaseTables, load_tables

FIRST_LENGTH_BOUND = 21
"""Length bound before any solution is known: every cube has a two-phase solution this
short, and the search finds one within a millisecond or so."""
PATIENCE_S = 0.05
"""Past the budget with no solution yet, the length bound grows by one every this long."""
NODE_SLICE = 4000
"""Phase-1 nodes a direction may visit before the driver looks at the clock again."""
DIRECTION_ROTATIONS = ("", "x", "z")
"""Whole-cube rotations that bring each axis to U-D (none: U-D, x: F-B, z: R-L)."""

P2_MOVES = np.array(PHASE2_MOVES, dtype=np.int64)
IS_PHASE2_MOVE = np.zeros(N_MOVE, dtype=np.bool_)
IS_PHASE2_MOVE[list(PHASE2_MOVES)] = True

SYM_MASK = (1 << SYM_BITS) - 1

# counters in the ``stats`` array of `search_direction`
PHASE1_TRIED, PHASE1_EXPANDED, PHASE2_NODES, N_FOUND = 0, 1, 2, 3
N_STATS = 4
MAX_FOUND = 32
"""Solutions one call of `search_direction` may return (several only when collecting)."""

# status codes of `search_direction`
BUDGET_SPENT, FOUND, EXHAUSTED = 0, 1, 2


@njit(cache=True)
def allowed_after(prev, m):
    """Canonical order: no two turns of one face in a row, and of opposite faces U-D, R-L,
    F-B only in that order."""
    if prev < 0:
        return True
    face = m // 3
    prev_face = prev // 3
    return face != prev_face and prev_face - face != 3


@njit(cache=True)
def phase1_residue(T, twist, flip, slc):
    classsym = np.int64(T.flipslice_classsym[np.int64(slc) * N_FLIP + flip])
    index = (classsym >> SYM_BITS) * N_TWIST + T.twist_conj[twist, classsym & SYM_MASK]
    return mod3(T.phase1_pruning, index)


@njit(cache=True)
def phase2_residue(T, corners, ud_edges):
    index = (np.int64(T.corner_classidx[corners]) * N_UD_EDGES
             + T.ud_edges_conj[ud_edges, T.corner_sym[corners]])
    return mod3(T.phase2_pruning, index)


@njit(cache=True)
def phase1_distance(T, twist, flip, slc):
    """Exact moves to G1: walk down the residues to the goal and count the steps."""
    depth = 0
    while twist != 0 or flip != 0 or slc != 0:
        residue = phase1_residue(T, twist, flip, slc)
        for m in range(N_MOVE):
            t1 = T.twist_move[twist, m]
            f1 = T.flip_move[flip, m]
            s1 = T.slice_move[slc, m]
            if phase1_residue(T, t1, f1, s1) == (residue + 2) % 3:
                twist, flip, slc = t1, f1, s1
                depth += 1
                break
    return depth


@njit(cache=True)
def phase2_distance(T, corners, ud_edges):
    """Exact phase-2 moves to corners and U/D edges solved (slice edges ignored)."""
    depth = 0
    while corners != 0 or ud_edges != 0:
        residue = phase2_residue(T, corners, ud_edges)
        for m in P2_MOVES:
            c1 = T.corners_move[corners, m]
            u1 = T.ud_edges_move[ud_edges, m]
            if phase2_residue(T, c1, u1) == (residue + 2) % 3:
                corners, ud_edges = c1, u1
                depth += 1
                break
    return depth


@njit(cache=True)
def record(path, length, found, found_length, counter):
    """Copy path[:length] into the next free row of ``found``."""
    n = counter[N_FOUND]
    if n < found.shape[0]:
        found[n, :length] = path[:length]
        found_length[n] = length
        counter[N_FOUND] = n + 1


@njit(cache=True)
def phase2_search(T, corners, ud_edges, slice_perm, max_depth, path, offset, work, counter,
                  collect, found, found_length):
    """Phase-2 continuations (in path[offset:]) of at most ``max_depth`` moves, each whole
    solution recorded in ``found``: only the shortest, or with ``collect`` every one (until
    ``found`` is full). Returns the shortest length, or -1 when there is none."""
    if T.cornslice_depth[corners * N_PERM_4 + slice_perm] > max_depth:
        return -1
    h = phase2_distance(T, corners, ud_edges)
    if h > max_depth:
        return -1
    lower = max(h, np.int64(T.cornslice_depth[corners * N_PERM_4 + slice_perm]))
    if lower == 0:
        record(path, offset, found, found_length, counter)
        return 0
    shortest = -1
    prev_root = path[offset - 1] if offset > 0 else -1
    c_st = work[0]
    u_st = work[1]
    s_st = work[2]
    d_st = work[3]
    k_st = work[4]
    for depth in range(lower, max_depth + 1):
        c_st[0] = corners
        u_st[0] = ud_edges
        s_st[0] = slice_perm
        d_st[0] = h
        k_st[0] = 0
        sp = 0
        while sp >= 0:
            k = k_st[sp]
            if k >= N_PHASE2_MOVE:
                sp -= 1
                continue
            k_st[sp] = k + 1
            m = P2_MOVES[k]
            if sp > 0:
                if not allowed_after(path[offset + sp - 1], m):
                    continue
            elif not allowed_after(prev_root, m) and not (m // 3 == prev_root // 3
                                                           and m % 3 == 1):
                # a half turn of the face phase 1 ended with merges into one quarter turn:
                # "R R2" is "R'", the other phase-1 solution of the pair
                continue
            counter[PHASE2_NODES] += 1
            togo = depth - sp - 1
            c1 = T.corners_move[c_st[sp], m]
            s1 = T.slice_sorted_move[s_st[sp], m]
            if T.cornslice_depth[np.int64(c1) * N_PERM_4 + s1] > togo:
                continue
            u1 = T.ud_edges_move[u_st[sp], m]
            d1 = next_depth(d_st[sp], d_st[sp] % 3, phase2_residue(T, c1, u1))
            if d1 > togo:
                continue
            path[offset + sp] = m
            if togo == 0:
                record(path, offset + depth, found, found_length, counter)
                if not collect or counter[N_FOUND] >= found.shape[0]:
                    return depth
                if shortest < 0:
                    shortest = depth
                continue
            sp += 1
            c_st[sp] = c1
            u_st[sp] = u1
            s_st[sp] = s1
            d_st[sp] = d1
            k_st[sp] = 0
    return shortest


@njit(cache=True)
def phase2_from_leaf(T, start_cp, start_ep, path, d1, max_total, work, counter, collect, found,
                     found_length):
    """Replay the phase-1 moves on the permutations, then search phase 2."""
    cp = work[5, :N_CORNER]
    ep = work[6, :N_EDGE]
    tmp = work[7, :N_EDGE]
    for i in range(N_CORNER):
        cp[i] = start_cp[i]
    for i in range(N_EDGE):
        ep[i] = start_ep[i]
    for j in range(d1):
        m = path[j]
        for i in range(N_CORNER):
            tmp[i] = cp[T.move_corner_perm[m, i]]
        for i in range(N_CORNER):
            cp[i] = tmp[i]
        for i in range(N_EDGE):
            tmp[i] = ep[T.move_edge_perm[m, i]]
        for i in range(N_EDGE):
            ep[i] = tmp[i]
    corners = coord.get_corners(cp)
    ud_edges = coord.get_ud_edges(ep)
    for i in range(FIRST_SLICE_EDGE, N_EDGE):
        tmp[i - FIRST_SLICE_EDGE] = ep[i] - FIRST_SLICE_EDGE
    slice_perm = coord.perm_rank(tmp, N_EDGE - FIRST_SLICE_EDGE)
    return phase2_search(T, corners, ud_edges, slice_perm, max_total - d1, path, d1, work,
                         counter, collect, found, found_length)


@njit(cache=True)
def expand_phase1(T, twist, flip, slc, dist, prev, togo, children, level):
    """Fill children[level] with the moves (and resulting twist, flip, slice, distance) that
    can still reach G1 in ``togo`` moves - exactly G1, through a move leaving G1, when
    ``togo`` is 0. Returns their number and the number of moves tried. The full-table reads
    come in a second loop of independent loads, which the processor overlaps."""
    ch_move = children[level, 0]
    ch_twist = children[level, 1]
    ch_flip = children[level, 2]
    ch_slice = children[level, 3]
    ch_dist = children[level, 4]
    n = 0
    tried = 0
    for m in range(N_MOVE):
        if not allowed_after(prev, m):
            continue
        tried += 1
        t1 = T.twist_move[twist, m]
        s1 = T.slice_move[slc, m]
        f1 = T.flip_move[flip, m]
        if togo == 0:
            if t1 != 0 or f1 != 0 or s1 != 0 or IS_PHASE2_MOVE[m]:
                continue
        elif (T.slice_twist_depth[np.int64(s1) * N_TWIST + t1] > togo
              or T.slice_flip_depth[np.int64(s1) * N_FLIP + f1] > togo):
            continue
        ch_move[n] = m
        ch_twist[n] = t1
        ch_flip[n] = f1
        ch_slice[n] = s1
        n += 1
    if togo == 0:
        for j in range(n):
            ch_dist[j] = 0
        return n, tried
    residue = dist % 3
    for j in range(n):
        ch_dist[j] = next_depth(dist, residue,
                                phase1_residue(T, ch_twist[j], ch_flip[j], ch_slice[j]))
    kept = 0
    for j in range(n):
        if ch_dist[j] <= togo:
            ch_move[kept] = ch_move[j]
            ch_twist[kept] = ch_twist[j]
            ch_flip[kept] = ch_flip[j]
            ch_slice[kept] = ch_slice[j]
            ch_dist[kept] = ch_dist[j]
            kept += 1
    return kept, tried


@njit(cache=True)
def search_direction(T, root, start_cp, start_ep, state, children, max_total, budget, path,
                     work, stats, collect, found, found_length):
    """Run one direction's phase-1 IDA* for about ``budget`` nodes, resuming from ``state``
    (d1, sp, then per level the number of children and the next one to visit) and the
    per-level child lists in ``children``.

    Returns (status, solution length, nodes): FOUND with stats[N_FOUND] solutions in
    ``found`` (the shortest of the leaf, or with ``collect`` all within the bound),
    EXHAUSTED when every phase-1 depth up to ``max_total`` is done, or BUDGET_SPENT.
    """
    counter = stats
    counter[:] = 0
    d1 = state[0]
    sp = state[1]
    n_ch = state[2:2 + MAX_LENGTH + 1]
    pos = state[3 + MAX_LENGTH:]
    while True:
        if counter[PHASE1_TRIED] >= budget:
            state[0] = d1
            state[1] = sp
            return BUDGET_SPENT, 0, counter[PHASE1_TRIED]
        if sp < 0:
            if d1 + 1 > max_total:
                state[0] = d1
                state[1] = -1
                return EXHAUSTED, 0, counter[PHASE1_TRIED]
            d1 += 1
            if d1 == 0:
                found_any = phase2_from_leaf(T, start_cp, start_ep, path, 0, max_total, work,
                                             counter, collect, found, found_length)
                if found_any >= 0:
                    state[0] = d1
                    state[1] = -1
                    return FOUND, found_any, counter[PHASE1_TRIED]
                continue
            n, tried = expand_phase1(T, root[0], root[1], root[2], root[3], -1, d1 - 1,
                                     children, 0)
            counter[PHASE1_TRIED] += tried
            n_ch[0] = n
            pos[0] = 0
            sp = 0
        if d1 > max_total:
            sp = -1
            continue
        j = pos[sp]
        if j >= n_ch[sp]:
            sp -= 1
            continue
        pos[sp] = j + 1
        togo = d1 - sp - 1
        if togo == 0:
            for level in range(sp + 1):
                path[level] = children[level, 0, pos[level] - 1]
            found_any = phase2_from_leaf(T, start_cp, start_ep, path, d1, max_total, work,
                                         counter, collect, found, found_length)
            if found_any >= 0:
                state[0] = d1
                state[1] = sp
                return FOUND, d1 + found_any, counter[PHASE1_TRIED]
            continue
        counter[PHASE1_EXPANDED] += 1
        n, tried = expand_phase1(T, children[sp, 1, j], children[sp, 2, j],
                                 children[sp, 3, j], children[sp, 4, j],
                                 children[sp, 0, j], togo - 1, children, sp + 1)
        counter[PHASE1_TRIED] += tried
        sp += 1
        n_ch[sp] = n
        pos[sp] = 0


@dataclass
class Direction:
    """One way of looking at the cube: ``rotation`` then, if ``inverse``, its inverse."""

    rotation: str
    inverse: bool
    face_map: dict[str, str]
    """Face of the rotated frame -> face of the original frame."""
    root: np.ndarray
    start_cp: np.ndarray
    start_ep: np.ndarray
    state: np.ndarray = field(
        default_factory=lambda: np.zeros(2 * (MAX_LENGTH + 2), np.int64))
    children: np.ndarray = field(
        default_factory=lambda: np.zeros((MAX_LENGTH + 1, 5, N_MOVE), np.int64))
    exhausted: bool = False

    def to_original(self, indices: np.ndarray) -> list[Move]:
        """A solution found for this direction (move numbers) as moves of the original cube."""
        moves = [move_of_index(int(i)) for i in indices]
        if self.inverse:
            moves = [m.inverse() for m in reversed(moves)]
        return simplify_moves([Move(self.face_map[m.name], m.quarter_turns) for m in moves])


def _relabelled_rotation(facelets: str, rotation: str) -> tuple[str, dict[str, str]]:
    """The cube turned by ``rotation`` with its colours renamed after the centres' new
    places, and which original face each face of the turned frame is."""
    if not rotation:
        return facelets, {f: f for f in FACES}
    turned = apply_to_facelets(facelets, rotation)
    centres = centre_facelets()
    rename = {turned[centres[i]]: FACES[i] for i in range(len(FACES))}
    turned_solved = apply_to_facelets(solved(3), rotation)
    face_map = {FACES[i]: turned_solved[centres[i]] for i in range(len(FACES))}
    return "".join(rename[c] for c in turned), face_map


def make_directions(state: CubieState, T: TwoPhaseTables) -> list[Direction]:
    """The six directions of a cube, each ready to start its phase-1 search."""
    directions = []
    facelets = state.to_facelets()
    for rotation in DIRECTION_ROTATIONS:
        turned, face_map = _relabelled_rotation(facelets, rotation)
        cube = from_facelets(turned)
        for inverse in (False, True):
            view = cube.inverse() if inverse else cube
            co = view.corner_twist.astype(np.int8)
            eo = view.edge_flip.astype(np.int8)
            ep = view.edge_perm.astype(np.int8)
            twist, flip = coord.get_twist(co), coord.get_flip(eo)
            slc = coord.get_slice(ep)
            root = np.array([twist, flip, slc, phase1_distance(T, twist, flip, slc)], np.int64)
            direction = Direction(rotation, inverse, face_map, root,
                                  view.corner_perm.astype(np.int64), ep.astype(np.int64))
            direction.state[:2] = (root[3] - 1, -1)
            directions.append(direction)
    return directions


@dataclass
class SearchResult:
    """What a search found: every solution in the order found (moves in the cube's frame),
    with the seconds after the start when each was found."""

    solutions: list[list[Move]]
    found_s: list[float]
    nodes: int
    """Phase-1 moves tried (the unit of the node budget)."""
    phase2_nodes: int
    exhausted: bool
    """True when the search space under the final bound was searched completely: for a
    shortest-solution search, the best solution is then optimal."""


class TwoPhaseSearch:
    """Search a cube for solutions (see the module docstring)."""

    def __init__(self, state: CubieState, tables: TwoPhaseTables | None = None,
                 part: tuple[int, int] = (0, 1)) -> None:
        """``part`` = (k, n): search only every n-th direction from the k-th, so that n
        processes share one search (each finds solutions in its own directions)."""
        index, parts = part
        if not 0 <= index < parts:
            raise ValueError(f"search part {index} of {parts}: give 0 <= k < n")
        self.state = state
        self.tables = tables if tables is not None else load_tables()
        self.directions = make_directions(state, self.tables)[index::parts]
        self.path = np.zeros(MAX_LENGTH + 1, np.int64)
        self.work = np.zeros((8, MAX_LENGTH + 1), np.int64)
        self.stats = np.zeros(N_STATS, np.int64)
        self.found = np.zeros((MAX_FOUND, MAX_LENGTH + 1), np.int64)
        self.found_length = np.zeros(MAX_FOUND, np.int64)
        self.totals = np.zeros(N_STATS, np.int64)

    def solutions(self, timeout: float | None = 0.0, max_length: int | None = None,
                  keep_within: int = 0) -> Iterator[list[Move]]:
        """Yield solutions as found: each shorter than the one before, or with
        ``keep_within`` > 0 every one up to the best length + keep_within (never above the
        first bound, 21 or ``max_length``). Stops when the time is up (after at least one
        solution), when a solution of at most ``max_length`` moves is found (shortest mode
        only), or when nothing shorter exists. A search object runs one search."""
        start = time.perf_counter()
        deadline = None if timeout is None else start + timeout
        first_bound = FIRST_LENGTH_BOUND if max_length is None else max(max_length,
                                                                        FIRST_LENGTH_BOUND)
        bound = first_bound = min(first_bound, MAX_LENGTH - 1)
        best: int | None = None
        self.nodes = 0
        self.totals[:] = 0
        self.exhausted = False
        T = self.tables
        while True:
            active = [d for d in self.directions if not d.exhausted]
            if not active:
                self.exhausted = True
                return
            for direction in active:
                status, length, nodes = search_direction(
                    T, direction.root, direction.start_cp, direction.start_ep, direction.state,
                    direction.children, bound, NODE_SLICE, self.path, self.work, self.stats,
                    keep_within > 0, self.found, self.found_length)
                self.nodes += int(nodes)
                self.totals += self.stats
                if status == EXHAUSTED:
                    direction.exhausted = True
                elif status == FOUND:
                    for i in range(int(self.stats[N_FOUND])):
                        moves = direction.to_original(self.found[i, :self.found_length[i]])
                        best = len(moves) if best is None else min(best, len(moves))
                        yield moves
                    if keep_within == 0:
                        if max_length is not None and best <= max_length:
                            return
                        bound = best - 1
                    else:
                        bound = min(best + keep_within, first_bound)
                if deadline is not None and time.perf_counter() >= deadline:
                    if best is not None:
                        return
                    if time.perf_counter() >= deadline + PATIENCE_S and bound < MAX_LENGTH - 1:
                        # a rare cube (the superflip) has few two-phase solutions this short:
                        # rather than keep the caller waiting, accept one move more
                        bound += 1
                        first_bound = bound
                        deadline += PATIENCE_S
                        for d in self.directions:
                            d.exhausted = False

    def run(self, timeout: float | None = 0.0, max_length: int | None = None,
            keep_within: int = 0,
            on_solution: Callable[[list[Move]], None] | None = None) -> SearchResult:
        """Collect `solutions` into a `SearchResult` (calling ``on_solution`` on each)."""
        start = time.perf_counter()
        found, found_s = [], []
        for moves in self.solutions(timeout, max_length, keep_within):
            found.append(moves)
            found_s.append(time.perf_counter() - start)
            if on_solution is not None:
                on_solution(moves)
        return SearchResult(found, found_s, self.nodes, int(self.totals[PHASE2_NODES]),
                            self.exhausted)
