"""`robocell vision serve`: the vision service on the bus.

Pattern: an *event-driven pipeline* behind one `Node`. Each ``actuator.scan_pose`` event
(or, without an actuator, each pose of the scripted sequence `scan.SCRIPTED_POSES`) is
queued; a worker thread (two by default, so a six-camera pose is read two views at a time)
captures a frame from the source, says so on ``vision.captured`` (the robot moves on to the
next pose while the frame is read), detects the face, publishes a ``vision.face`` result
(JPEG thumbnail, grid, colours, confidence) and, once every face of the scan is in, resolves
the cube and publishes the latched ``vision.cube_state`` with per-sticker confidence -- or
an ``errors`` message naming the faces and stickers to rescan.
With ``--camera sim`` the source renders the digital twin (``sim.twin_state``).

The core (`ScanCollector`, `face_payload`) is plain functions over plain data; `VisionService`
is the thin adapter. The worker loop ends when the node stops.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import queue
import sys
import threading
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from robocell.common.bus import Endpoints, Node
from robocell.common.cube import random_facelets
from robocell.common.facelets import puzzle_name
from robocell.common.lifetime import follow_parent
from robocell.common.malloc import freeze_startup_objects, keep_frame_buffers
from robocell.common.profile import ProfileError, load_profile
from robocell.errors import CommandError
from robocell.services.vision.detect import DetectionError, FaceReading, detect
from robocell.services.vision.resolve import ResolveError, resolve
from robocell.services.vision.scan import FACES, SCRIPTED_POSES, ScanError, assemble, scan_frames
from robocell.services.vision.simcam import capture_poses, render_face
from robocell.services.vision.sources import SimSource, SourceError, is_device, open_source

THUMBNAIL_WIDTH = 320
JPEG_QUALITY = 80
KEPT_SCANS = 8
"""Unfinished scans remembered at once (older ones are dropped)."""
QUEUE_LIMIT = 64
DEFAULT_THREADS = 2
CAPTURE_AHEAD = 6
"""With reader processes: poses captured while earlier views are still being read (a whole
scan's worth), so the robot never waits at a pose for a reader to come free."""
READER_HOLD_S = 0.2
"""Views read at once (a six-camera robot delivers six frames per pose)."""


# --- the core ----------------------------------------------------------------------------

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


def _start_reader(size: int | None) -> None:
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


def _reader_pid(hold_s: float) -> int:
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
            colours, detection_conf, size = assemble(readings, scan.rotations)
            result = resolve(colours, self.size or size)
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


# --- the bus adapter -------------------------------------------------------------------

class VisionService:
    """Captures at each scan pose and publishes face results and the cube state."""

    def __init__(self, node: Any, source: Any, size: int | None = None,
                 threads: int = DEFAULT_THREADS, readers: int = 0) -> None:
        self.node = node
        self.source = source
        self.size = size
        self.collector = ScanCollector(size)
        self._work: queue.Queue[dict[str, Any] | None] = queue.Queue(QUEUE_LIMIT)
        self._threads = [threading.Thread(target=self._run, name=f"vision-worker-{i}",
                                          daemon=True) for i in range(max(1, threads))]
        # a real camera is one device: its frames are taken one at a time
        concurrent = bool(getattr(source, "concurrent_capture", False))
        self._capture_lock: threading.Lock | None = None if concurrent else threading.Lock()
        self._lock = threading.Lock()
        self._in_flight = 0
        self.scans_done = 0
        self.scans_failed = 0
        self.readers = readers
        self._pool: Any = None

    def start(self) -> None:
        keep_frame_buffers()

        if len(self._threads) > 1:
            # the views are read in parallel already: OpenCV's own threads would only
            # compete with them for the same cores
            cv2.setNumThreads(1)
        if self.readers > 0:
            self._pool = ProcessPoolExecutor(
                self.readers, mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_reader, initargs=(self.size,))
            # every reader started and warm before we say ready (each takes one task)
            for future in [self._pool.submit(_reader_pid, READER_HOLD_S)
                           for _ in range(self.readers)]:
                future.result()
        # the scan is resolved here, in the service: compile that before the first scan too
        warm_up(self.size)
        self.node.subscribe("actuator.scan_pose", self.on_pose)
        if isinstance(self.source, SimSource):
            self.node.subscribe("sim.twin_state", self.on_twin)
        for thread in self._threads:
            thread.start()
        freeze_startup_objects()
        self.node.set_state("ready", scans=0, failed=0)

    def stop(self) -> None:
        for _ in self._threads:
            self._work.put(None)
        for thread in self._threads:
            thread.join(timeout=5.0)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def on_twin(self, env: Any) -> None:
        self.source.set_state(env.payload["facelets"], env.payload.get("line"))

    def on_pose(self, env: Any) -> None:
        """A pose was reached: queue the capture (callbacks must stay short)."""
        try:
            self._work.put_nowait(dict(env.payload))
        except queue.Full:
            self.node.publish("errors", error_payload(
                env.payload.get("scan_id", ""), "overloaded",
                "vision is still busy with earlier poses; this pose was dropped", "", []))

    def scripted_scan(self, scan_id: str | None = None) -> str:
        """Queue the scripted pose sequence as one scan (no actuator needed)."""
        scan_id = scan_id or f"scripted-{uuid.uuid4().hex[:8]}"
        for pose, (face, rotation) in enumerate(SCRIPTED_POSES):
            self._work.put({"scan_id": scan_id, "pose": pose, "n_poses": len(SCRIPTED_POSES),
                            "face": face, "rotation": rotation})
        return scan_id

    def _run(self) -> None:
        while True:  # ends on the None that stop() queues
            pose = self._work.get()
            if pose is None:
                return
            try:
                self.handle_pose(pose)
            except Exception as exc:  # a bad pose or frame never kills the service
                self.node.publish("errors", error_payload(
                    str(pose.get("scan_id", "")), "internal",
                    f"vision failed on pose {pose}: {type(exc).__name__}: {exc}", "", []))

    def handle_pose(self, pose: dict[str, Any]) -> None:
        """Capture and read one view; several views are read at once by the worker threads,
        the scan is gathered and published under one lock."""
        scan_id, face = str(pose["scan_id"]), str(pose["face"])
        rotation, pose_index = int(pose.get("rotation", 0)), int(pose.get("pose", 0))
        view: Any = None
        reading = error = thumb = None
        with self._lock:
            self._in_flight += 1
            if self._in_flight == 1:
                self.node.set_state("busy", scans=self.scans_done, failed=self.scans_failed)
        try:
            try:
                view = self._capture(face, rotation, pose.get("at"), pose.get("line"))
            except SourceError as exc:
                error = str(exc)
            # the robot may move on now; the frame is read while it does
            self.node.publish("vision.captured", {"scan_id": scan_id, "pose": pose_index,
                                                  "face": face, "ok": view is not None})
            if view is not None:
                if self._pool is not None:
                    reading, error, thumb = self._pool.submit(read_view, view,
                                                              self.size).result()
                else:
                    reading, error, thumb = read_view(view, self.size)
            message = face_payload(scan_id, pose_index, face, rotation, thumb, reading, error)
            with self._lock:
                self.node.publish("vision.face", message)
                outcome = self.collector.add(scan_id, face, rotation, reading, error)
                if outcome is not None:
                    topic, payload = outcome
                    self.node.publish(topic, payload)
                    if topic == "errors":
                        self.scans_failed += 1
                    else:
                        self.scans_done += 1
        finally:
            with self._lock:
                self._in_flight -= 1
                if self._in_flight == 0:
                    self.node.set_state("ready", scans=self.scans_done,
                                        failed=self.scans_failed)

    def _capture(self, face: str, rotation: int, at: str | None, line: int | None
                 ) -> np.ndarray | tuple:
        """The frame, or for a sim camera read by reader processes the frame to render."""
        if self._capture_lock is None:
            if self._pool is not None and hasattr(self.source, "take"):
                return self.source.take(face, rotation, at, line=line)
            return self.source.capture(face, rotation, at, line=line)
        with self._capture_lock:
            return self.source.capture(face, rotation, at)


def register(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser(
        "serve", help="run the vision service on the bus",
        description="Capture at every actuator.scan_pose, publish vision.face results and "
                    "the vision.cube_state (or an errors message saying what to rescan).")
    serve.add_argument("--camera", default=os.environ.get("ROBOCELL_CAMERA", "sim"),
                       help="sim | device index | video file or URL | folder of images "
                            "(default $ROBOCELL_CAMERA or sim)")
    serve.add_argument("--size", type=int, choices=(2, 3),
                       help="cube size (default: the size of $ROBOCELL_PROFILE's robot, else "
                            "guessed per face)")
    serve.add_argument("--readers", type=int,
                       default=int(os.environ.get("ROBOCELL_VISION_READERS", DEFAULT_THREADS)),
                       help="views read at once, each in its own reader process (default "
                            f"$ROBOCELL_VISION_READERS or {DEFAULT_THREADS}; 0: one view at a "
                            "time, in the service process)")
    serve.add_argument("--seed", type=int, default=0, help="sim camera seed")
    serve.add_argument("--state", help="sim camera: look at this facelet string until the "
                                       "twin publishes its state")
    serve.add_argument("--scripted", type=float, metavar="SECONDS", default=None,
                       help="without an actuator: run the scripted pose sequence now and "
                            "then every SECONDS (0: once)")
    serve.add_argument("--broker", help="broker base address tcp://HOST:PORT "
                                        "(default $ROBOCELL_BUS)")
    serve.set_defaults(func=cmd_serve)


CAMERA_RETRY_S = 2.0
"""Pause between attempts to open a camera device that cannot be opened yet."""


def _open_camera(spec: str, seed: int, node: Any) -> Any:
    """A camera device that cannot be opened is named on stderr at once with what to check,
    the service announces ``error`` with the reason (so `robocell health vision` fails) and
    tries again every `CAMERA_RETRY_S` until it opens or the service is stopped (None)."""
    told = ""
    while True:
        try:
            source = open_source(spec, seed)
        except SourceError as exc:
            if str(exc) != told:
                told = str(exc)
                print(f"vision: {exc}; retrying every {CAMERA_RETRY_S:g} s", file=sys.stderr,
                      flush=True)
                node.publish("errors", {"service": "vision", "stage": "camera",
                                        "code": "camera_open", "message": told,
                                        "action": "connect the camera or fix --camera; vision "
                                        "keeps trying", "detail": {"camera": spec}})
            node.set_state("error", error=told, camera=spec, retrying=True)
            if node.wait(CAMERA_RETRY_S):
                return None
            continue
        if told:
            print(f"vision: camera {spec!r} opened", file=sys.stderr, flush=True)
            node.set_state("starting", error=None, retrying=False)
        return source


def cmd_serve(args: argparse.Namespace) -> int:
    if is_device(args.camera):
        return _serve(args, None)
    try:
        source = open_source(args.camera, args.seed)
    except SourceError as exc:
        raise CommandError(str(exc)) from None
    return _serve(args, source)


def _serve(args: argparse.Namespace, source: Any) -> int:
    """Serve with ``source``, or (None) with the camera device opened once it can be."""
    if args.state:
        if not isinstance(source, SimSource):
            raise CommandError("--state only applies to --camera sim")
        source.set_state(args.state)
    if args.readers < 0:
        raise CommandError(f"--readers {args.readers}: give 0 or more")
    size = args.size or _profile_size()
    with Node("vision", Endpoints.resolve(args.broker)) as node:
        if source is None:
            source = _open_camera(args.camera, args.seed, node)
            if source is None:
                return 0
        threads = args.readers + CAPTURE_AHEAD if args.readers > 0 else 1
        service = VisionService(node, source, size, threads, args.readers)
        try:
            service.start()
            if args.scripted is not None:
                _scripted_loop(node, service, args.scripted)
            node.wait()
        finally:
            service.stop()
            source.close()
    return 0


def _profile_size() -> int | None:
    """The cube size of the cell's robot ($ROBOCELL_PROFILE), if it is a cube robot."""
    name = os.environ.get("ROBOCELL_PROFILE")
    if not name:
        return None
    try:
        return load_profile(name).size
    except ProfileError as exc:
        raise CommandError(f"ROBOCELL_PROFILE: {exc}") from None


def _scripted_loop(node: Any, service: VisionService, every: float) -> None:
    """Queue a scripted scan now and, if ``every`` > 0, again every ``every`` seconds until
    the node stops."""
    def loop() -> None:
        while True:
            service.scripted_scan()
            if every <= 0 or node.wait(every):
                return
    threading.Thread(target=loop, name="vision-scripted", daemon=True).start()
