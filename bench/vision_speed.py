"""Vision speed on one core: sticker detection frames per second on 640x480 and 1920x1080
frames (target >= 30 fps at 640x480), and colour resolution time per cube (target <= 20 ms).

    PYTHONPATH=. python bench/vision_speed.py [--seconds 3]

Detection runs on sim-camera frames at 640x480 and on the real 1920x1080 robot photos
(shared data) when present, else on sim frames rendered at 1920x1080. Resolution runs on the
real colour scans when present and on sim readings otherwise.
"""

from __future__ import annotations

import argparse
import statistics
import time

import cv2
import numpy as np

from robocell.common.cube import random_facelets
from robocell.common.paths import shared_data_dir
from robocell.services.vision.detect import detect
from robocell.services.vision.interchange import load_scan
from robocell.services.vision.resolve import resolve
from robocell.services.vision.scan import FACES
from robocell.services.vision.simcam import Conditions, render_face


def timed_rate(frames: list[np.ndarray], seconds: float) -> tuple[float, float]:
    """Frames per second (and ms per frame, median) of `detect` over ``frames``."""
    for frame in frames[:2]:
        detect(frame)
    times = []
    deadline = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < deadline or len(times) < 10:
        frame = frames[i % len(frames)]
        start = time.perf_counter()
        detect(frame)
        times.append(time.perf_counter() - start)
        i += 1
    return len(times) / sum(times), 1000 * statistics.median(times)


def sim_frames(width: int, height: int, count: int) -> list[np.ndarray]:
    conditions = Conditions(width=width, height=height)
    frames = []
    for seed in range(count):
        state = random_facelets(3 if seed % 2 else 2, seed)
        frames.append(render_face(state, FACES[seed % 6], seed % 4, seed, conditions))
    return frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    args = parser.parse_args()
    cv2.setNumThreads(1)
    print("vision speed, one core (cv2.setNumThreads(1))")

    small = sim_frames(640, 480, 24)
    fps, ms = timed_rate(small, args.seconds)
    print(f"  detection 640x480 (sim frames)      {fps:7.1f} fps  ({ms:.1f} ms/frame; "
          f"target >= 30 fps)")

    photos = sorted((shared_data_dir() / "vision" / "photos").glob("*/*.png"))
    if photos:
        large = [cv2.imread(str(p)) for p in photos]
        label = f"real photos, {len(large)}"
    else:
        large = sim_frames(1920, 1080, 6)
        label = "sim frames"
    fps, ms = timed_rate(large, args.seconds)
    print(f"  detection 1920x1080 ({label})  {fps:7.1f} fps  ({ms:.1f} ms/frame)")

    scans = sorted((shared_data_dir() / "vision" / "scans").glob("*.json"))
    cubes = [load_scan(p) for p in scans]
    for colours, size in cubes:
        resolve(colours, size)
    for size in (2, 3):
        mine = [(c, s) for c, s in cubes if s == size]
        if not mine:
            continue
        times = []
        deadline = time.perf_counter() + args.seconds
        i = 0
        while time.perf_counter() < deadline or len(times) < 20:
            colours, n = mine[i % len(mine)]
            start = time.perf_counter()
            resolve(colours, n)
            times.append(time.perf_counter() - start)
            i += 1
        print(f"  resolution {size}x{size} (real scans, {len(mine)})   "
              f"median {1000 * statistics.median(times):5.1f} ms, "
              f"max {1000 * max(times):5.1f} ms per cube (target <= 20 ms)")
    if not cubes:
        print("  resolution: shared data absent (set ROBOCELL_DATA)")


if __name__ == "__main__":
    main()
