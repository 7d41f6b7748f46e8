"""Vision on real data: every real colour scan and photo set in the shared data, read as they are
and (photo sets) under every perturbation of `robocell.services.vision.perturb`, and under
each of them but brightness followed by brightness x0.5; counts of readings that are right,
refused (a specific error) and silently wrong (must be 0), with the margin of each accepted
reading.

    PYTHONPATH=. python bench/vision_real.py [--quiet]

A scan's answer is its line in ``scans/expected.tsv``; a photo set's is the cube its reference
colours (``expected-rgb.json``) resolve to, which for the 3x3 set is also the cube read by eye.
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path

import cv2
import numpy as np

from robocell.common.paths import shared_data_dir
from robocell.services.vision.interchange import load_scan
from robocell.services.vision.perturb import PERTURBATIONS, perturb
from robocell.services.vision.resolve import ResolveError, resolve, same_cube
from robocell.services.vision.scan import ScanError, find_face_files, read_image, scan_frames

HALVED = next(p for p in PERTURBATIONS if p.name == "brightness x0.5")
"""Also applied after each other perturbation (not brightness): a frame dimmed after the camera
clipped it, under other light, noise, compression or pose."""


def expected_scans(root: Path) -> dict[str, str]:
    lines = (root / "expected.tsv").read_text().splitlines()
    rows = [line.split("\t") for line in lines if line and not line.startswith("#")]
    return {name: facelets.strip() for name, facelets in rows}


def judge(read, want: str) -> tuple[str, float | None, str]:
    """('right' | 'wrong' | 'refused', margin, detail) of one attempt."""
    try:
        result = read()
    except (ScanError, ResolveError) as exc:
        return "refused", None, str(exc)
    if same_cube(result.facelets, want):
        return "right", result.margin, ""
    return "wrong", result.margin, result.facelets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet", action="store_true", help="print the totals only")
    args = parser.parse_args()
    cv2.setNumThreads(1)
    data = shared_data_dir() / "vision"
    if not data.is_dir():
        raise SystemExit(f"no shared data at {data} (set ROBOCELL_DATA)")
    totals: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    margins: dict[str, list[float]] = collections.defaultdict(list)
    started = time.perf_counter()

    def record(group: str, label: str, outcome: tuple[str, float | None, str]) -> None:
        verdict, margin, detail = outcome
        totals[group][verdict] += 1
        if margin is not None and verdict == "right":
            margins[group].append(margin)
        if not args.quiet:
            shown = "" if margin is None else f" margin {margin:.1f}"
            print(f"  {label:60s} {verdict}{shown}  {detail[:90]}")

    for name, want in expected_scans(data / "scans").items():
        colours, size = load_scan(data / "scans" / name)
        record("scans", name, judge(lambda c=colours, s=size: resolve(c, s), want))

    for folder in sorted(p for p in (data / "photos").iterdir() if p.is_dir()):
        colours, size = load_scan(folder / "expected-rgb.json")
        want = resolve(colours, size).facelets
        frames = {face: read_image(path) for face, path in find_face_files(folder).items()}
        record("photo sets", folder.name,
               judge(lambda f=frames: scan_frames(f).resolution, want))
        for perturbation in PERTURBATIONS:
            changed = perturb(frames, perturbation)
            record("perturbed photo sets", f"{folder.name}, {perturbation.name}",
                   judge(lambda f=changed: scan_frames(f).resolution, want))
        for perturbation in PERTURBATIONS:
            if perturbation.name.startswith("brightness"):
                continue
            changed = perturb(perturb(frames, perturbation), HALVED)
            record("perturbed, then halved", f"{folder.name}, {perturbation.name}, then x0.5",
                   judge(lambda f=changed: scan_frames(f).resolution, want))

    print("vision on real data (right / refused / silently wrong; smallest margins)")
    for group, counts in totals.items():
        low = sorted(margins[group])[:3]
        print(f"  {group:22s} {counts['right']:3d} right, {counts['refused']:3d} refused, "
              f"{counts['wrong']:3d} wrong (must be 0); smallest margins "
              f"{[round(m, 1) for m in low]}")
    finite = [m for group in margins.values() for m in group if np.isfinite(m)]
    if finite:
        print(f"  median margin of the accepted readings: {np.median(finite):.1f}")
    print(f"  {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
