"""The sim camera: renders the face of a cube state that is in view, as a webcam would see it.

`render_face` is a pure function of (facelets, face in view, in-view rotation, seed,
conditions) -> an 8-bit BGR frame, so the digital twin can drive it. Everything random (pose,
lighting, palette jitter, clutter, glare, noise) is drawn from ``seed`` within the ranges of
`Conditions`. Sticker colours come from a measured palette (mean colours of real stickers in
real webcam scans), never pure primaries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import cv2
import numpy as np
from numba import njit

from robocell.common.facelets import FACES

PALETTES: dict[str, dict[str, tuple[int, int, int]]] = {
    # Mean RGB of each sticker colour in two real webcam colour scans of a 3x3 (dim light:
    # red and orange are close, yellow is dark).
    "webcam-dim": {
        "white": (222, 230, 225), "yellow": (134, 104, 31), "red": (115, 27, 20),
        "orange": (153, 43, 23), "green": (22, 83, 47), "blue": (22, 41, 67),
    },
    # Mean RGB of unsaturated stickers in real 1920x1080 robot photos of a 2x2 (bright).
    "webcam-bright": {
        "white": (226, 232, 236), "yellow": (214, 205, 120), "red": (200, 14, 40),
        "orange": (222, 120, 92), "green": (23, 134, 168), "blue": (30, 140, 250),
    },
}

SCHEMES: dict[str, dict[str, str]] = {
    "western": {"U": "white", "R": "red", "F": "green", "D": "yellow", "L": "orange",
                "B": "blue"},
    "japanese": {"U": "white", "R": "red", "F": "green", "D": "blue", "L": "orange",
                 "B": "yellow"},
}

BODY_RGB = (16, 16, 18)
TEXTURE_PITCH = 64
"""Pixels per sticker pitch in the face texture before it is projected into the frame."""

STICKER_FRACTION = 0.88
CORNER_RADIUS_FRACTION = 0.14
BODY_MARGIN_FRACTION = 0.06
"""Sticker side, sticker corner radius and the black rim around the grid, in pitches."""


@dataclass(frozen=True)
class Conditions:
    """Ranges the seed draws from (each ``(low, high)``), plus fixed settings."""

    width: int = 640
    height: int = 480
    palettes: tuple[str, ...] = ("webcam-dim", "webcam-bright")
    scheme: str = "western"
    face_height: tuple[float, float] = (0.45, 0.8)
    """Side of the face as a fraction of the frame height."""
    offset: tuple[float, float] = (-0.12, 0.12)
    """Shift of the face centre from the frame centre, fraction of the frame height."""
    roll_deg: tuple[float, float] = (-15.0, 15.0)
    tilt_deg: tuple[float, float] = (-12.0, 12.0)
    exposure: tuple[float, float] = (0.8, 1.25)
    white_balance: tuple[float, float] = (-0.1, 0.1)
    """Per-channel gain deviation of the camera's white balance."""
    white_balance_centre: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Per-channel gain deviation that every frame shares (see `scene`)."""
    light_gradient: tuple[float, float] = (0.0, 0.25)
    """Brightness fall-off across the face."""
    palette_jitter: float = 4.0
    """Per-sticker colour deviation (std, 8-bit units) of the print."""
    glare_spots: tuple[int, int] = (0, 2)
    glare_strength: tuple[float, float] = (0.25, 0.7)
    glare_size: tuple[float, float] = (0.04, 0.1)
    """Glare spot radius (std of a Gaussian) in pitches."""
    noise_sigma: tuple[float, float] = (1.0, 5.0)
    blur_sigma: tuple[float, float] = (0.0, 1.2)
    clutter_shapes: tuple[int, int] = (10, 40)

    def __post_init__(self) -> None:
        unknown = [p for p in self.palettes if p not in PALETTES]
        if unknown or not self.palettes:
            raise ValueError(f"unknown palette(s) {unknown}; choose from {sorted(PALETTES)}")
        if self.scheme not in SCHEMES:
            raise ValueError(f"unknown colour scheme {self.scheme!r}; choose from "
                             f"{sorted(SCHEMES)}")
        if self.width < 64 or self.height < 64:
            raise ValueError(f"frame {self.width}x{self.height} is too small (min 64x64)")


FRAME_EXPOSURE_JITTER = 0.08
FRAME_WHITE_BALANCE_JITTER = 0.03
"""How much exposure and white balance change between the frames of one scan (auto exposure,
faces turned differently to the light), relative to the scene's values."""


