"""Camera calibration on the real robot photos: each face's region found, the colours learnt
under that light, a scan read with the calibration equal to the expected cube, and frames
that no longer match it (moved, darker) reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from robocell.cli import main
from robocell.common.cube import apply_to_facelets, solved, validate
from robocell.common.facelets import FACES
from robocell.services.vision.calibration import (
    CalibrationError,
    calibrate,
    check_reading,
    load,
    read_cube,
    save,
)
from robocell.services.vision.detect import detect
from robocell.services.vision.reading import calibration_mismatch
from robocell.services.vision.scan import find_face_files, read_image, scan_folder

PHOTOS_3X3 = "3x3x3-random-01"
CUBE_3X3 = "LBBUURDDRDDLBRFRBDLLFRFRBLURFFLDLDBLURFULFBUUUDFDBFBUR"
"""The cube in the 3x3 photos, read by eye (U red centre, R yellow, F green, D orange, L white,
B blue); test_detect checks the uncalibrated scan against it too."""
PHOTOS_2X2 = "2x2x2-random-02"
CUBE_2X2 = "UFBUBLRFURFDUBDDFLLRDLRB"
"""The cube in the 2x2 photos, letters as the uncalibrated resolver names them."""


def photos(shared_data: Path, name: str) -> dict[str, np.ndarray]:
    folder = shared_data / "vision" / "photos" / name
    return {face: read_image(path) for face, path in find_face_files(folder).items()}


def test_calibration_on_the_real_photos_finds_every_face_and_learns_its_colours(shared_data):
    frames = photos(shared_data, PHOTOS_3X3)
    calibration = calibrate(frames, cube=CUBE_3X3)
    assert calibration.size == 3
    for face in FACES:
        region = calibration.regions[face]
        assert region.centres.shape == (9, 2)
        assert region.frame_size == (1920, 1080)
        assert 150 < region.pitch_px < 250  # the stickers fill the middle of a 1080p frame
        x, y = region.centres.mean(axis=0)
        assert abs(x - 960) < 150 and abs(y - 540) < 150
    red, white, blue = (calibration.colours[f] for f in "ULB")
    assert red[0] > 180 and red[1] < 60 and blue[2] > 240 and white.min() > 240
    # this webcam clips yellow and white to the same near-white: said, not hidden
    assert any("R and L are nearly the same" in w for w in calibration.warnings)


def test_a_scan_read_with_the_calibration_is_the_expected_cube(shared_data, tmp_path):
    frames = photos(shared_data, PHOTOS_3X3)
    path = tmp_path / "calibration.json"
    save(calibrate(frames, cube=CUBE_3X3), path)
    read = read_cube(frames, load(path))
    assert read.scan.resolution.facelets == CUBE_3X3
    assert read.problems == []


def test_a_2x2_read_with_the_calibration_gets_the_calibrated_letters(shared_data):
    frames = photos(shared_data, PHOTOS_2X2)
    # the same cube named in another colour scheme (a turn of the whole cube about U-D):
    # the uncalibrated resolver cannot know it, the calibration says it
    renamed = CUBE_2X2.translate(str.maketrans("RFLB", "FLBR"))
    validate(renamed, 2)
    assert scan_folder(shared_data / "vision" / "photos" / PHOTOS_2X2).resolution.facelets \
        == CUBE_2X2
    read = read_cube(frames, calibrate(frames, cube=renamed))
    assert read.scan.resolution.facelets == renamed


def test_calibrating_a_scrambled_cube_as_solved_names_the_stickers_that_disagree(shared_data):
    with pytest.raises(CalibrationError) as info:
        calibrate(photos(shared_data, PHOTOS_3X3))  # the photos are not of a solved cube
    assert "do not look like the rest of their colour" in str(info.value)
    assert "U2" in str(info.value)


def _shifted(frame: np.ndarray, dx: int) -> np.ndarray:
    return np.roll(frame, dx, axis=1)


def test_frames_that_no_longer_match_the_calibration_are_reported(shared_data):
    frames = photos(shared_data, PHOTOS_3X3)
    calibration = calibrate(frames, cube=CUBE_3X3)
    same = detect(frames["F"], 3)
    assert check_reading(calibration, "F", same) == []
    moved = detect(_shifted(frames["F"], 400), 3)  # about two sticker widths
    problems = check_reading(calibration, "F", moved)
    assert len(problems) == 1 and "sticker widths from its calibrated place" in problems[0]
    darker = detect((frames["F"] * 0.55).astype(np.uint8), 3)
    problems = check_reading(calibration, "F", darker)
    assert len(problems) == 1 and "the light or the camera's exposure changed" in problems[0]
    message = calibration_mismatch(calibration, "scan-1", "F", darker)
    assert message["code"] == "calibration" and message["detail"]["faces"] == "F"
    assert "vision calibrate" in message["action"]
    assert calibration_mismatch(calibration, "scan-1", "F", same) is None


def test_calibrate_and_scan_from_the_command_line(shared_data, tmp_path, capsys):
    folder = shared_data / "vision" / "photos" / PHOTOS_3X3
    out = tmp_path / "cal.json"
    assert main(["vision", "calibrate", "--camera", str(folder), "--cube", CUBE_3X3,
                 "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert printed.out.count("9 stickers around") == 6
    assert f"wrote {out}" in printed.err
    assert json.loads(out.read_text())["format"] == "robocell-vision-calibration"
    assert main(["vision", "scan", str(folder), "--calibration", str(out)]) == 0
    assert capsys.readouterr().out.strip() == CUBE_3X3


def test_a_solved_cube_from_the_sim_camera_calibrates_and_reads_a_scramble(tmp_path, capsys):
    out = tmp_path / "sim.json"
    assert main(["vision", "calibrate", "--camera", "sim", "--size", "2", "--out",
                 str(out)]) == 0
    assert "2x2x2 cube, solved" in capsys.readouterr().out
    scrambled = apply_to_facelets(solved(2), "R U' F2 R' U", 2)
    assert main(["vision", "render", scrambled, "--out", str(tmp_path / "frames"),
                 "--clean"]) == 0
    capsys.readouterr()
    assert main(["vision", "scan", str(tmp_path / "frames"), "--calibration", str(out)]) == 0
    assert capsys.readouterr().out.strip() == scrambled  # letters exact, not just grouping


@pytest.mark.parametrize("content, needle", [
    (None, "no such calibration file; make one with `robocell vision calibrate"),
    ("{", "not a calibration file"),
    ('{"format": "other"}', "not a robocell vision calibration"),
    ('{"format": "robocell-vision-calibration", "version": 1, "size": 3}',
     "damaged calibration"),
])
def test_a_bad_calibration_file_is_refused_clearly(tmp_path, content, needle):
    path = tmp_path / "cal.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(CalibrationError) as info:
        load(path)
    assert needle in str(info.value)


@pytest.mark.parametrize("by", ["option", "environment"])
def test_vision_serve_refuses_a_bad_calibration_before_starting(tmp_path, by):
    missing = str(tmp_path / "missing.json")
    env = dict(os.environ, ROBOCELL_VISION_CALIBRATION=missing)
    args = ["--calibration", missing] if by == "option" else []
    done = subprocess.run([sys.executable, "-m", "robocell", "vision", "serve", "--camera",
                           "sim", *args], capture_output=True, text=True, timeout=120,
                          env=env if by == "environment" else None)
    assert done.returncode == 2
    assert "missing.json: no such calibration file" in done.stderr


def _video_of_a_solved_cube(path: Path) -> None:
    """A video file whose six frames show the solved 2x2 face by face (U R F D L B)."""
    import cv2

    from robocell.services.vision.sources import SimSource

    source = SimSource(facelets=solved(2))
    frames = [source.capture(face, 0) for face in FACES]
    height, width = frames[0].shape[:2]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 5, (width, height))
    assert writer.isOpened()
    for frame in frames:
        writer.write(frame)
    writer.release()


def test_a_live_camera_is_calibrated_one_face_at_a_time(tmp_path):
    video = tmp_path / "camera.avi"
    _video_of_a_solved_cube(video)
    out = tmp_path / "cal.json"
    command = [sys.executable, "-m", "robocell", "vision", "calibrate", "--camera", str(video),
               "--size", "2", "--out", str(out)]
    done = subprocess.run(command, input="\n" * 6, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("then press Enter") == 6
    assert load(out).size == 2
    closed = subprocess.run(command, input="\n", capture_output=True, text=True, timeout=120)
    assert closed.returncode == 2
    assert "stdin closed before face R was shown" in closed.stderr
