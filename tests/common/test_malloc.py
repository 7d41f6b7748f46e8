"""The heap setting for frame work takes effect (glibc) and leaves results unchanged."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from robocell.common.malloc import keep_frame_buffers


def test_frame_buffers_are_kept_in_the_heap():
    # in a fresh interpreter, as a reader process starts
    code = ("from robocell.common.malloc import keep_frame_buffers; import sys; "
            "sys.exit(0 if keep_frame_buffers() else 3)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    if sys.platform.startswith("linux"):
        assert result.returncode == 0, result.stderr
    else:
        assert result.returncode == 3


def test_a_render_is_the_same_with_kept_buffers():
    from robocell.common.cube import random_facelets
    from robocell.services.vision.simcam import render_face

    facelets = random_facelets(3, 4)
    before = render_face(facelets, "F", 1, 11)
    keep_frame_buffers()
    assert np.array_equal(render_face(facelets, "F", 1, 11), before)


def test_startup_objects_are_frozen_out_of_the_collectors_sight():
    code = ("import gc, json; from robocell.common.malloc import freeze_startup_objects; "
            "junk = [[i] for i in range(50_000)]; before = gc.get_freeze_count(); "
            "freeze_startup_objects(); print(before, gc.get_freeze_count())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    before, after = (int(v) for v in result.stdout.split())
    assert before == 0 and after >= 50_000
