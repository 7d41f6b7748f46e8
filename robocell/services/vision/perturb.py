"""Perturbed copies of real camera frames: other light, another camera, another pose.

Each perturbation is a pure function of a BGR frame (and a seed, for noise), so a reading can
be checked on real photos under conditions nobody photographed: the exposure halved or
raised until bright stickers clip, the white balance pulled warm or cool, sensor noise, a
heavily compressed JPEG, the cube turned or nearer and farther from the camera.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np

NOISE_SIGMA = 8.0
"""Sensor noise of the `noise` perturbation (std, 8-bit units per channel)."""
JPEG_QUALITY = 30
ROTATION_DEG = 8.0
SCALE_CHANGE = 0.15


@dataclass(frozen=True)
class Perturbation:
    """A named change of the frames of one scan (the same change for all six)."""

    name: str
    apply: Callable[[np.ndarray, int], np.ndarray]
    """(BGR frame, seed) -> perturbed BGR frame."""


def _gains(blue: float, green: float, red: float) -> Callable[[np.ndarray, int], np.ndarray]:
    gains = np.array([blue, green, red], dtype=np.float32)

    def apply(frame: np.ndarray, seed: int) -> np.ndarray:
        del seed
        return np.clip(frame.astype(np.float32) * gains, 0, 255).round().astype(np.uint8)

    return apply


def _noise(frame: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    noisy = frame.astype(np.float32) + rng.normal(0.0, NOISE_SIGMA, frame.shape).astype(np.float32)
    return np.clip(noisy, 0, 255).round().astype(np.uint8)


def _jpeg(frame: np.ndarray, seed: int) -> np.ndarray:
    del seed
    ok, data = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    return cv2.imdecode(data, cv2.IMREAD_COLOR)


def _turned(angle: float, scale: float) -> Callable[[np.ndarray, int], np.ndarray]:
    def apply(frame: np.ndarray, seed: int) -> np.ndarray:
        del seed
        height, width = frame.shape[:2]
        matrix = cv2.getRotationMatrix2D((0.5 * width, 0.5 * height), angle, scale)
        return cv2.warpAffine(frame, matrix, (width, height), flags=cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_REPLICATE)

    return apply


PERTURBATIONS: tuple[Perturbation, ...] = (
    Perturbation("brightness x0.5", _gains(0.5, 0.5, 0.5)),
    Perturbation("brightness x1.6", _gains(1.6, 1.6, 1.6)),
    Perturbation("warm white balance (R x1.2, B x0.8)", _gains(0.8, 1.0, 1.2)),
    Perturbation("cool white balance (R x0.8, B x1.2)", _gains(1.2, 1.0, 0.8)),
    Perturbation(f"noise sigma {NOISE_SIGMA:g}", _noise),
    Perturbation(f"JPEG quality {JPEG_QUALITY}", _jpeg),
    Perturbation(f"rotation {ROTATION_DEG:g} deg", _turned(ROTATION_DEG, 1.0)),
    Perturbation(f"scale +{SCALE_CHANGE:.0%}", _turned(0.0, 1.0 + SCALE_CHANGE)),
    Perturbation(f"scale -{SCALE_CHANGE:.0%}", _turned(0.0, 1.0 - SCALE_CHANGE)),
)
"""The perturbations every real photo set is read under (issue: all read, none wrong)."""


def perturb(frames: dict[str, np.ndarray], perturbation: Perturbation, seed: int = 0
            ) -> dict[str, np.ndarray]:
    """The six frames of a scan under one perturbation (noise seeded per face)."""
    return {face: perturbation.apply(frame, seed + index)
            for index, (face, frame) in enumerate(frames.items())}
