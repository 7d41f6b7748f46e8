"""Hotspots: boxes that stand in the way of other boxes (FESS's hotspot advisor).

A box B *obstructs* another box C when C, pushed alone with B as the only other obstacle,
needs more pushes to reach its nearest goal than with the board empty (or can reach none).
A box's *heat* is the number of boxes off goal it obstructs; the hottest box of a position is
the one with the most. The advisor proposes the child that moves the hottest box to the
square where it obstructs fewest boxes, if that is fewer than before: pushes that clear the
way for others, which the packing and connectivity advisors do not see. The relaxation
(one other box, the player anywhere) keeps the check to breadth-first searches over squares,
and only a box on another's shortest path (or on a square its pusher stands on) can obstruct
it, so the search with an obstacle runs only then.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.sokoban.board import N_DIRS, NO_SQUARE, UNREACHABLE


@njit(cache=True)
def lone_pushes(box: int, obstacle: int, neighbours: np.ndarray, is_goal: np.ndarray,
                dist: np.ndarray, queue: np.ndarray, via: np.ndarray) -> int:
    """Fewest pushes that bring a lone box from ``box`` onto a goal with ``obstacle`` (or
    NO_SQUARE) the only other thing on the board; the player may stand on any free square.
    UNREACHABLE if none does. ``dist`` (-1: not reached) and ``via`` (the direction of the
    push into each square reached) are scratch of the board's size."""
    dist[:] = -1
    dist[box] = 0
    queue[0] = box
    head, tail = 0, 1
    while head < tail:
        s = queue[head]
        head += 1
        if is_goal[s]:
            return int(dist[s])
        for d in range(N_DIRS):
            t = neighbours[s, d]
            behind = neighbours[s, d ^ 1]  # the opposite direction
            if (t == NO_SQUARE or behind == NO_SQUARE or t == obstacle or behind == obstacle
                    or dist[t] >= 0):
                continue
            dist[t] = dist[s] + 1
            via[t] = d
            queue[tail] = t
            tail += 1
    return UNREACHABLE


@njit(cache=True)
def mark_path(box: int, goal: int, neighbours: np.ndarray, via: np.ndarray,
              on_path: np.ndarray) -> None:
    """Mark in ``on_path`` the squares of the box's pushes from ``box`` to ``goal`` found by
    ``lone_pushes`` (``via``: the direction of the push into each square): where the box
    goes and where the player pushes from."""
    on_path[:] = False
    s = goal
    on_path[s] = True
    while s != box:
        back = via[s] ^ 1
        s = neighbours[s, back]
        on_path[s] = True
        on_path[neighbours[s, back]] = True


@njit(cache=True)
def base_pushes(box: int, neighbours: np.ndarray, is_goal: np.ndarray, dist: np.ndarray,
                queue: np.ndarray, via: np.ndarray, on_path: np.ndarray) -> int:
    """``lone_pushes`` on the empty board, with one shortest path marked in ``on_path``
    (nothing marked when no goal is reached)."""
    pushes = lone_pushes(box, NO_SQUARE, neighbours, is_goal, dist, queue, via)
    on_path[:] = False
    for goal in range(dist.shape[0]):
        if is_goal[goal] and dist[goal] == pushes:
            mark_path(box, goal, neighbours, via, on_path)
            break
    return pushes


@njit(cache=True)
def obstructed(obstacle: int, skip: int, boxes: np.ndarray, base: np.ndarray,
               on_path: np.ndarray, neighbours: np.ndarray, is_goal: np.ndarray,
               dist: np.ndarray, queue: np.ndarray, via: np.ndarray) -> int:
    """How many boxes off goal (but the one at index ``skip``) a box on ``obstacle`` obstructs;
    ``base`` holds each box's pushes on the empty board (-1 for a box on a goal) and
    ``on_path`` (bool[boxes, n]) the squares of one shortest push path of each: an obstacle
    off that path leaves it free, so only one on it needs a search."""
    count = 0
    for k in range(boxes.shape[0]):
        if k == skip or base[k] < 0 or base[k] >= UNREACHABLE or not on_path[k, obstacle]:
            continue
        if lone_pushes(boxes[k], obstacle, neighbours, is_goal, dist, queue, via) > base[k]:
            count += 1
    return count


@njit(cache=True)
def hotspot_advice(parent: int, first: int, end: int, node_boxes: np.ndarray,
                   node_h: np.ndarray, neighbours: np.ndarray, is_goal: np.ndarray,
                   dist: np.ndarray, queue: np.ndarray, via: np.ndarray, base: np.ndarray,
                   on_path: np.ndarray) -> int:
    """The child (``first..end-1``, children of ``parent``) the hotspot advisor proposes, or
    -1: the one moving the hottest box of the parent to where it obstructs fewest boxes
    (fewer than now; ties: lower h)."""
    boxes = node_boxes[parent]
    nb = boxes.shape[0]
    for k in range(nb):
        base[k] = -1
        if not is_goal[boxes[k]]:
            base[k] = base_pushes(boxes[k], neighbours, is_goal, dist, queue, via, on_path[k])
    hottest, heat = -1, 0
    for k in range(nb):
        if base[k] < 0:
            continue
        value = obstructed(boxes[k], k, boxes, base, on_path, neighbours, is_goal, dist, queue,
                           via)
        if value > heat:
            hottest, heat = k, value
    if hottest < 0:
        return -1
    best, best_heat = -1, heat
    for c in range(first, end):
        if not moves_box(node_boxes[c], boxes, boxes[hottest]):
            continue
        target = moved_to(node_boxes[c], boxes)
        value = obstructed(target, hottest, boxes, base, on_path, neighbours, is_goal, dist,
                           queue, via)
        if value < best_heat or (best >= 0 and value == best_heat and node_h[c] < node_h[best]):
            best, best_heat = c, value
    return best


@njit(cache=True)
def moves_box(child: np.ndarray, parent: np.ndarray, square: int) -> bool:
    """Whether the box on ``square`` of the parent has left it in the child (both sorted)."""
    for k in range(child.shape[0]):
        if child[k] == square:
            return False
    return True


@njit(cache=True)
def moved_to(child: np.ndarray, parent: np.ndarray) -> int:
    """The square of the child's box that the parent has no box on (both sorted)."""
    j = 0
    for k in range(child.shape[0]):
        while j < parent.shape[0] and parent[j] < child[k]:
            j += 1
        if j >= parent.shape[0] or parent[j] != child[k]:
            return child[k]
    return NO_SQUARE
