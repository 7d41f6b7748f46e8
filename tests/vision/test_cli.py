"""`robocell vision ...` commands, run through the real command-line entry point."""

from __future__ import annotations

import json
import selectors
import subprocess
import sys

import cv2
import numpy as np
from support.bus import (
    free_base_port,
    robocell_cmd,
    robocell_env,
    stop_process,
    wait_for_broker,
)

from robocell.cli import main
from robocell.common.bus import Endpoints
from robocell.common.cube import random_facelets
from robocell.services.vision.resolve import same_cube


def test_resolve_prints_the_expected_facelets(shared_data, capsys):
    scan = shared_data / "vision" / "scans" / "3x3x3-random-02.json"
    assert main(["vision", "resolve", str(scan)]) == 0
    assert capsys.readouterr().out.strip() == (
        "BBRLULRBFDDUURFBULDULRFRUDRFBDFDLUFBUFFRLDRDLFLLRBBDUB")
    assert main(["vision", "resolve", str(scan), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert len(result["confidence"]) == 54 and set(result["colours"]) == set("URFDLB")


def test_detect_writes_a_debug_image(shared_data, tmp_path, capsys):
    image = shared_data / "vision" / "photos" / "3x3x3-random-01" / "rubiks-side-F.png"
    debug = tmp_path / "debug.png"
    assert main(["vision", "detect", str(image), "--debug", str(debug)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3x3 face") and out.count("confidence") == 9
    assert cv2.imread(str(debug)).shape == (1080, 1920, 3)


def test_scan_of_the_photo_folder(shared_data, capsys):
    folder = shared_data / "vision" / "photos" / "3x3x3-random-01"
    assert main(["vision", "scan", str(folder)]) == 0
    assert len(capsys.readouterr().out.strip()) == 54


def test_render_then_scan_round_trip(tmp_path, capsys):
    state = random_facelets(2, 8)
    assert main(["vision", "render", state, "--out", str(tmp_path), "--seed", "3"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"sim-{face}.png" for face in sorted("URFDLB")]
    capsys.readouterr()
    assert main(["vision", "scan", str(tmp_path), "--size", "2"]) == 0
    assert same_cube(capsys.readouterr().out.strip(), state)


def test_user_errors_exit_2_with_what_to_do(tmp_path, capsys):
    bad = tmp_path / "scan.json"
    bad.write_text(json.dumps({"1": [1, 2, 3]}))
    assert main(["vision", "resolve", str(bad)]) == 2
    assert "a 2x2 scan has 24 and a 3x3 has 54" in capsys.readouterr().err
    assert main(["vision", "scan", str(tmp_path)]) == 2
    assert "no image for face(s) URFDLB" in capsys.readouterr().err
    assert main(["vision", "render", "XYZ", "--out", str(tmp_path)]) == 2
    assert "not a facelet string" in capsys.readouterr().err


def test_a_missing_or_unreadable_image_gets_our_error_only(tmp_path):
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not a png")
    for path, needle in ((tmp_path / "missing.png", "missing.png: no such file"),
                         (broken, "broken.png: cannot read as an image")):
        done = subprocess.run([sys.executable, "-m", "robocell", "vision", "detect", str(path)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2
        assert needle in done.stderr
        assert "WARN" not in done.stderr + done.stdout  # OpenCV's own log lines
        assert done.stderr.count("\n") == 1


def test_a_camera_that_cannot_be_opened_is_named_at_once_and_health_fails():
    base = f"tcp://127.0.0.1:{free_base_port()}"
    env = robocell_env(base)
    broker = subprocess.Popen(robocell_cmd("broker"), env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    vision = None
    try:
        wait_for_broker(Endpoints.from_base(base))
        vision = subprocess.Popen(robocell_cmd("vision", "serve", "--camera", "97",
                                               "--readers", "0"),
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)
        selector = selectors.DefaultSelector()
        selector.register(vision.stderr, selectors.EVENT_READ)
        assert selector.select(30.0), "vision said nothing"
        line = vision.stderr.readline()
        assert "camera 97" in line and "/dev/video97" in line and "retrying" in line
        assert "Traceback" not in line
        health = subprocess.run(robocell_cmd("health", "vision", "--wait", "5"), env=env,
                                capture_output=True, text=True, timeout=60)
        assert health.returncode != 0 and "/dev/video97" in health.stderr
        assert vision.poll() is None, "vision keeps trying"
    finally:
        if vision is not None:
            stop_process(vision)
        stop_process(broker)


def test_detect_refuses_a_size_the_face_in_view_is_not(tmp_path, capsys):
    three, two = tmp_path / "three", tmp_path / "two"
    assert main(["vision", "render", random_facelets(3, 5), "--out", str(three)]) == 0
    assert main(["vision", "render", random_facelets(2, 5), "--out", str(two)]) == 0
    capsys.readouterr()
    assert main(["vision", "detect", str(three / "sim-F.png"), "--size", "2"]) == 2
    err = capsys.readouterr().err
    assert "is a 3x3" in err and "not the 2x2 asked for" in err
    assert main(["vision", "detect", str(two / "sim-F.png"), "--size", "3"]) == 2
    assert "is a 2x2" in capsys.readouterr().err
    assert main(["vision", "detect", str(two / "sim-F.png"), "--size", "2"]) == 0
    assert capsys.readouterr().out.startswith("2x2 face")


def test_what_scan_prints_as_json_resolves_again_to_the_same_cube(tmp_path, capsys):
    state = random_facelets(3, 11)
    assert main(["vision", "render", state, "--out", str(tmp_path), "--seed", "4"]) == 0
    capsys.readouterr()
    assert main(["vision", "scan", str(tmp_path), "--json"]) == 0
    out = capsys.readouterr()
    scanned = json.loads(out.out)
    assert scanned["facelets"] == state and "margin" in out.err
    saved = tmp_path / "scan.json"
    saved.write_text(out.out)
    assert main(["vision", "resolve", str(saved), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["facelets"] == state and again["margin"] == scanned["margin"]


def test_a_refused_scan_still_writes_its_debug_pictures(tmp_path, capsys):
    folder, debug = tmp_path / "frames", tmp_path / "debug"
    assert main(["vision", "render", random_facelets(3, 12), "--out", str(folder)]) == 0
    # The U face shown twice (as U and as F): no valid cube has two faces of one colour.
    (folder / "sim-F.png").write_bytes((folder / "sim-U.png").read_bytes())
    capsys.readouterr()
    assert main(["vision", "scan", str(folder), "--debug", str(debug)]) == 2
    err = capsys.readouterr().err
    assert "rescan" in err and f"wrote debug pictures to {debug}" in err
    names = sorted(p.name for p in debug.iterdir())
    assert names == sorted([f"debug-{face}.png" for face in "URFDLB"] + ["debug-net.png"])
    net = cv2.imread(str(debug / "debug-net.png"))
    assert net is not None and (np.all(net == (255, 0, 255), axis=2)).any()  # doubtful: magenta


def test_a_face_without_a_grid_gets_a_debug_picture_saying_why(tmp_path, capsys):
    folder, debug = tmp_path / "frames", tmp_path / "debug"
    assert main(["vision", "render", random_facelets(2, 13), "--out", str(folder)]) == 0
    cv2.imwrite(str(folder / "sim-D.png"), np.full((480, 640, 3), 90, dtype=np.uint8))
    capsys.readouterr()
    assert main(["vision", "scan", str(folder), "--debug", str(debug)]) == 2
    assert "D:" in capsys.readouterr().err
    blank = cv2.imread(str(debug / "debug-D.png"))
    assert (np.all(blank == (255, 0, 255), axis=2)).any()  # the reason, written in magenta
    assert not (debug / "debug-net.png").exists()  # five faces are no cube to draw


def test_resolve_draws_the_net_refused_or_read(shared_data, tmp_path, capsys):
    scan = shared_data / "vision" / "scans" / "3x3x3-random-02.json"
    read = tmp_path / "read.png"
    assert main(["vision", "resolve", str(scan), "--debug", str(read)]) == 0
    picture = cv2.imread(str(read))
    assert picture is not None and not (np.all(picture == (255, 0, 255), axis=2)).any()
    grey = tmp_path / "grey.json"
    grey.write_text(json.dumps({str(i): [128, 128, 129 + i % 2] for i in range(1, 55)}))
    refused = tmp_path / "refused.png"
    capsys.readouterr()
    assert main(["vision", "resolve", str(grey), "--debug", str(refused)]) == 2
    assert "rescan" in capsys.readouterr().err
    assert (np.all(cv2.imread(str(refused)) == (255, 0, 255), axis=2)).any()


def test_a_scan_file_of_the_wrong_length_is_not_said_to_ask_for_a_size(tmp_path, capsys):
    bad = tmp_path / "seven.json"
    bad.write_text(json.dumps({str(i): [1, 2, 3] for i in range(1, 8)}))
    assert main(["vision", "resolve", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "7 stickers" in err and "asked for size" not in err
