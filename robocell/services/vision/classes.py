"""The colours of one scan: six colour classes learnt from its own stickers, and the light
each face was seen in.

Nothing here is a fixed colour table. Each class is the median and robust spread of the
stickers given to it, in log-RGB (`colour.log_rgb`), where a change of light only shifts a
colour; each face's brightness (with a slope across a 3x3 face) is learnt against the classes
and divided out. `resolve` alternates these fits with the cheapest valid cube.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robocell.services.vision.colour import log_rgb

N_FACES = 6
PRIOR_VARIANCE = 60.0
"""Per-axis variance of a colour class (feature units squared) before any class is measured."""

MIN_VARIANCE = 0.03
"""Floor of the per-axis class variance, so that a perfectly clean scan is not over-confident."""

CLASS_SHRINK = 9.0
"""Weight (in stickers) of the pooled variance in each class's own variance estimate."""

LEVEL_FLOOR = 30.0
"""Sums of R+G+B below this are treated as this when learning face lighting."""

CLIPPED = 250.0
"""A channel at or above this is taken as clipped by the camera."""

N_CHANNELS = 3

CLIP_PRIOR = 0.5
"""Pseudo-counts (of clipped and of unclipped stickers) in each class's clipping rate per
channel: with 9 stickers a class that never clips charges a clipped channel -ln(0.05) = 3."""

LIGHT_ROUNDS = 2
LIGHT_PRIOR = 2.0
SLOPE_PRIOR = 6.0
"""Weights (in stickers) of "no correction" for a face's gain and for its slope per sticker."""

MIN_TINTS = 2
"""Tints each class needs for the tints to count (else they are left out for all)."""

MAD_TO_SIGMA = 1.4826
"""Median absolute deviation -> standard deviation of a normal distribution."""

T_DOF = 4.0
"""Degrees of freedom of the Student-t sticker cost (small: heavy tails)."""


@dataclass(frozen=True)
class Observed:
    """What is known of each sticker, with its face's lighting divided out (n rows)."""

    colour: np.ndarray      # (n, 3) log-RGB (`colour.log_rgb`)
    noise: np.ndarray       # (n, 3) variance of ``colour`` from the camera's noise alone
    clipped: np.ndarray     # (n, 3) 1.0 where the channel is clipped by the camera
    tint: np.ndarray        # (n, 3) log-RGB chroma of the unsaturated pixels (NaN: none)
    tint_noise: np.ndarray  # (n, 3)
    tinted: np.ndarray      # (n,) bool: the sticker has a tint


