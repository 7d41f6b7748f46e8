"""Motion compiler: a face-turn sequence -> the fastest sequence of a robot profile's primitives.

A solver speaks of face turns in the cube's frame at the start (``R`` turns the layer whose
centre was on the right). A robot can only do its primitives, each a fixed motion in the
robot's frame: turn a layer where the robot can reach, turn two opposite layers at once, or
re-orient the whole cube. Which robot face a cube face sits on depends on the orientation the
earlier primitives left the cube in, so compiling is a shortest path over

    (block of the sequence, turns of the block still to do, cube orientation, last group)

A *block* is a maximal run of moves about one axis: those commute, so the block is just the
net quarter turns of its two faces (``R L' R`` = ``R2 L'``), done in any order or at once by an
axial primitive. What each primitive does is read off the cube model, not its name: its
facelet permutation is split into a whole-cube rotation (where the centres went) and the
layer turns left over, which must be turns of one axis (a single-layer or an axial move).

Per profile, reverse Dijkstra from every (orientation, group) with nothing left to turn gives,
for every block kind and start (orientation, group), the cheapest way to finish the block
and end in each (orientation, group). A sequence is then a chain of 24x24 (times groups)
min-plus products, one per block, run in numba.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from numba import njit

from robocell.common.facelets import FACES, N_FACES, centre_facelets
from robocell.common.moves import move_facelet_permutation
from robocell.common.notation import Move, format_moves
from robocell.common.profile import Profile
from robocell.errors import RobocellError
from robocell.robot.motion import compile_primitives, load_motors, transition_credit_ms

N_ORIENTATIONS = 24
"""Whole-cube orientations of a cube in the robot."""
N_AXES = 3
"""Face axes; face ``f`` (index in U R F D L B) has axis ``f % 3`` and opposite face ``f + 3``."""
N_QUARTERS = 4
N_REMAINDERS = N_QUARTERS * N_QUARTERS
"""Turns of a block still to do: quarter turns of its first face (U, R, F) times its second."""
N_BLOCK_KINDS = N_AXES * N_REMAINDERS
"""Block kinds: axis times remainder; kind ``axis * 16`` (nothing to turn) is a pure re-orient."""
CUBE_SIZE = 3
NO_TURN = -1
"""Axis value of a primitive that turns no layer (a whole-cube rotation only)."""
NO_GROUP = 0
"""Last-group value before the first primitive (and always, without a sequencing rule)."""


class MotionCompileError(RobocellError, ValueError):
    """A sequence or profile the motion compiler cannot handle (says which and why)."""


@dataclass(frozen=True)
class PrimitiveEffect:
    """What a primitive does, in the robot's frame at its start: quarter turns of one axis's
    two faces (``axis`` = NO_TURN when none) and then the whole-cube rotation ``rotation``
    (``rotation[f]`` = the robot face where what was on robot face ``f`` ends up)."""

    axis: int
    first_turns: int
    second_turns: int
    rotation: tuple[int, ...]


def _compose(first: np.ndarray, then: np.ndarray) -> np.ndarray:
    """Facelet permutation of ``first`` followed by ``then`` (states move as ``s[perm]``)."""
    return first[then]


def _centre_map(perm: np.ndarray) -> tuple[int, ...]:
    """``rotation[f]`` = face position where the centre that was on face ``f`` is now."""
    centres = centre_facelets()
    position_of = {sticker: face for face, sticker in enumerate(centres)}
    rotation = [0] * N_FACES
    for face, sticker in enumerate(centres):
        rotation[position_of[int(perm[sticker])]] = face
    return tuple(rotation)


class _CubeFrames:
    """The 24 rotations as facelet permutations, and the layer turns of one axis."""

    def __init__(self) -> None:
        n = 6 * CUBE_SIZE * CUBE_SIZE
        identity = np.arange(n)
        generators = [move_facelet_permutation(Move(name, 1), CUBE_SIZE) for name in "xyz"]
        self.rotation_perms: dict[tuple[int, ...], np.ndarray] = {_centre_map(identity): identity}
        frontier = [identity]
        while frontier:
            nxt = []
            for perm in frontier:
                for gen in generators:
                    composed = _compose(perm, gen)
                    key = _centre_map(composed)
                    if key not in self.rotation_perms:
                        self.rotation_perms[key] = composed
                        nxt.append(composed)
            frontier = nxt
        assert len(self.rotation_perms) == N_ORIENTATIONS
        self.layer_turns: dict[bytes, tuple[int, int, int]] = {}
        for axis in range(N_AXES):
            first = move_facelet_permutation(Move(FACES[axis], 1), CUBE_SIZE)
            second = move_facelet_permutation(Move(FACES[axis + N_AXES], 1), CUBE_SIZE)
            for q1 in range(N_QUARTERS):
                for q2 in range(N_QUARTERS):
                    perm = identity
                    for _ in range(q1):
                        perm = _compose(perm, first)
                    for _ in range(q2):
                        perm = _compose(perm, second)
                    turn_axis = NO_TURN if q1 == q2 == 0 else axis
                    self.layer_turns.setdefault(perm.tobytes(), (turn_axis, q1, q2))

    def effect(self, moves: tuple[Move, ...]) -> PrimitiveEffect | None:
        """Split a primitive's moves into layer turns then a rotation; None when its layer
        turns are not of a single axis."""
        perm = np.arange(6 * CUBE_SIZE * CUBE_SIZE)
        for move in moves:
            perm = _compose(perm, move_facelet_permutation(move, CUBE_SIZE))
        rotation = _centre_map(perm)
        rotation_perm = self.rotation_perms[rotation]
        # perm = turns then rotation: turns[rotation_perm] = perm
        turns = np.empty_like(perm)
        turns[rotation_perm] = perm
        found = self.layer_turns.get(turns.tobytes())
        if found is None:
            return None
        axis, q1, q2 = found
        return PrimitiveEffect(axis, q1, q2, rotation)


@cache
def _frames() -> _CubeFrames:
    return _CubeFrames()


def primitive_effect(moves: tuple[Move, ...]) -> PrimitiveEffect | None:
    """What a primitive's moves do (see `PrimitiveEffect`); None for layer turns of several
    axes, which the compiler cannot place in a single block."""
    return _frames().effect(moves)


def orientations() -> list[tuple[int, ...]]:
    """The 24 cube orientations, index 0 the start: ``o[c]`` = robot face of cube face ``c``."""
    return sorted(_frames().rotation_perms, key=lambda o: (o != tuple(range(N_FACES)), o))


@dataclass
class MotionTables:
    """A profile compiled for planning. A node state ``s`` = orientation * n_groups + group.

    ``block_cost[kind, s, t]``: least cost to do a block of ``kind`` from state ``s`` ending in
    state ``t``; ``next_node/next_primitive[axis, t, u]``: first step from graph node ``u``
    (= remainder * n_states + s) on a cheapest path to node ``t`` (remainder 0)."""

    profile_name: str
    n_states: int
    start_state: int
    final_states: np.ndarray
    block_cost: np.ndarray
    next_node: np.ndarray
    next_primitive: np.ndarray
    primitive_cost: np.ndarray
    primitive_names: tuple[str, ...]
    turnable_faces: str
    first_block: float = 0.0
    """Corner cutting (`transition_credit`): every block's cost is this much less than its
    primitives' (it overlaps the block before); the first follows none and costs this more."""


