"""A whole-cube scan: six face frames -> six face readings -> one resolved cube state.

Each face is seen in some rotation (the robot's scan pose); ``quarter_turns`` says how many
clockwise quarter turns the face *appears* rotated in the frame relative to the usual net
orientation, and its reading is turned back before the stickers are put in facelet order.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import cv2
import numpy as np

from robocell.common.facelets import FACES
from robocell.errors import RobocellError
from robocell.services.vision.detect import DetectionError, FaceReading, detect
from robocell.services.vision.resolve import Resolution, resolve

SCRIPTED_POSES: tuple[tuple[str, int], ...] = (
    ("U", 0), ("F", 0), ("R", 1), ("B", 2), ("L", 3), ("D", 0),
)
"""The scan poses used until the actuator announces its own: which face is in view, in
order, and how many clockwise quarter turns it appears rotated (see `unrotate`)."""
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")


class ScanError(RobocellError, ValueError):
    """A scan that cannot be read: ``faces`` are the faces to capture again."""

    def __init__(self, message: str, faces: str = "") -> None:
        super().__init__(message)
        self.faces = faces


def unrotate(values: np.ndarray, size: int, quarter_turns: int) -> np.ndarray:
    """Row-major per-sticker values of a face that appears turned ``quarter_turns`` clockwise
    -> the same values in the face's net orientation."""
    grid = np.asarray(values).reshape((size, size) + np.asarray(values).shape[1:])
    return np.rot90(grid, k=quarter_turns % 4, axes=(0, 1)).reshape(np.asarray(values).shape)


@dataclass
class CubeScan:
    """The six readings and the resolved state."""

    readings: dict[str, FaceReading]
    colours: np.ndarray        # (6·N², 3) in facelet order
    confidence: np.ndarray     # (6·N²,) detection confidence in facelet order
    resolution: Resolution
    tints: np.ndarray | None = None  # (6·N², 3) unsaturated colours in facelet order


class Assembled(NamedTuple):
    """Six face readings put in facelet order."""

    colours: np.ndarray
    confidence: np.ndarray
    tints: np.ndarray | None
    size: int


def assemble(readings: dict[str, FaceReading], rotations: dict[str, int] | None = None
             ) -> Assembled:
    """Facelet-order colours, detection confidences and tints from six face readings."""
    missing = [f for f in FACES if f not in readings]
    if missing:
        raise ScanError(f"no reading for face(s) {''.join(missing)}", "".join(missing))
    sizes = {readings[f].size for f in FACES}
    if len(sizes) != 1:
        detail = ", ".join(f"{f}: {readings[f].size}x{readings[f].size}" for f in FACES)
        raise ScanError(f"faces disagree on the cube size ({detail}); rescan with --size")
    size = sizes.pop()
    rotations = rotations or {}

    def in_order(values: list[np.ndarray]) -> np.ndarray:
        return np.concatenate([unrotate(values[i], size, rotations.get(f, 0))
                               for i, f in enumerate(FACES)])

    tints = None
    if all(readings[f].tints is not None for f in FACES):
        tints = in_order([readings[f].tints for f in FACES])
    return Assembled(in_order([readings[f].colours for f in FACES]),
                     in_order([readings[f].confidence for f in FACES]), tints, size)


def read_faces(frames: dict[str, np.ndarray], size: int | None = None
               ) -> tuple[dict[str, FaceReading], dict[str, str]]:
    """Detect every face: (readings, why each face without one was not read). With the size
    unknown, faces read at the minority size are read again at the majority's (a 3x3 face
    that shows only a 2x2 corner well)."""
    readings: dict[str, FaceReading] = {}
    failed: dict[str, str] = {}
    for face in FACES:
        try:
            readings[face] = detect(frames[face], size)
        except DetectionError as exc:
            failed[face] = str(exc)
    if size is None and readings:
        sizes = [r.size for r in readings.values()]
        majority = max(set(sizes), key=sizes.count)
        for face in list(readings):
            if readings[face].size != majority:
                try:
                    readings[face] = detect(frames[face], majority)
                except DetectionError as exc:
                    del readings[face]
                    failed[face] = str(exc)
    return readings, failed


def resolve_readings(readings: dict[str, FaceReading], rotations: dict[str, int] | None = None
                     ) -> CubeScan:
    """Six face readings -> the resolved cube (raises ScanError or ResolveError)."""
    face_order = assemble(readings, rotations)
    return CubeScan(readings, face_order.colours, face_order.confidence,
                    resolve(face_order.colours, face_order.size, face_order.tints),
                    face_order.tints)


def scan_frames(frames: dict[str, np.ndarray], size: int | None = None,
                rotations: dict[str, int] | None = None) -> CubeScan:
    """Detect every face, then resolve the cube (raises ScanError or ResolveError)."""
    readings, failed = read_faces(frames, size)
    if failed:
        raise ScanError("; ".join(f"{face}: {why}" for face, why in failed.items()),
                        "".join(failed))
    return resolve_readings(readings, rotations)


def find_face_files(folder: str | Path) -> dict[str, Path]:
    """The six images of a scan folder, named ``*-U.png`` ... ``*-D.png`` (any image suffix)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ScanError(f"{folder} is not a folder; give a folder with six images named "
                        "*-U.png ... *-D.png")
    pattern = re.compile(r"[-_]([URFDLB])$")
    found: dict[str, list[Path]] = {f: [] for f in FACES}
    for path in sorted(folder.iterdir()):
        match = pattern.search(path.stem)
        if match and path.suffix.lower() in IMAGE_SUFFIXES:
            found[match.group(1)].append(path)
    missing = "".join(f for f in FACES if not found[f])
    if missing:
        raise ScanError(f"{folder}: no image for face(s) {missing} (expected names like "
                        f"cube-{missing[0]}.png)", missing)
    doubled = [f"{f}: {', '.join(p.name for p in found[f])}" for f in FACES if len(found[f]) > 1]
    if doubled:
        raise ScanError(f"{folder}: more than one image per face ({'; '.join(doubled)})")
    return {f: found[f][0] for f in FACES}


@contextlib.contextmanager
def opencv_quiet() -> Iterator[None]:
    """OpenCV's own log lines (``[ WARN:0@0.5] global loadsave.cpp ...``) silenced while the
    block runs: our errors say what went wrong, in our words, once."""
    before = cv2.utils.logging.getLogLevel()
    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)
    try:
        yield
    finally:
        cv2.utils.logging.setLogLevel(before)


def read_image(path: str | Path) -> np.ndarray:
    """An image file as an 8-bit BGR frame, or ScanError saying why not."""
    path = Path(path)
    if not path.exists():
        raise ScanError(f"{path}: no such file")
    if not path.is_file():
        raise ScanError(f"{path}: not a file (give an image file: "
                        f"{', '.join(IMAGE_SUFFIXES)})")
    with opencv_quiet():
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise ScanError(f"{path}: cannot read as an image (is it a PNG or JPEG file, "
                        "complete and readable?)")
    return image


def scan_folder(folder: str | Path, size: int | None = None) -> CubeScan:
    files = find_face_files(folder)
    return scan_frames({f: read_image(p) for f, p in files.items()}, size)
