"""Exact cost-to-go over (rotation class, sequencing state) by a bucketed backward Dijkstra.

Dial's algorithm: tentative costs are small integers, so the nodes are settled level by
level, cheapest first. At level ``c`` every node whose tentative cost is ``c`` is final
(all edges cost at least one); each is expanded once, relaxing its predecessors (the states
from which one primitive leads to it) to ``c + cost``. A histogram of tentative costs lets
empty levels be skipped without a scan. With unit costs this is a breadth-first search,
which is how the ``htm`` and ``qtm`` distance tables are built.

Packed result: ``bits`` per entry (4, 8 or 16); the largest value of that width means
"unreachable" (the robot cannot solve such a state).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.common.progress import Progress
from robocell.services.solver.cube2.coord import N_STATES, SOLVED
from robocell.services.solver.cube2.moves import class_of
from robocell.services.solver.cube2.robot import RobotModel

WORK_UNREACHED = np.uint16(0xFFFF)
MAX_TABLE_COST = 0xFFFE
"""Largest scaled cost-to-go the 16-bit working table can hold."""
UNREACHED = {4: 0xF, 8: 0xFF, 16: 0xFFFF}
"""The "cannot be solved" marker for each packed entry width."""


@njit(cache=True)
def _expand_level(cost, level, counts, edge_row, edge_cost, edge_source, edge_target,
                  perm_moves, twist_moves, class_perm, class_twist_offset, twist_add,
                  normal_perm8):  # pragma: no cover - compiled
    """Expand every node at ``level``; returns (nodes settled, largest cost assigned)."""
    n_tables, n = cost.shape
    settled = 0
    highest = 0
    for tab in range(n_tables):
        row = cost[tab]
        for coord in range(n):
            if row[coord] != level:
                continue
            settled += 1
            perm8 = normal_perm8[coord // 729]
            twist7 = (coord % 729) * 3
            for e in range(edge_cost.shape[0]):
                if edge_source[e] != tab:
                    continue
                m = edge_row[e]
                k = class_of(perm_moves[m, perm8], twist_moves[m, twist7], class_perm,
                             class_twist_offset, twist_add)
                value = level + edge_cost[e]
                target = cost[edge_target[e]]
                old = target[k]
                if value < old:
                    if old != 0xFFFF:
                        counts[old] -= 1
                    counts[value] += 1
                    target[k] = value
                    if value > highest:
                        highest = value
    return settled, highest


def cost_to_go(model: RobotModel, perm_moves: np.ndarray, twist_moves: np.ndarray,
               classes: dict[str, np.ndarray], show_progress: bool = True) -> np.ndarray:
    """The exact cost-to-go, shape (n_tables, N_STATES), uint16 in scaled units, 0xFFFF where
    unreachable: ``[table_of_state[q], c]`` is the least cost from class ``c`` when the last
    primitive left sequencing state ``q``. ``perm_moves``/``twist_moves`` are the transition
    tables of the model's motions (``motion_cp/motion_co``), ``classes`` the tables of
    `moves.class_tables`."""
    cost = np.full((model.n_tables, N_STATES), WORK_UNREACHED, dtype=np.uint16)
    cost[:, SOLVED] = 0
    counts = np.zeros(MAX_TABLE_COST + 1 + int(model.prim_cost.max()), dtype=np.int64)
    counts[0] = model.n_tables
    total = model.n_tables * N_STATES
    pending_max = 0
    level = 0
    with Progress(f"cube2 {model.profile} cost-to-go", total, enabled=show_progress) as bar:
        while level <= pending_max:
            if counts[level]:
                settled, highest = _expand_level(
                    cost, level, counts, model.edge_row, model.edge_cost, model.edge_source,
                    model.edge_target, perm_moves, twist_moves, classes["class_perm"],
                    classes["class_twist_offset"], classes["twist_add"],
                    classes["normal_perm8"])
                pending_max = max(pending_max, int(highest))
                if pending_max > MAX_TABLE_COST:
                    raise OverflowError(
                        f"profile {model.profile}: cost-to-go exceeds {MAX_TABLE_COST} "
                        f"(unit/{model.cost_scale}); use coarser costs")
                bar.advance(settled)
            level += 1
    return cost


def pack(cost: np.ndarray) -> tuple[np.ndarray, int]:
    """Pack a working table into the narrowest entries that hold its largest value:
    4 bits (two per byte, low nibble first), 8 or 16. Returns (packed, bits)."""
    reached = cost[cost != WORK_UNREACHED]
    highest = int(reached.max()) if reached.size else 0
    for bits in (4, 8):
        if highest < UNREACHED[bits]:
            break
    else:
        return cost, 16
    narrow = np.where(cost == WORK_UNREACHED, UNREACHED[bits], cost).astype(np.uint8)
    if bits == 8:
        return narrow, 8
    low = narrow[:, 0::2]
    high = narrow[:, 1::2]
    return (low | (high << 4)).astype(np.uint8), 4


@njit(cache=True)
def table_value(packed, bits, tab, coord):  # pragma: no cover - compiled
    """One entry of a packed table (see `pack`)."""
    if bits == 4:
        byte = packed[tab, coord >> 1]
        return (byte >> ((coord & 1) * 4)) & 0xF
    return packed[tab, coord]
