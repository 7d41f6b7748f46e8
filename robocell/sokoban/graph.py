"""The complete push graph of a level: every reachable compact state, arcs labelled by moves,
dead states removed by a backward search from the goal states, and DOT/GraphML/JSON export."""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from xml.sax.saxutils import escape

import numpy as np
from numba import njit

from robocell.errors import RobocellError
from robocell.sokoban.board import DIR_CHARS, N_DIRS, Board, region_scan
from robocell.sokoban.nodes import EMPTY_SLOT, pushed_box_set, table_find, table_insert
from robocell.sokoban.solution import walk_path

DEFAULT_MAX_STATES = 2_000_000
EXPORT_MAX_STATES = 5_000
DIAMETER_MAX_STATES = 20_000
NO_DISTANCE = -1
EXPLORE_OK, EXPLORE_TOO_BIG = 0, 1


class GraphTooLarge(RobocellError, ValueError):
    """The state space exceeds the limit the caller set."""


@njit(cache=True)
def explore(neighbours: np.ndarray, zobrist_box: np.ndarray, zobrist_player: np.ndarray,
            root_boxes: np.ndarray, root_players: np.ndarray, pull: bool,
            state_boxes: np.ndarray, state_player: np.ndarray, state_hash: np.ndarray,
            state_depth: np.ndarray, table: np.ndarray, arc_src: np.ndarray,
            arc_dst: np.ndarray, arc_push: np.ndarray, counts: np.ndarray) -> int:
    """Breadth-first enumeration of compact states (sorted boxes + smallest reachable player
    square) from the roots, by pushes (or by pulls when ``pull``). Arcs are stored as
    (source, destination, box_square*4 + direction), the box square being where the box
    stood before the move. Returns EXPLORE_TOO_BIG when the arrays are full; the depths of the
    states found so far are still exact breadth-first distances."""
    n_squares = neighbours.shape[0]
    nb = state_boxes.shape[1]
    capacity = state_boxes.shape[0]
    arc_capacity = arc_src.shape[0]
    occupied = np.zeros(n_squares, dtype=np.bool_)
    mark = np.zeros(n_squares, dtype=np.int32)
    child_mark = np.zeros(n_squares, dtype=np.int32)
    walk = np.zeros(n_squares, dtype=np.int32)
    queue = np.zeros(n_squares, dtype=np.int32)
    child = np.zeros(nb, dtype=np.int16)
    n_states = 0
    n_arcs = 0
    stamp = 0
    for r in range(root_boxes.shape[0]):
        for k in range(nb):
            occupied[root_boxes[r, k]] = True
        stamp += 1
        norm = region_scan(root_players[r], neighbours, occupied, mark, stamp, walk, queue)
        for k in range(nb):
            occupied[root_boxes[r, k]] = False
        key = zobrist_player[norm]
        for k in range(nb):
            key ^= zobrist_box[root_boxes[r, k]]
        if table_find(table, key, norm, root_boxes[r], state_hash, state_player,
                      state_boxes) != EMPTY_SLOT:
            continue
        state_boxes[n_states] = root_boxes[r]
        state_player[n_states] = norm
        state_hash[n_states] = key
        state_depth[n_states] = 0
        table_insert(table, key, n_states)
        n_states += 1
    head = 0
    status = EXPLORE_OK
    while head < n_states:
        if n_states + 4 * nb >= capacity or n_arcs + 4 * nb >= arc_capacity:
            status = EXPLORE_TOO_BIG
            break
        state = head
        head += 1
        boxes = state_boxes[state]
        player = state_player[state]
        for k in range(nb):
            occupied[boxes[k]] = True
        stamp += 1
        region_scan(player, neighbours, occupied, mark, stamp, walk, queue)
        parent_stamp = stamp
        for i in range(nb):
            b = boxes[i]
            for d in range(N_DIRS):
                if pull:
                    stand = neighbours[b, d]
                    if stand < 0 or mark[stand] != parent_stamp:
                        continue
                    back = neighbours[stand, d]
                    if back < 0 or mark[back] != parent_stamp:
                        continue
                    target = stand
                    player_after = back
                else:
                    behind = neighbours[b, d ^ 1]
                    if behind < 0 or mark[behind] != parent_stamp:
                        continue
                    target = neighbours[b, d]
                    if target < 0 or occupied[target]:
                        continue
                    player_after = b
                occupied[b] = False
                occupied[target] = True
                stamp += 1
                norm = region_scan(player_after, neighbours, occupied, child_mark, stamp,
                                   walk, queue)
                occupied[target] = False
                occupied[b] = True
                pushed_box_set(boxes, i, target, child)
                key = (state_hash[state] ^ zobrist_box[b] ^ zobrist_box[target]
                       ^ zobrist_player[player] ^ zobrist_player[norm])
                found = table_find(table, key, norm, child, state_hash, state_player,
                                   state_boxes)
                if found == EMPTY_SLOT:
                    found = n_states
                    state_boxes[found] = child
                    state_player[found] = norm
                    state_hash[found] = key
                    state_depth[found] = state_depth[state] + 1
                    table_insert(table, key, found)
                    n_states += 1
                arc_src[n_arcs] = state
                arc_dst[n_arcs] = found
                arc_push[n_arcs] = b * N_DIRS + d
                n_arcs += 1
        for k in range(nb):
            occupied[boxes[k]] = False
    counts[0] = n_states
    counts[1] = n_arcs
    counts[2] = head
    return status