@njit(cache=True)
def _reverse_dijkstra(n_nodes: int, in_start: np.ndarray, in_src: np.ndarray,
                      in_prim: np.ndarray, in_cost: np.ndarray, target: int,
                      dist: np.ndarray, next_node: np.ndarray, next_prim: np.ndarray) -> None:
    """Cheapest cost from every node to ``target`` and the first step of such a path."""
    done = np.zeros(n_nodes, dtype=np.bool_)
    for u in range(n_nodes):
        dist[u] = np.inf
        next_node[u] = -1
        next_prim[u] = -1
    dist[target] = 0.0
    for _ in range(n_nodes):
        best = -1
        best_dist = np.inf
        for u in range(n_nodes):
            if not done[u] and dist[u] < best_dist:
                best_dist = dist[u]
                best = u
        if best < 0:
            break
        done[best] = True
        for e in range(in_start[best], in_start[best + 1]):
            v = in_src[e]
            candidate = best_dist + in_cost[e]
            if candidate < dist[v]:
                dist[v] = candidate
                next_node[v] = best
                next_prim[v] = in_prim[e]


def build_tables(profile: Profile) -> MotionTables:
    """Compile a profile: every primitive's effect, then the per-block least costs."""
    frames = _frames()
    orients = orientations()
    orient_index = {o: i for i, o in enumerate(orients)}
    groups = profile.groups if profile.sequencing == "alternate-groups" else ()
    n_groups = len(groups) + 1
    n_states = N_ORIENTATIONS * n_groups
    n_nodes = N_REMAINDERS * n_states
    effects = []
    for prim in profile.primitives:
        effect = frames.effect(prim.moves)
        if effect is None:
            raise MotionCompileError(
                f"profile {profile.name}: primitive {prim.name!r} ({format_moves(prim.moves)}) "
                "turns layers of more than one axis; the motion compiler handles primitives "
                "that turn layers of one axis (one face or two opposite faces) with any "
                "whole-cube rotation — split it into several primitives")
        effects.append(effect)

    turnable = sorted({FACES[e.axis] for e in effects if e.axis != NO_TURN and e.first_turns}
                      | {FACES[e.axis + N_AXES] for e in effects
                         if e.axis != NO_TURN and e.second_turns}, key=FACES.index)
    # edges per cube axis: (src node, dst node, primitive, cost)
    edges: list[list[tuple[int, int, int, float]]] = [[] for _ in range(N_AXES)]
    for o_idx, orient in enumerate(orients):
        cube_face_at = {robot: cube for cube, robot in enumerate(orient)}
        for p_idx, (prim, effect) in enumerate(zip(profile.primitives, effects, strict=True)):
            new_orient = tuple(effect.rotation[orient[c]] for c in range(N_FACES))
            new_o = orient_index[new_orient]
            p_group = groups.index(prim.group) + 1 if groups else NO_GROUP
            if effect.axis == NO_TURN:
                cube_axis, d1, d2 = NO_TURN, 0, 0
            else:
                cube_face = cube_face_at[effect.axis]
                cube_axis = cube_face % N_AXES
                if cube_face < N_AXES:
                    d1, d2 = effect.first_turns, effect.second_turns
                else:
                    d1, d2 = effect.second_turns, effect.first_turns
            for g in range(n_groups):
                if groups and g == p_group:
                    continue
                src_state = o_idx * n_groups + g
                dst_state = new_o * n_groups + p_group
                for axis in range(N_AXES):
                    if cube_axis not in (NO_TURN, axis):
                        continue
                    for r1 in range(N_QUARTERS):
                        for r2 in range(N_QUARTERS):
                            left = ((r1 - d1) % N_QUARTERS) * N_QUARTERS + (r2 - d2) % N_QUARTERS
                            src = (r1 * N_QUARTERS + r2) * n_states + src_state
                            dst = left * n_states + dst_state
                            edges[axis].append((src, dst, p_idx, prim.cost))

    block_cost = np.full((N_BLOCK_KINDS, n_states, n_states), np.inf)
    next_node = np.empty((N_AXES, n_states, n_nodes), dtype=np.int32)
    next_primitive = np.empty((N_AXES, n_states, n_nodes), dtype=np.int32)
    dist = np.empty(n_nodes)
    for axis in range(N_AXES):
        table = np.array(edges[axis], dtype=np.float64).reshape(-1, 4)
        order = np.argsort(table[:, 1], kind="stable")
        table = table[order]
        dst = table[:, 1].astype(np.int64)
        in_start = np.searchsorted(dst, np.arange(n_nodes + 1)).astype(np.int64)
        in_src = table[:, 0].astype(np.int64)
        in_prim = table[:, 2].astype(np.int64)
        in_cost = table[:, 3].copy()
        for target in range(n_states):
            _reverse_dijkstra(n_nodes, in_start, in_src, in_prim, in_cost, target, dist,
                              next_node[axis, target], next_primitive[axis, target])
            # node u = remainder * n_states + s  ->  block_cost[axis*16 + remainder, s, target]
            block_cost[axis * N_REMAINDERS:(axis + 1) * N_REMAINDERS, :, target] = (
                dist.reshape(N_REMAINDERS, n_states))

    credit = transition_credit(profile, effects)
    if credit > 0:  # every block overlaps the one before; a pure re-orient (kind 0) none
        turning = [k for k in range(N_BLOCK_KINDS) if k % N_REMAINDERS]
        block_cost[turning] -= credit
    start_state = 0 * n_groups + NO_GROUP  # orientation 0 is the start orientation
    if profile.solved_any_orientation:
        final_states = np.ones(n_states, dtype=np.bool_)
    else:
        final_states = np.zeros(n_states, dtype=np.bool_)
        final_states[:n_groups] = True  # back in the start orientation, any last group
    return MotionTables(
        profile_name=profile.name, n_states=n_states, start_state=start_state,
        final_states=final_states, block_cost=block_cost, next_node=next_node,
        next_primitive=next_primitive,
        primitive_cost=np.array([p.cost for p in profile.primitives]),
        primitive_names=tuple(p.name for p in profile.primitives),
        turnable_faces=" ".join(turnable), first_block=credit,
    )


