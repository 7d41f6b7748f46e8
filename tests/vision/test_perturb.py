"""The real photo sets under light, cameras and poses nobody photographed: every one read,
none read wrong."""

from __future__ import annotations

import cv2
import numpy as np

from robocell.services.vision.interchange import load_scan
from robocell.services.vision.perturb import PERTURBATIONS, perturb
from robocell.services.vision.resolve import AMBIGUOUS_COST, ResolveError, resolve, same_cube
from robocell.services.vision.scan import (
    ScanError,
    find_face_files,
    read_faces,
    read_image,
    resolve_readings,
    scan_frames,
)

PHOTOS_3X3 = "3x3x3-random-01"


def photo_sets(shared_data):
    root = shared_data / "vision" / "photos"
    return sorted(p for p in root.iterdir() if p.is_dir())


def test_perturbations_change_the_frames_as_named():
    rng = np.random.default_rng(1)
    frame = rng.integers(40, 200, (120, 160, 3), dtype=np.uint8)
    by_name = {p.name: p for p in PERTURBATIONS}
    assert len(by_name) == len(PERTURBATIONS) == 9
    half = perturb({"U": frame}, by_name["brightness x0.5"])["U"]
    assert np.abs(half.astype(float) - 0.5 * frame).max() <= 0.5
    warm = perturb({"U": frame}, by_name["warm white balance (R x1.2, B x0.8)"])["U"]
    assert warm[..., 2].mean() > frame[..., 2].mean()  # BGR: red up, blue down
    assert warm[..., 0].mean() < frame[..., 0].mean()
    noisy = perturb({"U": frame}, by_name["noise sigma 8"])["U"]
    assert 6 < np.std(noisy.astype(float) - frame) < 10
    for perturbation in PERTURBATIONS:
        changed = perturb({"U": frame}, perturbation)["U"]
        assert changed.shape == frame.shape and changed.dtype == np.uint8
        assert not np.array_equal(changed, frame), perturbation.name


def test_every_photo_set_is_read_right_under_every_perturbation(shared_data):
    cv2.setNumThreads(1)
    for folder in photo_sets(shared_data):
        colours, size = load_scan(folder / "expected-rgb.json")
        want = resolve(colours, size).facelets  # the reference detector's colours
        frames = {face: read_image(path) for face, path in find_face_files(folder).items()}
        refused = []
        for perturbation in PERTURBATIONS:
            try:
                result = scan_frames(perturb(frames, perturbation)).resolution
            except (ScanError, ResolveError) as exc:
                refused.append(f"{perturbation.name}: {exc}")
                continue
            assert same_cube(result.facelets, want), (folder.name, perturbation.name)
            assert result.margin >= AMBIGUOUS_COST
        assert not refused, (folder.name, refused)


def test_a_scan_dimmed_after_the_camera_clipped_it_is_read_from_the_sticker_rims(shared_data):
    """The webcam clipped the 3x3 set's white and yellow stickers to one near-white; halved
    afterwards, their clipped middles no longer reach the saturation level but still carry no
    hue. Their rims, unclipped in the first place, still tell yellow (blue below green) from
    white (blue above green), and the reading must use them."""
    cv2.setNumThreads(1)
    folder = shared_data / "vision" / "photos" / PHOTOS_3X3
    colours, size = load_scan(folder / "expected-rgb.json")
    want = resolve(colours, size).facelets
    frames = {face: read_image(path) for face, path in find_face_files(folder).items()}
    halved = perturb(frames, next(p for p in PERTURBATIONS if p.name == "brightness x0.5"))
    readings, failed = read_faces(halved)
    assert not failed
    centre = 4
    yellow = readings["R"].tints[centre]  # this cube's yellow centre (R), white on L
    white = readings["L"].tints[centre]
    assert np.abs(readings["R"].colours[centre] - readings["L"].colours[centre]).max() <= 2
    assert yellow[2] < yellow[1] and white[2] > white[1] + 5, (yellow, white)
    result = resolve_readings(readings).resolution
    assert result.facelets == want
    assert result.margin >= AMBIGUOUS_COST
