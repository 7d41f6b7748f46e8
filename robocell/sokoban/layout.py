"""Where the explorer draws each state of a push graph: a layout that shows the graph's shape
at any size, computed once per level and kept on disk.

Pivot MDS (Brandes and Pich, "Eigensolver methods for progressive multidimensional scaling
of large data", 2006) places the states by their distances in pushes along the arcs (either
way) to a few pivot states picked far apart: one breadth-first search per pivot, then the two
main axes of the double-centred distance matrix. A short force pass (springs along the arcs,
repulsion from the states in neighbouring grid cells) then spreads the states that share a
spot. Both are linear in the size of the graph, so 100 000 states take seconds, not minutes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from numba import njit

from robocell.common.paths import tables_dir

LAYOUT_VERSION = 1
"""Part of the cache key: a change of the algorithm below makes new layouts."""
N_PIVOTS = 40
SPRING_LENGTH = 10.0
"""Length of an arc in layout units after the force pass."""
FORCE_STEPS = 20
MAX_ASPECT = 2.0
"""The layout's spread along its first axis is at most this many times that along its second
(a graph whose second axis is short would otherwise draw as a sliver)."""
CACHE_DIR_NAME = "sokoban-layouts"


def undirected(n_states: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Adjacency (offsets, neighbours) of the arcs taken either way."""
    a = np.concatenate([src, dst]).astype(np.int64)
    b = np.concatenate([dst, src]).astype(np.int32)
    order = np.argsort(a, kind="stable")
    offsets = np.zeros(n_states + 1, dtype=np.int64)
    np.cumsum(np.bincount(a, minlength=n_states), out=offsets[1:])
    return offsets, b[order]


@njit(cache=True, nogil=True)
def pivot_distances(offsets: np.ndarray, neighbours: np.ndarray, first: int,
                    n_pivots: int) -> np.ndarray:
    """Distances (float64[n, n_pivots]) from pivots picked one after another as the state
    farthest from those picked so far (the first is ``first``). A state out of reach of a
    pivot is given the largest distance found plus one."""
    n = offsets.shape[0] - 1
    out = np.zeros((n, n_pivots), dtype=np.float64)
    nearest = np.full(n, 1 << 40, dtype=np.int64)
    dist = np.empty(n, dtype=np.int64)
    queue = np.empty(n, dtype=np.int32)
    pivot = first
    for k in range(n_pivots):
        dist[:] = -1
        dist[pivot] = 0
        queue[0] = pivot
        head, tail = 0, 1
        while head < tail:
            s = queue[head]
            head += 1
            for j in range(offsets[s], offsets[s + 1]):
                t = neighbours[j]
                if dist[t] < 0:
                    dist[t] = dist[s] + 1
                    queue[tail] = t
                    tail += 1
        far = dist.max() + 1
        best, best_d = pivot, -1
        for s in range(n):
            d = dist[s] if dist[s] >= 0 else far
            out[s, k] = d
            if d < nearest[s]:
                nearest[s] = d
            if nearest[s] > best_d:
                best_d = nearest[s]
                best = s
        pivot = best
    return out


def pivot_mds(offsets: np.ndarray, neighbours: np.ndarray, first: int = 0) -> np.ndarray:
    """Positions (float64[n, 2]) of pivot MDS."""
    n = offsets.shape[0] - 1
    if n <= 2:
        return np.column_stack([np.arange(n, dtype=np.float64), np.zeros(n)])
    d = pivot_distances(offsets, neighbours, first, min(N_PIVOTS, n))
    squared = d * d
    centred = -0.5 * (squared - squared.mean(axis=0) - squared.mean(axis=1, keepdims=True)
                      + squared.mean())
    _, vectors = np.linalg.eigh(centred.T @ centred)
    return centred @ vectors[:, [-1, -2]]


