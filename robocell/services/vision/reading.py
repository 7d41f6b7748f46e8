"""The vision core, apart from the bus: reading one view (`read_view`, in this process or a
reader process), a face's message (`face_payload`, `thumbnail`), collecting the faces of a
scan into a cube (`ScanCollector`), and the errors a scan reports."""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from robocell.common.cube import random_facelets
from robocell.common.facelets import puzzle_name
from robocell.common.lifetime import follow_parent
from robocell.common.malloc import freeze_startup_objects, keep_frame_buffers
from robocell.services.vision.calibration import Calibration, check_reading
from robocell.services.vision.detect import DetectionError, FaceReading, detect
from robocell.services.vision.resolve import ResolveError, resolve
from robocell.services.vision.scan import FACES, SCRIPTED_POSES, ScanError, assemble, scan_frames
from robocell.services.vision.simcam import capture_poses, render_face
from robocell.services.vision.sources import SimSource

THUMBNAIL_WIDTH = 320


JPEG_QUALITY = 80


KEPT_SCANS = 8
"""Unfinished scans remembered at once (older ones are dropped)."""


DEFAULT_THREADS = 2
"""Reader processes by default (`--readers`)."""
READER_HOLD_S = 0.2
"""Views read at once (a six-camera robot delivers six frames per pose)."""


