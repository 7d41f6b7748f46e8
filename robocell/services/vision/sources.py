"""Frame sources: where the vision service gets a frame when a scan pose is reached.

Every source answers ``capture(face, rotation, at)`` with an 8-bit BGR frame. A real camera
or a folder ignores the arguments (the robot put the face in view); the sim camera uses them
to render the digital twin as the camera sees it. Sources are chosen by one string (`open_source`):
``sim``, a device index (``0``), a video file or stream URL, or a folder of images.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import cv2
import numpy as np

from robocell.errors import RobocellError
from robocell.services.vision.scan import IMAGE_SUFFIXES, find_face_files, read_image
from robocell.services.vision.simcam import Conditions, render_face, scene

STALE_FRAMES = 4
"""Frames a camera may have buffered before the pose was reached; dropped before capturing."""


class SourceError(RobocellError, RuntimeError):
    """A source that cannot give a frame: says which source and what to check."""


class VideoSource:
    """An OpenCV `VideoCapture`: a device index, a video file or a stream URL."""

    def __init__(self, spec: str | int, width: int | None = None,
                 height: int | None = None) -> None:
        self.spec = spec
        device = f"/dev/video{spec}" if isinstance(spec, int) else str(spec)
        if device.startswith("/dev/") and not os.path.exists(device):
            # say why without OpenCV's own warning (printed again at every retry)
            raise SourceError(describe_camera_failure(spec))
        self._capture = cv2.VideoCapture(spec)
        if not self._capture.isOpened():
            self._capture.release()
            raise SourceError(describe_camera_failure(spec))
        if width:
            self._capture.set(cv2.CAP_PROP_FRAME_WIDTH, width)
        if height:
            self._capture.set(cv2.CAP_PROP_FRAME_HEIGHT, height)
        self._is_file = isinstance(spec, str) and Path(spec).is_file()
        self._lock = threading.Lock()

    def capture(self, face: str | None = None, rotation: int = 0,
                at: str | None = None, line: int | None = None) -> np.ndarray:
        with self._lock:
            if not self._is_file:
                for _ in range(STALE_FRAMES):
                    self._capture.grab()
            ok, frame = self._capture.read()
            if not ok and self._is_file:
                self._capture.set(cv2.CAP_PROP_POS_FRAMES, 0)  # a file: loop it
                ok, frame = self._capture.read()
        if not ok or frame is None:
            raise SourceError(f"camera {self.spec!r} gave no frame; check the cable or stream")
        return frame

    def close(self) -> None:
        self._capture.release()


def describe_camera_failure(spec: str | int) -> str:
    """Why a camera could not be opened, as far as the system tells, and what to check."""
    device = f"/dev/video{spec}" if isinstance(spec, int) else str(spec)
    if isinstance(spec, int) or device.startswith("/dev/"):
        if not os.path.exists(device):
            return (f"camera {spec!r} cannot be opened: {device} does not exist. Check that the "
                    "camera is plugged in (`ls /dev/video*`, `v4l2-ctl --list-devices`) and "
                    "that --camera gives its index or path")
        if not os.access(device, os.R_OK | os.W_OK):
            return (f"camera {spec!r} cannot be opened: no permission on {device}. Add this "
                    "user to the group owning it (usually video: `sudo usermod -aG video "
                    f"$USER`, then log in again); `ls -l {device}` shows the group")
        return (f"camera {spec!r} cannot be opened although {device} exists: another program "
                f"may hold it (`fuser -v {device}`), or it is not a capture device")
    if "://" not in device and not os.path.exists(device):
        return (f"camera {spec!r} cannot be opened: no such file; give a device index (0), a "
                "/dev/video path, a video file, a stream URL, a folder of images or sim")
    return (f"camera {spec!r} cannot be opened; check the file or stream URL (is the stream "
            "up, is the file a video OpenCV reads?) and that no other program holds it")


def is_device(spec: str) -> bool:
    """A camera that may appear later (an index or a /dev path), worth retrying."""
    return spec.isdigit() or spec.startswith("/dev/")


class FolderSource:
    """Images in a folder. Named ``*-U.png`` ... ``*-D.png``: the image of the face asked
    for; otherwise the images in name order, one per capture, round and round."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise SourceError(f"{self.folder} is not a folder of images")
        try:
            self._by_face: dict[str, Path] | None = find_face_files(self.folder)
        except ValueError:
            self._by_face = None
        self._images = sorted(p for p in self.folder.iterdir()
                              if p.suffix.lower() in IMAGE_SUFFIXES)
        if not self._images:
            raise SourceError(f"{self.folder} holds no images ({', '.join(IMAGE_SUFFIXES)})")
        self._next = 0

    def capture(self, face: str | None = None, rotation: int = 0,
                at: str | None = None, line: int | None = None) -> np.ndarray:
        if self._by_face is not None and face in self._by_face:
            return read_image(self._by_face[face])
        path = self._images[self._next % len(self._images)]
        self._next += 1
        return read_image(path)

    def close(self) -> None:
        pass


