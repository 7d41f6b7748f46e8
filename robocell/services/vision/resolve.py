"""Colour resolution: the colours of all 6·N² stickers -> the closest *valid* facelet string.

Stickers are not classified one by one against fixed colour thresholds. Instead six colour
classes are learnt from the scan itself (`classes`: seeded by the centres on a 3x3, by
clustering on a 2x2) and the assignment of colours to stickers is chosen as the cheapest
assignment of real cubies to positions (every corner and edge a real cubie, twist and flip
sums zero, corner and edge permutation parities equal), alternating with re-estimating the
classes from that assignment. Which colour is opposite which is never assumed: on a 3x3 the
centres say it, on a 2x2 every way of pairing the six classes into opposite faces (30 colour
schemes up to a rotation of the cube) is tried and the cubies decide.

The result is refused, naming the doubtful stickers, when the cheapest valid cube still needs
a sticker to be far from its colour class, or when another valid cube is nearly as cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

import numpy as np

from robocell.common import cube
from robocell.common.facelets import OPPOSITE_FACE
from robocell.errors import RobocellError
from robocell.services.vision.assign import (
    INFEASIBLE,
    cheapest_assignment,
    cheapest_below,
    cheapest_totals,
)
from robocell.services.vision.classes import (
    N_CHANNELS,
    PRIOR_VARIANCE,
    ColourModel,
    FaceLight,
    explained_cost,
    farthest_point_classes,
)

N_FACES = 6
SIZES = (2, 3)
N_CORNER_TWIST = 3
N_EDGE_FLIP = 2

MAX_ROUNDS = 8
"""Alternations of (assign cubies, re-estimate colour classes) before giving up on a fixpoint."""

FAR_COST = 60.0
"""A sticker whose assigned class costs this much more than its nearest class is doubtful."""

AMBIGUOUS_COST = 12.0
"""Another valid cube whose refitted cost is within this of the best makes the reading
ambiguous. Calibrated on 600 sim cubes under harsher lighting than the default: every
wrong cheapest reading there had a margin below 9.3, the correct ones mostly far above."""

CONFIDENT_GAP = 48.0
"""Gaps to the nearest other valid cube are only searched (and reported) up to this."""

FORBID = 1e6
"""Added to a sticker's cost for its current colour to ask for the best cube without it."""

HINT_SLACK = 1e-6

MAX_SWITCHES = 3
SWITCH_GAIN = 1.0
"""A nearby valid cube that, refitted, explains the colours better by more than this is
taken instead (at most MAX_SWITCHES times)."""


