"""Camera calibration: where each face sits in the frame at its scan pose, and the cube's six
colours under the robot's own light -- learnt once from frames of a cube in a known state
(solved, unless told otherwise), checked against every frame after.

A calibration is plain data (`Calibration`, saved as JSON). `calibrate` learns it from six
frames; `check_reading` says how a later frame no longer matches it (the face moved in the
frame, or its colours are far from every calibrated colour: the light or the camera
changed); `read_cube` reads a cube with it -- a face whose grid is not found is sampled at
its calibrated place, and the colour classes of the resolved cube are named by the
calibrated colours (which gives a 2x2, whose letters no centre fixes, the robot's own
letters).
"""

from __future__ import annotations

import datetime
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robocell.common.cube import CubeStateError, solved, validate
from robocell.common.facelets import FACES
from robocell.errors import RobocellError
from robocell.services.vision.colour import rgb_to_lab, trimmed_mean
from robocell.services.vision.detect import (
    INFERRED_CONFIDENCE,
    SAMPLE_INSET,
    DetectionError,
    FaceReading,
    detect,
)
from robocell.services.vision.resolve import Resolution, resolve
from robocell.services.vision.scan import CubeScan, assemble

FORMAT = "robocell-vision-calibration"
VERSION = 1
ENV_VAR = "ROBOCELL_VISION_CALIBRATION"
"""Where the vision service finds its calibration file when ``--calibration`` is not given."""

MOVED_PITCHES = 0.5
"""A face whose stickers sit this many sticker pitches (on average) from their calibrated
places has moved in the frame: the camera or the cube holder moved."""
SCALE_TOLERANCE = 1.25
"""A face seen this much larger or smaller than calibrated is at another distance."""
COLOUR_TOLERANCE = 22.0
"""Colour distance (CIE76 Delta E) from a sticker to the nearest calibrated colour above
which the frame's colours no longer match the calibration (the light changed). On the real
photos the stickers of a calibrated set lie within 9 of their colours."""
MIN_SEPARATION = 12.0
"""Two calibrated colours closer than this cannot be told apart by colour under that light
(the real photos' webcam clips white and yellow to the same near-white: Delta E 2.5)."""
FACE_UNIFORMITY = 45.0
"""A sticker this far from its colour's mean during calibration is not the colour the
calibration cube says it is (is the cube really solved / in the given state?)."""
SAMPLES = 12


class CalibrationError(RobocellError, ValueError):
    """A calibration that cannot be learnt, read or used: says what and what to do."""


@dataclass(frozen=True)
class FaceRegion:
    """Where one face's stickers are in the frame at its scan pose."""

    centres: np.ndarray   # (N², 2) image x, y, row-major as the face appears
    pitch_px: float
    frame_size: tuple[int, int]  # width, height


@dataclass(frozen=True)
class Calibration:
    """The learnt set-up: cube size, each face's region, each face letter's colour."""

    size: int
    regions: dict[str, FaceRegion]
    colours: dict[str, np.ndarray]   # letter -> mean RGB under the calibrated light
    spread: dict[str, float]         # letter -> largest Delta E of its stickers from the mean
    cube: str                        # the state the calibration frames showed
    source: str = ""
    created: str = ""
    warnings: tuple[str, ...] = ()

    def lab(self) -> np.ndarray:
        """The calibrated colours in L*a*b*, in FACES order (6 x 3)."""
        return rgb_to_lab(np.array([self.colours[f] for f in FACES]))

    def to_json(self) -> dict:
        return {
            "format": FORMAT, "version": VERSION, "size": self.size, "cube": self.cube,
            "source": self.source, "created": self.created, "warnings": list(self.warnings),
            "faces": {f: {"centres": np.round(r.centres, 2).tolist(),
                          "pitch_px": round(r.pitch_px, 2),
                          "frame_size": list(r.frame_size)} for f, r in self.regions.items()},
            "colours": {f: {"rgb": np.round(self.colours[f], 1).tolist(),
                            "spread": round(self.spread[f], 2)} for f in FACES},
        }


