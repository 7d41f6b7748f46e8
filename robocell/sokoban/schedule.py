"""Solving schedules: a level is given to several searches in turn, each for its share of time.

No single search mode solves the most levels: optimal A* proves small levels in a moment, the
feature search with a weight-2 heap and the one with a greedy heap each solve levels the
other misses. A schedule runs them one after the other until one returns a solution that
replays (or optimal A* proves there is none).

A schedule is written ``STAGE,STAGE,...`` with ``STAGE = W[flags][/E]:SECONDS``: the weight of
the bound (1 = optimal A*), then any of ``p`` (plain: no goal-room macros, tunnel runs or
fast-mode penalties), ``o`` (packing-order penalty), ``f`` (feature search), ``m`` (box
moves: an arc pushes one box as far as it goes, see ``box_moves.box_reach``), ``c`` (deep
corral deadlock search: larger limits, slower per expansion), ``h`` (the feature search's
hotspot advisor), ``r`` (the packing feature by the layers of the packing order,
``packing.packing_layers``), and for the feature search ``/E``, the heap's share (every E-th
expansion; 0 = cells only).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from robocell.sokoban.board import build_board
from robocell.sokoban.level import Level
from robocell.sokoban.lurd import replay
from robocell.sokoban.solver import FEATURE_HEAP_EVERY, METRIC_PUSHES, SolveResult, solve
from robocell.sokoban.warm_up import warm_up

PLAIN_FLAG, PACKING_FLAG, FEATURES_FLAG, BOX_MOVES_FLAG, DEEP_CORRALS_FLAG = "p", "o", "f", "m", "c"
HOTSPOTS_FLAG, LAYERS_FLAG = "h", "r"
STAGE_FLAGS = (PLAIN_FLAG + PACKING_FLAG + FEATURES_FLAG + BOX_MOVES_FLAG + DEEP_CORRALS_FLAG
               + HOTSPOTS_FLAG + LAYERS_FLAG)
DEFAULT_SCHEDULE = {"pushes": "1:2,2fom/0:22,2fomr/2:7,3:8,2fo/2:21", "moves": "1:30,2:30"}
"""The schedule per metric for 60 s (scaled to other budgets): the push one solved the most
XSokoban levels measured (docs/sokoban.md): optimal A* for small levels, the feature search
with box moves on its cells alone, then taking turns with a weight-2 heap, weighted A*, and
the feature search over single pushes."""
NODE_LIMIT = 24_000_000
"""Largest node arrays of one stage (about 3 GB with 50 boxes)."""


@dataclass(frozen=True)
class Stage:
    weight: int
    seconds: float
    plain: bool = False
    packing: bool = False
    features: bool = False
    heap_every: int = FEATURE_HEAP_EVERY
    box_moves: bool = False
    deep_corrals: bool = False
    hotspots: bool = False
    pack_layers: bool = False

    def __str__(self) -> str:
        flags = ((PLAIN_FLAG if self.plain else "") + (FEATURES_FLAG if self.features else "")
                 + (PACKING_FLAG if self.packing else "")
                 + (BOX_MOVES_FLAG if self.box_moves else "")
                 + (DEEP_CORRALS_FLAG if self.deep_corrals else "")
                 + (HOTSPOTS_FLAG if self.hotspots else "")
                 + (LAYERS_FLAG if self.pack_layers else ""))
        custom = self.features and self.heap_every != FEATURE_HEAP_EVERY
        every = f"/{self.heap_every}" if custom else ""
        return f"{self.weight}{flags}{every}:{self.seconds:g}"


def parse_schedule(text: str) -> list[Stage]:
    """Stages of a schedule string; ValueError naming the stage that is wrong."""
    stages = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        spec, colon, seconds = part.partition(":")
        spec, slash, every = spec.partition("/")
        weight = spec.rstrip(STAGE_FLAGS)
        flags = spec[len(weight):]
        try:
            stage = Stage(int(weight), float(seconds), PLAIN_FLAG in flags,
                          PACKING_FLAG in flags, FEATURES_FLAG in flags,
                          int(every) if slash else FEATURE_HEAP_EVERY, BOX_MOVES_FLAG in flags,
                          DEEP_CORRALS_FLAG in flags, HOTSPOTS_FLAG in flags,
                          LAYERS_FLAG in flags)
        except ValueError:
            stage = None
        if (stage is None or not colon or stage.weight < 1 or not stage.seconds > 0
                or stage.heap_every < 0 or (slash and not stage.features)):
            raise ValueError(
                f"schedule stage {part!r}: write W[flags][/E]:SECONDS, e.g. 1:5 (optimal A* "
                "for 5 s), 2fo:25 (feature search, packing penalty) or 100fo/2:30 (feature "
                f"search whose greedy heap takes every 2nd expansion); flags are {STAGE_FLAGS}")
        if stage.weight == 1 and (stage.packing or stage.features or stage.box_moves):
            raise ValueError(f"schedule stage {part!r}: flags o, f and m need a weight above 1")
        if stage.hotspots and not stage.features:
            raise ValueError(f"schedule stage {part!r}: flag h (hotspot advisor) needs f")
        if stage.pack_layers and not stage.features:
            raise ValueError(f"schedule stage {part!r}: flag r (packing layers) needs f")
        stages.append(stage)
    if not stages:
        raise ValueError("empty schedule: give at least one stage, e.g. 1:5,2fo:25")
    return stages


def default_schedule(metric: str, seconds: float) -> list[Stage]:
    """The metric's default schedule with its stages scaled to ``seconds`` in all."""
    stages = parse_schedule(DEFAULT_SCHEDULE[metric])
    scale = seconds / sum(s.seconds for s in stages)
    return [replace(s, seconds=s.seconds * scale) for s in stages]


def stage_options(stage: Stage) -> dict[str, Any]:
    """The search options of a stage (``solver.solve``'s keywords, no time or memory limit)."""
    return {"weight": stage.weight, "macros": False if stage.plain else None,
            "packing": stage.packing, "features": stage.features,
            "heap_every": stage.heap_every, "box_moves": stage.box_moves,
            "deep_corrals": stage.deep_corrals, "hotspots": stage.hotspots,
            "pack_layers": stage.pack_layers}


def solve_scheduled(level: Level, stages: list[Stage], metric: str = METRIC_PUSHES
                    ) -> tuple[SolveResult, float]:
    """Run the stages in turn until one returns a solution that replays, or optimal A* proves
    there is none; returns the last stage's result and the seconds spent searching in all
    (the stages' kernels are compiled, or loaded from numba's cache, before: see
    ``warm_up``)."""
    for stage in stages:
        warm_up(metric, **stage_options(stage))
    board = build_board(level)
    spent = 0.0
    result = None
    for stage in stages:
        result = solve(board, metric=metric, timeout=stage.seconds, max_nodes=NODE_LIMIT,
                       **stage_options(stage))
        spent += result.seconds
        if result.solved and replay(level, result.lurd).solved:
            break
        if result.status == "no solution" and (stage.weight == 1 or result.dead_start):
            break
    return result, spent
