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
hotspot advisor), ``r`` (its room-link feature in place of the doorway count), ``u`` (its
out-of-plan feature), ``e`` (its explorer advisor), ``l`` (the packing feature by the layers of the
packing order, ``packing.packing_layers``), ``b`` (the backward search by pulls,
``reverse``; with ``f`` only, its feature cells, and ``m``, its box moves), and for the
feature search ``/E``, the heap's share (every E-th expansion; 0 = cells only).

Lanes use more than one core for one level: ``LANE|LANE|...``, each lane a schedule of its
own, run at the same time in a process of its own (forked after the stages are warmed up, so
no lane compiles), each lane's stages in turn with their own shares of the whole budget. The
first lane whose solution replays wins and the others are killed at once; optimal A* proving
there is none ends them all too. One lane is `solve_scheduled`, in this process.
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from dataclasses import dataclass, replace
from multiprocessing import Pipe
from multiprocessing.connection import Connection, wait
from typing import Any

from robocell.common.lifetime import follow_parent
from robocell.errors import RobocellError
from robocell.sokoban.board import Board, build_board
from robocell.sokoban.level import Level
from robocell.sokoban.lurd import replay
from robocell.sokoban.solver import FEATURE_HEAP_EVERY, METRIC_PUSHES, SolveResult, solve
from robocell.sokoban.warm_up import warm_up

PLAIN_FLAG, PACKING_FLAG, FEATURES_FLAG, BOX_MOVES_FLAG, DEEP_CORRALS_FLAG = "p", "o", "f", "m", "c"
HOTSPOTS_FLAG, ROOM_LINKS_FLAG, OUT_OF_PLAN_FLAG, EXPLORER_FLAG = "h", "r", "u", "e"
LAYERS_FLAG, BACKWARD_FLAG = "l", "b"
STAGE_FLAGS = (PLAIN_FLAG + PACKING_FLAG + FEATURES_FLAG + BOX_MOVES_FLAG + DEEP_CORRALS_FLAG
               + HOTSPOTS_FLAG + ROOM_LINKS_FLAG + OUT_OF_PLAN_FLAG + EXPLORER_FLAG
               + LAYERS_FLAG + BACKWARD_FLAG)
DEFAULT_SCHEDULE = {"pushes": "1:2,10b:3,2fom/0:22,2foml/2:7,3:8,2fo/2:18",
                    "moves": "1:30,2:30"}
"""The schedule per metric for 60 s (scaled to other budgets): optimal A* for small levels,
the backward search, the feature search with box moves on its cells alone, then taking turns
with a weight-2 heap, weighted A*, and the feature search over single pushes
(docs/sokoban.md, "Schedules")."""
DEFAULT_LANES = {"pushes": ("1:2,5b:3,20b:10,40bmf/6:6,2fom/0:39"
                            "|2foml/2:6,10bf:5,40bmf/4:11,2fome/0:9,3:7,2fo/2:22"),
                 "moves": "1:60|2:60"}
"""The two-lane schedule per metric for 60 s (each lane scaled to other budgets): the push
one solved the most XSokoban levels measured (docs/sokoban.md, "Schedules")."""
MAX_LANES = 2
"""Most lanes a default schedule runs (the machine measured has 2 cores)."""
LANE_GRACE_S = 5.0
"""Seconds past the longest lane's budget before a lane that has not answered is killed."""
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
    room_links: bool = False
    out_of_plan: bool = False
    explorer: bool = False
    pack_layers: bool = False
    backward: bool = False

    def __str__(self) -> str:
        flags = ((PLAIN_FLAG if self.plain else "") + (FEATURES_FLAG if self.features else "")
                 + (PACKING_FLAG if self.packing else "")
                 + (BOX_MOVES_FLAG if self.box_moves else "")
                 + (DEEP_CORRALS_FLAG if self.deep_corrals else "")
                 + (HOTSPOTS_FLAG if self.hotspots else "")
                 + (ROOM_LINKS_FLAG if self.room_links else "")
                 + (OUT_OF_PLAN_FLAG if self.out_of_plan else "")
                 + (EXPLORER_FLAG if self.explorer else "")
                 + (LAYERS_FLAG if self.pack_layers else "")
                 + (BACKWARD_FLAG if self.backward else ""))
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
                          ROOM_LINKS_FLAG in flags, OUT_OF_PLAN_FLAG in flags,
                          EXPLORER_FLAG in flags, LAYERS_FLAG in flags,
                          BACKWARD_FLAG in flags)
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
        if ((stage.hotspots or stage.room_links or stage.out_of_plan or stage.explorer
                or stage.pack_layers) and not stage.features):
            raise ValueError(f"schedule stage {part!r}: each of flags h, r, u, e and l (the "
                             "feature search's advisors and features) needs f")
        if stage.backward and set(flags) - {BACKWARD_FLAG, FEATURES_FLAG, BOX_MOVES_FLAG}:
            raise ValueError(f"schedule stage {part!r}: flag b (the backward search by pulls) "
                             "takes a weight and no other flag but f (its feature cells) and m "
                             "(its box moves), e.g. 10b:5, 10bf/3:5 or 10bm:5")
        stages.append(stage)
    if not stages:
        raise ValueError("empty schedule: give at least one stage, e.g. 1:5,2fo:25")
    return stages


