"""The vision service on the bus (`robocell vision serve`).

Pattern: an *event-driven pipeline* behind one `Node`. Each ``actuator.scan_pose`` event
(or, without an actuator, each pose of the scripted sequence `scan.SCRIPTED_POSES`) is
queued; a worker thread (two by default, so a six-camera pose is read two views at a time)
captures a frame from the source, says so on ``vision.captured`` (the robot moves on to the
next pose while the frame is read), detects the face, publishes a ``vision.face`` result
(JPEG thumbnail, grid, colours, confidence) and, once every face of the scan is in, resolves
the cube and publishes the latched ``vision.cube_state`` with per-sticker confidence -- or
an ``errors`` message naming the faces and stickers to rescan.
With ``--camera sim`` the source renders the digital twin (``sim.twin_state``).

The core (`reading`: `ScanCollector`, `face_payload`, `read_view`) is plain functions over plain
data; `VisionService` is the thin adapter. The worker loop ends when the node stops.
"""

from __future__ import annotations

import argparse
import multiprocessing
import queue
import sys
import threading
import uuid
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import cv2
import numpy as np

from robocell.common import config
from robocell.common.bus import Node, is_replayed
from robocell.common.bus.options import service_endpoints
from robocell.common.malloc import freeze_startup_objects, keep_frame_buffers
from robocell.common.profile import ProfileError, load_profile
from robocell.common.progress import Ticker
from robocell.errors import CommandError
from robocell.services.vision.calibration import Calibration, CalibrationError
from robocell.services.vision.calibration import load as load_calibration
from robocell.services.vision.reading import (
    DEFAULT_THREADS,
    READER_HOLD_S,
    ScanCollector,
    calibration_mismatch,
    error_payload,
    face_payload,
    read_view,
    reader_pid,
    start_reader,
    warm_up,
)
from robocell.services.vision.scan import SCRIPTED_POSES
from robocell.services.vision.sources import SimSource, SourceError, open_source

QUEUE_LIMIT = 64
WARM_UP_QUIET_S = 2.0
"""A warm-up longer than this is a compile (loading numba's cache takes less): it is said."""
WARM_UP_EXPECTED_S = 30.0
"""What the first warm-up (the compile) takes on an idle machine of two cores, about."""
CAPTURE_AHEAD = 6
"""With reader processes: poses captured while earlier views are still being read (a whole
scan's worth), so the robot never waits at a pose for a reader to come free."""


# --- the bus adapter -------------------------------------------------------------------

class VisionService:
    """Captures at each scan pose and publishes face results and the cube state."""

    def __init__(self, node: Any, source: Any, size: int | None = None,
                 threads: int = DEFAULT_THREADS, readers: int = 0,
                 calibration: Calibration | None = None) -> None:
        self.node = node
        self.calibration = calibration
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
        self._latest_scan: tuple[str, list[dict[str, Any]]] = ("", [])
        """The latest scan's id and its vision.face messages so far (vision.scan_faces)."""
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
        with Ticker("vision: warming up (compiling the sim camera and the colour "
                    "assignment: first run only)", WARM_UP_EXPECTED_S, after_s=WARM_UP_QUIET_S):
            if self.readers > 0:
                self._pool = ProcessPoolExecutor(
                    self.readers, mp_context=multiprocessing.get_context("spawn"),
                    initializer=start_reader, initargs=(self.size,))
                # every reader started and warm before we say ready (each takes one task)
                for future in [self._pool.submit(reader_pid, READER_HOLD_S)
                               for _ in range(self.readers)]:
                    future.result()
            # the scan is resolved here, in the service: compile that before the first scan
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
        """The twin the sim camera films: a replayed one (``bus play``) is never the cube."""
        if is_replayed(env.source):
            return
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
            mismatch = calibration_mismatch(self.calibration, scan_id, face, reading)
            with self._lock:
                self.node.publish("vision.face", message)
                self._publish_scan_faces(scan_id, message)
                if mismatch is not None:
                    self.node.publish("errors", mismatch)
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

    def _publish_scan_faces(self, scan_id: str, message: dict[str, Any]) -> None:
        """The latest scan's faces so far, latched: what a dashboard started later shows
        (a face of another scan starts the list anew)."""
        latest_id, faces = self._latest_scan
        if scan_id != latest_id:
            faces = []
            self._latest_scan = (scan_id, faces)
        faces.append(message)
        self.node.publish("vision.scan_faces", {"scan_id": scan_id, "faces": faces})

    def _capture(self, face: str, rotation: int, at: str | None, line: int | None
                 ) -> np.ndarray | tuple:
        """The frame, or for a sim camera read by reader processes the frame to render."""
        if self._capture_lock is None:
            if self._pool is not None and hasattr(self.source, "take"):
                return self.source.take(face, rotation, at, line=line)
            return self.source.capture(face, rotation, at, line=line)
        with self._capture_lock:
            return self.source.capture(face, rotation, at)


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


def serve(args: argparse.Namespace, source: Any) -> int:
    """Serve with ``source``, or (None) with the camera device opened once it can be."""
    if args.state:
        if not isinstance(source, SimSource):
            raise CommandError("--state only applies to --camera sim")
        source.set_state(args.state)
    if args.readers < 0:
        raise CommandError(f"--readers {args.readers}: give 0 or more")
    size = args.size or _profile_size()
    calibration = None
    if args.calibration:
        try:
            calibration = load_calibration(args.calibration)
        except CalibrationError as exc:
            raise CommandError(str(exc)) from None
        if size is not None and calibration.size != size:
            raise CommandError(f"{args.calibration} calibrates a {calibration.size}x"
                               f"{calibration.size} cube, this cell reads {size}x{size}; "
                               "calibrate again with this cube")
    with Node("vision", service_endpoints(args, "vision")) as node:
        if source is None:
            source = _open_camera(args.camera, args.seed, node)
            if source is None:
                return 0
        threads = args.readers + CAPTURE_AHEAD if args.readers > 0 else 1
        service = VisionService(node, source, size, threads, args.readers, calibration)
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
    name = config.profile_name()
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
