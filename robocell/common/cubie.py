"""The cubie level: where each corner and edge cubie is and how it is turned.

A cube state is uniquely determined by, for each corner position, which corner cubie sits
there (``corner_perm``) and how far it is twisted clockwise (``corner_twist``, 0..2: which of
its stickers shows on the position's U/D sticker), the same for edges (``edge_perm``,
``edge_flip`` 0..1, 3x3 only), and for a 3x3 which centre sits on each face position
(``centre_perm``, identity unless the whole cube has been rotated).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from robocell.common.facelets import (
    CORNER_COLOURS,
    EDGE_COLOURS,
    FACES,
    N_CORNERS,
    N_EDGES,
    N_FACES,
    centre_facelets,
    check_size,
    corner_facelets,
    edge_facelets,
    n_facelets,
)

N_TWIST_VALUES = 3
N_FLIP_VALUES = 2


def _identity(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.int8)


@dataclass(eq=False)
class CubieState:
    """A cube at the cubie level. Composition follows kociemba: ``a * b`` is ``a`` then ``b``."""

    size: int
    corner_perm: np.ndarray = field(default_factory=lambda: _identity(N_CORNERS))
    corner_twist: np.ndarray = field(default_factory=lambda: np.zeros(N_CORNERS, np.int8))
    edge_perm: np.ndarray = field(default_factory=lambda: _identity(N_EDGES))
    edge_flip: np.ndarray = field(default_factory=lambda: np.zeros(N_EDGES, np.int8))
    centre_perm: np.ndarray = field(default_factory=lambda: _identity(N_FACES))

    def __post_init__(self) -> None:
        check_size(self.size)

    @classmethod
    def solved(cls, size: int) -> CubieState:
        return cls(size)

    def copy(self) -> CubieState:
        return CubieState(
            self.size, self.corner_perm.copy(), self.corner_twist.copy(),
            self.edge_perm.copy(), self.edge_flip.copy(), self.centre_perm.copy(),
        )

    def __mul__(self, other: CubieState) -> CubieState:
        """The state reached by applying ``other`` (as a move) to this state."""
        cp = self.corner_perm[other.corner_perm]
        co = (self.corner_twist[other.corner_perm] + other.corner_twist) % N_TWIST_VALUES
        ep = self.edge_perm[other.edge_perm]
        eo = (self.edge_flip[other.edge_perm] + other.edge_flip) % N_FLIP_VALUES
        cc = self.centre_perm[other.centre_perm]
        return CubieState(self.size, cp, co.astype(np.int8), ep, eo.astype(np.int8), cc)

    def inverse(self) -> CubieState:
        cp = np.argsort(self.corner_perm).astype(np.int8)
        co = (-self.corner_twist[cp]) % N_TWIST_VALUES
        ep = np.argsort(self.edge_perm).astype(np.int8)
        eo = (-self.edge_flip[ep]) % N_FLIP_VALUES
        cc = np.argsort(self.centre_perm).astype(np.int8)
        return CubieState(self.size, cp, co.astype(np.int8), ep, eo.astype(np.int8), cc)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CubieState) or other.size != self.size:
            return NotImplemented
        same = (np.array_equal(self.corner_perm, other.corner_perm)
                and np.array_equal(self.corner_twist, other.corner_twist))
        if self.size == 3:
            same = same and (np.array_equal(self.edge_perm, other.edge_perm)
                             and np.array_equal(self.edge_flip, other.edge_flip)
                             and np.array_equal(self.centre_perm, other.centre_perm))
        return bool(same)

    def is_solved(self) -> bool:
        """True for the solved state in this exact orientation."""
        return self == CubieState.solved(self.size)

    def to_facelets(self) -> str:
        """The facelet string of this state (exact inverse of `from_facelets`)."""
        chars = ["?"] * n_facelets(self.size)
        for pos, stickers in enumerate(corner_facelets(self.size)):
            cubie = int(self.corner_perm[pos])
            twist = int(self.corner_twist[pos])
            for k in range(3):
                chars[stickers[(k + twist) % 3]] = CORNER_COLOURS[cubie][k]
        if self.size == 3:
            for pos, stickers in enumerate(edge_facelets()):
                cubie = int(self.edge_perm[pos])
                flip = int(self.edge_flip[pos])
                for k in range(2):
                    chars[stickers[(k + flip) % 2]] = EDGE_COLOURS[cubie][k]
            for pos, sticker in enumerate(centre_facelets()):
                chars[sticker] = FACES[int(self.centre_perm[pos])]
        return "".join(chars)


def from_facelets(facelets: str) -> CubieState:
    """Cubie state of a facelet string whose every piece is a real cubie.

    Use `robocell.common.validation.validate` for untrusted input: it gives a specific
    error for every kind of impossible cube; this function only converts.
    """
    size = {24: 2, 54: 3}[len(facelets)]
    state = CubieState(size)
    corner_lookup = _corner_lookup()
    for pos, stickers in enumerate(corner_facelets(size)):
        colours = tuple(facelets[s] for s in stickers)
        cubie, twist = corner_lookup[colours]
        state.corner_perm[pos] = cubie
        state.corner_twist[pos] = twist
    if size == 3:
        edge_lookup = _edge_lookup()
        for pos, stickers in enumerate(edge_facelets()):
            colours = (facelets[stickers[0]], facelets[stickers[1]])
            cubie, flip = edge_lookup[colours]
            state.edge_perm[pos] = cubie
            state.edge_flip[pos] = flip
        for pos, sticker in enumerate(centre_facelets()):
            state.centre_perm[pos] = FACES.index(facelets[sticker])
    return state


_CORNER_LOOKUP: dict[tuple[str, ...], tuple[int, int]] = {}
_EDGE_LOOKUP: dict[tuple[str, ...], tuple[int, int]] = {}


def _corner_lookup() -> dict[tuple[str, ...], tuple[int, int]]:
    """Colours read clockwise from a position's U/D sticker -> (cubie, twist)."""
    if not _CORNER_LOOKUP:
        for cubie, colours in enumerate(CORNER_COLOURS):
            for twist in range(3):
                # the cubie's U/D colour (index 0) lands on sticker `twist` of the position
                read = tuple(colours[(k - twist) % 3] for k in range(3))
                _CORNER_LOOKUP[read] = (cubie, twist)
    return _CORNER_LOOKUP


def _edge_lookup() -> dict[tuple[str, ...], tuple[int, int]]:
    """Colours read from a position's reference sticker -> (cubie, flip)."""
    if not _EDGE_LOOKUP:
        for cubie, colours in enumerate(EDGE_COLOURS):
            _EDGE_LOOKUP[(colours[0], colours[1])] = (cubie, 0)
            _EDGE_LOOKUP[(colours[1], colours[0])] = (cubie, 1)
    return _EDGE_LOOKUP


def permutation_parity(perm: np.ndarray) -> int:
    """0 for an even permutation, 1 for an odd one."""
    seen = np.zeros(len(perm), dtype=bool)
    parity = 0
    for start in range(len(perm)):
        if seen[start]:
            continue
        length = 0
        j = start
        while not seen[j]:
            seen[j] = True
            j = int(perm[j])
            length += 1
        parity ^= (length - 1) & 1
    return parity
