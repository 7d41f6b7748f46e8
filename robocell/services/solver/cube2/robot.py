"""A robot profile compiled for the 2x2x2 tables: integer costs, sequencing states, symmetry.

The search runs over *nodes* (rotation class, sequencing state). The sequencing state is
what the profile's rule needs to know about the past: nothing for rule "none" (one state),
the group of the last primitive for "alternate-groups" (one state per group; before the
first primitive every primitive is allowed). Costs become integers in ``cost_scale``-ths of
a unit so that the cost-to-go can be computed by a bucketed (Dial) shortest-path search.

Symmetry: a whole-cube rotation ``g`` whose conjugation ``g^-1 p g`` maps every primitive to
a primitive of the same cost, and groups to groups consistently, maps optimal plans to
optimal plans. Sequencing states in one orbit of such symmetries share one table:
``h(s, q) = h(g^-1 s g, q')`` and the class of ``g^-1 s g`` is that of ``s * g``. For the
four-arm reference robot the half-turn about the axis through the BR and FL edges swaps
the R/L and B/F pairs, so one table serves both, halving its size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robocell.common.profile import Profile
from robocell.errors import RobocellError
from robocell.services.solver.cube2.coord import N_ROTATIONS, moves_element, rotations

MAX_COST_SCALE = 1000
"""Costs must be multiples of 1/1000 unit (after scaling, integers)."""
MAX_STEP_COST = 250
"""Largest scaled primitive cost the bucketed search accepts."""


class ProfileNotSupported(RobocellError, ValueError):
    """A profile the 2x2x2 tables cannot serve (says which key and what to change)."""


@dataclass(frozen=True)
class RobotModel:
    """Everything the tables and the descent need from a profile, as flat arrays.

    Per primitive ``p``: ``prim_cp/prim_co`` (n, 8) its element; ``prim_cost`` scaled cost;
    ``prim_state`` the sequencing state after it; ``lookup_cp/lookup_co`` (n, 8) the element
    ``p * g`` where ``g`` maps that state to its table (``table_of_state``).
    ``allowed[q, p]``: may ``p`` follow sequencing state ``q``. ``carrier_cp/carrier_co``
    (n_states, 8): the rotation ``g`` with ``h(s, q) = table[table_of_state[q]][class(s * g)]``.
    ``motion_cp/motion_co`` (rows, 8): every distinct element above, the rows of the
    move-transition tables; ``prim_row``, ``lookup_row``, ``carrier_row``, ``edge_row`` say
    which row each primitive, lookup, carrier and edge is.
    ``edges``: the predecessor edges of the backward search, one row per (table, primitive,
    previous state): element ``p^-1 * g_prev`` (cp, co), scaled cost, source table (the table
    of ``p``'s resulting state), target table (of the previous state).
    """

    profile: str
    cost_scale: int
    n_states: int
    n_tables: int
    state_names: tuple[str, ...]
    table_of_state: np.ndarray
    carrier_cp: np.ndarray
    carrier_co: np.ndarray
    prim_cp: np.ndarray
    prim_co: np.ndarray
    prim_cost: np.ndarray
    prim_state: np.ndarray
    lookup_cp: np.ndarray
    lookup_co: np.ndarray
    allowed: np.ndarray
    edge_cp: np.ndarray
    edge_co: np.ndarray
    edge_cost: np.ndarray
    edge_source: np.ndarray
    edge_target: np.ndarray
    symmetries: int

    motion_cp: np.ndarray
    motion_co: np.ndarray
    prim_row: np.ndarray
    lookup_row: np.ndarray
    carrier_row: np.ndarray
    edge_row: np.ndarray

    @property
    def n_prims(self) -> int:
        return int(self.prim_cost.shape[0])


def _cost_scale(profile: Profile) -> int:
    for scale in range(1, MAX_COST_SCALE + 1):
        if all(abs(p.cost * scale - round(p.cost * scale)) < 1e-9 for p in profile.primitives):
            return scale
    raise ProfileNotSupported(
        f"profile {profile.name}: primitives.cost: costs must be multiples of "
        f"1/{MAX_COST_SCALE} unit for the 2x2x2 tables; round them")


def _inverse(cp: np.ndarray, co: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    inv_cp = np.argsort(cp).astype(np.int8)
    inv_co = ((-co[inv_cp]) % 3).astype(np.int8)
    return inv_cp, inv_co


def _mul(a: tuple[np.ndarray, np.ndarray],
         b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    cp = a[0][b[0]]
    co = (a[1][b[0]] + b[1]) % 3
    return cp.astype(np.int8), co.astype(np.int8)


Element = tuple[np.ndarray, np.ndarray]


def _sequencing(profile: Profile) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """Sequencing state names, the state after each primitive, and ``allowed[q, p]``."""
    n_prims = len(profile.primitives)
    if profile.sequencing != "alternate-groups":
        return ("any",), np.zeros(n_prims, dtype=np.int64), np.ones((1, n_prims), dtype=bool)
    names = profile.groups
    if len(names) < 2:
        raise ProfileNotSupported(
            f"profile {profile.name}: sequencing.rule: \"alternate-groups\" with one "
            f"group ({names[0]!r}) allows a single primitive per plan; give the "
            "primitives at least two groups or use rule \"none\"")
    prim_state = np.array([names.index(p.group) for p in profile.primitives], dtype=np.int64)
    allowed = prim_state[None, :] != np.arange(len(names))[:, None]
    return names, prim_state, allowed


def _symmetries(elements: list[Element], cost: np.ndarray, prim_state: np.ndarray,
                n_states: int) -> list[tuple[int, np.ndarray]]:
    """Rotations ``g`` whose conjugation maps every primitive onto one of equal cost, with
    the map of sequencing states it induces: [(rotation index, state map)]."""
    rot_cp, rot_co = rotations()
    by_effect: dict[tuple[bytes, bytes, int], list[int]] = {}
    for i, (cp, co) in enumerate(elements):
        by_effect.setdefault((cp.tobytes(), co.tobytes(), int(cost[i])), []).append(i)
    found = []
    for r in range(N_ROTATIONS):
        g = (rot_cp[r], rot_co[r])
        g_inv = _inverse(*g)
        state_map = -np.ones(n_states, dtype=np.int64)
        ok = True
        for i, element in enumerate(elements):
            image = _mul(_mul(g_inv, element), g)
            targets = by_effect.get((image[0].tobytes(), image[1].tobytes(), int(cost[i])), [])
            image_states = {int(prim_state[t]) for t in targets}
            q = int(prim_state[i])
            if state_map[q] < 0 and len(image_states) == 1:
                state_map[q] = image_states.pop()
            elif state_map[q] not in image_states:  # no image, or states mapped ambiguously
                ok = False
                break
        if ok and (state_map >= 0).all() and len(set(state_map.tolist())) == n_states:
            found.append((r, state_map))
    return found


def _state_tables(symmetries: list[tuple[int, np.ndarray]], n_states: int,
                  ) -> tuple[np.ndarray, np.ndarray, list[Element]]:
    """For each sequencing state: the smallest state of its orbit under the symmetries (whose
    table it shares), that table's index, and the carrier rotation that maps it there."""
    rot_cp, rot_co = rotations()
    table_rep = np.arange(n_states)
    carrier = np.zeros(n_states, dtype=np.int64)  # rotation index 0 is the identity
    for q in range(n_states):
        for r, state_map in symmetries:  # a group: one pass sees the whole orbit
            if state_map[q] < table_rep[q]:
                table_rep[q] = state_map[q]
                carrier[q] = r
    reps = sorted(set(table_rep.tolist()))
    table_of_state = np.array([reps.index(int(table_rep[q])) for q in range(n_states)],
                              dtype=np.int64)
    carriers = [(rot_cp[carrier[q]], rot_co[carrier[q]]) for q in range(n_states)]
    return table_rep, table_of_state, carriers


def _edges(elements: list[Element], cost: np.ndarray, prim_state: np.ndarray,
           allowed: np.ndarray, table_rep: np.ndarray, table_of_state: np.ndarray,
           carriers: list[Element]) -> list[tuple[Element, int, int, int]]:
    """Predecessor edges of the backward search: (p^-1 * carrier of the previous state,
    cost, source table, target table), for primitives that lead to a table's own state."""
    edges = []
    for i, element in enumerate(elements):
        q_after = int(prim_state[i])
        if table_rep[q_after] != q_after:
            continue  # its predecessors are found through the symmetric state's primitives
        inverse = _inverse(*element)
        for q_before in range(len(carriers)):
            if allowed[q_before, i]:
                edges.append((_mul(inverse, carriers[q_before]), int(cost[i]),
                              int(table_of_state[q_after]), int(table_of_state[q_before])))
    return edges


def compile_profile(profile: Profile) -> RobotModel:
    """Compile a validated profile (see the module docstring)."""
    if not profile.fits(2):
        raise ProfileNotSupported(
            f"profile {profile.name}: puzzle: is {profile.puzzle!r}; the 2x2x2 solver needs "
            "\"2x2\" or \"any\"")
    if not profile.solved_any_orientation:
        raise ProfileNotSupported(
            f"profile {profile.name}: solved_any_orientation: the 2x2x2 tables count a cube "
            "as solved in any of its 24 orientations; set it to true")
    scale = _cost_scale(profile)
    prims = profile.primitives
    cost = np.array([round(p.cost * scale) for p in prims], dtype=np.int64)
    if cost.max() > MAX_STEP_COST:
        raise ProfileNotSupported(
            f"profile {profile.name}: primitives.cost: scaled costs up to {cost.max()} "
            f"(unit/{scale}); the bucketed search takes at most {MAX_STEP_COST}")
    elements = [moves_element(p.moves) for p in prims]
    state_names, prim_state, allowed = _sequencing(profile)
    n_states = len(state_names)
    symmetries = _symmetries(elements, cost, prim_state, n_states)
    table_rep, table_of_state, carriers = _state_tables(symmetries, n_states)
    lookups = [_mul(elements[i], carriers[int(prim_state[i])]) for i in range(len(prims))]
    edges = _edges(elements, cost, prim_state, allowed, table_rep, table_of_state, carriers)

    # the distinct motions, each one row of the move-transition tables
    rows: dict[bytes, int] = {}
    motions: list[Element] = []

    def row_of(element: Element) -> int:
        key = element[0].astype(np.int8).tobytes() + element[1].astype(np.int8).tobytes()
        if key not in rows:
            rows[key] = len(motions)
            motions.append(element)
        return rows[key]

    prim_row = np.array([row_of(e) for e in elements], dtype=np.int64)
    lookup_row = np.array([row_of(e) for e in lookups], dtype=np.int64)
    carrier_row = np.array([row_of(e) for e in carriers], dtype=np.int64)
    edge_row = np.array([row_of(e[0]) for e in edges], dtype=np.int64)

    def stack(items: list[Element], part: int) -> np.ndarray:
        return np.array([e[part] for e in items], dtype=np.int8).reshape(len(items), 8)

    return RobotModel(
        profile=profile.name, cost_scale=scale, n_states=n_states,
        n_tables=int(table_of_state.max()) + 1, state_names=tuple(state_names),
        table_of_state=table_of_state,
        carrier_cp=stack(carriers, 0), carrier_co=stack(carriers, 1),
        prim_cp=stack(elements, 0), prim_co=stack(elements, 1),
        prim_cost=cost, prim_state=prim_state,
        lookup_cp=stack(lookups, 0), lookup_co=stack(lookups, 1),
        allowed=np.ascontiguousarray(allowed),
        edge_cp=stack([e[0] for e in edges], 0), edge_co=stack([e[0] for e in edges], 1),
        edge_cost=np.array([e[1] for e in edges], dtype=np.int64),
        edge_source=np.array([e[2] for e in edges], dtype=np.int64),
        edge_target=np.array([e[3] for e in edges], dtype=np.int64),
        symmetries=len(symmetries),
        prim_row=prim_row, lookup_row=lookup_row, carrier_row=carrier_row, edge_row=edge_row,
        motion_cp=stack(motions, 0), motion_co=stack(motions, 1),
    )
