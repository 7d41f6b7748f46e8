"""The backward search's feature cells (``reverse``), after FESS run backwards.

Every position is projected onto two features: the boxes standing on start squares (how
much of the start position is rebuilt, the packing feature's counterpart) and the areas of
free squares (connectivity). Positions with equal features share a cell; the cells that hold
open positions are visited in turn, one expansion each, and inside a cell the position
reached with the fewest unadvised pulls comes first, then the lowest bound. Each cell is a
pairing heap threaded through per-node arrays (the forward feature search's,
``features.meld`` and ``features.pop_root``), so nothing is allocated per node.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.sokoban.features import meld, pop_root

H_BITS = 20
"""Keys are (count) << H_BITS | bound."""
MAX_REGIONS = 32
"""Cells per count of boxes on start squares: free areas 1..31 (more count as 31)."""


@njit(cache=True)
def next_cell(cell_root: np.ndarray, counters: np.ndarray, cursor: int, ckey: np.ndarray,
              ph_child: np.ndarray, ph_next: np.ndarray, closed: np.ndarray) -> int:
    """The next open position from the cells, visited in turn (-1 when they are empty);
    ``counters[cursor]`` is the cell visited last."""
    n_cells = cell_root.shape[0]
    for _ in range(n_cells):
        at = (counters[cursor] + 1) % n_cells
        counters[cursor] = at
        while cell_root[at] >= 0:
            k = cell_root[at]
            cell_root[at] = pop_root(k, ckey, ph_child, ph_next)
            if not closed[k]:
                return k
    return -1


@njit(cache=True)
def file_children(k: int, kids: np.ndarray, kid_regions: np.ndarray, kid_starts: np.ndarray,
                   n_kids: int, h: np.ndarray, cell: np.ndarray, ph_child: np.ndarray,
                   ph_next: np.ndarray, ckey: np.ndarray, cell_root: np.ndarray) -> None:
    """File the new children of ``k`` in their cells (boxes on start squares, free areas).
    Three advisors each mark one child: the one with most boxes on start squares, the one
    with fewest free areas, the one with the lowest bound, each only if better than ``k``;
    inside a cell the fewest unadvised pulls come first, then the lowest bound."""
    starts_k = cell[k] // MAX_REGIONS
    regions_k = cell[k] % MAX_REGIONS
    best_start = best_region = best_h = -1
    for j in range(n_kids):
        c = kids[j]
        if kid_starts[j] > starts_k and (best_start < 0
                                         or kid_starts[j] > kid_starts[best_start]):
            best_start = j
        if kid_regions[j] < regions_k and (best_region < 0
                                           or kid_regions[j] < kid_regions[best_region]):
            best_region = j
        if h[c] < h[k] and (best_h < 0 or h[c] < h[kids[best_h]]):
            best_h = j
    unadvised_k = ckey[k] >> H_BITS
    for j in range(n_kids):
        c = kids[j]
        advised = j == best_start or j == best_region or j == best_h
        ckey[c] = ((unadvised_k + (0 if advised else 1)) << H_BITS) | np.int64(h[c])
        cell[c] = kid_starts[j] * MAX_REGIONS + min(kid_regions[j], MAX_REGIONS - 1)
        ph_child[c] = -1
        ph_next[c] = -1
        cell_root[cell[c]] = meld(cell_root[cell[c]], c, ckey, ph_child, ph_next)
