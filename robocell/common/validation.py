"""Validation of facelet strings: every impossible cube is refused with a specific reason.

`validate` checks, in this order, and raises `CubeStateError` with the first failure's
machine-readable ``code`` and the offending 0-based sticker indices:

==================  =============================================================
code                meaning
==================  =============================================================
``length``          not 24 (2x2x2) or 54 (3x3x3) letters, or not the size asked for
``letters``         a letter other than U R F D L B
``colour_count``    a colour does not appear exactly N² times
``centres``         3x3 centres are not six different colours in a real arrangement
``corner_colours``  a corner's colours form no real corner cubie
``edge_colours``    an edge's colours form no real edge cubie
``duplicate_cubie`` the same cubie appears twice
``corner_twist``    total corner twist wrong: a corner has been twisted
``edge_flip``       total edge flip wrong: an edge has been flipped
``parity``          permutation parity wrong: two pieces have been swapped
==================  =============================================================
"""

from __future__ import annotations

from robocell.common.cubie import (
    CubieState,
    _corner_lookup,
    _edge_lookup,
    from_facelets,
    permutation_parity,
)
from robocell.common.facelets import (
    CORNER_NAMES,
    EDGE_NAMES,
    FACES,
    centre_facelets,
    corner_facelets,
    edge_facelets,
    facelet_name,
    solved,
)
from robocell.common.moves import apply_to_facelets
from robocell.errors import RobocellError

ERROR_CODES = (
    "length", "letters", "colour_count", "centres", "corner_colours", "edge_colours",
    "duplicate_cubie", "corner_twist", "edge_flip", "parity",
)


class CubeStateError(RobocellError, ValueError):
    """An impossible cube. ``code`` is one of ERROR_CODES; ``stickers`` are 0-based indices
    into the facelet string of the stickers at fault (empty when no sticker is singled out)."""

    def __init__(self, code: str, message: str, stickers: tuple[int, ...] = (),
                 size: int | None = None) -> None:
        assert code in ERROR_CODES, code
        self.code = code
        self.stickers = tuple(sorted(stickers))
        self.size = size
        names = ""
        if stickers and size is not None:
            names = " (stickers " + ", ".join(facelet_name(size, s) for s in self.stickers) + ")"
        super().__init__(f"{message}{names}")

    def to_dict(self) -> dict:
        return {"code": self.code, "message": str(self), "stickers": list(self.stickers)}


def _rotation_centres() -> set[str]:
    """The 24 centre arrangements a rotated cube can show (as 6-letter strings U R F D L B)."""
    seen: set[str] = set()
    frontier = [solved(3)]
    centres = centre_facelets()
    while frontier:
        cube = frontier.pop()
        key = "".join(cube[c] for c in centres)
        if key in seen:
            continue
        seen.add(key)
        frontier.extend(apply_to_facelets(cube, r, 3) for r in ("x", "y", "z"))
    return seen


_VALID_CENTRES: set[str] = set()


def validate(facelets: str, size: int | None = None) -> CubieState:
    """Check a facelet string and return its cubie state, or raise `CubeStateError`."""
    if not isinstance(facelets, str):
        raise CubeStateError("length", f"a facelet string must be text, not {type(facelets)}")
    expected = {2: 24, 3: 54}
    if size is not None and size not in expected:
        raise CubeStateError("length", f"cube size {size} is not supported; use 2 or 3")
    length_size = {24: 2, 54: 3}.get(len(facelets))
    if length_size is None or (size is not None and length_size != size):
        want = f"{expected[size]}" if size else "24 (2x2x2) or 54 (3x3x3)"
        raise CubeStateError(
            "length", f"facelet string has {len(facelets)} letters, expected {want}")
    size = length_size
    bad = tuple(i for i, ch in enumerate(facelets) if ch not in FACES)
    if bad:
        letters = sorted({facelets[i] for i in bad})
        raise CubeStateError(
            "letters", f"unknown letter(s) {', '.join(map(repr, letters))}; use only U R F D L B",
            bad, size)
    per_colour = size * size
    counts = {face: facelets.count(face) for face in FACES}
    wrong = {face: n for face, n in counts.items() if n != per_colour}
    if wrong:
        over = tuple(i for i, ch in enumerate(facelets) if counts[ch] > per_colour)
        detail = ", ".join(f"{face} x{n}" for face, n in wrong.items())
        raise CubeStateError(
            "colour_count", f"each colour must appear exactly {per_colour} times: {detail}",
            over, size)
    if size == 3:
        _check_centres(facelets)
    _check_corners(facelets, size)
    if size == 3:
        _check_edges(facelets)
    state = from_facelets(facelets)
    _check_orientation_and_parity(state, size)
    return state


def is_valid(facelets: str, size: int | None = None) -> bool:
    try:
        validate(facelets, size)
    except CubeStateError:
        return False
    return True


def _odd_one(values: list[int], excess: int) -> list[int]:
    """Positions whose orientation is exactly ``excess``: turning any one of them back by
    ``excess`` makes the total right. When only one piece shows it, that piece is the one
    twisted (or flipped) in place; among several, any of them could be."""
    return [pos for pos, value in enumerate(values) if value == excess]


