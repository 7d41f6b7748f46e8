"""Goal-room macros: rooms of goals behind a narrow entrance, filled in a packing order.

A goal room is the part of the board cut off by removing one square, or two neighbouring
squares (the entrance), that holds goals, but no box and not the player at the start. Its
packing order comes from retrograde analysis: with every goal of the room full, repeatedly
take out the box whose goal can still be filled last - a lone box standing on an entrance
square, the player outside, can be pushed to it with the goals before it full, and the player
can walk out again. The fill order is the reverse.

For each step k of the order and each entrance square the push sequence that carries a box
from there to goal k (with goals 0..k-1 full) is precomputed. The fast search then never
pushes a box into a room square; a box on an entrance square goes straight to the next goal
of the order as one macro arc. That keeps solutions valid (every macro is replayed push by
push) but not optimal.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from robocell.sokoban.board import N_DIRS, NO_SQUARE, Board, floor_region

NO_ROOM = -1
NO_MACRO = -1
MAX_DOORWAY = 2
"""An entrance is one square or two neighbouring squares (a two-wide doorway)."""
MACRO_SHIFT = 16
"""A macro arc's push code: (first push) | (macro number + 1) << MACRO_SHIFT."""
MAX_ROOM_SQUARES = 120
"""Rooms larger than this are left to the ordinary search (the path search is quadratic)."""


@dataclass
class GoalRooms:
    """Compiled-search view of the goal rooms of a board (arrays) plus the macro push lists."""

    room_of: np.ndarray        # int32[n]: room number of a room square, NO_ROOM elsewhere
    entrance_room: np.ndarray  # int32[n]: room number whose entrance this square is, or NO_ROOM
    entrance_slot: np.ndarray  # int32[n]: number of the entrance (over all rooms), or NO_ROOM
    order: np.ndarray          # int16[n_rooms, max_goals]: goals in packing order
    size: np.ndarray           # int32[n_rooms]: goals in each room
    outside: np.ndarray        # int16[n_entrances, max_goals]: where the player must stand
    final_player: np.ndarray   # int16[n_entrances, max_goals]: player square after the macro
    n_pushes: np.ndarray       # int32[n_entrances, max_goals]: pushes in the macro, NO_MACRO if
                               # the next goal cannot be reached from this entrance
    first: np.ndarray          # int32[n_entrances]: macro number of step 0 of each entrance
    macros: list[list[int]] = field(default_factory=list)  # push codes (square*4 + dir)

    @property
    def n_rooms(self) -> int:
        return int(self.size.shape[0])


def no_rooms(n_squares: int) -> GoalRooms:
    """An empty set of rooms (the search then behaves as without macros)."""
    return GoalRooms(np.full(n_squares, NO_ROOM, np.int32), np.full(n_squares, NO_ROOM, np.int32),
                     np.full(n_squares, NO_ROOM, np.int32),
                     np.zeros((1, 1), np.int16), np.zeros(0, np.int32),
                     np.zeros((1, 1), np.int16), np.zeros((1, 1), np.int16),
                     np.zeros((1, 1), np.int32), np.zeros(1, np.int32))


def _candidate_rooms(board: Board) -> list[tuple[tuple[int, ...], frozenset[int]]]:
    """(entrance squares, room squares) for every cut of one square, or of two neighbouring
    squares, whose far side is a goal room."""
    boxes = set(int(b) for b in board.start_boxes)
    goals = set(int(g) for g in board.goal_squares)
    player = int(board.start_player)
    cuts: list[tuple[int, ...]] = []
    for e in range(board.n_squares):
        if e in goals or e == player:
            continue
        cuts.append((e,))
        for d in (1, 3):            # down, right: each pair once
            e2 = int(board.neighbours[e, d])
            if e2 != NO_SQUARE and e2 not in goals and e2 != player:
                cuts.append((e, e2))
    found: dict[frozenset[int], tuple[int, ...]] = {}
    for cut in cuts:
        done: set[int] = set()
        for e in cut:
            for d in range(N_DIRS):
                t = int(board.neighbours[e, d])
                if t == NO_SQUARE or t in done or t in cut:
                    continue
                comp = floor_region(board, t, cut)
                done |= comp
                if (len(comp) > MAX_ROOM_SQUARES or player in comp or comp & boxes
                        or not comp & goals or len(comp) + len(cut) >= board.n_squares):
                    continue
                # Every cut square must border the room (else a smaller cut exists).
                if not all(any(int(board.neighbours[c, k]) in comp for k in range(N_DIRS))
                           for c in cut):
                    continue
                room = frozenset(comp)
                if room not in found or len(cut) < len(found[room]):
                    found[room] = cut
    return [(cut, room) for room, cut in found.items()]


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


