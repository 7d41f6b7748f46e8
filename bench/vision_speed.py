"""Vision speed on one core: sticker detection frames per second on 640x480 and 1920x1080
frames (target >= 30 fps at 640x480), the CPU of a whole 1920x1080 scan (decode and detect
six frames, target < 200 ms), and colour resolution time per cube (target <= 20 ms).

    PYTHONPATH=. python bench/vision_speed.py [--seconds 3]

Detection runs on sim-camera frames at 640x480 and on the real 1920x1080 robot photos
(shared data) when present, else on sim frames rendered at 1920x1080. Resolution runs on the
real colour scans (when present) and on sim-camera readings. Times are CPU time of this
process (one core), with the wall time beside it: on a shared machine wall time also counts
waiting for the CPU.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import struct
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

from robocell.common.cube import random_facelets
from robocell.common.paths import shared_data_dir
from robocell.services.vision.detect import detect
from robocell.services.vision.interchange import load_scan
from robocell.services.vision.resolve import ResolveError, resolve, same_cube
from robocell.services.vision.scan import (
    FACES,
    SCRIPTED_POSES,
    ScanError,
    assemble,
    find_face_files,
    read_faces,
    resolve_readings,
)
from robocell.services.vision.simcam import Conditions, capture_poses, render_face

SIM_CUBES = 20


def timed(work, items: list, seconds: float, minimum: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of ``work(item)`` over ``items`` (round and round) for about
    ``seconds``. CPU time (time.process_time) is what one core spends, even when other
    programs share the machine; wall time is what a caller waits."""
    for item in items[:2]:
        work(item)
    wall, cpu = [], []
    deadline = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < deadline or len(wall) < minimum:
        item = items[i % len(items)]
        w, c = time.perf_counter(), time.process_time()
        work(item)
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
        i += 1
    return wall, cpu


def rates(wall: list[float], cpu: list[float]) -> str:
    return (f"{len(cpu) / sum(cpu):7.1f} fps on one core ({1000 * statistics.median(cpu):.1f} "
            f"ms CPU/frame; wall {1000 * statistics.median(wall):.1f} ms)")


def sim_frames(width: int, height: int, count: int) -> list[np.ndarray]:
    conditions = Conditions(width=width, height=height)
    frames = []
    for seed in range(count):
        state = random_facelets(3 if seed % 2 else 2, seed)
        frames.append(render_face(state, FACES[seed % 6], seed % 4, seed, conditions))
    return frames


def _png_idat(data: bytes) -> bytes:
    """The zlib stream of a PNG file (its IDAT chunks joined): what any decoder inflates."""
    pos, parts = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        if data[pos + 4:pos + 8] == b"IDAT":
            parts.append(data[pos + 8:pos + 8 + length])
        pos += 12 + length
    return b"".join(parts)


def _mjpeg_video(frames: list[np.ndarray], path: Path) -> Path:
    """The six frames as an MJPEG video (quality 90): what a webcam's MJPEG stream carries."""
    height, width = frames[0].shape[:2]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 6, (width, height))
    writer.set(cv2.VIDEOWRITER_PROP_QUALITY, 90)
    for frame in frames:
        writer.write(frame)
    writer.release()
    return path


def _from_video(path: Path) -> list[np.ndarray]:
    capture = cv2.VideoCapture(str(path))
    frames = [capture.read()[1] for _ in FACES]
    capture.release()
    return frames


def _optional_decoders() -> list[tuple[str, str, Callable[[bytes], np.ndarray]]]:
    """(label, stored form, decode) of the decoders from PyPI that are installed."""
    found = []
    try:
        import pyspng  # optional: measured when installed

        found.append(("pyspng (libspng)", "png", lambda data: cv2.cvtColor(
            pyspng.load(data), cv2.COLOR_RGB2BGR)))
    except ImportError:
        print("  (pyspng not installed: `pip install pyspng` to measure libspng)")
    try:
        import simplejpeg  # optional: measured when installed

        found.append(("simplejpeg (libjpeg-turbo)", "jpeg",
                      lambda data: simplejpeg.decode_jpeg(data, colorspace="BGR")))
    except ImportError:
        print("  (simplejpeg not installed: `pip install simplejpeg` to measure it)")
    return found