def _check_orientation_and_parity(state: CubieState, size: int) -> None:
    corners = corner_facelets(size)
    excess = int(state.corner_twist.sum()) % 3
    if excess:
        suspects = _odd_one([int(t) for t in state.corner_twist], excess)
        if len(suspects) == 1:
            at = CORNER_NAMES[suspects[0]]
            raise CubeStateError(
                "corner_twist", f"total corner twist is wrong: the corner at {at} is twisted "
                "in place (no other corner is twisted that way); turn it back, or "
                "re-read its stickers", corners[suspects[0]], size)
        raise CubeStateError(
            "corner_twist", "total corner twist is wrong: a corner has been twisted in place; "
            "it cannot be told which, but untwisting any of the corners at "
            f"{', '.join(CORNER_NAMES[p] for p in suspects)} (each twisted that way) would "
            "fix it", (), size)
    if size == 2:
        return
    if int(state.edge_flip.sum()) % 2:
        suspects = _odd_one([int(f) for f in state.edge_flip], 1)
        if len(suspects) == 1:
            at = EDGE_NAMES[suspects[0]]
            raise CubeStateError(
                "edge_flip", f"total edge flip is wrong: the edge at {at} is flipped in place "
                "(the only flipped edge); flip it back, or re-read its stickers",
                edge_facelets()[suspects[0]], size)
        raise CubeStateError(
            "edge_flip", "total edge flip is wrong: an edge has been flipped in place; it "
            f"cannot be told which of the {len(suspects)} flipped edges "
            f"({', '.join(EDGE_NAMES[p] for p in suspects)}) it is", (), size)
    parity = (permutation_parity(state.corner_perm) ^ permutation_parity(state.edge_perm)
              ^ permutation_parity(state.centre_perm))
    if parity:
        _parity_error(state)


def _parity_error(state: CubieState) -> None:
    """Two pieces swapped. When only two corners (or two edges) are out of their places and
    every other piece is home, those two are named; otherwise no piece can be: exchanging
    any two corners, or any two edges, would make the cube valid."""
    corners_out = [p for p, c in enumerate(state.corner_perm) if int(c) != p]
    edges_out = [p for p, e in enumerate(state.edge_perm) if int(e) != p]
    pair = None
    if len(corners_out) == 2 and not edges_out:
        pair = ("corners", CORNER_NAMES, corners_out, corner_facelets(3))
    elif len(edges_out) == 2 and not corners_out:
        pair = ("edges", EDGE_NAMES, edges_out, edge_facelets())
    if pair is not None:
        kind, names, where, stickers = pair
        raise CubeStateError(
            "parity", f"permutation parity is wrong: the {kind} at {names[where[0]]} and "
            f"{names[where[1]]} have been swapped (every other piece is in place); exchange "
            "them, or re-read their stickers", stickers[where[0]] + stickers[where[1]], 3)
    raise CubeStateError(
        "parity", "permutation parity is wrong: two pieces have been swapped; no piece can be "
        "named, since exchanging any two corners or any two edges would make the cube valid "
        "(re-read the cube, or check it was assembled right)", (), 3)


def _check_centres(facelets: str) -> None:
    if not _VALID_CENTRES:
        _VALID_CENTRES.update(_rotation_centres())
    centres = centre_facelets()
    key = "".join(facelets[c] for c in centres)
    if key not in _VALID_CENTRES:
        if len(set(key)) < 6:
            reason = f"centres {key} repeat a colour"
        else:
            reason = f"centres {key} are a mirror image of a real cube"
        raise CubeStateError("centres", f"impossible centres: {reason}", centres, 3)


def _check_corners(facelets: str, size: int) -> None:
    lookup = _corner_lookup()
    where: dict[int, int] = {}
    for pos, stickers in enumerate(corner_facelets(size)):
        colours = tuple(facelets[s] for s in stickers)
        found = lookup.get(colours)
        if found is None:
            raise CubeStateError(
                "corner_colours",
                f"the corner at {CORNER_NAMES[pos]} shows {''.join(colours)}, which is no real "
                "corner (a sticker there is misread or the corner is mirrored)",
                stickers, size)
        cubie = found[0]
        if cubie in where:
            other = where[cubie]
            raise CubeStateError(
                "duplicate_cubie",
                f"corner {CORNER_NAMES[cubie]} appears twice, at {CORNER_NAMES[other]} and "
                f"{CORNER_NAMES[pos]}",
                corner_facelets(size)[other] + stickers, size)
        where[cubie] = pos


def _check_edges(facelets: str) -> None:
    lookup = _edge_lookup()
    where: dict[int, int] = {}
    for pos, stickers in enumerate(edge_facelets()):
        colours = (facelets[stickers[0]], facelets[stickers[1]])
        found = lookup.get(colours)
        if found is None:
            raise CubeStateError(
                "edge_colours",
                f"the edge at {EDGE_NAMES[pos]} shows {''.join(colours)}, which is no real edge",
                stickers, 3)
        cubie = found[0]
        if cubie in where:
            other = where[cubie]
            raise CubeStateError(
                "duplicate_cubie",
                f"edge {EDGE_NAMES[cubie]} appears twice, at {EDGE_NAMES[other]} and "
                f"{EDGE_NAMES[pos]}",
                edge_facelets()[other] + stickers, 3)
        where[cubie] = pos


