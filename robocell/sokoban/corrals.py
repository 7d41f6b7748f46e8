"""PI-corral pruning: when an unsolved corral must be opened first, push only into it.

A corral is an area the player cannot reach, fenced by boxes. Its barrier boxes are the boxes
next to both the corral and the player's region. The corral is an I-corral when every push of
a barrier box that could ever be made without entering the corral goes into it, and a
PI-corral when, in addition, every push of a barrier box into a free corral square is possible
now (the player can reach the square behind it, or that square is a wall). If such a corral
still holds a box off goal or an empty goal, it has to be entered eventually and nothing done
outside can help, so only the pushes into it need to be searched; this keeps push-optimal
solutions (checked against exhaustive search in the tests).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.sokoban.board import region_scan
from robocell.sokoban.deadlocks import freeze_deadlock_after_push

NO_CORRAL = -1


@njit(cache=True)
def _touches_region(square: int, neighbours: np.ndarray, reach_mark: np.ndarray,
                    stamp: int) -> bool:
    for d in range(4):
        t = neighbours[square, d]
        if t >= 0 and reach_mark[t] == stamp:
            return True
    return False


@njit(cache=True, inline="always")
def _flood_corral(s0: int, k: int, neighbours: np.ndarray, occupied: np.ndarray,
                  reach_mark: np.ndarray, stamp: int, corral_label: np.ndarray,
                  queue: np.ndarray) -> int:
    """Label corral ``k`` from square ``s0`` (free squares off the player's region, and boxes
    not on its edge); its squares are ``queue[:returned count]``."""
    corral_label[s0] = k
    queue[0] = s0
    head = 0
    tail = 1
    while head < tail:
        s = queue[head]
        head += 1
        for d in range(4):
            t = neighbours[s, d]
            if t < 0 or corral_label[t] != NO_CORRAL or reach_mark[t] == stamp:
                continue
            if occupied[t] and _touches_region(t, neighbours, reach_mark, stamp):
                continue
            corral_label[t] = k
            queue[tail] = t
            tail += 1
    return tail


@njit(cache=True)
def pi_corral(neighbours: np.ndarray, occupied: np.ndarray, reach_mark: np.ndarray,
              stamp: int, is_goal: np.ndarray, corral_label: np.ndarray,
              box_seen: np.ndarray, token_base: int, queue: np.ndarray) -> int:
    """Label the corrals (``corral_label``, NO_CORRAL elsewhere) and return the unsolved
    PI-corral with the fewest pushes into it, or NO_CORRAL. ``reach_mark == stamp`` marks the
    player's region; ``box_seen`` is scratch keyed by ``token_base`` + corral number (the
    caller keeps tokens unique across calls)."""
    n = neighbours.shape[0]
    for s in range(n):
        corral_label[s] = NO_CORRAL
    n_corrals = 0
    best = NO_CORRAL
    best_pushes = n * 4 + 1
    for s0 in range(n):
        if reach_mark[s0] == stamp or corral_label[s0] != NO_CORRAL:
            continue
        if occupied[s0] and _touches_region(s0, neighbours, reach_mark, stamp):
            continue
        k = n_corrals
        n_corrals += 1
        token = token_base + k
        tail = _flood_corral(s0, k, neighbours, occupied, reach_mark, stamp, corral_label,
                             queue)
        unsolved = False
        valid = True
        pushes = 0
        for q in range(tail):
            s = queue[q]
            if occupied[s] != is_goal[s]:
                unsolved = True
            for d in range(4):
                b = neighbours[s, d]
                if b < 0 or not occupied[b] or box_seen[b] == token:
                    continue
                if not _touches_region(b, neighbours, reach_mark, stamp):
                    continue
                box_seen[b] = token
                if not is_goal[b]:
                    unsolved = True
                for d2 in range(4):
                    target = neighbours[b, d2]
                    if target < 0:
                        continue
                    behind = neighbours[b, d2 ^ 1]
                    reachable_behind = behind >= 0 and reach_mark[behind] == stamp
                    if corral_label[target] != k:
                        # A push that does not enter the corral and may be possible now or
                        # later (the player may reach the square behind, the box in front
                        # may move): the corral could change without being entered.
                        if behind >= 0 and corral_label[behind] != k:
                            valid = False
                    elif not occupied[target] and behind >= 0:
                        if reachable_behind:
                            pushes += 1
                        else:
                            valid = False
            if not valid:
                break
        if valid and unsolved and 0 < pushes < best_pushes:
            best = k
            best_pushes = pushes
    return best


@njit(cache=True)
def label_corrals(neighbours: np.ndarray, occupied: np.ndarray, reach_mark: np.ndarray,
                  stamp: int, corral_label: np.ndarray, queue: np.ndarray) -> None:
    """Label the corrals as ``pi_corral`` does (the same numbers), without its PI-corral
    test: what ``dead_corral`` needs of a child."""
    n = neighbours.shape[0]
    for s in range(n):
        corral_label[s] = NO_CORRAL
    n_corrals = 0
    for s0 in range(n):
        if reach_mark[s0] == stamp or corral_label[s0] != NO_CORRAL:
            continue
        if occupied[s0] and _touches_region(s0, neighbours, reach_mark, stamp):
            continue
        k = n_corrals
        n_corrals += 1
        _flood_corral(s0, k, neighbours, occupied, reach_mark, stamp, corral_label, queue)


@njit(cache=True)
def push_touches_corral(target: int, origin: int, neighbours: np.ndarray,
                         mark: np.ndarray, stamp: int,
                         child_mark: np.ndarray, child_stamp: int) -> bool:
    """Can the push of the box on ``origin`` to ``target`` have made or changed a corral?
    True when the box went into a corral (``target`` was outside the player's region
    ``mark == stamp``) or when a free square next to ``target`` lies outside the child's region
    (``child_mark == child_stamp``): squares cut off by the push, or a corral the box now
    fences. Otherwise the child's corrals are the parent's, minus any the push opened."""
    if mark[target] != stamp:
        return True
    for d in range(4):
        t = neighbours[target, d]
        if t >= 0 and mark[t] == stamp and t != origin and child_mark[t] != child_stamp:
            return True
    return False



CORRAL_ALIVE, CORRAL_DEAD, CORRAL_UNKNOWN = 0, 1, 2
"""Outcome of a corral deadlock search (unknown: the node limit was reached first)."""
CORRAL_SEARCH_NODES = 512
"""States a corral deadlock search may store before it gives up (unknown counts as alive);
a power of two (its probe table has 4x as many slots)."""
CORRAL_MAX_BOXES = 8
"""Corrals with more boxes (inside and on the barrier) are not searched: their sub-problem
rarely runs dry within the state limit."""
CORRAL_DEEP_NODES = 4096
CORRAL_DEEP_MAX_BOXES = 12
"""The limits of the deep corral search (``solve(deep_corrals=True)``, schedule flag ``c``):
slower per expansion, it proves dead corrals the default limits give up on."""
CORRAL_CACHE_BITS = 20
EMPTY_KEY = np.uint64(0)


@njit(cache=True)
def corral_boxes(corral: int, neighbours: np.ndarray, occupied: np.ndarray,
                 corral_label: np.ndarray, reach_mark: np.ndarray, stamp: int,
                 out: np.ndarray) -> int:
    """The boxes inside corral ``corral`` and on its barrier (sorted into ``out``); returns
    their number."""
    n = neighbours.shape[0]
    count = 0
    for s in range(n):
        if not occupied[s]:
            continue
        inside = corral_label[s] == corral
        if not inside and _touches_region(s, neighbours, reach_mark, stamp):
            for d in range(4):
                t = neighbours[s, d]
                if t >= 0 and corral_label[t] == corral:
                    inside = True
                    break
        if inside:
            out[count] = s
            count += 1
    return count


@njit(cache=True)
def corral_cache_lookup(cache_keys: np.ndarray, cache_dead: np.ndarray, key: np.uint64) -> int:
    """Cached outcome for this sub-position (CORRAL_UNKNOWN when not cached)."""
    mask = cache_keys.shape[0] - 1
    slot = np.int64(key & np.uint64(mask))
    for _ in range(8):
        if cache_keys[slot] == key:
            return CORRAL_DEAD if cache_dead[slot] else CORRAL_ALIVE
        if cache_keys[slot] == EMPTY_KEY:
            return CORRAL_UNKNOWN
        slot = (slot + 1) & mask
    return CORRAL_UNKNOWN


@njit(cache=True)
def corral_cache_store(cache_keys: np.ndarray, cache_dead: np.ndarray, key: np.uint64,
                       is_dead: bool) -> None:
    """Remember an outcome (a full probe run overwrites its first slot)."""
    mask = cache_keys.shape[0] - 1
    slot = np.int64(key & np.uint64(mask))
    first = slot
    for _ in range(8):
        if cache_keys[slot] == EMPTY_KEY or cache_keys[slot] == key:
            first = slot
            break
        slot = (slot + 1) & mask
    cache_keys[first] = key
    cache_dead[first] = is_dead


@njit(cache=True)
def corral_deadlock_search(sub_boxes: np.ndarray, n_sub: int, player: int,
                           neighbours: np.ndarray, dead: np.ndarray, is_goal: np.ndarray,
                           zobrist_box: np.ndarray, zobrist_player: np.ndarray,
                           occupied: np.ndarray, mark: np.ndarray, child_mark: np.ndarray,
                           stamp0: int, queue: np.ndarray, fixed: np.ndarray, frames: np.ndarray,
                           st_boxes: np.ndarray, st_player: np.ndarray, st_hash: np.ndarray,
                           table: np.ndarray) -> int:
    """Can the boxes ``sub_boxes[:n_sub]`` alone (every other box taken off the board) ever
    all stand on goals? Breadth-first search over their pushes, with dead squares and freeze
    deadlocks, storing at most ``st_boxes.shape[0]`` states.

    Taking boxes away only adds moves, so when even this smaller problem has no solution the
    full position is dead (CORRAL_DEAD). CORRAL_ALIVE when a solved sub-position is reached,
    CORRAL_UNKNOWN when the state limit is hit. ``occupied`` must be all False on entry and is
    left so; ``mark`` and ``child_mark`` are scratch stamped from ``stamp0`` upwards (one
    stamp per state).
    """
    limit = st_boxes.shape[0]
    tmask = table.shape[0] - 1
    table[:] = -1
    key = np.uint64(0)
    for k in range(n_sub):
        st_boxes[0, k] = sub_boxes[k]
        occupied[sub_boxes[k]] = True
        key ^= zobrist_box[sub_boxes[k]]
    stamp = stamp0 + 1
    norm = region_scan(player, neighbours, occupied, mark, stamp, None, queue)
    for k in range(n_sub):
        occupied[sub_boxes[k]] = False
    st_player[0] = norm
    key ^= zobrist_player[norm]
    st_hash[0] = key
    table[np.int64(key & np.uint64(tmask))] = 0
    n_states = 1
    head = 0
    result = CORRAL_DEAD
    while head < n_states and result == CORRAL_DEAD:
        boxes = st_boxes[head]
        for k in range(n_sub):
            occupied[boxes[k]] = True
        stamp += 1
        region_scan(st_player[head], neighbours, occupied, mark, stamp, None, queue)
        skey = st_hash[head] ^ zobrist_player[st_player[head]]
        for i in range(n_sub):
            b = boxes[i]
            for d in range(4):
                behind = neighbours[b, d ^ 1]
                target = neighbours[b, d]
                if behind < 0 or mark[behind] != stamp or target < 0:
                    continue
                if occupied[target] or dead[target]:
                    continue
                occupied[b] = False
                occupied[target] = True
                frozen = freeze_deadlock_after_push(target, neighbours, occupied, dead,
                                                    is_goal, fixed, frames)
                solved = True
                if not frozen:
                    for k in range(n_sub):
                        s = target if k == i else boxes[k]
                        if not is_goal[s]:
                            solved = False
                            break
                child_player = -1
                if not frozen and not solved:
                    child_player = region_scan(b, neighbours, occupied, child_mark, stamp,
                                               None, queue)
                occupied[target] = False
                occupied[b] = True
                if frozen:
                    continue
                if solved:
                    result = CORRAL_ALIVE
                    break
                ckey = skey ^ zobrist_box[b] ^ zobrist_box[target] ^ zobrist_player[child_player]
                slot = np.int64(ckey & np.uint64(tmask))
                known = False
                while table[slot] >= 0:
                    other = table[slot]
                    if st_hash[other] == ckey and st_player[other] == child_player:
                        known = True
                        break
                    slot = (slot + 1) & tmask
                if known:
                    continue
                if n_states >= limit:
                    result = CORRAL_UNKNOWN
                    break
                # The new state: the sub box set with b moved to target, kept sorted.
                j = 0
                for k in range(n_sub):
                    if k != i:
                        st_boxes[n_states, j] = boxes[k]
                        j += 1
                j = n_sub - 1
                while j > 0 and st_boxes[n_states, j - 1] > target:
                    st_boxes[n_states, j] = st_boxes[n_states, j - 1]
                    j -= 1
                st_boxes[n_states, j] = target
                st_player[n_states] = child_player
                st_hash[n_states] = ckey
                table[slot] = n_states
                n_states += 1
            if result != CORRAL_DEAD:
                break
        for k in range(n_sub):
            occupied[boxes[k]] = False
        head += 1
    return result


@njit(cache=True)
def corral_work(n_squares: int, n_boxes: int, nodes: int = CORRAL_SEARCH_NODES,
                max_boxes: int = CORRAL_MAX_BOXES) -> tuple:
    """Scratch of ``dead_corral``: sub box list, occupancy, two stamp arrays, the stamp
    counter and the box limit (``max_boxes``), and the state arrays and probe table of one
    corral deadlock search (``nodes`` states, a power of two)."""
    counter = np.zeros(2, dtype=np.int64)
    counter[1] = max_boxes
    return (np.zeros(n_boxes, dtype=np.int16), np.zeros(n_squares, dtype=np.bool_),
            np.zeros(n_squares, dtype=np.int64), np.zeros(n_squares, dtype=np.int64),
            counter,
            np.zeros((nodes, n_boxes), dtype=np.int16),
            np.zeros(nodes, dtype=np.int16),
            np.zeros(nodes, dtype=np.uint64),
            np.zeros(4 * nodes, dtype=np.int32))


@njit(cache=True)
def dead_corral(player: int, neighbours: np.ndarray, occupied: np.ndarray,
                reach_mark: np.ndarray, stamp: int, corral_label: np.ndarray,
                dead: np.ndarray, is_goal: np.ndarray, zobrist_box: np.ndarray,
                zobrist_player: np.ndarray, cache_keys: np.ndarray, cache_dead: np.ndarray,
                work: tuple, queue: np.ndarray, fixed: np.ndarray,
                frames: np.ndarray, near: int = -1) -> tuple[bool, int, int]:
    """Is some corral of this position (labelled by ``pi_corral``) dead? Each corral with a box
    off goal and at most ``work``'s box limit (``corral_work``) inside and on its barrier gets
    a corral deadlock search, looked up first in the cache keyed by its boxes and the player's
    region among them. With ``near`` >= 0 only the corrals on that square or next to it are checked
    (the ones a push to ``near`` made or changed). Returns (dead, searches run, boxes of the
    dead corral when a search run now proved it dead, else 0: they are in ``work[0]``)."""
    sub_boxes, sub_occupied, sub_mark, sub_child_mark, counter = work[:5]
    st_boxes, st_player, st_hash, st_table = work[5:]
    n_corrals = 0
    for s in range(neighbours.shape[0]):
        if corral_label[s] >= n_corrals:
            n_corrals = corral_label[s] + 1
    searches = 0
    for c in range(n_corrals):
        if near >= 0 and corral_label[near] != c:
            touches = False
            for d in range(4):
                t = neighbours[near, d]
                if t >= 0 and corral_label[t] == c:
                    touches = True
                    break
            if not touches:
                continue
        n_sub = corral_boxes(c, neighbours, occupied, corral_label, reach_mark, stamp,
                             sub_boxes)
        if n_sub > counter[1]:
            continue
        off_goal = False
        for k in range(n_sub):
            if not is_goal[sub_boxes[k]]:
                off_goal = True
                break
        if not off_goal:
            continue
        counter[0] += 2 * st_player.shape[0] + 2
        key = np.uint64(0)
        for k in range(n_sub):
            sub_occupied[sub_boxes[k]] = True
            key ^= zobrist_box[sub_boxes[k]]
        sub_player = region_scan(player, neighbours, sub_occupied, sub_mark, counter[0], None,
                                 queue)
        for k in range(n_sub):
            sub_occupied[sub_boxes[k]] = False
        key ^= zobrist_player[sub_player]
        outcome = corral_cache_lookup(cache_keys, cache_dead, key)
        if outcome == CORRAL_UNKNOWN:
            searches += 1
            outcome = corral_deadlock_search(
                sub_boxes, n_sub, player, neighbours, dead, is_goal, zobrist_box,
                zobrist_player, sub_occupied, sub_mark, sub_child_mark, counter[0], queue,
                fixed, frames, st_boxes, st_player, st_hash, st_table)
            corral_cache_store(cache_keys, cache_dead, key, outcome == CORRAL_DEAD)
            if outcome == CORRAL_DEAD:
                return True, searches, n_sub
        if outcome == CORRAL_DEAD:
            return True, searches, 0
    return False, searches, 0


def corral_cache(bits: int = CORRAL_CACHE_BITS) -> tuple[np.ndarray, np.ndarray]:
    """An empty outcome cache for ``dead_corral`` (keys and dead flags, 2**bits slots)."""
    return np.zeros(1 << bits, dtype=np.uint64), np.zeros(1 << bits, dtype=np.bool_)