# --- learning ----------------------------------------------------------------------------


def calibrate(frames: dict[str, np.ndarray], size: int | None = None, cube: str | None = None,
              source: str = "") -> Calibration:
    """Learn a calibration from one frame per face (in net orientation) of a cube in state
    ``cube`` (default: solved). Raises CalibrationError saying what to fix."""
    missing = [f for f in FACES if f not in frames]
    if missing:
        raise CalibrationError(f"no frame of face(s) {''.join(missing)}; the calibration needs "
                               "all six faces")
    readings, failed = {}, []
    for face in FACES:
        try:
            readings[face] = detect(frames[face], size)
        except DetectionError as exc:
            failed.append(f"{face}: {exc}")
    if failed:
        raise CalibrationError("cannot find the stickers of every face: " + "; ".join(failed)
                               + "; light the cube evenly and fill a good part of the frame")
    sizes = {r.size for r in readings.values()}
    if len(sizes) != 1:
        raise CalibrationError("faces disagree on the cube size ("
                               + ", ".join(f"{f}: {readings[f].size}" for f in FACES)
                               + "); give --size")
    n = sizes.pop()
    cube = cube or solved(n)
    try:
        validate(cube, n)
    except CubeStateError as exc:
        raise CalibrationError(f"the calibration cube {cube!r} is not a valid {n}x{n}x{n} "
                               f"state: {exc}") from None
    colours = assemble(readings).colours
    learnt, spread = _learn_colours(colours, cube)
    regions = {f: FaceRegion(readings[f].centres.copy(), float(readings[f].pitch_px),
                             (int(frames[f].shape[1]), int(frames[f].shape[0])))
               for f in FACES}
    created = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return Calibration(n, regions, learnt, spread, cube, source, created,
                       tuple(separation_warnings(learnt)))


