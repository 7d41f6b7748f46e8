"""The board as flat arrays: interior squares, neighbours, goals, dead squares, push distances."""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
from numba import njit

from robocell.sokoban.level import Level, LevelError, square_name

N_DIRS = 4
UP, DOWN, LEFT, RIGHT = 0, 1, 2, 3
DIR_CHARS = "udlr"
"""LURD letter of each direction (lower case = walk, upper case = push)."""
DIR_DELTAS = ((-1, 0), (1, 0), (0, -1), (0, 1))
NO_SQUARE = -1
UNREACHABLE = 1 << 20
"""Push distance of a box that can never reach the goal; any bound that sums it is infinite."""
ZOBRIST_SEED = 0x50B0BA
N_SIDE_MASKS = 1 << N_DIRS
"""Sets of sides of a box (bit d = the square in direction d) the player can get to."""
FROZEN_MASK = 0
"""Side mask of a box that can never move again: zero pushes to its own goal, no other."""


def opposite(direction: int) -> int:
    """The direction pointing the other way (up <-> down, left <-> right)."""
    return direction ^ 1


@dataclass
class Board:
    """A validated level reduced to its interior squares, numbered 0..n_squares-1 row-major.

    Boxes that sit on goals outside the player's reach can never move: they count as walls
    and their goals are dropped. Everything a search needs is a numpy array indexed by square.
    """

    level: Level
    n_squares: int
    square_rc: np.ndarray       # int16[n, 2]: row, column of each square
    index_grid: np.ndarray      # int16[H, W]: square number or NO_SQUARE
    neighbours: np.ndarray      # int16[n, 4]: square in each direction or NO_SQUARE
    is_goal: np.ndarray         # bool[n]
    goal_squares: np.ndarray    # int16[n_goals]
    start_boxes: np.ndarray     # int16[n_boxes], sorted
    start_player: int
    dead: np.ndarray            # bool[n]: a box here can never reach any goal
    push_distance: np.ndarray   # int32[n_goals, n]: pushes from square to goal, one box alone
    zobrist_box: np.ndarray     # uint64[n]
    zobrist_player: np.ndarray  # uint64[n]
    region_with_box: np.ndarray  # int8[n, n]: [b, q] region of square q when only b is blocked
    push_cost: np.ndarray       # int32[n_goals, n, 16]: pushes to the goal from a square, given
                                # the set of its sides the player can reach (bit mask)
    goal_area: np.ndarray       # int32[n]: connected group of goal squares, -1 off goal
    goal_depth: np.ndarray      # int32[n]: steps inside the group from its entrance, -1 off goal

    @property
    def n_boxes(self) -> int:
        return len(self.start_boxes)

    def square(self, row: int, col: int) -> int:
        return int(self.index_grid[row, col])

    def name(self, square: int) -> str:
        r, c = self.square_rc[square]
        return square_name(int(r), int(c))

    def render(self, boxes: np.ndarray | list[int], player: int) -> str:
        """XSB drawing of a state of this board (fixed boxes outside the interior kept)."""
        grid = [list(row) for row in self.level.rows]
        inner = set(int(s) for s in range(self.n_squares))
        for s in inner:
            r, c = self.square_rc[s]
            grid[r][c] = "." if self.is_goal[s] else " "
        box_set = set(int(b) for b in boxes)
        for s in box_set:
            r, c = self.square_rc[s]
            grid[r][c] = "*" if self.is_goal[s] else "$"
        r, c = self.square_rc[player]
        grid[r][c] = "+" if self.is_goal[player] else "@"
        return "\n".join("".join(row).rstrip() for row in grid)


def floor_region(board: Board, start: int, blocked: Collection[int]) -> set[int]:
    """The squares the player reaches from ``start`` without entering ``blocked`` (boxes,
    cut squares); an ordinary walk for the set-up code, not for the search."""
    seen = {start}
    stack = [start]
    while stack:
        s = stack.pop()
        for d in range(N_DIRS):
            t = int(board.neighbours[s, d])
            if t != NO_SQUARE and t not in blocked and t not in seen:
                seen.add(t)
                stack.append(t)
    return seen


