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
from robocell.services.solver.cube2.coords import N_ROTATIONS, moves_element, rotations

MAX_COST_SCALE = 1000
"""Costs must be multiples of 1/1000 unit (after scaling, integers)."""
MAX_STEP_COST = 250
"""Largest scaled primitive cost the bucketed search accepts."""


class ProfileNotSupported(ValueError):
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
    if profile.sequencing == "alternate-groups":
        state_names = profile.groups
        prim_state = np.array([state_names.index(p.group) for p in prims], dtype=np.int64)
        n_states = len(state_names)
        if n_states < 2:
            raise ProfileNotSupported(
                f"profile {profile.name}: sequencing.rule: \"alternate-groups\" with one "
                f"group ({state_names[0]!r}) allows a single primitive per plan; give the "
                "primitives at least two groups or use rule \"none\"")
        allowed = prim_state[None, :] != np.arange(n_states)[:, None]
    else:
        state_names = ("any",)
        prim_state = np.zeros(len(prims), dtype=np.int64)
        n_states = 1
        allowed = np.ones((1, len(prims)), dtype=bool)

    # symmetries: rotations g with g^-1 p g a primitive of equal cost, states mapped consistently
    rot_cp, rot_co = rotations()
    by_effect: dict[tuple[bytes, bytes, int], list[int]] = {}
    for i, (cp, co) in enumerate(elements):
        by_effect.setdefault((cp.tobytes(), co.tobytes(), int(cost[i])), []).append(i)
    state_maps: list[tuple[int, np.ndarray]] = []
    for r in range(N_ROTATIONS):
        g = (rot_cp[r], rot_co[r])
        g_inv = _inverse(*g)
        mapping = -np.ones(n_states, dtype=np.int64)
        ok = True
        for i, el in enumerate(elements):
            image = _mul(_mul(g_inv, el), g)
            targets = by_effect.get((image[0].tobytes(), image[1].tobytes(), int(cost[i])))
            if not targets:
                ok = False
                break
            image_states = {int(prim_state[t]) for t in targets}
            q = int(prim_state[i])
            if mapping[q] < 0 and len(image_states) == 1:
                mapping[q] = image_states.pop()
            elif mapping[q] not in image_states:
                ok = False
                break
        if ok and (mapping >= 0).all() and len(set(mapping.tolist())) == n_states:
            state_maps.append((r, mapping))
    # orbits of sequencing states; each state's table is its orbit's smallest member
    table_rep = np.arange(n_states)
    carrier = np.zeros(n_states, dtype=np.int64)  # rotation taking the state to its rep
    for q in range(n_states):
        for r, mapping in state_maps:
            if mapping[q] < table_rep[q]:
                table_rep[q] = mapping[q]
                carrier[q] = r
    reps = sorted(set(table_rep.tolist()))
    table_of_state = np.array([reps.index(int(table_rep[q])) for q in range(n_states)],
                              dtype=np.int64)
    carriers = [(rot_cp[carrier[q]], rot_co[carrier[q]]) for q in range(n_states)]

    prim_cp = np.array([e[0] for e in elements], dtype=np.int8).reshape(len(prims), 8)
    prim_co = np.array([e[1] for e in elements], dtype=np.int8).reshape(len(prims), 8)
    lookups = [_mul(elements[i], carriers[int(prim_state[i])]) for i in range(len(prims))]
    edges = []
    for i, el in enumerate(elements):
        q_after = int(prim_state[i])
        if table_rep[q_after] != q_after:
            continue  # its predecessors are found through the symmetric state's primitives
        inv = _inverse(*el)
        for q_before in range(n_states):
            if not allowed[q_before, i]:
                continue
            edge = _mul(inv, carriers[q_before])
            edges.append((edge, int(cost[i]), int(table_of_state[q_after]),
                          int(table_of_state[q_before])))
    motions: dict[bytes, int] = {}
    motion_list: list[tuple[np.ndarray, np.ndarray]] = []

    def row_of(el: tuple[np.ndarray, np.ndarray]) -> int:
        key = el[0].astype(np.int8).tobytes() + el[1].astype(np.int8).tobytes()
        if key not in motions:
            motions[key] = len(motion_list)
            motion_list.append(el)
        return motions[key]

    prim_row = np.array([row_of(el) for el in elements], dtype=np.int64)
    lookup_row = np.array([row_of(el) for el in lookups], dtype=np.int64)
    carrier_row = np.array([row_of(el) for el in carriers], dtype=np.int64)
    edge_row = np.array([row_of(e[0]) for e in edges], dtype=np.int64)
    return RobotModel(
        profile=profile.name, cost_scale=scale, n_states=n_states, n_tables=len(reps),
        state_names=tuple(state_names), table_of_state=table_of_state,
        carrier_cp=np.array([c[0] for c in carriers], dtype=np.int8),
        carrier_co=np.array([c[1] for c in carriers], dtype=np.int8),
        prim_cp=prim_cp, prim_co=prim_co, prim_cost=cost, prim_state=prim_state,
        lookup_cp=np.array([e[0] for e in lookups], dtype=np.int8),
        lookup_co=np.array([e[1] for e in lookups], dtype=np.int8),
        allowed=np.ascontiguousarray(allowed),
        edge_cp=np.array([e[0][0] for e in edges], dtype=np.int8).reshape(len(edges), 8),
        edge_co=np.array([e[0][1] for e in edges], dtype=np.int8).reshape(len(edges), 8),
        edge_cost=np.array([e[1] for e in edges], dtype=np.int64),
        edge_source=np.array([e[2] for e in edges], dtype=np.int64),
        edge_target=np.array([e[3] for e in edges], dtype=np.int64),
        symmetries=len(state_maps),
        motion_cp=np.array([m[0] for m in motion_list], dtype=np.int8).reshape(-1, 8),
        motion_co=np.array([m[1] for m in motion_list], dtype=np.int8).reshape(-1, 8),
        prim_row=prim_row, lookup_row=lookup_row, carrier_row=carrier_row, edge_row=edge_row,
    )
