"""What the state-space explorer draws: a push graph cut to what a browser can show, as flat
JSON arrays (states, arcs, board), with the marks and figures of its summary panel.

A state is drawn as its compact form (sorted boxes + the smallest square of the player's
region); an arc as its push code (box square * 4 + direction). Move strings, the player's
region and the layouts are worked out in the page from these, so the JSON stays a few numbers
per state and per arc.

Marks (bits of ``flags``):

- ``start``, ``goal``; ``dead``: no goal state can be reached from it;
- ``dead_end``: a state that is not a goal and allows no push at all;
- ``tail``: a state with exactly one push, which leads into a dead end or another tail (the
  forced corridor that runs into a dead end);
- ``solution``: on the solution drawn (push-optimal, and the fewest moves among those);
- ``largest_scc``: in the largest strongly connected component of the live graph (the states
  one can go back and forth between);
- ``bottleneck``: a state every solution passes through; ``corridor``: inside a run of
  states with one way in and one way out (see ``graph_marks``).

Per state drawn, also its place in the layout (``layout``, computed once per level and
cached) and the size rank of its strongly connected component (``scc``, -1: alone); per arc
drawn, whether every solution makes it (``bottleneck``); the corridors as runs (state
before, state after, arcs), which the page can draw as one arc each.

Above ``max_drawn`` states the view is reduced: dead states are left out first, then only the
live states within k pushes (either way along an arc) of the solution path are kept, with k
as large as fits. The summary always describes the whole graph.
"""

from __future__ import annotations

from collections import deque

import numpy as np
from numba import njit

from robocell.sokoban.board import N_DIRS, NO_SQUARE, Board
from robocell.sokoban.graph import StateGraph, csr
from robocell.sokoban.graph_marks import bottlenecks, component_ranks, corridors
from robocell.sokoban.layout import cached_layout
from robocell.sokoban.solution import pushes_to_lurd

MAX_DRAWN_STATES = 200_000
"""Largest graph drawn whole; the page's WebGL drawing keeps about this many states (and
their arcs, about four times as many) interactive."""

FLAG_START, FLAG_GOAL, FLAG_DEAD, FLAG_DEAD_END = 1, 2, 4, 8
FLAG_TAIL, FLAG_SOLUTION, FLAG_LARGEST_SCC = 16, 32, 64
FLAG_BOTTLENECK, FLAG_CORRIDOR = 128, 256
FLAGS = {"start": FLAG_START, "goal": FLAG_GOAL, "dead": FLAG_DEAD, "dead_end": FLAG_DEAD_END,
         "tail": FLAG_TAIL, "solution": FLAG_SOLUTION, "largest_scc": FLAG_LARGEST_SCC,
         "bottleneck": FLAG_BOTTLENECK, "corridor": FLAG_CORRIDOR}