def _learn_colours(colours: np.ndarray, cube: str) -> tuple[dict[str, np.ndarray],
                                                            dict[str, float]]:
    """Each letter's mean colour over the stickers ``cube`` says carry it, and how far its
    stickers lie from it; CalibrationError when a sticker is far from its letter's colour."""
    lab = rgb_to_lab(colours)
    learnt, spread, strays = {}, {}, []
    for letter in FACES:
        mine = np.array([k for k, ch in enumerate(cube) if ch == letter])
        centre = rgb_to_lab(trimmed_mean(colours[mine]))
        distance = np.linalg.norm(lab[mine] - centre, axis=1)
        strays += [int(mine[i]) for i in np.nonzero(distance > FACE_UNIFORMITY)[0]]
        kept = mine[distance <= FACE_UNIFORMITY]
        learnt[letter] = colours[kept].mean(axis=0)
        spread[letter] = float(distance[distance <= FACE_UNIFORMITY].max(initial=0.0))
    if strays:
        size = round(math.sqrt(len(cube) // 6))
        names = ", ".join(_sticker_name(k, size) for k in sorted(strays))
        raise CalibrationError(
            f"stickers {names} do not look like the rest of their colour; is the cube in the "
            "state given (solved, unless --cube says otherwise) and evenly lit?")
    return learnt, spread


def separation_warnings(learnt: dict[str, np.ndarray]) -> list[str]:
    """Pairs of calibrated colours too close to tell apart by colour alone: the resolver then
    tells them apart by the cube's rules only (where a cubie's colours must go)."""
    lab = {f: rgb_to_lab(learnt[f]) for f in FACES}
    warnings = []
    for a, b in itertools.combinations(FACES, 2):
        distance = float(np.linalg.norm(lab[a] - lab[b]))
        if distance < MIN_SEPARATION:
            warnings.append(
                f"the colours of {a} and {b} are nearly the same under this light (Delta E "
                f"{distance:.1f}, under {MIN_SEPARATION:g}): they are told apart by the cube's "
                "rules only; less exposure, or whiter light, would separate them")
    return warnings


def _sticker_name(index: int, size: int) -> str:
    area = size * size
    return f"{FACES[index // area]}{index % area + 1}"


# --- checking and reading ------------------------------------------------------------------


def check_reading(calibration: Calibration, face: str, reading: FaceReading) -> list[str]:
    """How a reading of ``face`` no longer matches the calibration (empty when it does):
    its place in the frame, its size, its colours."""
    problems = []
    region = calibration.regions.get(face)
    if reading.size != calibration.size:
        return [f"face {face}: a {reading.size}x{reading.size} grid, but the calibration is "
                f"for a {calibration.size}x{calibration.size} cube"]
    if region is not None:
        shift = float(np.linalg.norm(reading.centres.mean(axis=0) - region.centres.mean(axis=0)))
        moved = shift / max(region.pitch_px, 1e-9)
        if moved > MOVED_PITCHES:
            problems.append(f"face {face} sits {moved:.1f} sticker widths from its calibrated "
                            "place (did the camera or the cube holder move?)")
        scale = reading.pitch_px / max(region.pitch_px, 1e-9)
        if not 1 / SCALE_TOLERANCE <= scale <= SCALE_TOLERANCE:
            problems.append(f"face {face} looks {scale:.2f} times its calibrated size (is the "
                            "camera at another distance or zoom?)")
    distance = nearest_colour_distance(calibration, reading.colours)
    worst = int(np.argmax(distance))
    if distance[worst] > COLOUR_TOLERANCE:
        problems.append(f"face {face}: sticker {worst + 1} lies Delta E {distance[worst]:.0f} "
                        f"outside every calibrated colour (over {COLOUR_TOLERANCE:g}): the "
                        "light or the camera's exposure changed")
    return problems


def nearest_colour_distance(calibration: Calibration, colours: np.ndarray) -> np.ndarray:
    """For each colour (k x 3 RGB), how far it lies outside the nearest calibrated colour:
    its Delta E to that colour less the spread of that colour's calibration stickers."""
    lab = rgb_to_lab(np.asarray(colours, dtype=np.float64))
    spread = np.array([calibration.spread[f] for f in FACES])
    distance = np.linalg.norm(lab[:, None, :] - calibration.lab()[None, :, :], axis=2)
    return np.maximum(distance - spread[None, :], 0.0).min(axis=1)


def sample_region(frame: np.ndarray, region: FaceRegion, size: int) -> FaceReading:
    """Read a face at its calibrated place (when its grid cannot be found in the frame)."""
    height, width = frame.shape[:2]
    half = 0.5 * SAMPLE_INSET * region.pitch_px
    offsets = (np.arange(SAMPLES) + 0.5) / SAMPLES * 2 * half - half
    du, dv = np.meshgrid(offsets, offsets)
    colours = np.zeros((size * size, 3))
    for k, (x, y) in enumerate(region.centres):
        px = np.clip(np.round(x + du.ravel()).astype(int), 0, width - 1)
        py = np.clip(np.round(y + dv.ravel()).astype(int), 0, height - 1)
        colours[k] = trimmed_mean(frame[py, px][:, ::-1].astype(np.float64))
    corners = np.array([region.centres.min(axis=0), region.centres.max(axis=0)])
    outer = np.array([corners[0], [corners[1][0], corners[0][1]], corners[1],
                      [corners[0][0], corners[1][1]]])
    return FaceReading(size, colours, np.full(size * size, INFERRED_CONFIDENCE),
                       region.centres.copy(), outer, np.zeros(size * size, dtype=bool), 0.0,
                       region.pitch_px, {"look": "calibrated place"})


@dataclass
class CalibratedScan:
    """A cube read with a calibration, and how its frames differ from it."""

    scan: CubeScan
    problems: list[str]


def read_cube(frames: dict[str, np.ndarray], calibration: Calibration,
              rotations: dict[str, int] | None = None) -> CalibratedScan:
    """Read the cube in ``frames`` with ``calibration``: each face detected (or, failing
    that, sampled at its calibrated place), resolved to a valid cube, its colour classes
    named by the calibrated colours. Raises the resolver's ResolveError."""
    readings, problems = {}, []
    for face in FACES:
        try:
            readings[face] = detect(frames[face], calibration.size)
        except DetectionError as exc:
            problems.append(f"face {face}: {exc}; read at its calibrated place")
            readings[face] = sample_region(frames[face], calibration.regions[face],
                                           calibration.size)
            continue
        problems += check_reading(calibration, face, readings[face])
    colours, confidence, tints, size = assemble(readings, rotations)
    resolution = name_classes(resolve(colours, size, tints), colours, calibration)
    return CalibratedScan(CubeScan(readings, colours, confidence, resolution, tints), problems)


def name_classes(resolution: Resolution, colours: np.ndarray,
                 calibration: Calibration) -> Resolution:
    """``resolution`` with its six colour classes named after the nearest calibrated colours
    (one letter each, the cheapest way). A 3x3 keeps its letters (its centres fix them)."""
    if resolution.size == 3:
        return resolution
    calibrated = calibration.lab()
    classes = [rgb_to_lab(colours[[k for k, ch in enumerate(resolution.facelets) if ch == f]]
                          .mean(axis=0)) for f in FACES]
    cost = np.linalg.norm(np.array(classes)[:, None, :] - calibrated[None, :, :], axis=2)
    # cheapest first; a naming that mirrors the cube (two colours too alike to tell apart
    # swapped) is no valid cube and is passed over
    for perm in sorted(itertools.permutations(range(len(FACES))),
                       key=lambda p: sum(cost[i, p[i]] for i in range(len(FACES)))):
        rename = {FACES[i]: FACES[perm[i]] for i in range(len(FACES))}
        facelets = "".join(rename[ch] for ch in resolution.facelets)
        try:
            validate(facelets, resolution.size)
        except CubeStateError:
            continue
        break
    class_rgb = {rename[f]: rgb for f, rgb in resolution.class_rgb.items()}
    return Resolution(facelets, resolution.size, resolution.confidence, class_rgb,
                      resolution.cost, resolution.margin)


# --- the file ------------------------------------------------------------------------------


def save(calibration: Calibration, path: str | Path) -> None:
    Path(path).write_text(json.dumps(calibration.to_json(), indent=1) + "\n")


def load(path: str | Path) -> Calibration:
    """A calibration file, or CalibrationError naming the file and what is wrong."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise CalibrationError(f"{path}: no such calibration file; make one with `robocell "
                               "vision calibrate --camera SRC --out FILE`") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CalibrationError(f"{path}: not a calibration file: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CalibrationError(f"{path}: not a robocell vision calibration (no \"format\": "
                               f"\"{FORMAT}\")")
    if data.get("version") != VERSION:
        raise CalibrationError(f"{path}: calibration version {data.get('version')}, this "
                               f"robocell reads version {VERSION}; calibrate again")
    try:
        size = int(data["size"])
        n = size * size
        regions = {}
        for face in FACES:
            entry = data["faces"][face]
            centres = np.asarray(entry["centres"], dtype=np.float64)
            if centres.shape != (n, 2):
                raise ValueError(f"faces.{face}.centres: expected {n} points")
            regions[face] = FaceRegion(centres, float(entry["pitch_px"]),
                                       tuple(int(v) for v in entry["frame_size"]))
        colours = {f: np.asarray(data["colours"][f]["rgb"], dtype=np.float64) for f in FACES}
        spread = {f: float(data["colours"][f]["spread"]) for f in FACES}
        if any(c.shape != (3,) for c in colours.values()):
            raise ValueError("colours: expected one [r, g, b] per face")
    except (KeyError, TypeError, ValueError) as exc:
        raise CalibrationError(f"{path}: damaged calibration ({type(exc).__name__}: {exc}); "
                               "calibrate again") from None
    return Calibration(size, regions, colours, spread, str(data.get("cube", "")),
                       str(data.get("source", "")), str(data.get("created", "")),
                       tuple(str(w) for w in data.get("warnings", ())))