@njit(cache=True)
def multi_source_bfs(n_states: int, sources: np.ndarray, offsets: np.ndarray,
                     targets: np.ndarray) -> np.ndarray:
    """Breadth-first distances over a graph in CSR form (offsets, targets) from all sources."""
    dist = np.full(n_states, NO_DISTANCE, dtype=np.int32)
    queue = np.empty(n_states, dtype=np.int32)
    tail = 0
    for s in sources:
        if dist[s] == NO_DISTANCE:
            dist[s] = 0
            queue[tail] = s
            tail += 1
    head = 0
    while head < tail:
        s = queue[head]
        head += 1
        for k in range(offsets[s], offsets[s + 1]):
            t = targets[k]
            if dist[t] == NO_DISTANCE:
                dist[t] = dist[s] + 1
                queue[tail] = t
                tail += 1
    return dist


@njit(cache=True)
def diameter(n_states: int, live: np.ndarray, offsets: np.ndarray,
             targets: np.ndarray) -> int:
    """Longest shortest path between two live states (one breadth-first search per state)."""
    best = 0
    dist = np.empty(n_states, dtype=np.int32)
    queue = np.empty(n_states, dtype=np.int32)
    for s0 in range(n_states):
        if not live[s0]:
            continue
        dist[:] = NO_DISTANCE
        dist[s0] = 0
        queue[0] = s0
        head = 0
        tail = 1
        while head < tail:
            s = queue[head]
            head += 1
            if dist[s] > best:
                best = dist[s]
            for k in range(offsets[s], offsets[s + 1]):
                t = targets[k]
                if live[t] and dist[t] == NO_DISTANCE:
                    dist[t] = dist[s] + 1
                    queue[tail] = t
                    tail += 1
    return best