@njit(cache=True)
def strongly_connected(n_states: int, offsets: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Component number of every state (Tarjan's algorithm with an explicit call stack)."""
    index = np.full(n_states, -1, dtype=np.int32)
    low = np.zeros(n_states, dtype=np.int32)
    on_stack = np.zeros(n_states, dtype=np.bool_)
    component = np.full(n_states, -1, dtype=np.int32)
    stack = np.empty(n_states, dtype=np.int32)
    call_state = np.empty(n_states, dtype=np.int32)
    call_arc = np.empty(n_states, dtype=np.int64)
    counter = 0
    n_components = 0
    top = 0
    for root in range(n_states):
        if index[root] != -1:
            continue
        depth = 0
        call_state[0] = root
        call_arc[0] = offsets[root]
        index[root] = counter
        low[root] = counter
        counter += 1
        stack[top] = root
        top += 1
        on_stack[root] = True
        while depth >= 0:
            v = call_state[depth]
            k = call_arc[depth]
            if k < offsets[v + 1]:
                call_arc[depth] = k + 1
                w = targets[k]
                if index[w] == -1:
                    index[w] = counter
                    low[w] = counter
                    counter += 1
                    stack[top] = w
                    top += 1
                    on_stack[w] = True
                    depth += 1
                    call_state[depth] = w
                    call_arc[depth] = offsets[w]
                elif on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
                continue
            if low[v] == index[v]:
                while True:
                    top -= 1
                    w = stack[top]
                    on_stack[w] = False
                    component[w] = n_components
                    if w == v:
                        break
                n_components += 1
            depth -= 1
            if depth >= 0:
                u = call_state[depth]
                if low[v] < low[u]:
                    low[u] = low[v]
    return component


def dead_ends_and_tails(graph: StateGraph) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks of the dead ends and of the tails running into them (see the module)."""
    n = graph.n_states
    out_degree = np.bincount(graph.arc_src, minlength=n)
    dead_end = (out_degree == 0) & ~graph.is_goal_state
    tail = np.zeros(n, dtype=bool)
    offsets, sources = csr(n, graph.arc_dst, graph.arc_src)
    queue = deque(int(s) for s in np.flatnonzero(dead_end))
    while queue:
        s = queue.popleft()
        for k in range(offsets[s], offsets[s + 1]):
            p = int(sources[k])
            if out_degree[p] == 1 and not tail[p] and not graph.is_goal_state[p] and p != s:
                tail[p] = True
                queue.append(p)
    return dead_end, tail


def walk_lengths(board: Board, start: int, boxes: np.ndarray) -> np.ndarray:
    """Fewest steps from ``start`` to every square around the boxes (-1: out of reach)."""
    steps = np.full(board.n_squares, -1, dtype=np.int32)
    blocked = set(int(b) for b in boxes)
    steps[start] = 0
    queue = deque([start])
    while queue:
        s = queue.popleft()
        for t in board.neighbours[s]:
            if t != NO_SQUARE and steps[t] < 0 and int(t) not in blocked:
                steps[t] = steps[s] + 1
                queue.append(int(t))
    return steps


def solution_path(graph: StateGraph) -> tuple[list[int], list[int], str]:
    """States and arcs of the solution drawn, and its LURD: of all push-optimal paths, one
    with the fewest moves (a layer-by-layer search over (state, the player's true square),
    the player standing where the box was after each push). Empty when the start is dead."""
    if graph.solution_length is None:
        return [], [], ""
    board, dist = graph.board, graph.distance_to_goal
    by_source = np.argsort(graph.arc_src, kind="stable")
    first = np.searchsorted(graph.arc_src[by_source], np.arange(graph.n_states + 1))
    # layer: (state, player square) -> (moves so far, previous key, arc taken)
    layers: list[dict] = [{(0, int(board.start_player)): (0, None, -1)}]
    for _ in range(graph.solution_length):
        following: dict = {}
        for (state, player), (moves, _, _) in layers[-1].items():
            walk = walk_lengths(board, player, graph.boxes[state])
            for arc in by_source[first[state]:first[state + 1]]:
                if dist[graph.arc_dst[arc]] != dist[state] - 1:
                    continue
                box, d = divmod(int(graph.arc_push[arc]), N_DIRS)
                cost = moves + int(walk[board.neighbours[box, d ^ 1]]) + 1
                key = (int(graph.arc_dst[arc]), box)
                if key not in following or cost < following[key][0]:
                    following[key] = (cost, (state, player), int(arc))
        layers.append(following)
    key = min(layers[-1], key=lambda k: layers[-1][k][0])
    arcs = []
    for layer in reversed(layers[1:]):
        _, key, arc = layer[key]
        arcs.append(arc)
    arcs.reverse()
    states = [0] + [int(graph.arc_dst[a]) for a in arcs]
    lurd = pushes_to_lurd(board, [int(graph.arc_push[a]) for a in arcs])
    return states, arcs, lurd


def lurd_steps(lurd: str) -> list[str]:
    """A LURD solution cut after each push: the moves of each step."""
    steps, current = [], []
    for move in lurd:
        current.append(move)
        if move.isupper():
            steps.append("".join(current))
            current = []
    return steps


def full_summary(graph: StateGraph, component: np.ndarray, lurd: str) -> dict:
    """The CLI's summary plus moves, branching and the largest strongly connected components."""
    summary = graph.summary()
    live = graph.live
    sizes = np.bincount(component)
    live_sizes = np.bincount(component[live], minlength=len(sizes))
    summary.update({
        "solution_moves": len(lurd) if summary["solution_pushes"] is not None else None,
        "branching": round(len(graph.arc_src) / max(graph.n_states, 1), 2),
        "live_branching": round(summary["live_arcs"] / max(summary["live_states"], 1), 2),
        "largest_scc": int(sizes.max()) if len(sizes) else 0,
        "largest_live_scc": int(live_sizes.max()) if live.any() else 0,
    })
    return summary


def reduce_view(graph: StateGraph, path: list[int], max_drawn: int
                ) -> tuple[np.ndarray, dict | None]:
    """The states drawn (sorted ids, the start first) and, when not all, what was left out."""
    n = graph.n_states
    if n <= max_drawn:
        return np.arange(n), None
    live = graph.live
    n_live = int(live.sum())
    if 0 < n_live <= max_drawn:
        return np.flatnonzero(live), {
            "rule": "live", "k": None, "shown": n_live,
            "message": f"This graph has {n:,} states, above the drawing limit of "
                       f"{max_drawn:,} (about what a browser draws smoothly): its {n_live:,} "
                       f"live states are drawn, the "
                       f"{n - n_live:,} dead states are left out."}
    keep = live[graph.arc_src] & live[graph.arc_dst]
    src, dst = graph.arc_src[keep], graph.arc_dst[keep]
    offsets, targets = csr(n, np.concatenate([src, dst]), np.concatenate([dst, src]))
    seeds = path or [0]
    within = np.full(n, -1, dtype=np.int32)
    within[seeds] = 0
    frontier, shown, k = list(seeds), len(set(seeds)), 0
    while frontier:
        ring = []
        for s in frontier:
            for t in targets[offsets[s]:offsets[s + 1]]:
                if within[t] < 0:
                    within[t] = k + 1
                    ring.append(int(t))
        if not ring or shown + len(ring) > max_drawn:
            break
        shown += len(ring)
        frontier, k = ring, k + 1
    chosen = np.flatnonzero((within >= 0) & (within <= k))
    around = "the optimal solution" if path else "the start"
    return chosen, {
        "rule": "near_solution", "k": k, "shown": len(chosen),
        "message": f"This graph has {n:,} states ({n_live:,} live), above the drawing limit "
                   f"of {max_drawn:,} (about what a browser draws smoothly): only the "
                   f"{len(chosen):,} live states within {k} push{'es' if k != 1 else ''} of "
                   f"{around} are drawn."}


def board_data(graph: StateGraph) -> dict:
    """The level as the page draws it: the rows with the interior blanked, the squares, their
    neighbours (up, down, left, right; -1 = wall) and the goals."""
    board = graph.board
    rows = [list(row) for row in board.level.rows]
    for r, c in board.square_rc:
        rows[r][c] = " "
    width = max(len(row) for row in rows)
    return {
        "title": board.level.title,
        "rows": ["".join(row).ljust(width) for row in rows],
        "width": width, "height": len(rows),
        "squares": board.square_rc.astype(int).tolist(),
        "neighbours": board.neighbours.astype(int).ravel().tolist(),
        "goals": board.goal_squares.astype(int).tolist(),
        "n_boxes": board.n_boxes,
        "start_player": int(board.start_player),
    }


def state_flags(graph: StateGraph, component: np.ndarray, path: list[int]
                ) -> tuple[np.ndarray, np.ndarray]:
    """The marks of every state (bits of FLAG_*, corridors left to ``drawn_shape``) and the
    mask of the bottleneck arcs."""
    n = graph.n_states
    dead_end, tail = dead_ends_and_tails(graph)
    live = graph.live
    flags = np.zeros(n, dtype=np.int32)
    flags[0] |= FLAG_START
    flags[graph.is_goal_state] |= FLAG_GOAL
    flags[~live] |= FLAG_DEAD
    flags[dead_end] |= FLAG_DEAD_END
    flags[tail] |= FLAG_TAIL
    flags[path] |= FLAG_SOLUTION
    if live.any():
        largest = np.bincount(component[live]).argmax()
        flags[live & (component == largest)] |= FLAG_LARGEST_SCC
    neck_states, neck_arcs = bottlenecks(n, graph.arc_src, graph.arc_dst, graph.is_goal_state)
    flags[neck_states] |= FLAG_BOTTLENECK
    return flags, neck_arcs


def drawn_shape(graph: StateGraph, shown: np.ndarray, src: np.ndarray, dst: np.ndarray,
                flags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The layout of the states drawn (cached per level) and their corridor runs, in local
    numbers; marks the corridor states in ``flags`` (local)."""
    keep = (flags & (FLAG_START | FLAG_GOAL)) != 0
    inner, runs = corridors(len(shown), src, dst, keep)
    flags[inner] |= FLAG_CORRIDOR
    pos = cached_layout(graph.board.level.xsb(), shown, src, dst)
    return pos, runs


def view_data(graph: StateGraph, max_drawn: int = MAX_DRAWN_STATES) -> dict:
    """Everything the explorer page needs, JSON-ready (see the module docstring)."""
    n = graph.n_states
    offsets, targets = csr(n, graph.arc_src, graph.arc_dst)
    component = strongly_connected(n, offsets, targets)
    path, path_arcs, lurd = solution_path(graph)
    summary = full_summary(graph, component, lurd)
    flags, neck_arcs = state_flags(graph, component, path)
    shown, reduced = reduce_view(graph, path, max_drawn)
    local = np.full(n, -1, dtype=np.int64)
    local[shown] = np.arange(len(shown))
    arcs = np.flatnonzero((local[graph.arc_src] >= 0) & (local[graph.arc_dst] >= 0))
    src, dst = local[graph.arc_src[arcs]], local[graph.arc_dst[arcs]]
    shown_flags = flags[shown]
    pos, runs = drawn_shape(graph, shown, src, dst, shown_flags)
    level = graph.board.level
    name = f"level {level.index}"
    if level.title and level.title != str(level.index):
        name += f" ({level.title})"
    return {
        "format": 2,
        "level": name,
        "summary": summary,
        "flags": FLAGS,
        "board": board_data(graph),
        "reduced": reduced,
        "states": {
            "id": shown.astype(int).tolist(),
            "boxes": graph.boxes[shown].astype(int).ravel().tolist(),
            "player": graph.player[shown].astype(int).tolist(),
            "distance": graph.distance_to_goal[shown].astype(int).tolist(),
            "from_start": graph.distance_from_start[shown].astype(int).tolist(),
            "flags": shown_flags.astype(int).tolist(),
            "scc": component_ranks(component)[shown].astype(int).tolist(),
        },
        "layout": {"x": np.round(pos[:, 0], 1).tolist(), "y": np.round(pos[:, 1], 1).tolist()},
        "arcs": {
            "source": src.astype(int).tolist(),
            "target": dst.astype(int).tolist(),
            "push": graph.arc_push[arcs].astype(int).tolist(),
            "bottleneck": np.flatnonzero(neck_arcs[arcs]).astype(int).tolist(),
        },
        "corridors": runs.astype(int).tolist(),
        "solution": {
            "states": [int(local[s]) for s in path],
            "arcs_in_graph": [int(a) for a in path_arcs],
            "pushes": [int(graph.arc_push[a]) for a in path_arcs],
            "lurd": lurd,
            "steps": lurd_steps(lurd),
        },
    }