@njit(cache=True, nogil=True)
def spread(pos: np.ndarray, offsets: np.ndarray, neighbours: np.ndarray, length: float,
           steps: int) -> None:
    """Force pass in place: springs of rest length ``length`` along the arcs, repulsion from
    the states in the same and the neighbouring cells of a grid of cell size 2*length (so a
    step is linear in the graph), each state moving at most a temperature that cools."""
    n = pos.shape[0]
    cell = 2.0 * length
    force = np.zeros((n, 2))
    order = np.empty(n, dtype=np.int64)
    cell_of = np.empty(n, dtype=np.int64)
    temperature = 0.5 * length
    for _ in range(steps):
        x0, y0 = pos[:, 0].min(), pos[:, 1].min()
        width = int((pos[:, 0].max() - x0) / cell) + 1
        height = int((pos[:, 1].max() - y0) / cell) + 1
        if width * height > 4 * n + 16:  # a sparse grid: coarser cells
            scale = np.sqrt(width * height / (4.0 * n + 16))
            width = int(width / scale) + 1
            height = int(height / scale) + 1
        cw = (pos[:, 0].max() - x0) / width + 1e-9
        ch = (pos[:, 1].max() - y0) / height + 1e-9
        for s in range(n):
            cx = min(int((pos[s, 0] - x0) / cw), width - 1)
            cy = min(int((pos[s, 1] - y0) / ch), height - 1)
            cell_of[s] = cx * height + cy
        order[:] = np.argsort(cell_of)
        start = np.zeros(width * height + 1, dtype=np.int64)
        for s in range(n):
            start[cell_of[s] + 1] += 1
        for c in range(width * height):
            start[c + 1] += start[c]
        force[:] = 0.0
        for i in range(n):
            s = order[i]
            cx, cy = cell_of[s] // height, cell_of[s] % height
            for ax in range(max(cx - 1, 0), min(cx + 2, width)):
                for ay in range(max(cy - 1, 0), min(cy + 2, height)):
                    c = ax * height + ay
                    for k in range(start[c], min(start[c + 1], start[c] + 24)):
                        t = order[k]
                        if t == s:
                            continue
                        ex = pos[s, 0] - pos[t, 0]
                        ey = pos[s, 1] - pos[t, 1]
                        d2 = ex * ex + ey * ey
                        if d2 < 1e-6:
                            ex = ((s * 7919 + t) % 13) / 13.0 - 0.5
                            ey = ((s * 104729 + t) % 17) / 17.0 - 0.5
                            d2 = ex * ex + ey * ey
                        if d2 < length * length:  # overlap only: keeps the global shape
                            f = (length - np.sqrt(d2)) / np.sqrt(d2)
                            force[s, 0] += ex * f
                            force[s, 1] += ey * f
        for s in range(n):
            for j in range(offsets[s], offsets[s + 1]):
                t = neighbours[j]
                ex = pos[t, 0] - pos[s, 0]
                ey = pos[t, 1] - pos[s, 1]
                d = np.sqrt(ex * ex + ey * ey) + 1e-9
                f = (d - length) / d * 0.5
                force[s, 0] += ex * f
                force[s, 1] += ey * f
        for s in range(n):
            f = np.sqrt(force[s, 0] ** 2 + force[s, 1] ** 2) + 1e-9
            move = min(f, temperature)
            pos[s, 0] += force[s, 0] / f * move
            pos[s, 1] += force[s, 1] / f * move
        temperature = max(0.05 * length, temperature * 0.85)


def compute_layout(n_states: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Positions (float32[n, 2]) of the states of a graph whose state 0 is the start; the
    arcs' mean length is about SPRING_LENGTH."""
    if n_states == 0:
        return np.zeros((0, 2), dtype=np.float32)
    offsets, neighbours = undirected(n_states, src, dst)
    pos = pivot_mds(offsets, neighbours)
    if len(src):
        lengths = np.hypot(*(pos[src] - pos[dst]).T)
        mean = float(lengths.mean())
        if mean > 0:
            pos *= SPRING_LENGTH / mean
    spread_x, spread_y = pos.std(axis=0)
    if spread_y > 0 and spread_x > MAX_ASPECT * spread_y:
        pos[:, 1] *= spread_x / (MAX_ASPECT * spread_y)
    pos = np.ascontiguousarray(pos)
    spread(pos, offsets, neighbours, SPRING_LENGTH, FORCE_STEPS)
    return (pos - pos.mean(axis=0)).astype(np.float32)


def layout_key(level_text: str, states: np.ndarray, src: np.ndarray, dst: np.ndarray) -> str:
    """What a layout depends on: the level, the states drawn and their arcs, the algorithm."""
    digest = hashlib.sha256(f"v{LAYOUT_VERSION}\n{level_text}\n".encode())
    for part in (states, src, dst):
        digest.update(np.ascontiguousarray(part, dtype=np.int64).tobytes())
    return digest.hexdigest()[:32]


def cached_layout(level_text: str, states: np.ndarray, src: np.ndarray, dst: np.ndarray,
                  cache_dir: Path | None = None) -> np.ndarray:
    """``compute_layout`` of the drawn graph (``states``: the level's state ids drawn; the
    arcs in their local numbers), read from the cache when it was computed before and
    written there otherwise (the cache: ``sokoban-layouts/`` in the tables directory; a
    cache that cannot be written only costs the time again)."""
    folder = cache_dir if cache_dir is not None else tables_dir() / CACHE_DIR_NAME
    path = folder / f"{layout_key(level_text, states, src, dst)}.npy"
    try:
        pos = np.load(path)
        if pos.shape == (len(states), 2):
            return pos
    except (OSError, ValueError):
        pass
    pos = compute_layout(len(states), src, dst)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial.npy")
        np.save(partial, pos)
        partial.replace(path)
    except OSError:
        pass
    return pos
