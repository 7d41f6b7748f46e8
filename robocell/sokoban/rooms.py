"""Goal-room macros: rooms of goals behind one entrance square, filled in a packing order.

A goal room is the part of the board cut off by removing one square (the entrance) that holds
goals, but no box and not the player at the start. Its packing order comes from retrograde
analysis: with every goal of the room full, repeatedly take out the box whose goal can still be
filled last - a lone box standing on the entrance, the player outside, can be pushed to it with
the goals before it full, and the player can walk out again. The fill order is the reverse.

For each step k of the order the push sequence that carries a box from the entrance to goal k
(with goals 0..k-1 full) is precomputed. The fast search then never pushes a box into a room
square; a box on the entrance goes straight to the next goal of the order as one macro arc.
That keeps solutions valid (every macro is replayed push by push) but not optimal.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from robocell.sokoban.board import N_DIRS, NO_SQUARE, Board

NO_ROOM = -1
MACRO_SHIFT = 16
"""A macro arc's push code: (first push) | (macro number + 1) << MACRO_SHIFT."""
MAX_ROOM_SQUARES = 120
"""Rooms larger than this are left to the ordinary search (the path search is quadratic)."""


@dataclass
class GoalRooms:
    """Compiled-search view of the goal rooms of a board (arrays) plus the macro push lists."""

    room_of: np.ndarray        # int32[n]: room number of a room square, NO_ROOM elsewhere
    entrance_room: np.ndarray  # int32[n]: room number whose entrance this square is, or NO_ROOM
    order: np.ndarray          # int16[n_rooms, max_goals]: goals in packing order
    size: np.ndarray           # int32[n_rooms]: goals in each room
    outside: np.ndarray        # int16[n_rooms, max_goals]: where the player must stand first
    final_player: np.ndarray   # int16[n_rooms, max_goals]: player square after the macro
    n_pushes: np.ndarray       # int32[n_rooms, max_goals]: pushes in the macro
    first: np.ndarray          # int32[n_rooms]: macro number of step 0 of each room
    macros: list[list[int]] = field(default_factory=list)  # push codes (square*4 + dir)

    @property
    def n_rooms(self) -> int:
        return int(self.size.shape[0])


def no_rooms(n_squares: int) -> GoalRooms:
    """An empty set of rooms (the search then behaves as without macros)."""
    return GoalRooms(np.full(n_squares, NO_ROOM, np.int32), np.full(n_squares, NO_ROOM, np.int32),
                     np.zeros((1, 1), np.int16), np.zeros(0, np.int32),
                     np.zeros((1, 1), np.int16), np.zeros((1, 1), np.int16),
                     np.zeros((1, 1), np.int32), np.zeros(1, np.int32))


def _component(board: Board, start: int, removed: int) -> set[int]:
    seen = {start}
    stack = [start]
    while stack:
        s = stack.pop()
        for d in range(N_DIRS):
            t = int(board.neighbours[s, d])
            if t != NO_SQUARE and t != removed and t not in seen:
                seen.add(t)
                stack.append(t)
    return seen


def _candidate_rooms(board: Board) -> list[tuple[int, frozenset[int]]]:
    """(entrance, room squares) for every cut square whose far side is a goal room."""
    boxes = set(int(b) for b in board.start_boxes)
    goals = set(int(g) for g in board.goal_squares)
    player = int(board.start_player)
    found: dict[frozenset[int], int] = {}
    for e in range(board.n_squares):
        if e in goals or e in boxes or e == player:
            continue
        done: set[int] = set()
        for d in range(N_DIRS):
            t = int(board.neighbours[e, d])
            if t == NO_SQUARE or t in done:
                continue
            comp = _component(board, t, e)
            done |= comp
            if (len(comp) > MAX_ROOM_SQUARES or player in comp or comp & boxes
                    or not comp & goals or len(comp) + 1 >= board.n_squares):
                continue
            found.setdefault(frozenset(comp), e)
    return [(e, room) for room, e in found.items()]