def csr(n_states: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Compressed adjacency (offsets, targets) of arcs src -> dst."""
    order = np.argsort(src, kind="stable")
    counts = np.bincount(src, minlength=n_states)
    offsets = np.zeros(n_states + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets, dst[order].astype(np.int32)


@dataclass
class StateGraph:
    """The push graph of one level. State 0 is the start; ``distance_to_goal`` is -1 on dead
    states (from which no goal state can be reached)."""

    board: Board
    boxes: np.ndarray            # int16[S, n_boxes]
    player: np.ndarray           # int16[S], smallest square of the player's region
    arc_src: np.ndarray          # int32[A]
    arc_dst: np.ndarray          # int32[A]
    arc_push: np.ndarray         # int32[A]: box_square*4 + direction
    distance_to_goal: np.ndarray  # int32[S]
    distance_from_start: np.ndarray  # int32[S]
    is_goal_state: np.ndarray    # bool[S]

    @property
    def n_states(self) -> int:
        return len(self.player)

    @property
    def live(self) -> np.ndarray:
        return self.distance_to_goal != NO_DISTANCE

    @property
    def solution_length(self) -> int | None:
        """Push-optimal solution length from the start (None if the start is dead)."""
        d = int(self.distance_to_goal[0])
        return None if d == NO_DISTANCE else d

    def live_arcs(self) -> np.ndarray:
        live = self.live
        return np.flatnonzero(live[self.arc_src] & live[self.arc_dst])

    def diameter(self) -> int | None:
        """Diameter of the live graph, or None above DIAMETER_MAX_STATES live states."""
        live = self.live
        if int(live.sum()) > DIAMETER_MAX_STATES:
            return None
        offsets, targets = csr(self.n_states, self.arc_src, self.arc_dst)
        return int(diameter(self.n_states, live, offsets, targets))

    def summary(self) -> dict:
        live = self.live
        return {
            "states": int(self.n_states),
            "arcs": int(len(self.arc_src)),
            "dead_states": int((~live).sum()),
            "live_states": int(live.sum()),
            "live_arcs": int(len(self.live_arcs())),
            "goal_states": int(self.is_goal_state.sum()),
            "diameter": self.diameter(),
            "max_distance_to_goal": int(self.distance_to_goal.max()) if live.any() else None,
            "solution_pushes": self.solution_length,
        }

    def arc_label(self, arc: int) -> str:
        """Moves of an arc: the walk from the region's smallest square, then the push."""
        board = self.board
        src = int(self.arc_src[arc])
        box, d = divmod(int(self.arc_push[arc]), N_DIRS)
        behind = int(board.neighbours[box, d ^ 1])
        occupied = set(int(b) for b in self.boxes[src])
        return walk_path(board, int(self.player[src]), behind, occupied) + DIR_CHARS[d].upper()

    def shortest_solution(self) -> list[int]:
        """Arcs of one push-optimal path from the start to a goal state (empty if none)."""
        if self.solution_length in (None, 0):
            return []
        by_src: dict[int, list[int]] = {}
        for a in range(len(self.arc_src)):
            by_src.setdefault(int(self.arc_src[a]), []).append(a)
        path, state = [], 0
        while self.distance_to_goal[state] > 0:
            want = self.distance_to_goal[state] - 1
            arc = next(a for a in by_src[state] if self.distance_to_goal[self.arc_dst[a]] == want)
            path.append(arc)
            state = int(self.arc_dst[arc])
        return path

    # ---------------------------------------------------------------- export
    def _export_parts(self, limit: int) -> tuple[list[int], list[int]]:
        live = np.flatnonzero(self.live)
        if len(live) > limit:
            raise GraphTooLarge(
                f"the live graph has {len(live)} states, above the export limit of {limit}; "
                "raise --max-export or pick a smaller level")
        return [int(s) for s in live], [int(a) for a in self.live_arcs()]

    def to_json(self, limit: int = EXPORT_MAX_STATES) -> str:
        states, arcs = self._export_parts(limit)
        data = {
            "level": self.board.level.title,
            "summary": self.summary(),
            "states": [{
                "id": s,
                "boxes": [self.board.name(int(b)) for b in self.boxes[s]],
                "player_region": self.board.name(int(self.player[s])),
                "distance_to_goal": int(self.distance_to_goal[s]),
                "start": s == 0,
                "goal": bool(self.is_goal_state[s]),
                "xsb": self.board.render(self.boxes[s], int(self.player[s])),
            } for s in states],
            "arcs": [{"source": int(self.arc_src[a]), "target": int(self.arc_dst[a]),
                      "moves": self.arc_label(a)} for a in arcs],
        }
        return json.dumps(data, indent=1)

    def to_dot(self, limit: int = EXPORT_MAX_STATES) -> str:
        states, arcs = self._export_parts(limit)
        lines = ["digraph sokoban {", "  node [shape=circle];"]
        for s in states:
            attrs = [f'label="{int(self.distance_to_goal[s])}"']
            if s == 0:
                attrs.append("shape=doublecircle")
            if self.is_goal_state[s]:
                attrs.append("style=filled fillcolor=palegreen")
            lines.append(f"  s{s} [{' '.join(attrs)}];")
        for a in arcs:
            lines.append(f'  s{int(self.arc_src[a])} -> s{int(self.arc_dst[a])} '
                         f'[label="{self.arc_label(a)}"];')
        lines.append("}")
        return "\n".join(lines) + "\n"

    def to_graphml(self, limit: int = EXPORT_MAX_STATES) -> str:
        states, arcs = self._export_parts(limit)
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">',
               '  <key id="dist" for="node" attr.name="distance_to_goal" attr.type="int"/>',
               '  <key id="start" for="node" attr.name="start" attr.type="boolean"/>',
               '  <key id="goal" for="node" attr.name="goal" attr.type="boolean"/>',
               '  <key id="xsb" for="node" attr.name="xsb" attr.type="string"/>',
               '  <key id="moves" for="edge" attr.name="moves" attr.type="string"/>',
               '  <graph id="G" edgedefault="directed">']
        for s in states:
            xsb = escape(self.board.render(self.boxes[s], int(self.player[s])))
            out.append(f'    <node id="s{s}"><data key="dist">{int(self.distance_to_goal[s])}'
                       f'</data><data key="start">{str(s == 0).lower()}</data>'
                       f'<data key="goal">{str(bool(self.is_goal_state[s])).lower()}</data>'
                       f'<data key="xsb">{xsb}</data></node>')
        for a in arcs:
            out.append(f'    <edge source="s{int(self.arc_src[a])}" '
                       f'target="s{int(self.arc_dst[a])}"><data key="moves">'
                       f'{self.arc_label(a)}</data></edge>')
        out += ["  </graph>", "</graphml>"]
        return "\n".join(out) + "\n"