class ResolveError(RobocellError, ValueError):
    """No trustworthy cube: ``code`` says why, ``stickers`` (0-based facelet indices, URFDLB
    order) are the stickers to look at again."""

    def __init__(self, code: str, message: str, stickers: tuple[int, ...] = (),
                 size: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.stickers = tuple(int(s) for s in stickers)
        self.size = size

    @property
    def faces(self) -> str:
        """The faces that carry doubtful stickers, in URFDLB order (what to rescan)."""
        if not self.size:
            return ""
        area = self.size * self.size
        return "".join(f for i, f in enumerate(cube.FACES)
                       if any(s // area == i for s in self.stickers))


@dataclass(frozen=True)
class Resolution:
    """A valid facelet string and how sure the reading is."""

    facelets: str
    size: int
    confidence: tuple[float, ...]
    """Per sticker (URFDLB order), 0..1: how much cheaper this cube is than the best cube in
    which the sticker has another colour, as a fraction of CONFIDENT_GAP (readings with a
    sticker below AMBIGUOUS_COST / CONFIDENT_GAP = 0.25 are refused)."""
    class_rgb: dict[str, tuple[int, int, int]]
    """Learnt colour of each face letter (mean measured RGB)."""
    cost: float
    margin: float
    """Total cost of the nearest other valid cube minus this one's (inf when none near)."""


def _names(stickers: tuple[int, ...] | list[int], size: int) -> str:
    return ", ".join(cube.facelet_name(size, s) for s in stickers)


@dataclass(frozen=True)
class _Geometry:
    size: int
    corners: np.ndarray       # (8, 3) facelet indices
    corner_colour: np.ndarray  # (8 cubies, 3 twists, 3 stickers) face index
    edges: np.ndarray          # (12, 2)
    edge_colour: np.ndarray    # (12 cubies, 2 flips, 2 stickers) face index
    centres: np.ndarray        # (6,)
    piece_of: tuple[tuple[str, int], ...]  # per facelet: ("corner" | "edge" | "centre", slot)


def _geometry(size: int) -> _Geometry:
    if size not in SIZES:
        raise ResolveError("size", f"cube size {size} is not supported (use 2 or 3)")
    corners = np.array(cube.corner_facelets(size), dtype=np.int64)
    corner_faces = np.array(cube.corner_facelets(3), dtype=np.int64) // 9
    corner_colour = np.array([[[corner_faces[j, (k - t) % N_CORNER_TWIST]
                                for k in range(3)] for t in range(N_CORNER_TWIST)]
                              for j in range(8)], dtype=np.int64)
    if size == 3:
        edges = np.array(cube.edge_facelets(), dtype=np.int64)
        edge_faces = edges // 9
        edge_colour = np.array([[[edge_faces[j, (k + f) % N_EDGE_FLIP] for k in range(2)]
                                 for f in range(N_EDGE_FLIP)] for j in range(12)],
                               dtype=np.int64)
        centres = np.array(cube.centre_facelets(), dtype=np.int64)
    else:
        edges = np.zeros((0, 2), dtype=np.int64)
        edge_colour = np.zeros((0, 2, 2), dtype=np.int64)
        centres = np.zeros(0, dtype=np.int64)
    piece_of: list[tuple[str, int]] = [("centre", 0)] * (N_FACES * size * size)
    for slot, stickers in enumerate(corners):
        for i in stickers:
            piece_of[i] = ("corner", slot)
    for slot, stickers in enumerate(edges):
        for i in stickers:
            piece_of[i] = ("edge", slot)
    return _Geometry(size, corners, corner_colour, edges, edge_colour, centres,
                     tuple(piece_of))


_GEOMETRY: dict[int, _Geometry] = {}


def geometry(size: int) -> _Geometry:
    if size not in _GEOMETRY:
        _GEOMETRY[size] = _geometry(size)
    return _GEOMETRY[size]


def _cheapest_cube(face_cost: np.ndarray, geo: _Geometry, hint: np.ndarray | None = None
                   ) -> tuple[float, np.ndarray]:
    """Cheapest valid cube for per-sticker face costs (n, 6): (total cost, face per sticker).
    ``hint``: face labels of a known valid cube, whose cost bounds (and speeds up) the edge
    search; it is returned when nothing is cheaper."""
    n = face_cost.shape[0]
    corner_cost = face_cost[geo.corners[:, None, None, :], geo.corner_colour[None]].sum(-1)
    c_total, c_cubie, c_twist = cheapest_assignment(corner_cost)
    labels = np.empty(n, dtype=np.int64)
    if geo.size == 2:
        parity = int(np.argmin(c_total))
        total = float(c_total[parity])
    else:
        centre_cost = _centre_cost(face_cost, geo)
        upper = INFEASIBLE
        if hint is not None:
            hint_total = float(face_cost[np.arange(n), hint].sum())
            upper = hint_total - centre_cost - float(np.min(c_total)) + HINT_SLACK
        edge_cost = face_cost[geo.edges[:, None, None, :], geo.edge_colour[None]].sum(-1)
        e_total, e_cubie, e_flip = cheapest_assignment(edge_cost, upper)
        both = c_total + e_total
        parity = int(np.argmin(both))
        if hint is not None and both[parity] + centre_cost >= hint_total:
            return hint_total, hint.copy()
        total = float(both[parity]) + centre_cost
        labels[geo.edges] = geo.edge_colour[e_cubie[parity], e_flip[parity]]
        labels[geo.centres] = np.arange(N_FACES)
    labels[geo.corners] = geo.corner_colour[c_cubie[parity], c_twist[parity]]
    return total, labels


def _centre_cost(face_cost: np.ndarray, geo: _Geometry) -> float:
    return float(face_cost[geo.centres, np.arange(len(geo.centres))].sum())


def _change_cost(face_cost: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per sticker: cheapest extra cost of giving it any other colour (negative when another
    colour is nearer than the assigned one)."""
    n = len(labels)
    others = face_cost.copy()
    others[np.arange(n), labels] = np.inf
    return others.min(axis=1) - face_cost[np.arange(n), labels]


def _schemes() -> list[np.ndarray]:
    """The 30 ways to give six colour classes to the faces U R F D L B, up to rotation:
    class 0 on U; its opposite; the lowest remaining class on F; its opposite; R and L."""
    schemes = []
    face = {f: i for i, f in enumerate(cube.FACES)}
    for d in range(1, N_FACES):
        rest = [k for k in range(1, N_FACES) if k != d]
        f = rest[0]
        for b in rest[1:]:
            last = [k for k in rest[1:] if k != b]
            for r, l in permutations(last):
                class_of_face = np.empty(N_FACES, dtype=np.int64)
                for letter, k in zip("UDFBRL", (0, d, f, b, r, l), strict=True):
                    class_of_face[face[letter]] = k
                schemes.append(class_of_face)
    return schemes


SCHEMES_2X2 = _schemes()
SCHEME_CORNER_CLASS = np.stack([scheme[geometry(2).corner_colour] for scheme in SCHEMES_2X2],
                               axis=1)
"""(8 cubies, 30 schemes, 3 twists, 3 stickers) -> colour class, for ranking the schemes."""


def _canonical_2x2(labels: np.ndarray, geo: _Geometry) -> np.ndarray:
    """Relabel faces by the cube rotation that brings the cubie at DBL to D, B, L."""
    dbl = geo.corners[6]
    x, y, z = (cube.FACES[labels[i]] for i in dbl)
    rename = {x: "D", y: "B", z: "L", OPPOSITE_FACE[x]: "U", OPPOSITE_FACE[y]: "F",
              OPPOSITE_FACE[z]: "R"}
    table = np.array([cube.FACES.index(rename[f]) for f in cube.FACES], dtype=np.int64)
    return table[labels]


def _fit_rounds(light: FaceLight, geo: _Geometry, model: ColourModel
                ) -> tuple[float, np.ndarray, np.ndarray, ColourModel, float, np.ndarray]:
    """Alternate cheapest valid cube and re-estimation of the colour classes until the
    reading is stable. Returns (cost, face per sticker, class of each face, model,
    cost and class per sticker of the best cube under any other colour scheme (2x2; inf on
    a 3x3))."""
    schemes = SCHEMES_2X2 if geo.size == 2 else [np.arange(N_FACES)]
    previous = None
    features = light.features()
    for _ in range(MAX_ROUNDS):
        class_cost = model.cost(features)
        if len(schemes) > 1:
            # Rank every scheme by its corner programme's total, then label the best two.
            corner_cost = np.ascontiguousarray(class_cost[
                geo.corners[:, None, None, None, :], SCHEME_CORNER_CLASS[None]
            ].sum(-1).transpose(2, 0, 1, 3))  # (scheme, position, cubie, twist)
            totals = cheapest_totals(corner_cost)
            order = np.argsort(totals, kind="stable")[:2]
        else:
            order = [0]
        readings = []
        for s in order:
            hint = previous if (previous is not None and len(schemes) == 1) else None
            total, labels = _cheapest_cube(class_cost[:, schemes[s]], geo, hint)
            readings.append((total, labels, schemes[s]))
        total, labels, class_of_face = readings[0]
        if previous is not None and np.array_equal(labels, previous):
            break
        previous = labels
        light.fit(class_of_face[labels])
        features = light.features()
        model = ColourModel.fit(features, class_of_face[labels])
    if len(readings) > 1:
        runner_total, runner_labels, runner_scheme = readings[1]
        return (total, labels, class_of_face, model, runner_total,
                runner_scheme[runner_labels])
    return total, labels, class_of_face, model, float("inf"), class_of_face[labels]


def _part(face_cost: np.ndarray, geo: _Geometry, which: int) -> tuple[np.ndarray, np.ndarray]:
    """(sticker indices, cost[position, cubie, orientation]) of the corners (0) or edges (1)."""
    if which == 0:
        return geo.corners, face_cost[geo.corners[:, None, None, :],
                                      geo.corner_colour[None]].sum(-1)
    return geo.edges, face_cost[geo.edges[:, None, None, :], geo.edge_colour[None]].sum(-1)


def _nearby_cubes(face_cost: np.ndarray, labels: np.ndarray, total: float, geo: _Geometry
                  ) -> list[tuple[float, np.ndarray]]:
    """Other valid cubes whose cost is within CONFIDENT_GAP of ``total``: for each sticker
    that could change colour cheaply, the cheapest cube in which it does (its current colour
    forbidden; only the corners or the edges holding it are searched again, the other part
    keeps its cheapest assignment of the needed parity)."""
    delta = _change_cost(face_cost, labels)
    colour_tables = [geo.corner_colour, geo.edge_colour]
    solved_parts = []
    centre_cost = _centre_cost(face_cost, geo)
    corners = cheapest_assignment(_part(face_cost, geo, 0)[1])
    solved_parts.append(corners)
    if geo.size == 3:
        # Only edge assignments that can take part in a cube within CONFIDENT_GAP matter.
        upper = total - centre_cost - float(np.min(corners[0])) + CONFIDENT_GAP
        solved_parts.append(cheapest_assignment(_part(face_cost, geo, 1)[1], upper))
    found: list[tuple[float, np.ndarray]] = []
    covered: set[int] = set()
    for i in np.argsort(delta, kind="stable"):
        if delta[i] >= CONFIDENT_GAP:
            break
        kind, _ = geo.piece_of[i]
        if kind == "centre" or int(i) in covered:
            continue
        which = 0 if kind == "corner" else 1
        forbidden = face_cost.copy()
        forbidden[i, labels[i]] += FORBID
        stickers, part_cost = _part(forbidden, geo, which)
        if geo.size == 3:
            other = solved_parts[1 - which][0]
        else:
            other = np.zeros(2)
        bound = total + CONFIDENT_GAP - other - centre_cost
        alt_best, alt_cubie, alt_ori = cheapest_below(part_cost, bound)
        totals = alt_best + other
        parity = int(np.argmin(totals))
        if totals[parity] >= INFEASIBLE:
            continue
        alt = labels.copy()
        alt[stickers] = colour_tables[which][alt_cubie[parity], alt_ori[parity]]
        if geo.size == 3:
            _, o_cubie, o_ori = solved_parts[1 - which]
            o_stickers = geo.edges if which == 0 else geo.corners
            alt[o_stickers] = colour_tables[1 - which][o_cubie[parity], o_ori[parity]]
        gap = float(totals[parity]) + centre_cost - total
        found.append((gap, alt))
        covered.update(int(s) for s in np.nonzero(alt != labels)[0])
    return found


def resolve(colours: np.ndarray, size: int | None = None, tints: np.ndarray | None = None
            ) -> Resolution:
    """Resolve measured sticker colours (6·N² x 3 RGB, URFDLB order, row-major per face) to
    a valid facelet string; raises ResolveError naming doubtful stickers otherwise.
    ``tints``: the same stickers' unsaturated rim colours (`detect.FaceReading.tints`;
    NaN where none), when read from frames."""
    rgb = np.asarray(colours, dtype=np.float64)
    if rgb.ndim != 2 or rgb.shape[1] != 3:
        raise ResolveError("shape", f"expected one RGB triple per sticker, got shape {rgb.shape}")
    n = rgb.shape[0]
    if size is None:
        size = {24: 2, 54: 3}.get(n)
        if size is None:
            raise ResolveError("length", f"{n} stickers is neither a 2x2 (24) nor a 3x3 (54)")
    geo = geometry(size)
    if n != N_FACES * size * size:
        raise ResolveError("length", f"a {size}x{size} has {N_FACES * size * size} stickers, "
                           f"got {n}")
    if not np.all(np.isfinite(rgb)):
        bad = tuple(int(i) for i in np.nonzero(~np.isfinite(rgb).all(1))[0])
        raise ResolveError("missing", f"stickers {_names(bad, size)} have no colour; rescan "
                           "them", bad, size)
    if tints is not None and np.shape(tints) != rgb.shape:
        raise ResolveError("shape", f"tints of shape {np.shape(tints)} for colours of shape "
                           f"{rgb.shape}")
    clipped = np.clip(rgb, 0, 255)
    light = FaceLight(clipped, size, tints)
    features = light.features()
    if size == 3:
        start = ColourModel(features.colour[geo.centres].copy(),
                             np.full((N_FACES, N_CHANNELS), PRIOR_VARIANCE))
    else:
        start = ColourModel.fit(features, farthest_point_classes(features.colour))
    for _ in range(MAX_SWITCHES + 1):
        total, labels, class_of_face, model, runner_total, runner_classes = _fit_rounds(
            light, geo, start)
        features = light.features()
        face_cost = model.cost(features)[:, class_of_face]
        nearby = _nearby_cubes(face_cost, labels, total, geo)
        # Each nearby cube is judged with lighting and colour classes refitted to it: the
        # alternation can settle on a reading that a neighbour explains better.
        own = explained_cost(clipped, size, class_of_face[labels], tints)
        refits = [(explained_cost(clipped, size, class_of_face[alt], tints) - own, alt)
                  for _, alt in nearby]
        better = [(gap, alt) for gap, alt in refits if gap < -SWITCH_GAIN]
        if not better:
            break
        _, alt = min(better, key=lambda item: item[0])
        light = FaceLight(clipped, size, tints)
        light.fit(class_of_face[alt])
        start = ColourModel.fit(light.features(), class_of_face[alt])

    if runner_total - total < AMBIGUOUS_COST:
        stickers = tuple(int(s) for s in np.nonzero(runner_classes != class_of_face[labels])[0])
        raise ResolveError(
            "ambiguous", f"two colour schemes fit the colours almost equally well; they "
            f"disagree at stickers {_names(stickers, size)}; rescan them", stickers, size)
    assigned = face_cost[np.arange(n), labels]
    nearest = face_cost.min(axis=1)
    far = tuple(int(i) for i in np.nonzero(assigned - nearest > FAR_COST)[0])
    if far:
        raise ResolveError(
            "doubtful", f"no valid cube is close to the measured colours: stickers "
            f"{_names(far, size)} would have to change colour; rescan them", far, size)

    # A sticker no nearby cube changes is as sure as CONFIDENT_GAP allows to tell.
    confidence = np.ones(n)
    margin = float("inf")
    ambiguous: set[int] = set()
    for gap, alt in refits:
        changed = np.nonzero(alt != labels)[0]
        margin = min(margin, gap)
        confidence[changed] = np.minimum(confidence[changed],
                                         np.clip(gap / CONFIDENT_GAP, 0.0, 1.0))
        if gap < AMBIGUOUS_COST:
            ambiguous.update(int(s) for s in changed)
    if size == 3:
        confidence[geo.centres] = 1.0  # a centre defines its face's colour
    if ambiguous:
        stickers = tuple(sorted(ambiguous))
        raise ResolveError(
            "ambiguous", f"two valid cubes fit the colours almost equally well; they differ at "
            f"stickers {_names(stickers, size)}; rescan them", stickers, size)

    if size == 2:
        labels = _canonical_2x2(labels, geo)
    facelets = "".join(cube.FACES[k] for k in labels)
    cube.validate(facelets, size)  # the assignment is valid by construction; check anyway
    class_rgb = {}
    for k, letter in enumerate(cube.FACES):
        mean = rgb[labels == k].mean(axis=0)
        class_rgb[letter] = tuple(int(round(v)) for v in mean)
    return Resolution(facelets, size, tuple(float(c) for c in confidence), class_rgb, total,
                      margin)


def same_cube(read: str, truth: str) -> bool:
    """Whether a reading names the same cube as ``truth``: equal facelets on a 3x3; on a
    2x2 (no centres to fix the letters) the same grouping of stickers into colour classes."""
    if len(read) != len(truth):
        return False
    if len(read) == N_FACES * 9:
        return read == truth
    first_read: dict[str, int] = {}
    first_truth: dict[str, int] = {}
    return all(first_read.setdefault(a, len(first_read)) == first_truth.setdefault(
        b, len(first_truth)) for a, b in zip(read, truth, strict=True))