def scene(conditions: Conditions, seed: int) -> Conditions:
    """The lighting of one scan: palette, exposure and white balance drawn once from
    ``conditions``; the frames of the scan then vary only a little around them."""
    rng = np.random.default_rng([seed, 7])
    palette = conditions.palettes[int(rng.integers(len(conditions.palettes)))]
    exposure = _draw(rng, conditions.exposure)
    centre = tuple(float(c) for c in rng.uniform(*conditions.white_balance, 3))
    return replace(conditions, palettes=(palette,),
                   exposure=(exposure * (1 - FRAME_EXPOSURE_JITTER),
                             exposure * (1 + FRAME_EXPOSURE_JITTER)),
                   white_balance=(-FRAME_WHITE_BALANCE_JITTER, FRAME_WHITE_BALANCE_JITTER),
                   white_balance_centre=centre)


CLEAN = Conditions(
    palettes=("webcam-bright",), roll_deg=(0.0, 0.0), tilt_deg=(0.0, 0.0),
    exposure=(1.0, 1.0), white_balance=(0.0, 0.0), light_gradient=(0.0, 0.0),
    palette_jitter=0.0, glare_spots=(0, 0), noise_sigma=(0.0, 0.0), blur_sigma=(0.0, 0.0),
    clutter_shapes=(0, 0), offset=(0.0, 0.0), face_height=(0.6, 0.6),
)
"""No randomness beyond the state: for tests that need exact, easy frames."""


def _face_texture(stickers_rgb: np.ndarray, size: int) -> np.ndarray:
    """Float RGB image of the face in net orientation: black body, rounded stickers."""
    margin = BODY_MARGIN_FRACTION * TEXTURE_PITCH
    side = int(round(size * TEXTURE_PITCH + 2 * margin))
    texture = np.empty((side, side, 3), np.float32)
    texture[:] = BODY_RGB
    half = 0.5 * STICKER_FRACTION * TEXTURE_PITCH
    radius = int(round(CORNER_RADIUS_FRACTION * TEXTURE_PITCH))
    for index, rgb in enumerate(stickers_rgb):
        row, col = divmod(index, size)
        cx = margin + (col + 0.5) * TEXTURE_PITCH
        cy = margin + (row + 0.5) * TEXTURE_PITCH
        x0, y0 = int(round(cx - half)), int(round(cy - half))
        x1, y1 = int(round(cx + half)), int(round(cy + half))
        colour = tuple(float(c) for c in rgb)
        cv2.rectangle(texture, (x0 + radius, y0), (x1 - radius, y1), colour, -1)
        cv2.rectangle(texture, (x0, y0 + radius), (x1, y1 - radius), colour, -1)
        for corner in ((x0 + radius, y0 + radius), (x1 - radius, y0 + radius),
                       (x0 + radius, y1 - radius), (x1 - radius, y1 - radius)):
            cv2.circle(texture, corner, radius, colour, -1, lineType=cv2.LINE_AA)
    return texture


