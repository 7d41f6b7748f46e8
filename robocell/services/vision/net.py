"""A cube's measured sticker colours drawn as an unfolded net, the doubtful stickers marked.

The picture a person needs when a reading is refused: every sticker in the colour the camera
measured, where it sits on the cube (U on top; L F R B in a row; D below), with the stickers
the resolver doubts outlined in magenta and, when a cube was read, the face letter it gave
each sticker.
"""

from __future__ import annotations

import cv2
import numpy as np

from robocell.common.facelets import FACES
from robocell.services.vision.detect import DOUBTFUL_BGR

NET_PLACES = {"U": (1, 0), "L": (0, 1), "F": (1, 1), "R": (2, 1), "B": (3, 1), "D": (1, 2)}
"""(column, row) of each face in the net, in face widths."""

FACE_PX = 150
"""Width of one face in the picture, whatever the cube size."""
GAP_PX = 12
MARGIN_PX = 16
TITLE_PX = 28
LEGEND_PX = 24

BACKGROUND = (40, 40, 40)
OUTLINE = (0, 0, 0)
DOUBTFUL = DOUBTFUL_BGR
MISSING = (128, 128, 128)


def _text(image: np.ndarray, text: str, origin: tuple[int, int], scale: float,
          colour: tuple[int, int, int], thickness: int = 1) -> None:
    cv2.putText(image, text, origin, cv2.FONT_HERSHEY_SIMPLEX, scale, colour, thickness,
                cv2.LINE_AA)


def _ink(rgb: np.ndarray) -> tuple[int, int, int]:
    """Black or white, whichever reads on a sticker of colour ``rgb``."""
    return (0, 0, 0) if float(np.dot(rgb, (0.299, 0.587, 0.114))) > 128 else (255, 255, 255)


def draw_net(colours: np.ndarray, size: int, doubtful: tuple[int, ...] = (),
             letters: str | None = None, title: str = "") -> np.ndarray:
    """BGR picture of ``colours`` (6·N² x 3 RGB, facelet order U R F D L B, row-major per
    face; NaN rows drawn grey) as a net. ``doubtful``: facelet indices to outline;
    ``letters``: the facelet string read, written on the stickers."""
    colours = np.asarray(colours, dtype=np.float64)
    area = size * size
    if colours.shape != (len(FACES) * area, 3):
        raise ValueError(f"expected {len(FACES) * area} RGB colours for a {size}x{size}, "
                         f"got shape {colours.shape}")
    cell = FACE_PX // size
    face_px = cell * size
    width = 2 * MARGIN_PX + 4 * face_px + 3 * GAP_PX
    height = TITLE_PX + 2 * MARGIN_PX + 3 * face_px + 2 * GAP_PX + LEGEND_PX
    image = np.full((height, width, 3), BACKGROUND, dtype=np.uint8)
    marked = set(int(i) for i in doubtful)
    _text(image, title, (MARGIN_PX, TITLE_PX - 8), 0.55, (255, 255, 255))
    for f, face in enumerate(FACES):
        column, row = NET_PLACES[face]
        left = MARGIN_PX + column * (face_px + GAP_PX)
        top = TITLE_PX + MARGIN_PX + row * (face_px + GAP_PX)
        for k in range(area):
            index = f * area + k
            x0, y0 = left + (k % size) * cell, top + (k // size) * cell
            rgb = colours[index]
            fill = MISSING if not np.all(np.isfinite(rgb)) else tuple(
                int(round(c)) for c in np.clip(rgb[::-1], 0, 255))
            cv2.rectangle(image, (x0, y0), (x0 + cell - 1, y0 + cell - 1), fill, -1)
            cv2.rectangle(image, (x0, y0), (x0 + cell - 1, y0 + cell - 1), OUTLINE, 2)
            ink = _ink(np.asarray(fill[::-1], dtype=np.float64))
            label = f"{face}{k + 1}" + (f" {letters[index]}" if letters else "")
            _text(image, label, (x0 + 4, y0 + 16), 0.4, ink)
            if index in marked:
                cv2.rectangle(image, (x0 + 3, y0 + 3), (x0 + cell - 4, y0 + cell - 4),
                              DOUBTFUL, 4)
        _text(image, face, (left + face_px // 2 - 6, top + face_px + GAP_PX - 1), 0.45,
              (200, 200, 200))
    legend = ("magenta: doubtful stickers, look at them again" if marked else
              "colours as measured" + ("; letters as read" if letters else ""))
    _text(image, legend, (MARGIN_PX, height - 8), 0.45, (220, 220, 220))
    return image
