"""Sim-camera accuracy: seeded random cubes, six rendered frames each under randomised lighting,
read through detection and colour resolution; prints how many were read exactly, how many
ended in a specific error, and how many in a wrong cube state (must be 0).

    PYTHONPATH=. python bench/vision_sim_accuracy.py --size 3 --count 1000
"""

from __future__ import annotations

import argparse
import collections
import time
from dataclasses import replace

import cv2

from robocell.common.cube import random_facelets
from robocell.common.progress import Progress
from robocell.services.vision.resolve import ResolveError, same_cube
from robocell.services.vision.scan import SCRIPTED_POSES, ScanError, scan_frames
from robocell.services.vision.simcam import PALETTES, Conditions, capture_poses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, choices=(2, 3), default=3)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--show", type=int, default=10, help="print at most this many failures")
    parser.add_argument("--exposure", type=float, nargs=2, metavar=("LOW", "HIGH"),
                        help="exposure range of the scenes (default: the sim camera's)")
    parser.add_argument("--palette", choices=sorted(PALETTES),
                        help="only this sticker palette (default: every palette)")
    args = parser.parse_args()
    cv2.setNumThreads(1)
    conditions = Conditions()
    if args.exposure:
        conditions = replace(conditions, exposure=tuple(args.exposure))
    if args.palette:
        conditions = replace(conditions, palettes=(args.palette,))
    exact = 0
    errors: collections.Counter[str] = collections.Counter()
    wrong: list[int] = []
    margins = []
    shown = 0
    started = time.perf_counter()
    with Progress(f"sim {args.size}x{args.size}", args.count) as progress:
        for seed in range(args.start, args.start + args.count):
            state = random_facelets(args.size, seed)
            frames = capture_poses(state, SCRIPTED_POSES, seed, conditions)
            try:
                result = scan_frames(frames, args.size, dict(SCRIPTED_POSES)).resolution
            except (ScanError, ResolveError) as exc:
                code = getattr(exc, "code", "detection")
                errors[code] += 1
                if shown < args.show:
                    print(f"  seed {seed}: {type(exc).__name__} ({code}): {exc}")
                    shown += 1
            else:
                if same_cube(result.facelets, state):
                    exact += 1
                    margins.append(result.margin)
                else:
                    wrong.append(seed)
            progress.advance()
    elapsed = time.perf_counter() - started
    total = args.count
    print(f"sim camera, {args.size}x{args.size}, seeds {args.start}..{args.start + total - 1}, "
          f"{len(SCRIPTED_POSES)} frames of {conditions.width}x{conditions.height} per cube, "
          f"exposure {conditions.exposure[0]:g}-{conditions.exposure[1]:g}, "
          f"palettes {', '.join(conditions.palettes)}")
    share = 100.0 * exact / total
    print(f"  read exactly   {exact:5d} / {total}  ({share:.2f} %, target >= 99.9 %)")
    print(f"  specific error {sum(errors.values()):5d}  {dict(errors)}")
    print(f"  wrong state    {len(wrong):5d}  (must be 0) {wrong[:20]}")
    if margins:
        low = sorted(margins)[: max(1, len(margins) // 100)]
        print(f"  smallest margins to another valid cube: {[round(m, 1) for m in low[:5]]}")
    print(f"  {elapsed / total:.3f} s per cube (render + detect + resolve)")


if __name__ == "__main__":
    main()
