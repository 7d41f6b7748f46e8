"""Uniform random cube states (every legal state equally likely, seedable)."""

from __future__ import annotations

import numpy as np

from robocell.common.cubie import CubieState, permutation_parity
from robocell.common.facelets import N_CORNERS, N_EDGES, check_size


def random_cubie_state(size: int, rng: np.random.Generator | int | None = None) -> CubieState:
    """A uniformly random legal state.

    3x3x3: centres in standard orientation; corner and edge permutations uniform with equal
    parity, twists and flips uniform with zero total. 2x2x2: corner permutation and twist
    uniform with zero total twist, which covers every state in every whole-cube orientation
    equally often (8!·3^7 = 24 orientations x 3,674,160 states).
    """
    check_size(size)
    rng = np.random.default_rng(rng)
    state = CubieState(size)
    state.corner_perm = rng.permutation(N_CORNERS).astype(np.int8)
    twist = rng.integers(0, 3, N_CORNERS).astype(np.int8)
    twist[-1] = (-int(twist[:-1].sum())) % 3
    state.corner_twist = twist
    if size == 3:
        edges = rng.permutation(N_EDGES).astype(np.int8)
        if permutation_parity(edges) != permutation_parity(state.corner_perm):
            edges[[0, 1]] = edges[[1, 0]]
        state.edge_perm = edges
        flip = rng.integers(0, 2, N_EDGES).astype(np.int8)
        flip[-1] = int(flip[:-1].sum()) % 2
        state.edge_flip = flip
    return state


def random_facelets(size: int, rng: np.random.Generator | int | None = None) -> str:
    """Facelet string of a uniformly random legal state (see `random_cubie_state`)."""
    return random_cubie_state(size, rng).to_facelets()