def build_board(level: Level) -> Board:
    """Precompute the flat arrays of a level (validates it first)."""
    level.validate()
    interior = level.reachable()
    goals = level.goals
    boxes = level.boxes
    order = sorted(interior)
    height, width = level.height, level.width
    index_grid = np.full((height, width), NO_SQUARE, dtype=np.int16)
    for i, (r, c) in enumerate(order):
        index_grid[r, c] = i
    n = len(order)
    square_rc = np.array(order, dtype=np.int16).reshape(n, 2)
    neighbours = np.full((n, N_DIRS), NO_SQUARE, dtype=np.int16)
    for i, (r, c) in enumerate(order):
        for d, (dr, dc) in enumerate(DIR_DELTAS):
            nr, nc = r + dr, c + dc
            if 0 <= nr < height and 0 <= nc < width and index_grid[nr, nc] != NO_SQUARE:
                neighbours[i, d] = index_grid[nr, nc]
    is_goal = np.zeros(n, dtype=np.bool_)
    for r, c in goals:
        if (r, c) in interior:
            is_goal[index_grid[r, c]] = True
    goal_squares = np.flatnonzero(is_goal).astype(np.int16)
    start_boxes = np.array(sorted(int(index_grid[r, c]) for r, c in boxes if (r, c) in interior),
                           dtype=np.int16)
    if len(start_boxes) != len(goal_squares):
        raise LevelError(f"level {level.index}: {len(start_boxes)} movable boxes but "
                         f"{len(goal_squares)} reachable goals")
    player = int(index_grid[level.player])
    push_distance = np.full((len(goal_squares), n), UNREACHABLE, dtype=np.int32)
    for gi, goal in enumerate(goal_squares):
        push_distance[gi] = _pull_distances(int(goal), neighbours)
    dead = (push_distance.min(axis=0) >= UNREACHABLE) if len(goal_squares) else np.ones(n, bool)
    rng = np.random.default_rng(ZOBRIST_SEED)
    zobrist_box = rng.integers(1, np.iinfo(np.uint64).max, size=n, dtype=np.uint64)
    zobrist_player = rng.integers(1, np.iinfo(np.uint64).max, size=n, dtype=np.uint64)
    goal_area, goal_depth = _goal_rooms(is_goal, neighbours)
    region_with_box = regions_with_box(neighbours)
    push_cost = np.full((len(goal_squares), n, N_SIDE_MASKS), UNREACHABLE, dtype=np.int32)
    for gi, goal in enumerate(goal_squares):
        push_cost[gi] = side_push_costs(int(goal), neighbours, region_with_box)
    return Board(level, n, square_rc, index_grid, neighbours, is_goal, goal_squares,
                 start_boxes, player, dead.astype(np.bool_), push_distance, zobrist_box,
                 zobrist_player, region_with_box, push_cost, goal_area, goal_depth)


@njit(cache=True)
def region_scan(start: int, neighbours: np.ndarray, occupied: np.ndarray, mark: np.ndarray,
                stamp: int, walk: np.ndarray | None, queue: np.ndarray) -> int:
    """The player's region: a breadth-first walk from ``start`` over free squares that marks
    every reachable square with ``stamp`` in ``mark``, stores walking distances in ``walk``
    (None: not wanted), and returns the smallest reachable square (the normalised player
    position of the region). ``queue`` (int32[n]) is scratch."""
    head = 0
    tail = 1
    queue[0] = start
    mark[start] = stamp
    if walk is not None:
        walk[start] = 0
    smallest = start
    while head < tail:
        s = queue[head]
        head += 1
        if s < smallest:
            smallest = s
        for d in range(4):
            t = neighbours[s, d]
            if t >= 0 and mark[t] != stamp and not occupied[t]:
                mark[t] = stamp
                if walk is not None:
                    walk[t] = walk[s] + 1
                queue[tail] = t
                tail += 1
    return smallest


# The eight squares around a square, in turn: (first step, second step or -1). Each is next
# to the one before it, so free squares in a row of this ring are joined around the centre.
_RING_STEPS = ((UP, -1), (UP, RIGHT), (RIGHT, -1), (DOWN, RIGHT), (DOWN, -1), (DOWN, LEFT),
               (LEFT, -1), (UP, LEFT))


@njit(cache=True, inline="always")
def _ring_square(square: int, first: int, second: int, neighbours: np.ndarray) -> int:
    """The square one step ``first`` then one step ``second`` (-1: none) from ``square``, by
    either path round the corner; -1 when it is a wall."""
    a = neighbours[square, first]
    if second < 0:
        return a
    if a >= 0:
        return neighbours[a, second]
    c = neighbours[square, second]
    return neighbours[c, first] if c >= 0 else -1