class ColourModel:
    """Six colour classes, each a median colour and a robust per-axis spread in log-RGB.
    A sticker's cost for a class is a Student-t negative log-likelihood with the class's
    spread plus the sticker's own noise (large for a dark channel): quadratic near the
    class, logarithmic far from it, so one glared or shadowed sticker neither inflates its
    class's spread nor dominates the total.

    A channel clipped by the camera says only "at least this bright", which can move a
    sticker's hue onto another class's (a bright blue whose blue channel is cut off looks
    teal-green). So which channels are clipped is kept as its own observation: each class
    has a rate of clipping per channel, and a sticker pays the Bernoulli negative
    log-likelihood of its clipped channels under that rate. And where the middle of a
    sticker is cut off, its rim, a little less lit, still shows its hue: read from a frame
    (not from a colour scan), each sticker also has a tint, the hue of all its pixels the
    sensor did not saturate (`colour.unsaturated_colour`), and each class a tint chroma,
    which every sticker pays for as for its colour. Measured over the whole sticker, the
    tint also outvotes a glare spot or a shadow in its middle."""

    def __init__(self, means: np.ndarray, variances: np.ndarray,
                 clip_rate: np.ndarray | None = None,
                 tint: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.means = means
        self.variances = variances
        self.clip_rate = (np.full((N_FACES, N_CHANNELS), 0.5) if clip_rate is None
                          else clip_rate)
        self.tint = tint
        """(means, variances) of the rim chroma per class, or None (not measured)."""

    @classmethod
    def fit(cls, seen: Observed, labels: np.ndarray) -> ColourModel:
        means, variances = _robust_classes(seen.colour, labels)
        clip_rate = np.empty_like(means)
        for k in range(N_FACES):
            count = int(np.sum(labels == k))
            clip_rate[k] = (seen.clipped[labels == k].sum(axis=0) + CLIP_PRIOR) / (
                count + 2.0 * CLIP_PRIOR)
        tint = None
        if all(np.sum(seen.tinted & (labels == k)) >= MIN_TINTS for k in range(N_FACES)):
            tint = _robust_classes(seen.tint, labels, seen.tinted)
        return cls(means, variances, clip_rate, tint)

    def cost(self, seen: Observed) -> np.ndarray:
        cost = _student_cost(seen.colour, seen.noise, self.means, self.variances)
        clip = np.where(seen.clipped[:, None, :] > 0, self.clip_rate[None],
                        1.0 - self.clip_rate[None])
        cost -= np.log(clip).sum(-1)
        if self.tint is not None:
            rows = np.nonzero(seen.tinted)[0]
            cost[rows] += _student_cost(seen.tint[rows], seen.tint_noise[rows], *self.tint)
        return cost


def _robust_classes(values: np.ndarray, labels: np.ndarray, use: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per class: median and variance (from the MAD, shrunk towards the pooled one by
    CLASS_SHRINK stickers) of ``values`` over the stickers in ``use``."""
    use = np.ones(len(labels), dtype=bool) if use is None else use
    means = np.stack([np.median(values[use & (labels == k)], axis=0) for k in range(N_FACES)])
    residual = np.abs(values - means[labels])
    pooled = np.maximum((MAD_TO_SIGMA * np.median(residual[use], axis=0)) ** 2, MIN_VARIANCE)
    variances = np.empty_like(means)
    for k in range(N_FACES):
        mine = use & (labels == k)
        own = (MAD_TO_SIGMA * np.median(residual[mine], axis=0)) ** 2
        count = int(np.sum(mine))
        variances[k] = (count * own + CLASS_SHRINK * pooled) / (count + CLASS_SHRINK)
    return means, np.maximum(variances, MIN_VARIANCE)


def _student_cost(values: np.ndarray, noise: np.ndarray, means: np.ndarray,
                  variances: np.ndarray) -> np.ndarray:
    """(n, 6): Student-t cost of each sticker's ``values`` under each class."""
    spread = variances[None] + noise[:, None, :]
    squared = (values[:, None, :] - means[None]) ** 2 / spread
    return ((T_DOF + 1.0) * np.log1p(squared / T_DOF)).sum(-1) + np.log(spread).sum(-1)


def farthest_point_classes(features: np.ndarray) -> np.ndarray:
    """Initial six colour classes of a 2x2: farthest-point seeds refined by k-means with
    every class holding exactly a sixth of the stickers (greedy balanced assignment)."""
    n = len(features)
    per_class = n // N_FACES
    spread = ((features - features.mean(0)) ** 2).sum(1)
    seeds = [int(np.argmax(spread))]
    for _ in range(N_FACES - 1):
        dist = ((features[:, None] - features[seeds][None]) ** 2).sum(-1).min(1)
        seeds.append(int(np.argmax(dist)))
    means = features[seeds].copy()
    labels = np.zeros(n, dtype=np.int64)
    for _ in range(10):
        dist = ((features[:, None] - means[None]) ** 2).sum(-1)
        new = np.full(n, -1, dtype=np.int64)
        count = np.zeros(N_FACES, dtype=np.int64)
        for flat in np.argsort(dist, axis=None, kind="stable"):
            i, k = divmod(int(flat), N_FACES)
            if new[i] < 0 and count[k] < per_class:
                new[i] = k
                count[k] += 1
        if np.array_equal(new, labels):
            break
        labels = new
        means = np.stack([features[labels == k].mean(0) for k in range(N_FACES)])
    return labels


class FaceLight:
    """How brightly each face was lit: a brightness gain per face that may vary linearly
    across the face (3x3; a 2x2 face has too few stickers for a slope), learnt from the
    stickers' brightness against their class's and shrunk towards "no correction". A gain
    scales all channels alike, so it can make a dim orange look like red only through its
    brightness, never turn white into yellow."""

    def __init__(self, rgb: np.ndarray, size: int, tints: np.ndarray | None = None) -> None:
        self.rgb = rgb
        # The tint's hue, not its brightness: a chroma (log-RGB minus its mean), unlit.
        if tints is None:
            tints = np.full_like(rgb, np.nan)
        tint, self.tint_noise = log_rgb(np.clip(tints, 0, 255))
        self.tint = tint - tint.mean(axis=1, keepdims=True)
        self.tinted = np.isfinite(tints).all(axis=1)
        self.log_level = np.log(np.maximum(rgb.sum(axis=1), LEVEL_FLOOR))
        area = size * size
        self.face_of = np.arange(len(rgb)) // area
        index = np.arange(len(rgb)) % area
        centre = 0.5 * (size - 1)
        self.design = np.stack([np.ones(len(rgb)), index % size - centre,
                                index // size - centre], axis=1)
        if size == 2:
            self.design = self.design[:, :1]
        self.prior = np.diag([LIGHT_PRIOR] + [SLOPE_PRIOR] * (self.design.shape[1] - 1))
        self.field = np.zeros(len(rgb))
        # A sticker with a clipped channel shows the sensor's limit, not its light: it neither
        # teaches the face's gain nor gets corrected.
        self.unclipped = rgb.max(axis=1) < CLIPPED

    def features(self) -> Observed:
        """The stickers' observations with the face lighting learnt so far divided out."""
        gain = np.where(self.unclipped, np.exp(-self.field), 1.0)
        colour, noise = log_rgb(np.clip(self.rgb * gain[:, None], 0, 255), gain)
        return Observed(colour, noise, (self.rgb >= CLIPPED).astype(np.float64),
                         self.tint, self.tint_noise, self.tinted)

    def fit(self, classes: np.ndarray) -> None:
        for _ in range(LIGHT_ROUNDS):
            level = self.log_level - self.field
            typical = np.array([np.median(level[classes == k]) for k in range(N_FACES)])
            residual = self.log_level - typical[classes]
            field = np.empty_like(self.field)
            for face in range(N_FACES):
                rows = self.face_of == face
                used = rows & self.unclipped
                x = self.design[used]
                coef = np.linalg.solve(x.T @ x + self.prior, x.T @ residual[used])
                field[rows] = self.design[rows] @ coef
            self.field = field - np.median(field)


def explained_cost(rgb: np.ndarray, size: int, classes: np.ndarray,
                    tints: np.ndarray | None) -> float:
    """How well a reading explains the colours: its total sticker cost with face lighting
    and colour classes fitted to it (lower is better; comparable between readings)."""
    light = FaceLight(rgb, size, tints)
    light.fit(classes)
    features = light.features()
    model = ColourModel.fit(features, classes)
    return float(model.cost(features)[np.arange(len(classes)), classes].sum())
