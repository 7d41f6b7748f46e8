"""Sticker colours: where a frame's sensor saturated, and the hue of a sticker's unsaturated
pixels."""

from __future__ import annotations

import numpy as np

from robocell.services.vision.colour import SATURATED, saturation_level, unsaturated_colour


def clipped_yellow(rng: np.random.Generator) -> np.ndarray:
    """A bright yellow sticker whose middle the camera clipped to a near-white (the 3x3 photo
    set's [247, 252, 250]) and whose dimmer rim keeps its hue, RGB."""
    middle = np.array([247.0, 252.0, 250.0]) + rng.normal(0.0, 1.0, (300, 3))
    rim = np.array([200.0, 215.0, 180.0]) * rng.uniform(0.4, 1.0, (60, 1))
    return np.clip(np.concatenate([middle, rim]), 0, 255).round()


def test_a_frame_reaching_the_top_of_the_range_saturates_where_it_always_did():
    rng = np.random.default_rng(0)
    pixels = clipped_yellow(rng)
    pixels[:20] = 255.0
    assert saturation_level(pixels) == SATURATED


def test_a_frame_dimmed_after_clipping_saturates_at_its_own_top():
    rng = np.random.default_rng(1)
    bright = clipped_yellow(rng)
    bright[:20] = 255.0
    dimmed = (0.5 * bright).round()
    level = saturation_level(dimmed)
    assert 0.5 * SATURATED - 2 <= level <= 0.5 * SATURATED + 2
    tint = unsaturated_colour(dimmed, float(dimmed.max()), level)
    assert tint[2] < tint[1] - 10, tint  # the rim's yellow, not the clipped middle's white
    plain = unsaturated_colour(dimmed, float(dimmed.max()))
    assert abs(plain[2] - plain[1]) < abs(tint[2] - tint[1])


def test_an_unclipped_sticker_keeps_its_hue():
    rng = np.random.default_rng(2)
    red = np.array([150.0, 20.0, 30.0]) * rng.uniform(0.6, 1.0, (400, 1))
    tint = unsaturated_colour(red, float(red.max()), saturation_level(red))
    assert np.allclose(tint / tint[0], [1.0, 20 / 150, 30 / 150], atol=0.01)