@njit(cache=True)
def joined_around(square: int, neighbours: np.ndarray, occupied: np.ndarray) -> bool:
    """True when the free neighbours of ``square`` are joined by free squares of the ring of
    eight around it (so blocking ``square`` cuts no free area in two); False when that cannot
    be told from the ring."""
    free = 0
    n_free = 0
    for k in range(8):
        t = _ring_square(square, _RING_STEPS[k][0], _RING_STEPS[k][1], neighbours)
        if t >= 0 and not occupied[t]:
            free |= 1 << k
            n_free += 1
    if n_free == 8:
        return True
    # Count the runs of free ring squares that hold a free neighbour (even places).
    start = 0
    while free & (1 << start):
        start += 1
    runs = 0
    in_run = False
    counted = False
    for i in range(1, 9):
        k = (start + i) % 8
        if free & (1 << k):
            if not in_run:
                in_run = True
                counted = False
            if k % 2 == 0 and not counted:
                counted = True
                runs += 1
        else:
            in_run = False
    return runs <= 1


@njit(cache=True)
def region_after_move(box: int, target: int, region_min: int, neighbours: np.ndarray,
                      occupied: np.ndarray, mark: np.ndarray, stamp: int,
                      block: np.ndarray, use_blocks: bool) -> int:
    """The player's region after the box on ``box`` went to ``target`` (``occupied`` shows the
    position after the move), told without a walk when it can be: the region before
    (``mark == stamp``, smallest square ``region_min``) with ``box`` added and ``target``
    taken out. That holds when ``target`` was in it, every free neighbour of ``box`` was in it
    (the freed square joins no other area) and ``target`` cuts nothing off: its edges to free
    squares all in one biconnected block (``use_blocks``: ``block`` from
    ``box_moves.edge_blocks`` on the board with ``box`` free), else ``joined_around``.
    Returns the region's smallest square, or -1 when it must be walked (``region_scan``)."""
    if target == box or target == region_min or mark[target] != stamp:
        return -1
    for d in range(4):
        t = neighbours[box, d]
        if t >= 0 and t != target and not occupied[t] and mark[t] != stamp:
            return -1
    if use_blocks:
        first = -1
        for d in range(4):
            t = neighbours[target, d]
            if t >= 0 and not occupied[t]:
                if first < 0:
                    first = block[target * 4 + d]
                elif block[target * 4 + d] != first:
                    return -1
    elif not joined_around(target, neighbours, occupied):
        return -1
    return region_min if region_min < box else box


@njit(cache=True)
def count_regions(neighbours: np.ndarray, occupied: np.ndarray, mark: np.ndarray, stamp: int,
                  queue: np.ndarray) -> int:
    """Connected areas of free squares (the player's possible regions); ``mark`` is scratch
    stamped with ``stamp``."""
    regions = 0
    for s0 in range(neighbours.shape[0]):
        if occupied[s0] or mark[s0] == stamp:
            continue
        regions += 1
        region_scan(s0, neighbours, occupied, mark, stamp, None, queue)
    return regions


@njit(cache=True)
def label_regions(neighbours: np.ndarray, wall: np.ndarray, label: np.ndarray,
                  stack: np.ndarray) -> None:
    """For every square b: label[b, q] is the connected region of square q when b and the
    squares marked in ``wall`` are blocked (labels 0, 1, ...; -1 on b and on the walls, and
    the whole row -1 when b is a wall). ``stack`` (int32[n]) is scratch."""
    n = neighbours.shape[0]
    for b in range(n):
        for q in range(n):
            label[b, q] = -1
        if wall[b]:
            continue
        k = 0
        for s0 in range(n):
            if s0 == b or wall[s0] or label[b, s0] >= 0:
                continue
            label[b, s0] = k
            top = 1
            stack[0] = s0
            while top > 0:
                top -= 1
                s = stack[top]
                for d in range(4):
                    t = neighbours[s, d]
                    if t >= 0 and t != b and not wall[t] and label[b, t] < 0:
                        label[b, t] = k
                        stack[top] = t
                        top += 1
            k += 1


@njit(cache=True)
def regions_with_box(neighbours: np.ndarray) -> np.ndarray:
    """For every square b: the connected regions of the other squares when only b is blocked
    (labels 0, 1, ...; -1 on b itself). The player can walk between two sides of a lone box
    exactly when they carry the same label."""
    n = neighbours.shape[0]
    label = np.full((n, n), -1, dtype=np.int8)
    label_regions(neighbours, np.zeros(n, dtype=np.bool_), label, np.empty(n, dtype=np.int32))
    return label