TWIN_SETTLE_S = 0.05
"""Without the pose's firmware line: how long the twin must have been still before the sim
camera films it."""
TWIN_SETTLE_MAX_S = 1.0
"""Longest wait for the twin to show the pose."""


class SimSource:
    """The sim camera looking at the digital twin: `set_state` is called with the twin's
    facelets; each capture renders the face in view (see `simcam.render_face`). One scan's
    frames share a scene (lighting) drawn from ``seed`` and the scan number.

    With ``at`` (the robot-frame position the camera looks at, from the actuator) the twin
    as it is now is rendered at that position, as the camera there sees it; the robot has
    turned the cube so that the original face ``face`` is there, appearing turned
    ``rotation`` quarter turns. Without ``at`` the twin is taken as unmoved and ``face`` is
    rendered turned ``rotation`` quarter turns.

    The twin's state and the pose come from two processes, so the pose may arrive first. With
    ``line`` (the firmware line that reached the pose) a capture waits until the twin shows
    that line; without it, until the twin has been still for `TWIN_SETTLE_S`. Frames may be
    rendered by several threads at once."""

    concurrent_capture = True

    def __init__(self, seed: int = 0, conditions=None, facelets: str | None = None) -> None:
        self.conditions = conditions or Conditions()
        self.seed = seed
        self.facelets = facelets
        self._frames = 0
        self._updated = 0.0
        self._line = -1
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)

    def set_state(self, facelets: str, line: int | None = None) -> None:
        """The twin as it is now; ``line``: the last firmware line it shows."""
        with self._lock:
            self.facelets = facelets
            self._updated = time.monotonic()
            if line is not None:
                self._line = line
            self._changed.notify_all()

    def _wait_for_line(self, line: int) -> None:
        """Wait until the twin shows firmware line ``line`` (or `TWIN_SETTLE_MAX_S`)."""
        deadline = time.monotonic() + TWIN_SETTLE_MAX_S
        with self._lock:
            while self._line < line:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._changed.wait(left)

    def _settle(self) -> None:
        """Wait until the twin has been still for TWIN_SETTLE_S: the robot holds a scan pose
        while the camera captures, so the twin's last update for the pose (sent before the
        pose was announced, but through another process) may still be on its way."""
        deadline = time.monotonic() + TWIN_SETTLE_MAX_S
        while True:
            with self._lock:
                quiet = time.monotonic() - self._updated
            if quiet >= TWIN_SETTLE_S or time.monotonic() >= deadline:
                return
            time.sleep(TWIN_SETTLE_S - quiet)

    def capture(self, face: str | None = None, rotation: int = 0,
                at: str | None = None, line: int | None = None) -> np.ndarray:
        return render_face(*self.take(face, rotation, at, line))

    def take(self, face: str | None = None, rotation: int = 0, at: str | None = None,
             line: int | None = None) -> tuple:
        """The frame as it is taken now, as the arguments of `simcam.render_face` (plain
        data: another process may render it); `capture` renders it here."""
        if at is not None and line is not None:
            self._wait_for_line(line)
        elif at is not None:
            self._settle()
        with self._lock:
            facelets = self.facelets
            frame_number = self._frames
            self._frames += 1
        if facelets is None:
            raise SourceError("the sim camera has no cube to look at yet: no sim.twin_state "
                              "received; start the firmware simulator")
        if face is None:
            raise SourceError("the sim camera needs to know which face is in view")
        lighting = scene(self.conditions, self.seed + frame_number // 6)
        seed = self.seed * 100_003 + frame_number
        if at is not None:
            return (facelets, at, 0, seed, lighting)
        return (facelets, face, rotation, seed, lighting)

    def close(self) -> None:
        pass


def open_source(spec: str, seed: int = 0) -> VideoSource | FolderSource | SimSource:
    """``sim``; a device index such as ``0``; a folder of images; a video file or URL."""
    if spec == "sim":
        return SimSource(seed)
    if spec.isdigit():
        return VideoSource(int(spec))
    if Path(spec).is_dir():
        return FolderSource(spec)
    return VideoSource(spec)
