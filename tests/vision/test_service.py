"""The vision service on a real broker (ZeroMQ on loopback): poses in, faces and cube state out."""

from __future__ import annotations

import itertools
import os
import queue
import subprocess
import sys
import threading
import time

import cv2
import numpy as np
import pytest
from support.bus import REPO, wait_subscribed

from robocell.common.bus import Endpoints, Node
from robocell.common.config import free_port_block
from robocell.common.cube import random_facelets
from robocell.services.broker.service import Broker
from robocell.services.vision.resolve import same_cube
from robocell.services.vision.scan import SCRIPTED_POSES
from robocell.services.vision.service import VisionService
from robocell.services.vision.simcam import CLEAN
from robocell.services.vision.sources import FolderSource, SimSource

WAIT_S = 30.0
SILENCE_S = 10.0


def free_base() -> str:
    """A loopback base address with the next three ports free too."""
    return f"tcp://127.0.0.1:{free_port_block(4)}"


@pytest.fixture()
def bus():
    endpoints = Endpoints.from_base(free_base())
    broker = Broker(endpoints)
    thread = threading.Thread(target=broker.run, daemon=True)
    thread.start()
    assert broker.ready.wait(10.0)
    yield endpoints
    broker.stop()
    thread.join(5.0)


class Listener:
    """A node that records messages of some topics (once its subscriptions have reached the
    broker)."""

    def __init__(self, node: Node, *topics: str) -> None:
        self.messages: queue.Queue = queue.Queue()
        for topic in topics:
            node.subscribe(topic, self.messages.put)
        wait_subscribed(node.subscriber, *topics)

    def next(self, topic: str, timeout: float = WAIT_S):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                env = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if env.topic == topic:
                return env.payload
        raise AssertionError(f"no {topic} within {timeout} s")


def run_service(endpoints, source, size=None, **options):
    node = Node("vision", endpoints).start()
    service = VisionService(node, source, size, **options)
    service.start()
    wait_subscribed(node.subscriber, "actuator.scan_pose")  # poses sent from now on arrive
    return node, service


def send_poses(actuator: Node, scan_id: str, poses=SCRIPTED_POSES) -> None:
    for index, (face, rotation) in enumerate(poses):
        actuator.publish("actuator.scan_pose", {
            "scan_id": scan_id, "pose": index, "n_poses": len(poses), "face": face,
            "rotation": rotation})


def test_scan_poses_from_the_actuator_give_the_twins_cube_state(bus):
    state = random_facelets(3, 11)
    node, service = run_service(bus, SimSource(seed=5, facelets=state))
    with Node("monitor", bus) as monitor, Node("actuator", bus) as actuator:
        listen = Listener(monitor, "vision.face", "vision.cube_state", "errors")
        send_poses(actuator, "scan-1")
        faces = [listen.next("vision.face") for _ in SCRIPTED_POSES]
        result = listen.next("vision.cube_state")
    service.stop()
    node.stop()
    # views are read by two threads at once: every face once, in any order
    assert sorted(f["face"] for f in faces) == sorted(face for face, _ in SCRIPTED_POSES)
    for face in faces:
        assert face["ok"] and face["size"] == 3 and len(face["grid"]) == 9
        thumb = cv2.imdecode(np.frombuffer(face["jpeg"], np.uint8), cv2.IMREAD_COLOR)
        assert thumb is not None and thumb.shape[1] == 320
        xs = [x for x, _ in face["grid"]]
        assert 0 < min(xs) and max(xs) < thumb.shape[1]
    assert result["scan_id"] == "scan-1" and result["puzzle"] == "3x3x3"
    assert result["facelets"] == state
    assert len(result["confidence"]) == 54 and min(result["confidence"]) > 0


def test_each_frame_is_announced_as_captured_before_it_is_read(bus):
    state = random_facelets(3, 12)
    node, service = run_service(bus, SimSource(seed=6, facelets=state), 3)
    with Node("monitor", bus) as monitor, Node("actuator", bus) as actuator:
        listen = Listener(monitor, "vision.captured", "vision.face")
        send_poses(actuator, "scan-c")
        seen = []
        deadline = time.monotonic() + WAIT_S
        while len(seen) < 2 * len(SCRIPTED_POSES) and time.monotonic() < deadline:
            env = listen.messages.get(timeout=WAIT_S)
            seen.append((env.topic, env.payload["pose"], env.payload["ok"]))
    service.stop()
    node.stop()
    for pose in range(len(SCRIPTED_POSES)):
        captured = seen.index(("vision.captured", pose, True))
        read = seen.index(("vision.face", pose, True))
        assert captured < read