def transition_credit(profile: Profile, effects: list[PrimitiveEffect]) -> float:
    """What corner cutting takes off every block after the first, in profile units: for a
    robot that cuts corners (``overlap_deg``) and never re-orients the cube, consecutive
    blocks turn perpendicular layers, so each starts early by the saving of a perpendicular
    pair of its primitives (`robocell.robot.motion.transition_credit_ms`, the least such);
    0 for any other robot."""
    if not profile.data.get("motors"):
        return 0.0
    motors = load_motors(profile)
    identity = tuple(range(N_FACES))
    if not any(m.overlap_deg for m in motors.values()) or any(
            e.rotation != identity for e in effects):
        return 0.0
    return transition_credit_ms(compile_primitives(profile, motors), motors) / profile.unit_ms


_TABLES: dict[tuple[str, str], MotionTables] = {}


def motion_tables(profile: Profile) -> MotionTables:
    """The compiled tables of a profile (built once per process, in well under a second)."""
    key = (profile.name, profile.content_hash)
    if key not in _TABLES:
        _TABLES[key] = build_tables(profile)
    return _TABLES[key]


@njit(cache=True)
def _chain_blocks(kinds: np.ndarray, block_cost: np.ndarray, start_state: int,
                  start_cost: float, final_states: np.ndarray, next_node: np.ndarray,
                  next_primitive: np.ndarray, n_states: int, out: np.ndarray
                  ) -> tuple[float, int, int]:
    """Least-cost chain of blocks from ``start_state`` at ``start_cost``; writes the
    primitives into ``out``.

    Returns (cost, number of primitives, index of the first block that cannot be done or -1).
    """
    n_blocks = kinds.shape[0]
    dist = np.full(n_states, np.inf)
    dist[start_state] = start_cost
    came_from = np.empty((n_blocks, n_states), dtype=np.int32)
    for k in range(n_blocks):
        costs = block_cost[kinds[k]]
        new = np.full(n_states, np.inf)
        for s in range(n_states):
            if dist[s] == np.inf:
                continue
            for t in range(n_states):
                c = dist[s] + costs[s, t]
                if c < new[t]:
                    new[t] = c
                    came_from[k, t] = s
        reachable = False
        for t in range(n_states):
            if new[t] < np.inf:
                reachable = True
        if not reachable:
            return np.inf, 0, k
        dist = new
    best = -1
    best_cost = np.inf
    for t in range(n_states):
        if final_states[t] and dist[t] < best_cost:
            best_cost = dist[t]
            best = t
    if best < 0:
        return np.inf, 0, n_blocks
    states = np.empty(n_blocks + 1, dtype=np.int32)
    states[n_blocks] = best
    for k in range(n_blocks - 1, -1, -1):
        states[k] = came_from[k, states[k + 1]]
    n_out = 0
    for k in range(n_blocks):
        axis = kinds[k] // 16
        remainder = kinds[k] % 16
        target = states[k + 1]
        node = remainder * n_states + states[k]
        while node != target:
            out[n_out] = next_primitive[axis, target, node]
            n_out += 1
            node = next_node[axis, target, node]
    return best_cost, n_out, -1