def allocate(board: Board, max_states: int) -> dict[str, np.ndarray]:
    nb = board.n_boxes
    table_size = 1 << int(np.ceil(np.log2(max(4 * max_states, 16))))
    arc_capacity = max(64, max_states * min(4 * nb, 8))
    return {
        "boxes": np.zeros((max_states, nb), dtype=np.int16),
        "player": np.zeros(max_states, dtype=np.int16),
        "hash": np.zeros(max_states, dtype=np.uint64),
        "depth": np.zeros(max_states, dtype=np.int32),
        "table": np.full(table_size, EMPTY_SLOT, dtype=np.int32),
        "arc_src": np.zeros(arc_capacity, dtype=np.int32),
        "arc_dst": np.zeros(arc_capacity, dtype=np.int32),
        "arc_push": np.zeros(arc_capacity, dtype=np.int32),
    }


def build_graph(board: Board, max_states: int = DEFAULT_MAX_STATES) -> StateGraph:
    """Enumerate every state reachable from the start by pushes, then find the dead ones.

    Raises GraphTooLarge (with the count reached) above ``max_states``."""
    a = allocate(board, max_states)
    counts = np.zeros(3, dtype=np.int64)
    status = explore(board.neighbours, board.zobrist_box, board.zobrist_player,
                     board.start_boxes.reshape(1, -1),
                     np.array([board.start_player], dtype=np.int16), False,
                     a["boxes"], a["player"], a["hash"], a["depth"], a["table"], a["arc_src"],
                     a["arc_dst"], a["arc_push"], counts)
    if status == EXPLORE_TOO_BIG:
        raise GraphTooLarge(
            f"more than {int(counts[0])} states (limit {max_states}); the full graph is only "
            "practical for small levels - raise --max-states or use `sokoban solve`")
    n, m = int(counts[0]), int(counts[1])
    boxes, player = a["boxes"][:n].copy(), a["player"][:n].copy()
    src, dst, push = a["arc_src"][:m].copy(), a["arc_dst"][:m].copy(), a["arc_push"][:m].copy()
    is_goal_state = board.is_goal[boxes].all(axis=1)
    offsets, targets = csr(n, dst, src)
    to_goal = multi_source_bfs(n, np.flatnonzero(is_goal_state).astype(np.int32), offsets,
                               targets)
    offsets, targets = csr(n, src, dst)
    from_start = multi_source_bfs(n, np.zeros(1, dtype=np.int32), offsets, targets)
    return StateGraph(board, boxes, player, src, dst, push, to_goal, from_start, is_goal_state)


def goal_roots(board: Board) -> tuple[np.ndarray, np.ndarray]:
    """Every solved state: boxes on all goals, the player in each free region."""
    goals = [int(g) for g in board.goal_squares]
    free = [s for s in range(board.n_squares) if not board.is_goal[s]]
    seen: set[int] = set()
    players = []
    for s in free:
        if s in seen:
            continue
        players.append(s)
        queue = deque([s])
        seen.add(s)
        while queue:
            x = queue.popleft()
            for d in range(N_DIRS):
                t = int(board.neighbours[x, d])
                if t >= 0 and t not in seen and not board.is_goal[t]:
                    seen.add(t)
                    queue.append(t)
    roots = np.array([goals] * len(players), dtype=np.int16).reshape(len(players), len(goals))
    return roots, np.array(players, dtype=np.int16)
