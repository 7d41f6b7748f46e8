"""Harness of the monitor tests: a real broker and a real monitor as processes, scripted bus
peers, waiting helpers."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from robocell.common.bus import Endpoints
from robocell.common.config import free_port_block

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
TOKEN = "test-token-3f9a1c"
START_TIMEOUT_S = 60.0  # only bounds a hang: a loaded machine starts a process slowly
BUS_PORTS = 4  # subscribe, publish, command, tap
T = TypeVar("T")




def process_env(bus: str) -> dict[str, str]:
    env = dict(os.environ)
    env["ROBOCELL_BUS"] = bus
    for name in ("ROBOCELL_BUS_SUB", "ROBOCELL_BUS_PUB", "ROBOCELL_BUS_CMD", "ROBOCELL_BUS_TAP",
                 "ROBOCELL_BUS_CURVE_KEY", "ROBOCELL_MONITOR_TOKEN"):
        env.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class Proc:
    """A robocell process started by a test, with its log file."""

    popen: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(5)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def start_process(args: list[str], env: dict[str, str], log: Path) -> Proc:
    with open(log, "wb") as handle:
        popen = subprocess.Popen([sys.executable, *args], env=env, stdout=handle,
                                 stderr=subprocess.STDOUT, cwd=REPO_ROOT)
    return Proc(popen, log)


def wait_for(condition: Callable[[], object], timeout: float, what: str,
             proc: Proc | None = None) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if proc is not None and proc.popen.poll() is not None:
            raise AssertionError(f"{what}: process exited with {proc.popen.returncode}:\n"
                                 f"{proc.output()}")
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}"
                         + (f"; log:\n{proc.output()}" if proc else ""))


def start_broker(tmp: Path, extra: list[str] | None = None, name: str = "broker",
                 port: int | None = None) -> tuple[Proc, str]:
    """A real broker on free loopback ports (from ``port`` if given); returns it and its base
    address."""
    base = f"tcp://127.0.0.1:{free_port_block(BUS_PORTS) if port is None else port}"
    proc = start_process(["-m", "robocell", "broker", *(extra or [])], process_env(base),
                         tmp / f"{name}.log")
    wait_for(lambda: "broker: subscribe" in proc.output(), START_TIMEOUT_S, "the broker", proc)
    return proc, base


def http_get(url: str) -> bytes | None:
    """The body at ``url``; None if nothing answers there (a server that answers slowly, on a
    loaded machine, is waited for)."""
    try:
        with urllib.request.urlopen(url, timeout=15.0) as response:
            return response.read()
    except OSError:
        return None


def http_answers(url: str) -> bool:
    """Whether an HTTP server answers at ``url`` at all (an error status counts: a monitor
    without a broker answers /healthz with 503)."""
    try:
        with urllib.request.urlopen(url, timeout=15.0):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def start_monitor(tmp: Path, bus: str, extra: list[str], name: str = "monitor"
                  ) -> tuple[Proc, str]:
    """A real `robocell monitor` process; returns it and its base URL."""
    port = free_port_block(1)
    proc = start_process(["-m", "robocell", "monitor", "--http", f"127.0.0.1:{port}", *extra],
                         process_env(bus), tmp / f"{name}.log")
    url = f"http://127.0.0.1:{port}"
    wait_for(lambda: http_answers(f"{url}/healthz"), START_TIMEOUT_S, "the monitor", proc)
    return proc, url


@dataclass
class Cell:
    """The processes of one test module: broker and monitor (with token TOKEN)."""

    bus: str
    url: str
    broker: Proc
    monitor: Proc
    tmp: Path

    @property
    def endpoints(self) -> Endpoints:
        return Endpoints.from_base(self.bus)

    def peer(self, name: str, period: float = 0.2) -> Proc:
        """A scripted service as its own process: heartbeats every ``period`` s."""
        proc = start_process([str(Path(__file__).with_name("scripted_peer.py")), name,
                              str(period)], process_env(self.bus), self.tmp / f"peer-{name}.log")
        wait_for(lambda: "ready" in proc.output(), START_TIMEOUT_S, f"peer {name}", proc)
        return proc


def face_jpeg(facelets: str, face_index: int, size: int, width: int = 160,
              height: int = 120) -> tuple[bytes, list[list[float]], list[list[int]]]:
    """A small camera-like JPEG of one face (real OpenCV encoding), its sticker centres and
    sticker colours, for vision.face messages."""
    import cv2
    import numpy as np

    rgb = {"U": (240, 240, 235), "R": (190, 30, 55), "F": (0, 155, 90), "D": (250, 210, 0),
           "L": (250, 90, 10), "B": (0, 80, 185)}
    image = np.full((height, width, 3), 40, np.uint8)
    cell = min(width, height) * 0.8 / size
    x0, y0 = (width - cell * size) / 2, (height - cell * size) / 2
    grid, colours = [], []
    for row in range(size):
        for col in range(size):
            letter = facelets[face_index * size * size + row * size + col]
            r, g, b = rgb[letter]
            top_left = (int(x0 + col * cell + 2), int(y0 + row * cell + 2))
            bottom_right = (int(x0 + (col + 1) * cell - 2), int(y0 + (row + 1) * cell - 2))
            cv2.rectangle(image, top_left, bottom_right, (b, g, r), -1)
            grid.append([x0 + (col + 0.5) * cell, y0 + (row + 0.5) * cell])
            colours.append([r, g, b])
    ok, encoded = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 80])
    assert ok
    return encoded.tobytes(), grid, colours


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion on a fresh event loop in its own thread (Playwright's
    sync API keeps a loop running on the test's thread)."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # re-raised on the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