def scan_cpu(seconds: float) -> None:
    """CPU of reading a whole scan of the real 1920x1080 photo sets, step by step: decode the
    six frames, detect each face (`scan.read_faces`, as `vision scan` does) and read the cube
    (`scan.resolve_readings`), for each way the frames can arrive: the PNG files as stored,
    the same frames as JPEG (quality 90) and as an MJPEG video read by `cv2.VideoCapture` (a
    webcam's stream), and frames already decoded (a camera delivering raw frames)."""
    sets = sorted(p for p in (shared_data_dir() / "vision" / "photos").glob("*") if p.is_dir())
    if not sets:
        print("  scan 1920x1080: shared data absent (set ROBOCELL_DATA)")
        return
    wants = [resolve(*load_scan(folder / "expected-rgb.json")).facelets for folder in sets]
    stored = {"png": [[path.read_bytes() for _, path in sorted(
        find_face_files(folder).items(), key=lambda item: FACES.index(item[0]))]
        for folder in sets]}
    decoded = [[cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR) for data in six]
               for six in stored["png"]]
    stored["jpeg"] = [[cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()
                       for frame in six] for six in decoded]
    work = Path(tempfile.mkdtemp(prefix="vision-speed-"))
    stored["video"] = [_mjpeg_video(six, work / f"scan{i}.avi") for i, six in enumerate(decoded)]
    stored["frames"] = decoded

    def imdecode(flags: int) -> Callable[[bytes], np.ndarray]:
        return lambda data: cv2.imdecode(np.frombuffer(data, np.uint8), flags)

    ways: list[tuple[str, str, Callable]] = [
        ("cv2.imdecode (libpng)", "png", imdecode(cv2.IMREAD_COLOR)),
        ("cv2 IMREAD_REDUCED_COLOR_2", "png", imdecode(cv2.IMREAD_REDUCED_COLOR_2)),
        ("cv2.imdecode (libjpeg-turbo)", "jpeg", imdecode(cv2.IMREAD_COLOR)),
        ("cv2 IMREAD_REDUCED_COLOR_2 (scaled DCT)", "jpeg", imdecode(cv2.IMREAD_REDUCED_COLOR_2)),
    ]
    ways += _optional_decoders()
    print(f"  a whole 1920x1080 scan ({len(sets)} real photo sets; frames of 1920x1080 as "
          f"stored), ms of CPU per scan of six frames:")
    print(f"    {'frames as':7s} {'decoder':40s} {'decode':>7s} {'detect':>7s} {'read':>6s} "
          f"{'decode+detect':>14s} {'right':>6s}   target decode+detect < 200")
    forms = {"png": "PNG", "jpeg": "JPEG q90", "video": "MJPEG", "frames": "decoded"}
    for label, form, decode in ways + [
            ("cv2.VideoCapture of an MJPEG video", "video", None),
            ("none (frames already in memory)", "frames", None)]:
        if form == "video":
            def decode_scan(item):
                return _from_video(item)
        elif form == "frames":
            def decode_scan(item):
                return item
        else:
            def decode_scan(item, decode=decode):
                return [decode(data) for data in item]
        scans = [dict(zip(FACES, decode_scan(item), strict=True)) for item in stored[form]]
        _, decode_cpu = timed(decode_scan, stored[form], seconds, 5)
        _, detect_cpu = timed(read_faces, scans, seconds, 5)
        readings = [read_faces(frames)[0] for frames in scans]
        _, read_cpu = timed(resolve_readings, readings, seconds, 5)
        right = sum(_reads_right(faces, want) for faces, want in zip(readings, wants, strict=True))
        decode_ms, detect_ms, read_ms = (1000 * statistics.median(cpu) for cpu in (
            decode_cpu, detect_cpu, read_cpu))
        print(f"    {forms[form]:7s} {label:40s} {decode_ms:7.1f} {detect_ms:7.1f} {read_ms:6.1f} "
              f"{decode_ms + detect_ms:14.1f} {right:3d}/{len(sets)}")
    shutil.rmtree(work, ignore_errors=True)
    _inflate_floor(stored["png"], seconds)


def _reads_right(readings: dict, want: str) -> bool:
    try:
        return same_cube(resolve_readings(readings).resolution.facelets, want)
    except (ScanError, ResolveError):
        return False


