"""Level generation: pull boxes backwards from the solved position to the states farthest away.

Pulling is the exact reverse of pushing, so a breadth-first search by pulls from every solved
state (all boxes on goals, the player in each free region) reaches exactly the states that can
be solved, and the depth at which a state is first found is its push-optimal solution length.
The deepest states are emitted as new levels with that length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robocell.sokoban.board import build_board
from robocell.sokoban.graph import EXPLORE_TOO_BIG, allocate, explore, goal_roots
from robocell.sokoban.level import Level, parse_levels
from robocell.sokoban.solver import METRIC_MOVES, solve

DEFAULT_GENERATE_STATES = 1_000_000


@dataclass
class GeneratedLevel:
    """A new level with its push-optimal solution length (and move-optimal one if asked)."""

    level: Level
    pushes: int
    moves: int | None = None

    def xsb(self) -> str:
        return self.level.xsb()


@dataclass
class Generation:
    """Result of one generation run."""

    levels: list[GeneratedLevel]
    states_explored: int
    complete: bool       # False when the pull search stopped at the state limit
    max_depth: int


def generate(level: Level, count: int = 3, max_states: int = DEFAULT_GENERATE_STATES,
             with_moves: bool = False, moves_timeout: float = 30.0) -> Generation:
    """New levels on the walls and goals of ``level``: the ``count`` states farthest (in
    pushes) from solved, deepest first. With ``with_moves`` each is also solved move-optimally
    to state its move count."""
    board = build_board(level)
    roots, players = goal_roots(board)
    arrays = allocate(board, max_states)
    counts = np.zeros(3, dtype=np.int64)
    status = explore(board.neighbours, board.zobrist_box, board.zobrist_player, roots, players,
                     True, arrays["boxes"], arrays["player"], arrays["hash"], arrays["depth"],
                     arrays["table"], arrays["arc_src"], arrays["arc_dst"], arrays["arc_push"],
                     counts)
    n_states = int(counts[0])
    depth = arrays["depth"][:n_states]
    complete = status != EXPLORE_TOO_BIG
    # Deepest first; among equal depth, keep distinct box placements (player regions differ
    # only in where the player starts).
    order = np.argsort(-depth, kind="stable")
    chosen: list[int] = []
    seen_boxes: set[bytes] = set()
    for s in order:
        if len(chosen) >= count or depth[s] == 0:
            break
        key = arrays["boxes"][s].tobytes()
        if key in seen_boxes:
            continue
        seen_boxes.add(key)
        chosen.append(int(s))
    out = []
    for rank, s in enumerate(chosen, 1):
        drawing = board.render(arrays["boxes"][s], int(arrays["player"][s]))
        new_level = parse_levels(drawing)[0]
        new_level.title = f"{level.title or level.index}-gen{rank}"
        new_level.index = rank
        generated = GeneratedLevel(new_level, int(depth[s]))
        if with_moves:
            result = solve(build_board(new_level), metric=METRIC_MOVES, timeout=moves_timeout)
            if result.solved:
                generated.moves = result.moves
        out.append(generated)
    return Generation(out, n_states, complete, int(depth.max()) if n_states else 0)