@njit(cache=True)
def side_distances(goal: int, neighbours: np.ndarray, label: np.ndarray, dist: np.ndarray,
                   queue: np.ndarray) -> None:
    """dist[square, side]: fewest pushes that bring a lone box from the square to ``goal``
    when the player starts on that side of it (UNREACHABLE if none), with ``label`` from
    ``label_regions`` (its walls are walls here too). Breadth-first search backwards over
    (box square, player side) states; walking round the box to a side of the same region is
    free. ``queue`` (int32[4n]) is scratch."""
    n = neighbours.shape[0]
    for b in range(n):
        for s in range(4):
            dist[b, s] = UNREACHABLE
    tail = 0
    # Each state is queued once: reaching one side of a box also reaches every side in the
    # same region (walking round the box is free), so plain breadth-first order is exact.
    for s in range(4):
        p = neighbours[goal, s]
        if p >= 0 and label[goal, p] >= 0 and dist[goal, s] == UNREACHABLE:
            region = label[goal, p]
            for s2 in range(4):
                q = neighbours[goal, s2]
                if q >= 0 and label[goal, q] == region:
                    dist[goal, s2] = 0
                    queue[tail] = goal * 4 + s2
                    tail += 1
    head = 0
    while head < tail:
        state = queue[head]
        head += 1
        box = state // 4
        side = state % 4
        # Undo a push: the box came from prev (the square on the player's side) and the
        # player stood beyond prev on the same side.
        prev = neighbours[box, side]
        if prev < 0 or dist[prev, side] != UNREACHABLE:
            continue
        beyond = neighbours[prev, side]
        if beyond < 0 or label[prev, beyond] < 0:
            continue
        region = label[prev, beyond]
        for s2 in range(4):
            q = neighbours[prev, s2]
            if q >= 0 and label[prev, q] == region and dist[prev, s2] == UNREACHABLE:
                dist[prev, s2] = dist[box, side] + 1
                queue[tail] = prev * 4 + s2
                tail += 1


@njit(cache=True)
def side_push_costs(goal: int, neighbours: np.ndarray, region_with_box: np.ndarray) -> np.ndarray:
    """Fewest pushes to bring a lone box to ``goal``: [square, side mask] -> pushes when the
    player starts on one of the sides in the mask (``side_distances`` on the empty board)."""
    n = neighbours.shape[0]
    dist = np.empty((n, 4), dtype=np.int32)
    side_distances(goal, neighbours, region_with_box, dist, np.empty(n * 4, dtype=np.int32))
    cost = np.full((n, N_SIDE_MASKS), UNREACHABLE, dtype=np.int32)
    for b in range(n):
        for mask in range(1, N_SIDE_MASKS):
            best = UNREACHABLE
            for s in range(4):
                if mask & (1 << s) and dist[b, s] < best:
                    best = dist[b, s]
            cost[b, mask] = best
    cost[goal, FROZEN_MASK] = 0
    return cost


def _goal_rooms(is_goal: np.ndarray, neighbours: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group goal squares into connected areas and measure how deep each goal lies (1 = next
    to a non-goal square). Filling deep goals first keeps a goal room's entrance open."""
    n = len(is_goal)
    area = np.full(n, NO_SQUARE, dtype=np.int32)
    depth = np.full(n, NO_SQUARE, dtype=np.int32)
    n_areas = 0
    for g0 in np.flatnonzero(is_goal):
        if area[g0] != NO_SQUARE:
            continue
        area[g0] = n_areas
        stack = [int(g0)]
        while stack:
            g = stack.pop()
            for d in range(N_DIRS):
                t = neighbours[g, d]
                if t != NO_SQUARE and is_goal[t] and area[t] == NO_SQUARE:
                    area[t] = n_areas
                    stack.append(int(t))
        n_areas += 1
    queue = deque()
    for g in np.flatnonzero(is_goal):
        if any(neighbours[g, d] != NO_SQUARE and not is_goal[neighbours[g, d]]
               for d in range(N_DIRS)):
            depth[g] = 1
            queue.append(int(g))
    while queue:
        g = queue.popleft()
        for d in range(N_DIRS):
            t = neighbours[g, d]
            if t != NO_SQUARE and is_goal[t] and depth[t] == NO_SQUARE:
                depth[t] = depth[g] + 1
                queue.append(int(t))
    return area, depth


def _pull_distances(goal: int, neighbours: np.ndarray) -> np.ndarray:
    """Fewest pushes that bring a lone box from each square to ``goal`` (breadth-first
    search by pulls: the box moves from b to p = b+d while the player steps from p to p+d)."""
    n = len(neighbours)
    dist = np.full(n, UNREACHABLE, dtype=np.int32)
    dist[goal] = 0
    queue = deque([goal])
    while queue:
        box = queue.popleft()
        for d in range(N_DIRS):
            p = neighbours[box, d]
            if p == NO_SQUARE or neighbours[p, d] == NO_SQUARE or dist[p] != UNREACHABLE:
                continue
            dist[p] = dist[box] + 1
            queue.append(int(p))
    return dist