def _inflate_floor(pngs: list[list[bytes]], seconds: float) -> None:
    """What no PNG decoder can beat: inflating the six frames' zlib streams, with Python's zlib
    and (when the `deflate` package is installed) with libdeflate."""
    streams = [[_png_idat(data) for data in six] for six in pngs]
    inflaters = [("zlib (as libpng, libspng)", zlib.decompress)]
    try:
        import deflate  # optional: measured when installed

        sizes = {id(s): len(zlib.decompress(s)) for six in streams for s in six}
        inflaters.append(("libdeflate (`deflate` package)",
                          lambda s: deflate.zlib_decompress(s, sizes[id(s)])))
    except ImportError:
        print("    (deflate not installed: `pip install deflate` to measure libdeflate)")
    for label, inflate in inflaters:
        _, cpu = timed(lambda six, inflate=inflate: [inflate(s) for s in six], streams,
                       seconds, 5)
        print(f"    PNG     inflating the pixel data alone, {label:30s} "
              f"{1000 * statistics.median(cpu):5.1f} ms per six frames (a floor for any PNG "
              "decoder)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    args = parser.parse_args()
    cv2.setNumThreads(1)
    print("vision speed, one core (cv2.setNumThreads(1))")

    small = sim_frames(640, 480, 24)
    print(f"  detection 640x480 (sim frames):        "
          f"{rates(*timed(detect, small, args.seconds, 10))}  target >= 30 fps")
    sized = [(frame, 3 if seed % 2 else 2) for seed, frame in enumerate(small)]
    print(f"  detection 640x480, size known (half-size glance, look, then full): "
          f"{rates(*timed(lambda item: detect(*item), sized, args.seconds, 10))}")
    render = [(random_facelets(3, seed), FACES[seed % 6], seed) for seed in range(24)]
    print(f"  sim camera render 640x480 (3x3):       "
          f"{rates(*timed(lambda item: render_face(*item), render, args.seconds, 10))}")
    from robocell.common.malloc import keep_frame_buffers

    keep_frame_buffers()  # as the vision service's reader processes run
    print(f"  sim camera render, frame buffers kept in the heap (as the readers): "
          f"{rates(*timed(lambda item: render_face(*item), render, args.seconds, 10))}")

    photos = sorted((shared_data_dir() / "vision" / "photos").glob("*/*.png"))
    if photos:
        large = [cv2.imread(str(p)) for p in photos]
        label = f"real photos, {len(large)}"
    else:
        large = sim_frames(1920, 1080, 6)
        label = "sim frames"
    print(f"  detection 1920x1080 ({label}): "
          f"{rates(*timed(detect, large, args.seconds, 10))}")

    scan_cpu(args.seconds)

    scans = sorted((shared_data_dir() / "vision" / "scans").glob("*.json"))
    cubes = [load_scan(p) for p in scans]
    for colours, size in cubes:
        resolve(colours, size)
    for size in (2, 3):
        mine = [(c, s) for c, s in cubes if s == size]
        if not mine:
            continue
        wall, cpu = timed(lambda cube: resolve(*cube), mine, args.seconds, 20)
        print(f"  resolution {size}x{size} (real scans, {len(mine)}):    CPU median "
              f"{1000 * statistics.median(cpu):5.1f} ms, max {1000 * max(cpu):5.1f} ms per "
              f"cube (wall median {1000 * statistics.median(wall):.1f} ms)  target <= 20 ms")
    if not cubes:
        print("  resolution: shared data absent (set ROBOCELL_DATA)")
    for size in (2, 3):
        readings = []
        for seed in range(SIM_CUBES):
            frames = capture_poses(random_facelets(size, seed), SCRIPTED_POSES, seed)
            faces = {face: detect(frames[face], size) for face in FACES}
            readings.append(assemble(faces, dict(SCRIPTED_POSES)).colours)

        def attempt(colours: np.ndarray, size: int = size) -> None:
            try:
                resolve(colours, size)
            except ResolveError:
                pass

        wall, cpu = timed(attempt, readings, args.seconds, 20)
        print(f"  resolution {size}x{size} (sim readings, {SIM_CUBES}):  CPU median "
              f"{1000 * statistics.median(cpu):5.1f} ms, max {1000 * max(cpu):5.1f} ms per "
              f"cube (wall median {1000 * statistics.median(wall):.1f} ms)  target <= 20 ms")


if __name__ == "__main__":
    main()