def default_schedule(metric: str, seconds: float) -> list[Stage]:
    """The metric's default schedule with its stages scaled to ``seconds`` in all."""
    stages = parse_schedule(DEFAULT_SCHEDULE[metric])
    scale = seconds / sum(s.seconds for s in stages)
    return [replace(s, seconds=s.seconds * scale) for s in stages]


def parse_lanes(text: str) -> list[list[Stage]]:
    """The lanes of a schedule string ``LANE|LANE|...`` (one lane without ``|``); ValueError
    naming the lane or stage that is wrong."""
    lanes = []
    for number, part in enumerate(text.split("|"), 1):
        try:
            lanes.append(parse_schedule(part))
        except ValueError as exc:
            raise ValueError(f"lane {number}: {exc}" if "|" in text else str(exc)) from None
    return lanes


def lanes_text(lanes: list[list[Stage]]) -> str:
    """A schedule string of ``lanes`` (``parse_lanes`` reads it back)."""
    return "|".join(",".join(map(str, stages)) for stages in lanes)


def usable_lanes() -> int:
    """The default number of lanes: the CPUs this process may run on, at most ``MAX_LANES``."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_LANES, cpus))


def default_lanes(metric: str, seconds: float, lanes: int) -> list[list[Stage]]:
    """The metric's default schedule in ``lanes`` lanes (1: exactly `default_schedule`; more
    than the two-lane default has: that one), each lane scaled to ``seconds``."""
    if lanes < 1:
        raise ValueError(f"lanes: give 1 or more, not {lanes}")
    if lanes == 1:
        return [default_schedule(metric, seconds)]
    chosen = []
    for stages in parse_lanes(DEFAULT_LANES[metric])[:lanes]:
        scale = seconds / sum(s.seconds for s in stages)
        chosen.append([replace(s, seconds=s.seconds * scale) for s in stages])
    return chosen


def stage_options(stage: Stage) -> dict[str, Any]:
    """The search options of a stage (``solver.solve``'s keywords, no time or memory limit)."""
    return {"weight": stage.weight, "macros": False if stage.plain else None,
            "packing": stage.packing, "features": stage.features,
            "heap_every": stage.heap_every, "box_moves": stage.box_moves,
            "deep_corrals": stage.deep_corrals, "hotspots": stage.hotspots,
            "room_links": stage.room_links, "out_of_plan": stage.out_of_plan,
            "explorer": stage.explorer,
            "pack_layers": stage.pack_layers, "backward": stage.backward}


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
        result.stage = str(stage)
        spent += result.seconds
        if result.solved and replay(level, result.lurd).solved:
            break
        if _proves_none(stage, result):
            break
    return result, spent


def _proves_none(stage: Stage, result: SolveResult) -> bool:
    """Whether ``result`` proves the level has no solution (optimal A*, or a dead start)."""
    return result.status == "no solution" and (stage.weight == 1 or stage.backward
                                               or bool(result.dead_start))


class LaneError(RobocellError, RuntimeError):
    """A lane's process failed (an exception, with its traceback, or an end without answer)."""


def solve_lanes(level: Level, lanes: list[list[Stage]], metric: str = METRIC_PUSHES,
                log: list[dict[str, Any]] | None = None) -> tuple[SolveResult, float]:
    """Run the lanes at the same time, one process each, until one returns a solution that
    replays (the others are killed at once), optimal A* proves there is none, or every lane
    has run its stages; returns that result (its ``stage`` names the stage) and the wall
    seconds from the start of the lanes. One lane is `solve_scheduled`, in this process.
    ``log``, when given, gets one entry per stage that ended: lane, stage, status, the second
    (since the lanes started) it ended at, expansions and most packed boxes. A lane's
    exception is raised here as `LaneError` after the other lanes are killed; no lane
    outlives this call (Ctrl-C included), nor this process."""
    if len(lanes) == 1:
        return solve_scheduled(level, lanes[0], metric)
    for stages in lanes:
        for stage in stages:
            warm_up(metric, **stage_options(stage))
    board = build_board(level)
    budget = max(sum(s.seconds for s in stages) for stages in lanes)
    children: dict[Connection, tuple[int, int]] = {}  # reader -> (lane index, pid)
    reaped: set[int] = set()  # never signal a pid once reaped: it may be another's by now
    parent = os.getpid()
    started = time.monotonic()
    try:
        for index, stages in enumerate(lanes):
            reader, writer = Pipe(duplex=False)
            pid = os.fork()
            if pid == 0:  # the lane's process: it never returns to the caller
                reader.close()
                _lane_main(writer, parent, level, board, stages, metric)
            writer.close()  # a later lane's process must not hold this lane's pipe open
            children[reader] = (index, pid)
        return _await_lanes(children, lanes, started, budget, log, reaped)
    finally:
        for _, pid in children.values():
            if pid not in reaped:
                _end(pid)
        for reader in children:
            reader.close()


def _await_lanes(children: dict[Connection, tuple[int, int]], lanes: list[list[Stage]],
                 started: float, budget: float, log: list[dict[str, Any]] | None,
                 reaped: set[int]) -> tuple[SolveResult, float]:
    """The lanes' answers until one decides (a replayed solution, a proof of none) or all
    are done; the last result of a lane that ends without a solution is kept. A solution
    that is not proven optimal waits while another lane runs optimal A* (at most that
    stage's share), which wins if it solves: one lane's optimal results are kept."""
    last = None
    held = None  # a lane's solution waiting for optimal A* running in another lane
    current = {index: 0 for index, _ in children.values()}  # each lane's running stage
    deadline = started + budget + LANE_GRACE_S
    running = dict(children)
    while running:
        ready = wait(list(running), timeout=max(0.0, deadline - time.monotonic()))
        if not ready:  # a lane overran its budget: give up on them all
            return (held or last or SolveResult("timeout", "")), time.monotonic() - started
        for reader in ready:
            index, pid = running[reader]
            try:
                kind, payload, stage_index, final = reader.recv()
            except EOFError:
                raise LaneError(f"lane {index + 1} ({lanes_text([lanes[index]])}) ended "
                                f"without an answer ({_exit_text(pid, reaped)})") from None
            if kind == "error":
                raise LaneError(f"lane {index + 1} ({lanes_text([lanes[index]])}) failed:\n"
                                f"{payload}")
            result, replays = payload
            stage = lanes[index][stage_index]
            if log is not None:
                log.append({"lane": index + 1, "stage": str(stage), "status": result.status,
                            "second": round(time.monotonic() - started, 2),
                            "expanded": result.expanded, "most_packed": result.most_packed})
            if _proves_none(stage, result) or (replays and (result.optimal or held is None
                                                            and not _optimal_running(
                                                                current, running, lanes))):
                return result, time.monotonic() - started
            if replays and held is None:
                held = result  # as in one lane: optimal A* first, if it solves in its share
            last = result
            current[index] = stage_index + 1
            if final:
                del running[reader]
            if held is not None and not _optimal_running(current, running, lanes):
                return held, time.monotonic() - started
    return (held or last), time.monotonic() - started


def _optimal_running(current: dict[int, int], running: dict[Connection, tuple[int, int]],
                     lanes: list[list[Stage]]) -> bool:
    """Whether a running lane is in an optimal A* stage (weight 1)."""
    return any(lanes[index][current[index]].weight == 1 for index, _ in running.values()
               if current[index] < len(lanes[index]))


def _lane_main(writer: Connection, parent: int, level: Level, board: Board,
               stages: list[Stage], metric: str) -> None:
    """A lane's process: its stages in turn, each one's result sent as it ends; then exit
    (never return into the caller's code). It dies with the process that forked it."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
        follow_parent(parent)
        # a stage that overran its share (the deadline is checked between chunks of
        # expansions) takes it from the lane's later stages, not from the caller's budget
        end = time.monotonic() + sum(stage.seconds for stage in stages)
        for number, stage in enumerate(stages):
            seconds = max(0.0, min(stage.seconds, end - time.monotonic()))
            result = solve(board, metric=metric, timeout=seconds, max_nodes=NODE_LIMIT,
                           **stage_options(stage))
            result.stage = str(stage)
            replays = result.solved and replay(level, result.lurd).solved
            final = replays or _proves_none(stage, result) or number == len(stages) - 1
            writer.send(("result", (result, replays), number, final))
            if final:
                break
    except BaseException:  # noqa: BLE001 -- reported to the parent, which raises it
        code = 1
        try:
            writer.send(("error", traceback.format_exc(), 0, True))
        except BaseException:  # noqa: BLE001 -- the parent sees the pipe end instead
            pass
    finally:
        writer.close()
        os._exit(code)


def _end(pid: int) -> None:
    """Kill a lane's process (not reaped yet: a zombie at most) and reap it."""
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _exit_text(pid: int, reaped: set[int]) -> str:
    """How a lane's process ended, as far as can be told now (reaping it if it has)."""
    done, status = os.waitpid(pid, os.WNOHANG)
    if done == 0:
        return "still running"
    reaped.add(pid)
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit code {os.WEXITSTATUS(status)}"