def thumbnail(frame: np.ndarray, width: int = THUMBNAIL_WIDTH) -> tuple[bytes, float]:
    """JPEG of the frame scaled to ``width`` pixels, and the scale used."""
    scale = min(1.0, width / frame.shape[1])
    small = frame if scale == 1.0 else cv2.resize(
        frame, (round(frame.shape[1] * scale), round(frame.shape[0] * scale)),
        interpolation=cv2.INTER_AREA)
    ok, data = cv2.imencode(".jpg", small, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    return data.tobytes(), scale


def read_view(view: np.ndarray | tuple, size: int | None
              ) -> tuple[FaceReading | None, str | None, tuple[bytes, float]]:
    """Read one view: (reading or None, why not, (JPEG thumbnail, its scale)). ``view``
    is a frame, or a sim camera frame still to render (`SimSource.take`). Runs in a reader
    process or in the service itself."""
    if isinstance(view, tuple):
        view = render_face(*view)
    try:
        reading, error = detect(view, size), None
    except DetectionError as exc:
        reading, error = None, str(exc)
    return reading, error, thumbnail(view)


def start_reader(size: int | None) -> None:
    """Reader process initialiser: one OpenCV thread (the readers are the parallelism) and
    the compiled parts loaded before the first scan, the heap kept for frame buffers. A
    reader ends with the service: blocked on the executor's queue, whose both ends it holds
    itself, it would never notice the service gone."""
    follow_parent(multiprocessing.parent_process().pid)
    keep_frame_buffers()
    cv2.setNumThreads(1)
    warm_up(size)
    read_view(SimSource(seed=1, facelets=random_facelets(size or 3, 1)).take("U"), size)
    freeze_startup_objects()


def reader_pid(hold_s: float) -> int:
    """A task that keeps its reader busy for a moment, so that every reader gets one."""
    time.sleep(hold_s)
    return os.getpid()


def face_payload(scan_id: str, pose: int, face: str, rotation: int,
                 thumb: tuple[bytes, float] | None, reading: FaceReading | None,
                 error: str | None) -> dict[str, Any]:
    """The ``vision.face`` message of one pose (``thumb``: JPEG thumbnail and its scale)."""
    jpeg, scale = (b"", 1.0) if thumb is None else thumb
    payload: dict[str, Any] = {
        "scan_id": scan_id, "pose": pose, "face": face, "rotation": rotation,
        "jpeg": jpeg, "ok": reading is not None,
    }
    if reading is not None:
        payload.update({
            "size": reading.size,
            "grid": [[round(float(x) * scale, 1), round(float(y) * scale, 1)]
                     for x, y in reading.centres],
            "colors": [[int(round(c)) for c in rgb] for rgb in reading.colours],
            "confidence": [round(float(c), 3) for c in reading.confidence],
        })
    else:
        payload.update({"size": 0, "grid": [], "colors": [], "confidence": [],
                        "error": error or "no reading"})
    return payload


@dataclass
class _Scan:
    readings: dict[str, FaceReading] = field(default_factory=dict)
    rotations: dict[str, int] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    started: float = field(default_factory=time.time)


class ScanCollector:
    """Gathers the faces of each scan; when all six are in, resolves the cube.

    ``add`` returns None while the scan is incomplete, else ``("vision.cube_state",
    payload)`` or ``("errors", payload)``.
    """

    def __init__(self, size: int | None = None) -> None:
        self.size = size
        self._scans: dict[str, _Scan] = {}

    def add(self, scan_id: str, face: str, rotation: int, reading: FaceReading | None,
            error: str | None = None) -> tuple[str, dict[str, Any]] | None:
        scan = self._scans.get(scan_id)
        if scan is None:
            while len(self._scans) >= KEPT_SCANS:
                self._scans.pop(next(iter(self._scans)))
            scan = self._scans[scan_id] = _Scan()
        scan.rotations[face] = rotation
        if reading is None:
            scan.failed[face] = error or "no reading"
            scan.readings.pop(face, None)
        else:
            scan.readings[face] = reading
            scan.failed.pop(face, None)
        if len(scan.readings) + len(scan.failed) < len(FACES):
            return None
        del self._scans[scan_id]
        return self._finish(scan_id, scan)

    def _finish(self, scan_id: str, scan: _Scan) -> tuple[str, dict[str, Any]]:
        if scan.failed:
            faces = "".join(f for f in FACES if f in scan.failed)
            detail = "; ".join(f"{f}: {scan.failed[f]}" for f in faces)
            return "errors", error_payload(scan_id, "detection", f"no sticker grid on face(s) "
                                           f"{faces}: {detail}", faces, [])
        try:
            readings = scan.readings
            sizes = {r.size for r in readings.values()}
            if self.size is None and len(sizes) > 1:
                raise ScanError("faces disagree on the cube size: "
                                + ", ".join(f"{f}: {readings[f].size}" for f in FACES)
                                + "; run with --size", "".join(FACES))
            colours, detection_conf, tints, size = assemble(readings, scan.rotations)
            result = resolve(colours, self.size or size, tints)
        except ScanError as exc:
            return "errors", error_payload(scan_id, "size", str(exc), exc.faces, [])
        except ResolveError as exc:
            return "errors", error_payload(scan_id, exc.code, str(exc), exc.faces,
                                           list(exc.stickers))
        confidence = np.minimum(np.asarray(result.confidence), detection_conf)
        return "vision.cube_state", {
            "scan_id": scan_id, "puzzle": puzzle_name(result.size),
            "facelets": result.facelets,
            "confidence": [round(float(c), 3) for c in confidence],
            "wall_time": time.time(),
        }


def calibration_mismatch(calibration: Calibration | None, scan_id: str, face: str,
                         reading: FaceReading | None) -> dict[str, Any] | None:
    """The ``errors`` message saying how a view no longer matches the calibration (None when
    it does, or when there is no calibration or no reading)."""
    if calibration is None or reading is None:
        return None
    problems = check_reading(calibration, face, reading)
    if not problems:
        return None
    payload = error_payload(scan_id, "calibration", "the frame no longer matches its "
                            "calibration: " + "; ".join(problems), face, [])
    payload["action"] = ("check the camera and the light, or calibrate again with `robocell "
                         "vision calibrate`")
    return payload


def warm_up(size: int | None) -> None:
    """Render, read and resolve one cube once, so that the compiled parts (sim camera,
    colour assignment) are loaded before the first scan, not during it."""
    state = random_facelets(size or 3, 0)
    scan_frames(capture_poses(state, SCRIPTED_POSES), size, dict(SCRIPTED_POSES))


def error_payload(scan_id: str, code: str, message: str, faces: str,
                  stickers: list[int]) -> dict[str, Any]:
    """An ``errors`` message from the vision service: what to rescan."""
    return {
        "service": "vision", "stage": "scan", "code": code, "message": message,
        "action": f"rescan face(s) {faces}" if faces else "rescan the cube",
        "detail": {"scan_id": scan_id, "faces": faces, "stickers": stickers},
    }