def _push_path(board: Board, area: set[int], room: set[int], entrance: int, goal: int,
               blocked: set[int]) -> tuple[int, list[int], int] | None:
    """Fewest pushes carrying a box from the entrance to ``goal`` inside ``area`` around the
    ``blocked`` boxes, the player starting outside the room next to the entrance and able to
    walk out afterwards. Returns (player start square, push codes, final player square)."""
    nb = board.neighbours
    outside = [int(nb[entrance, d]) for d in range(N_DIRS)
               if nb[entrance, d] != NO_SQUARE and int(nb[entrance, d]) not in room]
    if not outside:
        return None
    best = None
    for start_player in outside:
        if start_player in blocked:
            continue
        # 0-1 breadth-first search over (box, player): walking costs 0, pushing costs 1.
        start = (entrance, start_player)
        dist = {start: 0}
        parent: dict[tuple[int, int], tuple[tuple[int, int], int]] = {}
        queue = deque([start])
        end = None
        while queue:
            state = queue.popleft()
            box, pl = state
            if box == goal and _walks_out(board, area, blocked | {goal}, pl, outside):
                end = state
                break
            for d in range(N_DIRS):
                t = int(nb[pl, d])
                if t == NO_SQUARE or t not in area or t in blocked:
                    continue
                if t == box:
                    beyond = int(nb[box, d])
                    if beyond == NO_SQUARE or beyond not in room or beyond in blocked:
                        continue
                    nxt, cost, code = (beyond, box), 1, box * N_DIRS + d
                else:
                    nxt, cost, code = (box, t), 0, -1
                nd = dist[state] + cost
                if nd < dist.get(nxt, 1 << 30):
                    dist[nxt] = nd
                    parent[nxt] = (state, code)
                    if cost == 0:
                        queue.appendleft(nxt)
                    else:
                        queue.append(nxt)
        if end is None:
            continue
        codes = []
        state = end
        while state != start:
            state, code = parent[state]
            if code >= 0:
                codes.append(code)
        codes.reverse()
        if best is None or len(codes) < len(best[1]):
            best = (start_player, codes, end[1])
    return best


def _walks_out(board: Board, area: set[int], blocked: set[int], player: int,
               outside: list[int]) -> bool:
    seen = {player}
    stack = [player]
    targets = set(outside)
    while stack:
        s = stack.pop()
        if s in targets:
            return True
        for d in range(N_DIRS):
            t = int(board.neighbours[s, d])
            if t != NO_SQUARE and t in area and t not in blocked and t not in seen:
                seen.add(t)
                stack.append(t)
    return False


def _packing_order(board: Board, entrance: int, room: frozenset[int]
                   ) -> list[tuple[int, int, list[int], int]] | None:
    """Goals of the room in fill order with their macros, or None if retrograde analysis
    finds no order."""
    room_set = set(room)
    area = room_set | {entrance} | {int(board.neighbours[entrance, d]) for d in range(N_DIRS)
                                    if board.neighbours[entrance, d] != NO_SQUARE}
    full = set(int(g) for g in board.goal_squares if int(g) in room_set)
    nearness = board.push_distance.min(axis=0)
    removed: list[tuple[int, int, list[int], int]] = []
    while full:
        chosen = None
        # Take out the goal nearest the entrance first (it is filled last).
        for goal in sorted(full, key=lambda g: int(nearness[g])):
            path = _push_path(board, area, room_set, entrance, goal, full - {goal})
            if path is not None:
                chosen = (goal, *path)
                break
        if chosen is None:
            return None
        removed.append(chosen)
        full.discard(chosen[0])
    removed.reverse()
    return removed


def goal_rooms(board: Board) -> GoalRooms:
    """Find the goal rooms of a board and their packing orders (rooms without an order are
    dropped; nested candidates keep the one with the most goals, then the fewest squares)."""
    goals = set(int(g) for g in board.goal_squares)
    candidates = sorted(_candidate_rooms(board),
                        key=lambda c: (-len(c[1] & goals), len(c[1])))
    chosen: list[tuple[int, frozenset[int], list]] = []
    taken: set[int] = set()
    for entrance, room in candidates:
        if room & taken or entrance in taken:
            continue
        order = _packing_order(board, entrance, room)
        if order is None:
            continue
        chosen.append((entrance, room, order))
        taken |= room | {entrance}
    if not chosen:
        return no_rooms(board.n_squares)
    n = board.n_squares
    width = max(len(order) for _, _, order in chosen)
    rooms = GoalRooms(
        room_of=np.full(n, NO_ROOM, np.int32), entrance_room=np.full(n, NO_ROOM, np.int32),
        order=np.zeros((len(chosen), width), np.int16), size=np.zeros(len(chosen), np.int32),
        outside=np.zeros((len(chosen), width), np.int16),
        final_player=np.zeros((len(chosen), width), np.int16),
        n_pushes=np.zeros((len(chosen), width), np.int32),
        first=np.zeros(len(chosen), np.int32))
    for r, (entrance, room, order) in enumerate(chosen):
        for s in room:
            rooms.room_of[s] = r
        rooms.entrance_room[entrance] = r
        rooms.size[r] = len(order)
        rooms.first[r] = len(rooms.macros)
        for k, (goal, start_player, codes, final) in enumerate(order):
            rooms.order[r, k] = goal
            rooms.outside[r, k] = start_player
            rooms.final_player[r, k] = final
            rooms.n_pushes[r, k] = len(codes)
            rooms.macros.append(codes)
    return rooms