def _area(board: Board, room: set[int], entrance: int) -> set[int]:
    """Squares a macro from ``entrance`` may use: the room, the entrance, its neighbours
    outside the room (other entrance squares excluded by the caller)."""
    return room | {entrance} | {int(board.neighbours[entrance, d]) for d in range(N_DIRS)
                                if board.neighbours[entrance, d] != NO_SQUARE}


def _packing_order(board: Board, cut: tuple[int, ...], room: frozenset[int]
                   ) -> list[tuple[int, list]] | None:
    """Goals of the room in fill order, each with its macro from every entrance square (None
    where that entrance cannot reach it), or None if retrograde analysis finds no order."""
    room_set = set(room)
    areas = [_area(board, room_set, e) - (set(cut) - {e}) for e in cut]
    full = set(int(g) for g in board.goal_squares if int(g) in room_set)
    nearness = board.push_distance.min(axis=0)
    removed: list[tuple[int, list]] = []
    while full:
        chosen = None
        # Take out the goal nearest the entrance first (it is filled last).
        for goal in sorted(full, key=lambda g: int(nearness[g])):
            paths = [_push_path(board, area, room_set, e, goal, full - {goal})
                     for e, area in zip(cut, areas, strict=True)]
            if any(p is not None for p in paths):
                chosen = (goal, paths)
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
                        key=lambda c: (-len(c[1] & goals), len(c[1]), len(c[0])))
    chosen: list[tuple[tuple[int, ...], frozenset[int], list]] = []
    taken: set[int] = set()
    for cut, room in candidates:
        if room & taken or taken.intersection(cut):
            continue
        order = _packing_order(board, cut, room)
        if order is None:
            continue
        chosen.append((cut, room, order))
        taken |= room | set(cut)
    if not chosen:
        return no_rooms(board.n_squares)
    n = board.n_squares
    width = max(len(order) for _, _, order in chosen)
    n_entrances = sum(len(cut) for cut, _, _ in chosen)
    rooms = GoalRooms(
        room_of=np.full(n, NO_ROOM, np.int32), entrance_room=np.full(n, NO_ROOM, np.int32),
        entrance_slot=np.full(n, NO_ROOM, np.int32),
        order=np.zeros((len(chosen), width), np.int16), size=np.zeros(len(chosen), np.int32),
        outside=np.zeros((n_entrances, width), np.int16),
        final_player=np.zeros((n_entrances, width), np.int16),
        n_pushes=np.full((n_entrances, width), NO_MACRO, np.int32),
        first=np.zeros(n_entrances, np.int32))
    slot = 0
    for r, (cut, room, order) in enumerate(chosen):
        for s in room:
            rooms.room_of[s] = r
        rooms.size[r] = len(order)
        for k, (goal, _) in enumerate(order):
            rooms.order[r, k] = goal
        for j, e in enumerate(cut):
            rooms.entrance_room[e] = r
            rooms.entrance_slot[e] = slot
            rooms.first[slot] = len(rooms.macros)
            for k, (_, paths) in enumerate(order):
                path = paths[j]
                if path is None:
                    rooms.macros.append([])
                    continue
                start_player, codes, final = path
                rooms.outside[slot, k] = start_player
                rooms.final_player[slot, k] = final
                rooms.n_pushes[slot, k] = len(codes)
                rooms.macros.append(codes)
            slot += 1
    return rooms
