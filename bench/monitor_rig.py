"""Rig for the monitor's bench scripts: a real broker and monitor as processes, and a scripted
cell whose services publish a simulated solve cycle (heartbeats, scan faces with camera-like
thumbnails, cube state, plan, progress, twin, cycle results)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robocell.common.bus import Endpoints, Node
from robocell.common.bus.topics import FACES
from robocell.common.config import free_port_block
from robocell.common.cube import apply_to_facelets, format_moves, invert_moves, solved
from robocell.common.notation import parse_moves

REPO_ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
START_TIMEOUT_S = 15.0
THUMB_W, THUMB_H = 240, 180
# Measured-looking sticker colours (RGB) as a camera sees them, not pure primaries.
CAMERA_RGB = {"U": (226, 228, 220), "R": (176, 32, 48), "F": (18, 150, 84), "D": (236, 204, 30),
              "L": (238, 96, 28), "B": (24, 74, 172)}




@dataclass
class Rig:
    """Broker and monitor processes on free loopback ports."""

    bus: str
    url: str
    broker: subprocess.Popen[bytes]
    monitor: subprocess.Popen[bytes]

    @property
    def endpoints(self) -> Endpoints:
        return Endpoints.from_base(self.bus)

    def close(self) -> None:
        for proc in (self.monitor, self.broker):
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()


def _wait_http(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the monitor exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1.0):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the monitor did not answer on {url}")


def start_rig(token: str | None, log_dir: Path) -> Rig:
    bus = f"tcp://127.0.0.1:{free_port_block(4)}"
    env = dict(os.environ, ROBOCELL_BUS=bus, PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                        os.environ.get("PYTHONPATH")])))
    log_dir.mkdir(parents=True, exist_ok=True)
    broker = subprocess.Popen([sys.executable, "-m", "robocell", "broker"], env=env,
                              stdout=open(log_dir / "broker.log", "wb"), stderr=subprocess.STDOUT)
    port = free_port_block(1)
    args = [sys.executable, "-m", "robocell", "monitor", "--http", f"127.0.0.1:{port}"]
    if token:
        args += ["--token", token]
    time.sleep(0.3)
    monitor = subprocess.Popen(args, env=env, stdout=open(log_dir / "monitor.log", "wb"),
                               stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    _wait_http(url + "/healthz", monitor)
    return Rig(bus, url, broker, monitor)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def face_thumbnail(facelets: str, face: str, size: int, rng: np.random.Generator
                   ) -> tuple[bytes, list[list[float]], list[list[int]]]:
    """A camera-like JPEG of one face: perspective, uneven light, noise; with the sticker
    centres in thumbnail pixels and the sampled colours."""
    import cv2

    side = 120
    face_img = np.full((side, side, 3), 18, np.uint8)
    cell = side / size
    index = FACES.index(face) * size * size
    for row in range(size):
        for col in range(size):
            r, g, b = CAMERA_RGB[facelets[index + row * size + col]]
            cv2.rectangle(face_img, (int(col * cell + 4), int(row * cell + 4)),
                          (int((col + 1) * cell - 4), int((row + 1) * cell - 4)),
                          (b, g, r), -1, lineType=cv2.LINE_AA)
    background = rng.integers(50, 90, (THUMB_H, THUMB_W, 3)).astype(np.uint8)
    background = cv2.GaussianBlur(background, (0, 0), 6)
    jitter = rng.uniform(-10, 10, (4, 2))
    corners = np.float32([[60, 30], [185, 38], [178, 160], [55, 150]]) + jitter.astype(np.float32)
    source = np.float32([[0, 0], [side, 0], [side, side], [0, side]])
    homography = cv2.getPerspectiveTransform(source, corners)
    warped = cv2.warpPerspective(face_img, homography, (THUMB_W, THUMB_H))
    mask = cv2.warpPerspective(np.full((side, side), 255, np.uint8), homography,
                               (THUMB_W, THUMB_H))
    frame = np.where(mask[..., None] > 0, warped, background).astype(np.float32)
    light = np.linspace(1.1, 0.75, THUMB_W)[None, :, None]
    frame = frame * light + rng.normal(0, 4, frame.shape)
    frame = np.clip(frame, 0, 255).astype(np.uint8)
    centres = np.float32([[[(c + 0.5) * cell, (r + 0.5) * cell] for r in range(size)
                           for c in range(size)]])
    grid = cv2.perspectiveTransform(centres, homography)[0]
    colours = [[int(v) for v in frame[int(y), int(x)][::-1]] for x, y in grid]
    ok, jpeg = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, 80])
    assert ok
    return jpeg.tobytes(), [[float(x), float(y)] for x, y in grid], colours


SERVICE_HEALTH = {
    "vision": {"camera": "sim", "fps": 30.0},
    "solver": {"workers": 2, "tables": "mapped"},
    "actuator": {"serial": "socket://127.0.0.1", "queue": 3},
    "firmware-sim": {"speed": 1.0},
    "cell": {"profile": "six-motor"},
}


class ScriptedCell:
    """The cell's services as scripted bus nodes publishing one simulated solve cycle."""

    def __init__(self, endpoints: Endpoints, seed: int = 7) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes = {name: Node(name, endpoints, track_peers=False) for name in SERVICE_HEALTH}
        for name, node in self.nodes.items():
            node.start()
            node.set_state("ready", **SERVICE_HEALTH[name])

    def close(self) -> None:
        for node in self.nodes.values():
            node.stop()

    def publish(self, service: str, topic: str, payload: dict) -> None:
        self.nodes[service].publish(topic, payload)

    def run_cycle(self, cycle_id: str, n_scramble: int = 20, stop_at_step: int | None = None,
                  fail_at_step: int | None = None, step_s: float = 0.05) -> None:
        """Scan, plan and execute one cycle; stop mid-execution at ``stop_at_step`` (the
        cycle is still running), or fail at ``fail_at_step`` with a firmware reset."""
        stages: dict[str, float] = {}
        names = "URFDLB"
        scramble = [parse_moves(names[i] + self.rng.choice(["", "'", "2"]))[0]
                    for i in self._face_sequence(n_scramble)]
        twin = apply_to_facelets(solved(3), scramble)
        scan_id = f"scan-{cycle_id}"
        t0 = time.monotonic()
        self.publish("cell", "cell.status", {"cycle_id": cycle_id, "stage": "scanning",
                                             "detail": "presenting six faces to the camera"})
        self._twin(twin)
        for pose, face in enumerate(FACES):
            self.publish("actuator", "actuator.scan_pose", {
                "scan_id": scan_id, "pose": pose, "n_poses": 6, "face": face, "rotation": 0})
            jpeg, grid, colours = face_thumbnail(twin, face, 3, self.rng)
            self.publish("vision", "vision.face", {
                "scan_id": scan_id, "pose": pose, "face": face, "rotation": 0, "size": 3,
                "jpeg": jpeg, "grid": grid, "colors": colours,
                "confidence": [float(c) for c in self.rng.uniform(0.8, 1.0, 9)], "ok": True})
            time.sleep(step_s)
        confidence = [float(c) for c in self.rng.uniform(0.85, 1.0, 54)]
        confidence[int(self.rng.integers(54))] = 0.45
        self.publish("vision", "vision.cube_state", {
            "scan_id": scan_id, "puzzle": "3x3x3", "facelets": twin, "confidence": confidence,
            "wall_time": time.time()})
        stages["scanning"] = time.monotonic() - t0
        t1 = time.monotonic()
        self.publish("cell", "cell.status", {"cycle_id": cycle_id, "stage": "solving"})
        plan = invert_moves(scramble)
        primitives = [format_moves([m]) for m in plan]
        plan_id = f"plan-{cycle_id}"
        self.publish("solver", "solver.plan", {
            "plan_id": plan_id, "scan_id": scan_id, "puzzle": "3x3x3", "profile": "six-motor",
            "facelets": twin, "primitives": primitives, "face_turns": primitives,
            "predicted_ms": 1000.0 * step_s * len(primitives),
            "search": {"nodes": int(self.rng.integers(20_000, 90_000)), "depth": len(plan)}})
        time.sleep(step_s)
        stages["solving"] = time.monotonic() - t1
        t2 = time.monotonic()
        self.publish("cell", "cell.status", {"cycle_id": cycle_id, "stage": "executing"})
        for step, move in enumerate(plan):
            self.publish("actuator", "actuator.progress", {
                "plan_id": plan_id, "step": step, "n_steps": len(plan),
                "primitive": primitives[step], "eta_s": step_s * (len(plan) - step),
                "state": "running"})
            if stop_at_step is not None and step == stop_at_step:
                return
            if fail_at_step is not None and step == fail_at_step:
                self._fail(cycle_id, plan_id, step, len(plan), stages, t0, t2)
                return
            twin = apply_to_facelets(twin, [move])
            self._twin(twin)
            time.sleep(step_s)
        stages["executing"] = time.monotonic() - t2
        self.publish("actuator", "actuator.result", {
            "plan_id": plan_id, "ok": True, "executed": len(plan), "n_steps": len(plan),
            "duration_s": stages["executing"], "last_line": len(plan), "boot_id": "rig"})
        t3 = time.monotonic()
        self.publish("cell", "cell.status", {"cycle_id": cycle_id, "stage": "verifying"})
        time.sleep(step_s)
        stages["verifying"] = time.monotonic() - t3
        self.publish("cell", "cell.status", {"cycle_id": cycle_id, "stage": "done",
                                             "detail": "the twin confirms: solved"})
        self.publish("cell", "cell.result", {"cycle_id": cycle_id, "ok": twin == solved(3),
                                             "stages_s": stages,
                                             "total_s": time.monotonic() - t0})

    def _fail(self, cycle_id: str, plan_id: str, step: int, n_steps: int,
              stages: dict[str, float], t0: float, t2: float) -> None:
        error = (f"firmware reset during execution (new boot id) after primitive {step} of "
                 f"{n_steps}; the cube state is unknown")
        self.publish("actuator", "actuator.result", {
            "plan_id": plan_id, "ok": False, "executed": step, "n_steps": n_steps,
            "duration_s": time.monotonic() - t2, "error": error, "cube_state_known": False,
            "last_line": step, "boot_id": "rig"})
        stages["executing"] = time.monotonic() - t2
        self.publish("cell", "cell.status", {"cycle_id": cycle_id, "stage": "failed",
                                             "detail": error})
        self.publish("cell", "cell.result", {
            "cycle_id": cycle_id, "ok": False, "stages_s": stages,
            "total_s": time.monotonic() - t0, "failed_stage": "executing",
            "error": error + ": rescan the cube, then start a new cycle"})

    def _twin(self, facelets: str) -> None:
        self.publish("firmware-sim", "sim.twin_state", {
            "puzzle": "3x3x3", "facelets": facelets, "solved": facelets == solved(3),
            "grips": {}, "arm_angles": {}, "boot_id": "b7f3"})

    def _face_sequence(self, n: int) -> list[int]:
        faces: list[int] = []
        while len(faces) < n:
            face = int(self.rng.integers(6))
            if not faces or face != faces[-1]:
                faces.append(face)
        return faces
