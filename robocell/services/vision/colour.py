"""Sticker colours: robust sampling of a sticker region, and the space colours are compared in."""

from __future__ import annotations

import numpy as np

TRIM_FRACTION = 0.2
"""Fraction of the darkest and of the brightest pixels dropped before averaging a sticker."""

LIGHTNESS_WEIGHT = 0.5
"""Weight of lightness against the two chroma axes: lighting changes lightness far more than hue."""


def trimmed_mean(pixels: np.ndarray, trim: float = TRIM_FRACTION) -> np.ndarray:
    """Mean colour of ``pixels`` (k x 3) after dropping the darkest and brightest ``trim``
    fraction (ranked by channel sum), which removes glare, shadows and sticker borders."""
    pixels = np.asarray(pixels, dtype=np.float64).reshape(-1, 3)
    if len(pixels) == 0:
        raise ValueError("no pixels to sample")
    order = np.argsort(pixels.sum(axis=1), kind="stable")
    drop = int(len(pixels) * trim)
    kept = order[drop:len(order) - drop] if len(order) > 2 * drop else order
    return pixels[kept].mean(axis=0)


def rgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    """CIE L*a*b* (D65) of 8-bit sRGB colours, shape (..., 3) -> (..., 3) float."""
    rgb = np.asarray(rgb, dtype=np.float64) / 255.0
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = linear @ np.array([[0.4124, 0.2126, 0.0193],
                             [0.3576, 0.7152, 0.1192],
                             [0.1805, 0.0722, 0.9505]])
    xyz /= np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16.0 / 116.0)
    lightness = 116.0 * f[..., 1] - 16.0
    a = 500.0 * (f[..., 0] - f[..., 1])
    b = 200.0 * (f[..., 1] - f[..., 2])
    return np.stack([lightness, a, b], axis=-1)


def colour_features(rgb: np.ndarray) -> np.ndarray:
    """The space in which sticker colours are clustered: L*a*b* with lightness down-weighted."""
    lab = rgb_to_lab(rgb)
    lab[..., 0] *= LIGHTNESS_WEIGHT
    return lab