def _clutter(rng: np.random.Generator, conditions: Conditions) -> np.ndarray:
    """A busy background: a lit gradient plus random bars, blocks, discs and lines."""
    h, w = conditions.height, conditions.width
    base = rng.uniform(40, 200, 3).astype(np.float32)
    tilt_x, tilt_y = (float(t) for t in rng.uniform(-0.4, 0.4, 2))
    image = _shaded_background(h, w, tilt_x, tilt_y, base)
    n_shapes = int(rng.integers(conditions.clutter_shapes[0], conditions.clutter_shapes[1] + 1))
    for _ in range(n_shapes):
        colour = tuple(float(c) for c in rng.uniform(0, 255, 3))
        kind = rng.integers(4)
        x, y = int(rng.integers(0, w)), int(rng.integers(0, h))
        extent = int(rng.uniform(0.03, 0.3) * h)
        if kind == 0:
            cv2.rectangle(image, (x, y), (x + extent, y + int(rng.uniform(0.1, 1.5) * extent)),
                          colour, -1)
        elif kind == 1:
            cv2.circle(image, (x, y), max(2, extent // 2), colour, -1)
        elif kind == 2:
            angle = rng.uniform(0, math.pi)
            end = (int(x + extent * 2 * math.cos(angle)), int(y + extent * 2 * math.sin(angle)))
            cv2.line(image, (x, y), end, colour, int(rng.integers(2, 12)))
        else:
            # A row of holes, like a robot's beams.
            for k in range(int(rng.integers(3, 9))):
                cv2.circle(image, (x + k * extent // 3, y), max(2, extent // 8), colour, -1)
    return image


@njit(cache=True, nogil=True)
def _shaded_background(h: int, w: int, tilt_x: float, tilt_y: float,
                       base: np.ndarray) -> np.ndarray:
    """Float RGB image lit across by a linear gradient: base * (1 + tilt . position)."""
    image = np.empty((h, w, 3), np.float32)
    for y in range(h):
        row = 1.0 + tilt_y * (y / h - 0.5)
        for x in range(w):
            shade = np.float32(row + tilt_x * (x / w - 0.5))
            for c in range(3):
                image[y, x, c] = shade * base[c]
    return image


@njit(cache=True, nogil=True)
def _composite_and_light(frame: np.ndarray, warped: np.ndarray, coverage: np.ndarray,
                         centre_x: float, centre_y: float, cos_d: float, sin_d: float,
                         gradient_strength: float, side_px: float, gains: np.ndarray) -> None:
    """In place, one pass: the face over the background (by coverage), then the light
    gradient along direction (cos_d, sin_d) across the face and the colour gains."""
    h, w = coverage.shape
    for y in range(h):
        for x in range(w):
            along = (x - centre_x) * cos_d + (y - centre_y) * sin_d
            light = np.float32(1.0 - gradient_strength * (along / side_px + 0.5))
            cover = coverage[y, x]
            for c in range(3):
                value = frame[y, x, c] + cover * (warped[y, x, c] - frame[y, x, c])
                frame[y, x, c] = value * (light * gains[c])


@njit(cache=True, nogil=True)
def _to_bgr8(frame: np.ndarray, noise: np.ndarray, noise_sigma: float) -> np.ndarray:
    """RGB float frame plus scaled noise -> 8-bit BGR, rounded and clipped, in one pass."""
    h, w = frame.shape[0], frame.shape[1]
    out = np.empty((h, w, 3), np.uint8)
    for y in range(h):
        for x in range(w):
            for c in range(3):
                value = frame[y, x, c] + noise_sigma * noise[y, x, c] + 0.5
                out[y, x, 2 - c] = 0 if value < 0.0 else (255 if value >= 255.0 else
                                                          np.uint8(value))
    return out


NOISE_TILE = 1024


@lru_cache(maxsize=1)
def _noise_tile() -> np.ndarray:
    """Unit Gaussian sensor noise, drawn once (fixed seed); frames take shifted, flipped
    crops of it, which is far cheaper than fresh noise and just as good for detection."""
    return np.random.default_rng(0).standard_normal((NOISE_TILE, NOISE_TILE, 3),
                                                    dtype=np.float32)


def _noise_patch(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    tile = _noise_tile()
    if h > NOISE_TILE or w > NOISE_TILE:
        tile = np.pad(tile, ((0, max(0, h - NOISE_TILE)), (0, max(0, w - NOISE_TILE)), (0, 0)),
                      mode="wrap")
    y = int(rng.integers(0, tile.shape[0] - h + 1))
    x = int(rng.integers(0, tile.shape[1] - w + 1))
    patch = tile[y:y + h, x:x + w]
    if rng.integers(2):
        patch = patch[::-1]
    if rng.integers(2):
        patch = patch[:, ::-1]
    return patch


def _draw(rng: np.random.Generator, bounds: tuple[float, float]) -> float:
    return float(rng.uniform(bounds[0], bounds[1]))


def render_face(facelets: str, face: str, rotation: int = 0, seed: int = 0,
                conditions: Conditions | None = None) -> np.ndarray:
    """Render face ``face`` of the cube ``facelets`` (URFDLB facelet string, 2x2 or 3x3)
    turned ``rotation`` clockwise quarter turns in view, as an 8-bit BGR frame."""
    conditions = conditions or Conditions()
    n_stickers = len(facelets)
    size = {24: 2, 54: 3}.get(n_stickers)
    if size is None:
        raise ValueError(f"facelet string of length {n_stickers} is neither 2x2 nor 3x3")
    if face not in FACES:
        raise ValueError(f"face {face!r} is not one of {FACES}")
    bad = sorted(set(facelets) - set(FACES))
    if bad:
        raise ValueError(f"facelet string has letters {bad} outside {FACES}")
    rng = np.random.default_rng(seed)
    area = size * size
    start = FACES.index(face) * area
    palette = PALETTES[conditions.palettes[int(rng.integers(len(conditions.palettes)))]]
    scheme = SCHEMES[conditions.scheme]
    stickers = np.array([palette[scheme[letter]] for letter in facelets[start:start + area]],
                        dtype=np.float32)
    stickers += rng.normal(0.0, conditions.palette_jitter, stickers.shape).astype(np.float32)
    texture = np.rot90(_face_texture(stickers, size), k=-(rotation % 4)).copy()

    # Pose: project the face square through a pinhole camera after tilt and roll.
    h, w = conditions.height, conditions.width
    side_px = _draw(rng, conditions.face_height) * h
    centre = np.array([w / 2 + _draw(rng, conditions.offset) * h,
                       h / 2 + _draw(rng, conditions.offset) * h])
    roll = math.radians(_draw(rng, conditions.roll_deg))
    tilt_x = math.radians(_draw(rng, conditions.tilt_deg))
    tilt_y = math.radians(_draw(rng, conditions.tilt_deg))
    focal = 1.2 * w
    distance = focal  # face of unit side at this distance appears side_px wide
    square = np.array([[-0.5, -0.5, 0], [0.5, -0.5, 0], [0.5, 0.5, 0], [-0.5, 0.5, 0]]) * side_px
    rx = np.array([[1, 0, 0], [0, math.cos(tilt_x), -math.sin(tilt_x)],
                   [0, math.sin(tilt_x), math.cos(tilt_x)]])
    ry = np.array([[math.cos(tilt_y), 0, math.sin(tilt_y)], [0, 1, 0],
                   [-math.sin(tilt_y), 0, math.cos(tilt_y)]])
    rz = np.array([[math.cos(roll), -math.sin(roll), 0], [math.sin(roll), math.cos(roll), 0],
                   [0, 0, 1]])
    world = square @ (rz @ ry @ rx).T
    depth = distance + world[:, 2]
    projected = centre + focal * world[:, :2] / depth[:, None]
    tex_side = texture.shape[0]
    tex_corners = np.array([[0, 0], [tex_side, 0], [tex_side, tex_side], [0, tex_side]],
                           dtype=np.float32)
    homography = cv2.getPerspectiveTransform(tex_corners, projected.astype(np.float32))
    warped = cv2.warpPerspective(texture, homography, (w, h), flags=cv2.INTER_LINEAR)
    coverage = cv2.warpPerspective(np.ones((tex_side, tex_side), np.float32), homography,
                                   (w, h), flags=cv2.INTER_LINEAR)
    frame = _clutter(rng, conditions)

    # Light: exposure, white balance, a gradient across the face, glare spots.
    xs = np.arange(w, dtype=np.float32)[None, :]
    ys = np.arange(h, dtype=np.float32)[:, None]
    direction = float(rng.uniform(0, 2 * math.pi))
    gradient_strength = _draw(rng, conditions.light_gradient)
    gains = (_draw(rng, conditions.exposure) * (
        1.0 + np.array(conditions.white_balance_centre)
        + rng.uniform(*conditions.white_balance, 3))).astype(np.float32)
    _composite_and_light(frame, warped, coverage, float(centre[0]), float(centre[1]),
                         math.cos(direction), math.sin(direction), gradient_strength,
                         float(side_px), gains)
    pitch_px = side_px / (size + 2 * BODY_MARGIN_FRACTION)
    n_glare = int(rng.integers(conditions.glare_spots[0], conditions.glare_spots[1] + 1))
    for _ in range(n_glare):
        # A spot somewhere on the face (in texture coordinates), mapped into the frame.
        spot_tex = rng.uniform(0.1, 0.9, 2) * tex_side
        spot = cv2.perspectiveTransform(spot_tex.reshape(1, 1, 2).astype(np.float32),
                                        homography)[0, 0]
        sigma = _draw(rng, conditions.glare_size) * pitch_px
        strength = _draw(rng, conditions.glare_strength) * 255.0
        # Separable Gaussian, evaluated only within 4 sigma of the spot.
        x0, x1 = max(0, int(spot[0] - 4 * sigma)), min(w, int(spot[0] + 4 * sigma) + 1)
        y0, y1 = max(0, int(spot[1] - 4 * sigma)), min(h, int(spot[1] + 4 * sigma) + 1)
        if x0 >= x1 or y0 >= y1:
            continue
        gx = np.exp(-((xs[:, x0:x1] - spot[0]) ** 2) / (2 * sigma * sigma))
        gy = np.exp(-((ys[y0:y1] - spot[1]) ** 2) / (2 * sigma * sigma))
        frame[y0:y1, x0:x1] += (strength * gy * gx)[..., None]
    blur = _draw(rng, conditions.blur_sigma)
    if blur > 0.05:
        frame = cv2.GaussianBlur(frame, (0, 0), blur)
    noise = _draw(rng, conditions.noise_sigma)
    patch = _noise_patch(rng, h, w) if noise > 0 else np.zeros((1, 1, 3), np.float32)
    if noise <= 0:
        patch = np.broadcast_to(patch, frame.shape)
    return _to_bgr8(frame, patch, float(max(noise, 0.0)))


def capture_poses(facelets: str, poses: tuple[tuple[str, int], ...], seed: int = 0,
                  conditions: Conditions | None = None) -> dict[str, np.ndarray]:
    """One rendered frame per scan pose (face, clockwise quarter turns in view) under one
    scene's lighting (`scene`); the frame of pose ``k`` uses seed ``seed * 16 + k``."""
    lighting = scene(conditions or Conditions(), seed)
    return {face: render_face(facelets, face, rotation, seed * 16 + k, lighting)
            for k, (face, rotation) in enumerate(poses)}
