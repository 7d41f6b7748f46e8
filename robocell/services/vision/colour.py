"""Sticker colours: robust sampling of a sticker region, and the spaces colours are compared in:
CIE L*a*b* for distances a person would judge (calibration), log-RGB for the resolver."""

from __future__ import annotations

import numpy as np

TRIM_FRACTION = 0.2
"""Fraction of the darkest and of the brightest pixels dropped before averaging a sticker."""

LOG_SCALE = 100.0
"""Log-RGB features are in hundredths of a natural log unit: 1 is a 1 % change of a channel."""

DARK_OFFSET = 4.0
"""Added to each 8-bit channel before its logarithm: a black level, so that a dark channel's
log stays finite and its noise bounded."""

SENSOR_NOISE = 2.0
"""Noise of one measured channel of a sticker's colour (std, 8-bit units): sensor noise and
rounding. Relative to the channel's level it is large for a dark channel and small for a
bright one, which is what the per-sticker variance of `log_rgb` says."""


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


SATURATED = 245
"""A pixel with a channel at or above this may be cut off by the sensor (webcams saturate
one channel at 247 and another at 252), in a frame whose bright parts reach the top of the
8-bit range."""

TOP_PERCENTILE = 99.0
"""The top of a frame's sticker pixels: this percentile of their brightest channel (above
it, single glints and sharpening overshoot)."""

FULL_RANGE = 255.0

TINT_FLOOR = 0.2
"""Pixels darker than this fraction of the sticker's own level are the black plastic around
it, not the sticker."""

MIN_TINT_PIXELS = 8


def saturation_level(pixels: np.ndarray) -> float:
    """Where the sensor saturated in a frame, from its stickers' pixels (k x 3): `SATURATED`
    when their top reaches the end of the 8-bit range (as any clipped frame's does), lower in
    proportion when the frame was scaled down after the camera clipped it (a digital gain
    after the sensor; a dimmed copy). Then a clipped sticker's middle, white and yellow
    alike [124, 126, 125] after halving [247, 252, 250], sits at the frame's top, below
    `SATURATED`, and is still no more than the sensor's limit. Never above `SATURATED`."""
    brightest = np.asarray(pixels, dtype=np.float64).reshape(-1, 3).max(axis=1)
    top = float(np.percentile(brightest, TOP_PERCENTILE))
    return min(float(SATURATED), SATURATED / FULL_RANGE * top)


def unsaturated_colour(pixels: np.ndarray, level: float, saturated: float = SATURATED
                       ) -> np.ndarray:
    """A sticker's tint: the mean colour of its pixels (k x 3, a window a little larger than
    the sticker) whose brightest channel is below ``saturated`` (`saturation_level` of its
    frame) and at least `TINT_FLOOR` x ``level`` (the sticker's brightest channel). Where the
    middle of a bright sticker is cut off (yellow and white both read [247, 252, 250]), its
    rim, a little less lit, still shows its hue; elsewhere it is the colour of the whole
    sticker. NaN when fewer than `MIN_TINT_PIXELS` pixels qualify."""
    pixels = np.asarray(pixels, dtype=np.float64).reshape(-1, 3)
    brightest = pixels.max(axis=1)
    kept = pixels[(brightest < saturated) & (brightest >= TINT_FLOOR * level)]
    if len(kept) < MIN_TINT_PIXELS:
        return np.full(3, np.nan)
    return kept.mean(axis=0)


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


def log_rgb(rgb: np.ndarray, gain: np.ndarray | float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The space in which the resolver compares sticker colours: each channel's logarithm.

    A change of light or exposure multiplies the channels, so it only shifts a colour here,
    the same for every sticker it lights; and a dark red and a dark orange differ here by
    the ratio of their green channels, as much as a bright pair does. Returns the features
    (n x 3, `LOG_SCALE` units) and, per sticker and channel, the variance that the camera's
    noise alone gives them (``gain``: the factor the colours were already corrected by,
    which scaled their noise too).
    """
    rgb = np.asarray(rgb, dtype=np.float64)
    level = rgb + DARK_OFFSET
    features = LOG_SCALE * np.log(level / 255.0)
    gain = np.asarray(gain, dtype=np.float64)
    if gain.ndim:
        gain = gain[:, None]
    noise = (LOG_SCALE * SENSOR_NOISE * gain / level) ** 2
    return features, noise
