"""Scrambles, all in one place: uniform random cube states (every legal state equally likely,
seedable), random face turns as a person scrambles by hand (none cancels or merges with
another), and the face turns that take the solved cube to a given state (from a
solver's plan for it)."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from robocell.common.cubie import CubieState, permutation_parity
from robocell.common.facelets import (
    N_CORNERS,
    N_EDGES,
    OPPOSITE_FACE,
    check_size,
    size_of,
    solved,
)
from robocell.common.moves import apply_to_facelets
from robocell.common.notation import Move, invert_moves, parse_moves

ROTATIONS = (
    "y", "y2", "y'", "x", "x y", "x y2", "x y'", "x2", "x2 y", "x2 y2", "x2 y'", "x'",
    "x' y", "x' y2", "x' y'", "z", "z y", "z y2", "z y'", "z'", "z' y", "z' y2", "z' y'",
)
"""The 23 non-trivial whole-cube rotations (with the identity, all 24)."""

FACES = "URFDLB"


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


def random_turns(count: int, seed: int | None = None) -> list[Move]:
    """``count`` random face turns (quarter, half or counter-quarter), never two of the same
    face in a row, nor one face again after its opposite face alone (``F B F'``: the turns
    commute and cancel): no turn undoes or merges with an earlier one, as a person
    scrambles."""
    rng = random.Random(seed)
    turns: list[Move] = []
    for _ in range(count):
        barred = {turns[-1].name} if turns else set()
        if len(turns) >= 2 and turns[-1].name == OPPOSITE_FACE[turns[-2].name]:
            barred.add(turns[-2].name)
        face = rng.choice([f for f in FACES if f not in barred])
        turns.append(Move(face, rng.choice((1, 2, 3))))
    return turns


def scramble_to(facelets: str, plan: Sequence[Move]) -> list[Move]:
    """A face-turn sequence that takes the solved cube to exactly ``facelets``, from a plan
    that solves it (its inverse), preceded, for a 2x2x2 whose plan solves it in another
    orientation, by the whole-cube rotation that sets that orientation. Half turns are
    written plainly (U2, not U2'), the usual scramble notation."""
    moves = [Move(m.name, m.quarter_turns) for m in invert_moves(list(plan))]
    size = size_of(facelets)
    for rotation in ("", *ROTATIONS):
        extra = parse_moves(rotation) if rotation else []
        if apply_to_facelets(solved(size), extra + moves, size) == facelets:
            return extra + moves
    raise ValueError(f"no orientation of the plan's inverse reaches {facelets}")