_FACE_INDEX = {face: i for i, face in enumerate(FACES)}


def sequence_blocks(moves: list[Move]) -> tuple[list[int], list[list[int]]]:
    """Group face turns into blocks of one axis: the block kinds and, per block, the indices
    of the moves it holds. Moves of one axis commute, so a block keeps only net turns; a block
    that cancels out vanishes and its neighbours may join."""
    kinds: list[int] = []
    members: list[list[int]] = []
    for i, move in enumerate(moves):
        face = _FACE_INDEX.get(move.name)
        if face is None:
            raise MotionCompileError(
                f"move {i + 1} ({move}) is not a face turn: the motion compiler takes face "
                "turns U R F D L B in the cube's starting frame, as a solver returns them")
        axis = face % N_AXES
        step = N_QUARTERS if face < N_AXES else 1
        if kinds and kinds[-1] // N_REMAINDERS == axis:
            remainder = kinds[-1] % N_REMAINDERS
            r1, r2 = divmod(remainder, N_QUARTERS)
            if step == N_QUARTERS:
                r1 = (r1 + move.quarter_turns) % N_QUARTERS
            else:
                r2 = (r2 + move.quarter_turns) % N_QUARTERS
            if r1 == r2 == 0:
                kinds.pop()
                members.pop()
            else:
                kinds[-1] = axis * N_REMAINDERS + r1 * N_QUARTERS + r2
                members[-1].append(i)
        else:
            kinds.append(axis * N_REMAINDERS + step * move.quarter_turns % N_REMAINDERS)
            members.append([i])
    return kinds, members


