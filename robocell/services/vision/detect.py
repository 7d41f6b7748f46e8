"""Sticker grid detection: one camera frame -> the N x N stickers of the face in view.

1. *Candidates*: stickers are bright patches separated by the dark plastic of the cube. The
   frame is reduced to a working width, and its brightness (max of R, G, B) is cut at several
   levels between the frame's dark and bright percentiles; every connected region that is
   nearly square (minimum-area rectangle aspect, fill ratio) at some level is a candidate.
   Sizes are relative to the frame, never fixed in pixels.
2. *Grid*: each candidate, with a similar neighbour one pitch away, proposes a lattice
   (angle from its rectangle, pitch from the neighbour). Candidates of similar size that fall
   on lattice points vote; the N x N window with most votes wins. A homography (affine with
   few stickers) from lattice to image is fitted to the voters, so missing or glared stickers
   are inferred from the others and mild perspective is followed.
3. *Sampling*: each sticker is sampled on an inset square of the full-resolution frame and
   summarised by a trimmed mean (see `colour.trimmed_mean`), with a confidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import cv2
import numpy as np

from robocell.errors import RobocellError
from robocell.services.vision.colour import saturation_level, trimmed_mean, unsaturated_colour

WORK_WIDTH = 640
"""Frames wider than this are reduced to this width to find the grid (sampling uses the
full frame). Not less: at 320 px the black gaps of a 1920x1080 photo's stickers shrink to
two pixels, glare bridges them, and the corners where four stickers meet pass for a grid."""
FAST_WORK_WIDTH = 320
"""Width of the quick first look at a camera-stream frame when the cube size is known (about
twice as fast; kept only when every sticker is found there and fits the lattice)."""
FAST_MAX_RESIDUAL = 0.07
"""Largest distance, in pitches, of a seen sticker from its fitted lattice point for the
quick look to be kept (clean sim frames: at most 0.036 over 240 faces; the real 1920x1080
photos, with their lens's distortion: 0.03-0.058 at 320 px)."""

THRESHOLD_LEVELS = (0.05, 0.1, 0.17, 0.27, 0.4, 0.56, 0.72)
"""Brightness cuts, as fractions between the frame's dark and bright percentiles."""

DARK_PERCENTILE = 0.01
BRIGHT_PERCENTILE = 0.97
"""The cube's black plastic is among the darkest 1 % of a frame even when it fills little
of it; glare and clipped whites are the brightest 3 %."""

EROSION_FRACTIONS = (0.012, 0.025, 0.045, 0.07)
MAX_OPENED_LEVEL = 0.35
"""The lower brightness cuts are also taken eroded by these fractions of the frame's shorter
side, which cuts the bright bridges a glare spot or its halo lays across the black gaps
between stickers (the erosion is given back to the measured sticker size)."""

MIN_SIDE_FRACTION = 0.02
MAX_SIDE_FRACTION = 0.45
"""Sticker side bounds as fractions of the frame's shorter side."""

MAX_ASPECT = 1.35
MIN_FILL = 0.86
"""A candidate's min-area rectangle must be this square and this full (a rounded sticker
fills 0.9 or more of it, a disc such as a beam hole only pi/4)."""

SIDE_TOLERANCE = 1.35
"""Grid members may differ in size by this factor from the proposing candidate."""

ANGLE_TOLERANCE_DEG = 12.0
LATTICE_TOLERANCE = 0.22
"""How far (in pitches) a candidate may sit from its lattice point and still vote."""

MIN_PITCH_RATIO = 1.0
MAX_PITCH_RATIO = 1.6
TYPICAL_PITCH_RATIO = 1.12
"""Pitch (centre distance of neighbours) relative to the sticker side: its bounds, and the
usual value (thin black gaps) that breaks ties between grids of as many stickers."""

SAMPLE_INSET = 0.55
"""Side of the sampled square relative to the pitch."""

SAMPLES_PER_SIDE = 12

TINT_WINDOW = 0.92
TINT_SAMPLES_PER_SIDE = 20
"""Side (relative to the pitch) and sampling of the square whose unsaturated pixels give a
sticker's tint (`colour.unsaturated_colour`): the whole sticker with its rim."""

FOUND_CONFIDENCE = 1.0
INFERRED_CONFIDENCE = 0.6
"""Confidence factors of a sticker seen as its own region, and of one inferred from the grid."""

UNIFORMITY_SCALE = 40.0
"""Spread (per-channel std of the kept pixels) at which the uniformity factor drops to 1/e."""

SIZES = (3, 2)
MIN_EXTRA_3X3 = 2


class DetectionError(RobocellError, ValueError):
    """No sticker grid in the frame."""


@dataclass(frozen=True)
class _Candidate:
    x: float
    y: float
    side: float
    angle: float  # degrees, folded into [-45, 45)


@dataclass
class FaceReading:
    """The stickers of one face as seen in one frame (row-major, as the face appears)."""

    size: int
    colours: np.ndarray          # (N², 3) RGB float
    confidence: np.ndarray       # (N²,) 0..1
    centres: np.ndarray          # (N², 2) image x, y
    corners: np.ndarray          # (4, 2) outer corners of the face: TL, TR, BR, BL
    found: np.ndarray            # (N²,) bool: seen as its own region (not inferred)
    angle_deg: float
    pitch_px: float
    extra: dict = field(default_factory=dict)
    tints: np.ndarray | None = None
    """(N², 3) RGB of each sticker where no channel saturates (`colour.unsaturated_colour`;
    NaN where there is no such part), or None when not measured."""

    def to_message(self) -> dict:
        """Plain data for the bus and JSON output."""
        return {
            "size": self.size,
            "colours": [[int(round(c)) for c in rgb] for rgb in self.colours],
            "confidence": [round(float(c), 3) for c in self.confidence],
            "centres": [[round(float(v), 1) for v in p] for p in self.centres],
            "corners": [[round(float(v), 1) for v in p] for p in self.corners],
            "found": [bool(f) for f in self.found],
            "angle_deg": round(self.angle_deg, 2),
            "pitch_px": round(self.pitch_px, 2),
        }


def _fold_angle(angle: float, width: float, height: float) -> float:
    """minAreaRect angle -> the rectangle's axis angle in [-45, 45)."""
    del width, height
    return (angle + 45.0) % 90.0 - 45.0


def _candidates(bgr_small: np.ndarray, opened: bool = True) -> list[_Candidate]:
    """Sticker-like regions; ``opened=False`` skips the eroded cuts (a glance for frames
    without glare bridges)."""
    blue, green, red = cv2.split(bgr_small)
    brightness = cv2.max(cv2.max(blue, green), red)
    brightness = cv2.GaussianBlur(brightness, (3, 3), 0)
    hist = np.bincount(brightness.ravel(), minlength=256).cumsum()
    total = hist[-1]
    dark = int(np.searchsorted(hist, DARK_PERCENTILE * total))
    bright = int(np.searchsorted(hist, BRIGHT_PERCENTILE * total))
    short = min(brightness.shape)
    min_side, max_side = MIN_SIDE_FRACTION * short, MAX_SIDE_FRACTION * short
    found: list[tuple[_Candidate, float]] = []
    masks = []
    for level in THRESHOLD_LEVELS:
        cut = dark + level * max(bright - dark, 1)
        _, mask = cv2.threshold(brightness, cut, 255, cv2.THRESH_BINARY)
        masks.append((mask, 0))
        if opened and level <= MAX_OPENED_LEVEL:
            inside = cv2.distanceTransform(mask, cv2.DIST_L2, 3)
            for fraction in EROSION_FRACTIONS:
                shrink = max(1.0, fraction * short)
                _, eroded = cv2.threshold(inside, shrink, 255, cv2.THRESH_BINARY)
                masks.append((eroded.astype(np.uint8), shrink))
    for mask, grown in masks:
        contours, _ = cv2.findContours(mask, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
        for contour in contours:
            if len(contour) < 4:
                continue
            _, _, box_w, box_h = cv2.boundingRect(contour)
            if min(box_w, box_h) < min_side or max(box_w, box_h) > 1.5 * max_side:
                continue
            area = cv2.contourArea(contour)
            if area < min_side * min_side:
                continue
            (x, y), (w, h), angle = cv2.minAreaRect(contour)
            if grown:
                # An eroded region: give back what the erosion took (rounded-square area).
                area = (math.sqrt(area) + 2 * grown) ** 2
                w, h = w + 2 * grown, h + 2 * grown
            if min(w, h) < min_side or max(w, h) > max_side:
                continue
            aspect = max(w, h) / max(min(w, h), 1e-6)
            fill = area / (w * h)
            if aspect > MAX_ASPECT or fill < MIN_FILL:
                continue
            found.append((_Candidate(x, y, 0.5 * (w + h), _fold_angle(angle, w, h)),
                          fill - (aspect - 1.0)))
    # The same sticker shows up at several levels: keep its squarest region, the cut that
    # follows the sticker's own edges (a lower cut can take in a bevel or a bright neighbour
    # and shift the centre; a much larger square around it, such as four stickers merged by
    # glare, is another candidate).
    found.sort(key=lambda item: -item[1])
    kept: list[_Candidate] = []
    for cand, _ in found:
        if not any((cand.x - k.x) ** 2 + (cand.y - k.y) ** 2 < (0.4 * cand.side) ** 2
                   and k.side < SIDE_TOLERANCE * cand.side for k in kept):
            kept.append(cand)
    return kept


@dataclass
class _Grid:
    size: int
    votes: int
    residual: float
    to_image: np.ndarray   # 3x3 homography lattice (col, row) -> work image (x, y)
    members: dict[tuple[int, int], int]  # lattice cell -> candidate index
    angle: float
    pitch: float


def _fit_transform(lattice: np.ndarray, image: np.ndarray, angle: float, pitch: float
                   ) -> np.ndarray:
    """Homography lattice -> image from point pairs: full homography from 5+ points not on
    one line, affine from 3+, else a similarity from the proposing angle and pitch."""
    n = len(lattice)
    if n >= 5 and len(set(lattice[:, 0])) > 1 and len(set(lattice[:, 1])) > 1:
        h, _ = cv2.findHomography(lattice.astype(np.float64), image.astype(np.float64), 0)
        if h is not None and abs(np.linalg.det(h[:2, :2])) > 1e-9:
            return h / h[2, 2]
    if n >= 3:
        design = np.hstack([lattice, np.ones((n, 1))])
        solution, _, rank, _ = np.linalg.lstsq(design, image, rcond=None)
        if rank == 3:
            return np.vstack([solution.T, [0.0, 0.0, 1.0]])
    c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    rot = pitch * np.array([[c, -s], [s, c]])
    offset = image.mean(0) - lattice.mean(0) @ rot.T
    return np.vstack([np.hstack([rot, offset[:, None]]), [0.0, 0.0, 1.0]])


def _apply(h: np.ndarray, points: np.ndarray) -> np.ndarray:
    homogeneous = np.hstack([points, np.ones((len(points), 1))]) @ h.T
    return homogeneous[:, :2] / homogeneous[:, 2:3]


def _best_grid(cands: list[_Candidate], size: int, frame_centre: tuple[float, float]
               ) -> _Grid | None:
    """The lattice window with most stickers; ties go to the smaller lattice residual plus
    distance from the usual pitch-to-side ratio, then to the grid nearer the frame centre
    (where the robot holds the cube)."""
    if not cands:
        return None
    xy = np.array([[c.x, c.y] for c in cands])
    side = np.array([c.side for c in cands])
    angle = np.array([c.angle for c in cands])
    best: _Grid | None = None
    best_score: tuple[int, float, float] = (0, 0.0, 0.0)
    for a, anchor in enumerate(cands):
        similar = ((np.maximum(side, anchor.side) / np.minimum(side, anchor.side) < SIDE_TOLERANCE)
                   & (np.abs((angle - anchor.angle + 45.0) % 90.0 - 45.0) < ANGLE_TOLERANCE_DEG))
        theta = math.radians(anchor.angle)
        c, s = math.cos(theta), math.sin(theta)
        offset = xy - xy[a]
        u = offset[:, 0] * c + offset[:, 1] * s
        v = -offset[:, 0] * s + offset[:, 1] * c
        dist = np.hypot(u, v)
        # Pitch: nearest similar neighbour lying along a lattice axis.
        along = np.minimum(np.abs(u), np.abs(v)) < 0.25 * dist
        ok = (similar & along & (dist > MIN_PITCH_RATIO * anchor.side)
              & (dist < MAX_PITCH_RATIO * anchor.side))
        ok[a] = False
        if not ok.any():
            continue
        pitch = float(dist[ok].min())
        gu, gv = u / pitch, v / pitch
        iu, iv = np.round(gu).astype(int), np.round(gv).astype(int)
        on_lattice = similar & (np.abs(gu - iu) < LATTICE_TOLERANCE) & (
            np.abs(gv - iv) < LATTICE_TOLERANCE)
        on_lattice &= (np.abs(iu) < size) & (np.abs(iv) < size)
        cells = {}
        for k in np.nonzero(on_lattice)[0]:
            key = (int(iu[k]), int(iv[k]))
            err = abs(gu[k] - iu[k]) + abs(gv[k] - iv[k])
            if key not in cells or err < cells[key][1]:
                cells[key] = (int(k), err)
        for col0 in range(-size + 1, 1):
            for row0 in range(-size + 1, 1):
                members = {(cu - col0, cv - row0): k for (cu, cv), (k, _) in cells.items()
                           if 0 <= cu - col0 < size and 0 <= cv - row0 < size}
                votes = len(members)
                if best is not None and votes < best.votes:
                    continue
                members_xy = xy[list(members.values())]
                residual = sum(cells[(cu + col0, cv + row0)][1] for cu, cv in members) / votes
                ratio = pitch / float(np.mean(side[list(members.values())]))
                misfit = residual + abs(ratio - TYPICAL_PITCH_RATIO)
                off_centre = float(np.hypot(*(members_xy.mean(0) - frame_centre)))
                score = (votes, -round(misfit, 1), -off_centre)
                if best is not None and score <= best_score:
                    continue
                best_score = score
                lattice = np.array(list(members.keys()), dtype=np.float64)
                h = _fit_transform(lattice, members_xy, anchor.angle, pitch)
                best = _Grid(size, votes, residual, h, members, anchor.angle, pitch)
    return best


def _refine(grid: _Grid, cands: list[_Candidate]) -> _Grid:
    """Re-collect candidates at the fitted lattice points and refit once."""
    xy = np.array([[c.x, c.y] for c in cands])
    cells = np.array([(col, row) for row in range(grid.size) for col in range(grid.size)],
                     dtype=np.float64)
    predicted = _apply(grid.to_image, cells)
    members = {}
    for (col, row), point in zip(cells.astype(int), predicted, strict=True):
        dist = np.hypot(*(xy - point).T)
        k = int(np.argmin(dist))
        if dist[k] < LATTICE_TOLERANCE * grid.pitch * 1.5 and k not in members.values():
            members[(int(col), int(row))] = k
    if len(members) < grid.votes:
        return grid
    lattice = np.array(list(members.keys()), dtype=np.float64)
    h = _fit_transform(lattice, xy[list(members.values())], grid.angle, grid.pitch)
    return _Grid(grid.size, len(members), grid.residual, h, members, grid.angle, grid.pitch)


def min_votes(size: int) -> int:
    """Stickers that must be seen as their own region for a grid to count (the rest are
    inferred): 5 of 9 on a 3x3, 3 of 4 on a 2x2."""
    return size * size // 2 + 1


def _spans_grid(grid: _Grid) -> bool:
    """Whether the seen stickers reach every row and every column of the grid."""
    cols = {col for col, _ in grid.members}
    rows = {row for _, row in grid.members}
    return len(cols) == grid.size and len(rows) == grid.size


def _choose_size(grids: dict[int, _Grid | None], cands: list[_Candidate]) -> _Grid | None:
    """Size unknown: a 3x3 must be seen across all its rows and columns and hold at least
    MIN_EXTRA_3X3 more stickers than the best 2x2 window (else a 2x2 face plus one stray
    square would pass for a 3x3); otherwise a 2x2."""
    three, two = grids.get(3), grids.get(2)
    if (three is not None and three.votes >= min_votes(3) and _spans_grid(three)
            and (two is None or three.votes - two.votes >= MIN_EXTRA_3X3)):
        return _refine(three, cands)
    if two is not None and two.votes >= min_votes(2):
        return _refine(two, cands)
    return None


def detect(bgr: np.ndarray, size: int | None = None) -> FaceReading:
    """Find the sticker grid of the face in view and read its colours.

    ``bgr``: an 8-bit BGR frame (OpenCV's order). ``size``: 2 or 3, or None to try 3 then 2.
    Raises DetectionError when no grid of enough stickers is found.

    Quick looks come first. A frame wider than `WORK_WIDTH` (a 1920x1080 photo) gets a
    glance at the working width through the plain brightness cuts only (a third of the
    cuts). With ``size`` known, a camera-stream frame (at most twice `FAST_WORK_WIDTH`
    wide) gets two looks at half size: that glance, then one with the eroded cuts too. A
    look is kept only when every sticker of the grid was seen as its own region there, the
    lattice fits them within `FAST_MAX_RESIDUAL`, and (size unknown) a 2x2 it found is not
    part of a 3x3; else the frame is searched at `WORK_WIDTH` with every cut. Colours are
    always read from the full-resolution frame.
    """
    if bgr is None or not isinstance(bgr, np.ndarray) or bgr.ndim != 3 or bgr.shape[2] != 3:
        raise DetectionError("expected an 8-bit BGR colour frame (height x width x 3)")
    if bgr.dtype != np.uint8:
        raise DetectionError(f"expected an 8-bit frame, got {bgr.dtype}")
    height, width = bgr.shape[:2]
    work = None
    if width > WORK_WIDTH:
        work = cv2.resize(bgr, (WORK_WIDTH, round(height * WORK_WIDTH / width)),
                          interpolation=cv2.INTER_AREA)
        looks = [(WORK_WIDTH, work, False, "glance")]
    elif size is not None and width > FAST_WORK_WIDTH:
        small = cv2.resize(bgr, (FAST_WORK_WIDTH, round(height * FAST_WORK_WIDTH / width)),
                           interpolation=cv2.INTER_AREA)
        looks = [(FAST_WORK_WIDTH, small, False, "glance"), (FAST_WORK_WIDTH, small, True, "quick")]
    else:
        looks = []
    for look_width, image, opened, name in looks:
        try:
            reading = _detect_at(bgr, size, look_width, image, opened)
        except DetectionError:
            continue
        if (bool(reading.found.all()) and reading.extra["fit_residual"] <= FAST_MAX_RESIDUAL
                and not (size is None and reading.extra["part_of_3x3"])):
            reading.extra["look"] = name
            return reading
    return _detect_at(bgr, size, WORK_WIDTH, work)


def _detect_at(bgr: np.ndarray, size: int | None, work_width: int,
               small: np.ndarray | None = None, opened: bool = True) -> FaceReading:
    """Detection with the grid searched at ``work_width`` (``small``: the frame already
    reduced to it)."""
    height, width = bgr.shape[:2]
    scale = min(1.0, work_width / width)
    if small is None:
        small = bgr if scale == 1.0 else cv2.resize(bgr, (round(width * scale),
                                                          round(height * scale)),
                                                    interpolation=cv2.INTER_AREA)
    cands = _candidates(small, opened)
    centre = (0.5 * small.shape[1], 0.5 * small.shape[0])
    sizes = SIZES if size is None else (size,)
    for n in sizes:
        if n not in SIZES:
            raise DetectionError(f"cube size {n} is not supported (use 2 or 3)")
    grids = {n: _best_grid(cands, n, centre) for n in sizes}
    grid = None
    if size is not None:
        found = grids[size]
        if found is not None and found.votes >= min_votes(size):
            grid = _refine(found, cands)
    else:
        grid = _choose_size(grids, cands)
    if grid is None and size == 3:
        other = _best_grid(cands, 2, centre)
        if other is not None and other.votes == 4:
            raise DetectionError(
                f"the face in the {width}x{height} frame is a 2x2 (4 stickers in a 2x2 grid "
                "found, no 3x3), not the 3x3 asked for; check the cube size given (--size, "
                "the robot profile's puzzle)")
    if grid is None:
        raise DetectionError(
            f"no {' or '.join(f'{n}x{n}' for n in sorted(sizes))} sticker grid found in the "
            f"{width}x{height} frame ({len(cands)} sticker-like regions); check that the face "
            "fills a good part of the frame and is lit")
    around = _stickers_around(grid, cands) if grid.size == 2 else None
    if size == 2 and (seen := around) is not None:
        raise DetectionError(
            f"the face in the {width}x{height} frame is a 3x3 ({seen} stickers in a 3x3 grid "
            "found), not the 2x2 asked for; check the cube size given (--size, the robot "
            "profile's puzzle)")
    reading = _read_grid(bgr, grid, scale)
    reading.extra["fit_residual"] = _fit_residual(grid, cands)
    reading.extra["part_of_3x3"] = around is not None
    return reading


def _stickers_around(grid: _Grid, cands: list[_Candidate]) -> int | None:
    """When a 2x2 grid is part of a larger 3x3 one -- stickers of the same size on the
    lattice points around it fill a 3x3 window across all its rows and columns, with
    `MIN_EXTRA_3X3` more stickers than the 2x2 -- the number seen in that window, else None."""
    xy = np.array([[c.x, c.y] for c in cands])
    side = np.array([c.side for c in cands])
    typical = float(np.median(side[list(grid.members.values())]))
    similar = np.maximum(side, typical) / np.minimum(side, typical) < SIDE_TOLERANCE
    seen = set()
    for col in range(-1, 3):
        for row in range(-1, 3):
            point = _apply(grid.to_image, np.array([[col, row]], dtype=np.float64))[0]
            dist = np.hypot(*(xy - point).T)
            if np.any(similar & (dist < LATTICE_TOLERANCE * grid.pitch)):
                seen.add((col, row))
    best = None
    for col0 in (-1, 0):
        for row0 in (-1, 0):
            window = {(c, r) for c, r in seen if col0 <= c < col0 + 3 and row0 <= r < row0 + 3}
            if (len(window) >= max(min_votes(3), grid.votes + MIN_EXTRA_3X3)
                    and len({c for c, _ in window}) == 3 and len({r for _, r in window}) == 3):
                best = max(best or 0, len(window))
    return best


def _fit_residual(grid: _Grid, cands: list[_Candidate]) -> float:
    """Largest distance, in pitches, between a seen sticker and its fitted lattice point."""
    if not grid.members:
        return float("inf")
    cells = np.array(list(grid.members.keys()), dtype=np.float64)
    seen = np.array([[cands[k].x, cands[k].y] for k in grid.members.values()])
    fitted = _apply(grid.to_image, cells)
    return float(np.hypot(*(fitted - seen).T).max() / max(grid.pitch, 1e-9))


def _square(samples: int, side: float) -> np.ndarray:
    """Sample offsets (samples² x 2) on a square of ``side`` pitches around a cell centre."""
    offsets = ((np.arange(samples) + 0.5) / samples - 0.5) * side
    du, dv = np.meshgrid(offsets, offsets)
    return np.stack([du.ravel(), dv.ravel()], axis=1)


def _pixels(bgr: np.ndarray, to_full: np.ndarray, cell: np.ndarray, pattern: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """RGB pixels (k x 3 float) at ``cell + pattern`` and whether each lies inside the frame."""
    height, width = bgr.shape[:2]
    points = _apply(to_full, cell + pattern)
    px = np.clip(np.round(points[:, 0]).astype(int), 0, width - 1)
    py = np.clip(np.round(points[:, 1]).astype(int), 0, height - 1)
    inside = ((points[:, 0] >= 0) & (points[:, 0] < width) & (points[:, 1] >= 0)
              & (points[:, 1] < height))
    return bgr[py, px][:, ::-1].astype(np.float64), inside


def _read_grid(bgr: np.ndarray, grid: _Grid, scale: float) -> FaceReading:
    n = grid.size
    to_full = np.diag([1.0 / scale, 1.0 / scale, 1.0]) @ grid.to_image
    cells = np.array([(col, row) for row in range(n) for col in range(n)], dtype=np.float64)
    centres = _apply(to_full, cells)
    pattern = _square(SAMPLES_PER_SIDE, SAMPLE_INSET)
    wide = _square(TINT_SAMPLES_PER_SIDE, TINT_WINDOW)
    colours = np.zeros((n * n, 3))
    tints = np.zeros((n * n, 3))
    confidence = np.zeros(n * n)
    found = np.zeros(n * n, dtype=bool)
    windows = [_pixels(bgr, to_full, cell, wide)[0] for cell in cells]
    saturated = saturation_level(np.concatenate(windows))  # one sensor for the whole frame
    for index, cell in enumerate(cells):
        pixels, inside = _pixels(bgr, to_full, cell, pattern)
        colours[index] = trimmed_mean(pixels)
        tints[index] = unsaturated_colour(windows[index], float(colours[index].max()),
                                          saturated)
        key = (int(cell[0]), int(cell[1]))
        found[index] = key in grid.members
        spread = float(np.std(pixels, axis=0).mean())
        confidence[index] = ((FOUND_CONFIDENCE if found[index] else INFERRED_CONFIDENCE)
                             * math.exp(-spread / UNIFORMITY_SCALE) * inside.mean())
    outer = np.array([[-0.5, -0.5], [n - 0.5, -0.5], [n - 0.5, n - 0.5], [-0.5, n - 0.5]])
    # Angle and pitch of the fitted grid along its rows, through the face centre.
    middle = 0.5 * (n - 1)
    a, b = _apply(to_full, np.array([[middle - 0.5, middle], [middle + 0.5, middle]]))
    angle = _fold_angle(math.degrees(math.atan2(b[1] - a[1], b[0] - a[0])), 0, 0)
    return FaceReading(n, colours, confidence, centres, _apply(to_full, outer), found,
                       angle, float(np.hypot(*(b - a))), tints=tints)


DOUBTFUL_BGR = (255, 0, 255)
"""Magenta ring around a sticker the resolver doubts (the colour `net.draw_net` uses too)."""


def draw_debug(bgr: np.ndarray, reading: FaceReading, doubtful: tuple[int, ...] = ()
               ) -> np.ndarray:
    """A copy of the frame with the face outline, each sticker's centre, number and read
    colour (solid: seen, hollow: inferred) drawn on it; the stickers at ``doubtful`` (indices
    in the reading's row-major order) ringed in magenta."""
    out = bgr.copy()
    thickness = max(1, round(out.shape[1] / 640))
    cv2.polylines(out, [np.round(reading.corners).astype(np.int32)], True, (0, 255, 0),
                  2 * thickness)
    radius = max(3, int(reading.pitch_px * 0.18))
    for index, (centre, rgb) in enumerate(zip(reading.centres, reading.colours, strict=True)):
        point = (int(round(centre[0])), int(round(centre[1])))
        bgr_colour = tuple(int(c) for c in rgb[::-1])
        cv2.circle(out, point, radius, bgr_colour, -1 if reading.found[index] else thickness)
        cv2.circle(out, point, radius, (0, 0, 0), thickness)
        if index in doubtful:
            cv2.circle(out, point, int(radius * 1.6), DOUBTFUL_BGR, 3 * thickness)
        cv2.putText(out, f"{index + 1}:{reading.confidence[index]:.2f}",
                    (point[0] - radius, point[1] - radius - 4), cv2.FONT_HERSHEY_SIMPLEX,
                    0.4 * thickness, (0, 255, 0), thickness)
    return out


def draw_failure(bgr: np.ndarray, why: str) -> np.ndarray:
    """A copy of a frame in which no grid was found, with the reason written across it."""
    out = bgr.copy()
    thickness = max(1, round(out.shape[1] / 640))
    scale = 0.5 * thickness
    words, lines = why.split(), [""]
    for word in words:
        if len(lines[-1]) + len(word) > 60:
            lines.append("")
        lines[-1] = f"{lines[-1]} {word}".strip()
    for row, line in enumerate(lines):
        origin = (10 * thickness, (24 + 22 * row) * thickness)
        cv2.putText(out, line, origin, cv2.FONT_HERSHEY_SIMPLEX, scale, (0, 0, 0),
                    3 * thickness, cv2.LINE_AA)
        cv2.putText(out, line, origin, cv2.FONT_HERSHEY_SIMPLEX, scale, DOUBTFUL_BGR,
                    thickness, cv2.LINE_AA)
    return out