@pytest.mark.slow
def test_reader_processes_read_the_views_of_a_scan(bus):
    state = random_facelets(3, 21)
    node, service = run_service(bus, SimSource(seed=9, facelets=state), 3, threads=2, readers=2)
    with Node("monitor", bus) as monitor, Node("actuator", bus) as actuator:
        listen = Listener(monitor, "vision.cube_state")
        send_poses(actuator, "scan-r")
        result = listen.next("vision.cube_state")
    service.stop()
    node.stop()
    assert result["scan_id"] == "scan-r" and result["facelets"] == state


def test_scripted_scan_without_an_actuator(bus):
    state = random_facelets(2, 4)
    node, service = run_service(bus, SimSource(seed=1, conditions=CLEAN, facelets=state), 2)
    with Node("monitor", bus) as monitor:
        listen = Listener(monitor, "vision.cube_state")
        scan_id = service.scripted_scan()
        result = listen.next("vision.cube_state")
    service.stop()
    node.stop()
    assert result["scan_id"] == scan_id and result["puzzle"] == "2x2x2"
    assert same_cube(result["facelets"], state)


def test_unreadable_faces_end_in_an_error_naming_them(bus, tmp_path):
    blank = np.full((240, 320, 3), 90, np.uint8)
    for face in "URFDLB":
        cv2.imwrite(str(tmp_path / f"empty-{face}.png"), blank)
    node, service = run_service(bus, FolderSource(tmp_path), 3)
    with Node("monitor", bus) as monitor, Node("actuator", bus) as actuator:
        listen = Listener(monitor, "vision.face", "errors")
        send_poses(actuator, "scan-bad")
        face = listen.next("vision.face")
        error = listen.next("errors")
        # The service is still alive: a sim scan after the failure works.
        service.source = SimSource(seed=2, conditions=CLEAN, facelets=random_facelets(3, 2))
        listen2 = Listener(monitor, "vision.cube_state")
        send_poses(actuator, "scan-good")
        good = listen2.next("vision.cube_state")
    service.stop()
    node.stop()
    assert face["ok"] is False and "no 3x3 sticker grid" in face["error"]
    assert error["service"] == "vision" and error["code"] == "detection"
    assert error["detail"]["faces"] == "URFDLB" and "rescan" in error["action"]
    assert good["scan_id"] == "scan-good"


def test_a_frame_that_no_longer_matches_the_calibration_is_reported_on_errors(
        bus, shared_data, tmp_path):
    from robocell.services.vision.calibration import calibrate
    from robocell.services.vision.scan import find_face_files, read_image

    folder = shared_data / "vision" / "photos" / "3x3x3-random-01"
    frames = {face: read_image(path) for face, path in find_face_files(folder).items()}
    calibration = calibrate(frames, cube="LBBUURDDRDDLBRFRBDLLFRFRBLURFFLDLDBLURFULFBUUUDFDBFBUR")
    for face, frame in frames.items():  # the light has gone down since the calibration
        cv2.imwrite(str(tmp_path / f"dim-{face}.png"), (frame * 0.55).astype(np.uint8))
    node, service = run_service(bus, FolderSource(tmp_path), 3, calibration=calibration)
    with Node("monitor", bus) as monitor, Node("actuator", bus) as actuator:
        listen = Listener(monitor, "errors")
        send_poses(actuator, "scan-dim", SCRIPTED_POSES[:1])
        error = listen.next("errors")
    service.stop()
    node.stop()
    assert error["code"] == "calibration" and error["detail"]["faces"] == "U"
    assert "no longer matches its calibration" in error["message"]
    assert "the light or the camera's exposure changed" in error["message"]


@pytest.mark.slow
def test_a_first_start_says_what_it_compiles_and_is_never_silent(tmp_path):
    """On a fresh install the service compiles the sim camera and the colour assignment
    (tens of seconds on a loaded machine): it says so at once and while it lasts."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "fresh-cache"),
           "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1",
           "ROBOCELL_BUS": free_base()}
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "robocell", "vision", "serve", "--camera",
                             "sim", "--size", "2"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    stamps = [(0.0, "(start)")]
    watchdog = threading.Timer(300.0, proc.terminate)  # a silent service ends the test too
    watchdog.start()
    try:
        for line in proc.stdout:
            stamps.append((time.monotonic() - started, line.rstrip()))
            if "done in" in line:
                break
    finally:
        watchdog.cancel()
        proc.terminate()
        proc.wait(30)
    lines = [line for _, line in stamps]
    said = next((at for at, line in stamps if "compiling" in line), None)
    assert said is not None and said < SILENCE_S, lines
    assert "done in" in lines[-1], lines
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(stamps)]
    assert max(gaps) <= SILENCE_S, (gaps, lines)