def compile_plan(moves: list[Move], profile: Profile) -> tuple[list[str], float]:
    """The fastest sequence of ``profile``'s primitives that performs ``moves`` (face turns in
    the cube's frame at the start) and its cost in profile units.

    The cube ends in the state ``moves`` give, seen relative to its centres; it may end in any
    whole-cube orientation unless the profile sets ``solved_any_orientation = false``, in which
    case it ends as it started. Raises `MotionCompileError` when the profile cannot perform a
    move (naming the profile and the move) or a move is not a face turn.
    """
    tables = motion_tables(profile)
    kinds, members = sequence_blocks(moves)
    if not profile.solved_any_orientation:
        kinds.append(0)  # a final re-orient block back to the start orientation
        members.append([])
    kinds_arr = np.array(kinds, dtype=np.int64)
    # a cheapest path visits a graph node at most once: room for every node per block
    out = np.empty(max(1, len(kinds)) * N_REMAINDERS * tables.n_states, dtype=np.int64)
    cost, n_out, failed = _chain_blocks(
        kinds_arr, tables.block_cost, tables.start_state, tables.first_block if kinds else 0.0,
        tables.final_states, tables.next_node, tables.next_primitive, tables.n_states, out)
    if failed >= 0:
        if failed < len(members) and members[failed]:
            which = " ".join(str(moves[i]) for i in members[failed])
            where = ", ".join(str(i + 1) for i in members[failed])
            raise MotionCompileError(
                f"profile {profile.name} cannot perform {which} (move {where} of the "
                f"sequence): its primitives turn only {tables.turnable_faces or 'no layer'} "
                "in the robot, and no sequence of them (whole-cube rotations and the "
                f"sequencing rule {profile.sequencing!r} included) does it; add a primitive "
                "that turns that layer, or a rotation that brings it where one turns")
        raise MotionCompileError(
            f"profile {profile.name} cannot bring the cube back to its start orientation "
            "(solved_any_orientation = false) with its rotations")
    names = [tables.primitive_names[p] for p in out[:n_out]]
    return names, float(cost)


def primitive_moves(primitives: list[str], profile: Profile) -> list[Move]:
    """The moves, in the robot's frame, that the named primitives make one after another
    (what a plan's ``moves`` holds for a robot that re-orients the cube)."""
    moves: list[Move] = []
    for name in primitives:
        moves.extend(profile.primitive(name).moves)
    return moves
