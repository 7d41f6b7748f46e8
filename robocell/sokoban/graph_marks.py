"""What the explorer can show of a push graph's shape: its strongly connected components
ranked by size, its bottlenecks, and its corridors.

- A *bottleneck state* is a state every solution passes through: take it out and no goal
  state can be reached from the start. A *bottleneck arc* is a push every solution makes.
  They are the dominators of the goal (Cooper, Harvey and Kennedy's iterative algorithm, on
  the live graph with each arc made a node of its own and one sink after every goal state):
  the articulation points and bridges between the start and the goal, arcs taken one way.
- A *corridor* is a run of states with one way in and one way out (one in-arc, one out-arc,
  neither the start nor a goal): the explorer can draw the run as one arc from the state
  before it to the state after it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robocell.sokoban.graph import csr

NO_COMPONENT_RANK = -1
"""Component rank of a state alone in its strongly connected component."""


def component_ranks(component: np.ndarray) -> np.ndarray:
    """Per state, the rank by size of its strongly connected component (0: the largest; ties
    by component number), or NO_COMPONENT_RANK for a component of one state."""
    if len(component) == 0:
        return np.zeros(0, dtype=np.int32)
    sizes = np.bincount(component)
    order = np.lexsort((np.arange(len(sizes)), -sizes))
    rank = np.empty(len(sizes), dtype=np.int32)
    rank[order] = np.arange(len(sizes), dtype=np.int32)
    out = rank[component]
    out[sizes[component] == 1] = NO_COMPONENT_RANK
    return out


@njit(cache=True, nogil=True)
def reverse_postorder(root: int, offsets: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """The nodes reachable from ``root`` in reverse postorder of a depth-first search."""
    n = offsets.shape[0] - 1
    seen = np.zeros(n, dtype=np.bool_)
    stack = np.empty(n, dtype=np.int64)
    next_arc = np.empty(n, dtype=np.int64)
    post = np.empty(n, dtype=np.int64)
    n_post = 0
    top = 0
    stack[0] = root
    next_arc[0] = offsets[root]
    seen[root] = True
    while top >= 0:
        v = stack[top]
        k = next_arc[top]
        if k < offsets[v + 1]:
            next_arc[top] = k + 1
            w = targets[k]
            if not seen[w]:
                seen[w] = True
                top += 1
                stack[top] = w
                next_arc[top] = offsets[w]
            continue
        post[n_post] = v
        n_post += 1
        top -= 1
    return post[:n_post][::-1].copy()


@njit(cache=True, nogil=True)
def immediate_dominators(root: int, order: np.ndarray, pred_offsets: np.ndarray,
                         preds: np.ndarray) -> np.ndarray:
    """The immediate dominator of every node reachable from ``root`` (-1 elsewhere; the
    root's is itself), given the nodes in reverse postorder and the predecessor lists."""
    n = pred_offsets.shape[0] - 1
    position = np.full(n, -1, dtype=np.int64)
    for i in range(order.shape[0]):
        position[order[i]] = i
    idom = np.full(n, -1, dtype=np.int64)
    idom[root] = root
    changed = True
    while changed:
        changed = False
        for i in range(1, order.shape[0]):
            v = order[i]
            new = -1
            for k in range(pred_offsets[v], pred_offsets[v + 1]):
                p = preds[k]
                if idom[p] < 0:
                    continue
                if new < 0:
                    new = p
                    continue
                a, b = p, new
                while a != b:
                    while position[a] > position[b]:
                        a = idom[a]
                    while position[b] > position[a]:
                        b = idom[b]
                new = a
            if new >= 0 and idom[v] != new:
                idom[v] = new
                changed = True
    return idom


def bottlenecks(n_states: int, src: np.ndarray, dst: np.ndarray, is_goal: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks of the bottleneck states (the start and the goal states left out) and
    arcs of a graph whose state 0 is the start. Nothing when no goal state is reachable."""
    n_arcs = len(src)
    states = np.zeros(n_states, dtype=bool)
    arcs = np.zeros(n_arcs, dtype=bool)
    goals = np.flatnonzero(is_goal)
    if n_states == 0 or len(goals) == 0:
        return states, arcs
    # nodes: states 0..n-1, arcs n..n+m-1, the sink n+m
    arc_nodes = n_states + np.arange(n_arcs)
    sink = n_states + n_arcs
    node_src = np.concatenate([src, arc_nodes, goals]).astype(np.int64)
    node_dst = np.concatenate([arc_nodes, dst, np.full(len(goals), sink)]).astype(np.int64)
    n_nodes = sink + 1
    offsets, targets = csr(n_nodes, node_src, node_dst)
    pred_offsets, preds = csr(n_nodes, node_dst, node_src)
    order = reverse_postorder(0, offsets, targets.astype(np.int64))
    idom = immediate_dominators(0, order, pred_offsets, preds.astype(np.int64))
    if idom[sink] < 0:
        return states, arcs
    v = int(idom[sink])
    while v != 0:
        if v >= n_states:
            arcs[v - n_states] = True
        elif not is_goal[v]:
            states[v] = True
        v = int(idom[v])
    return states, arcs


def corridors(n_states: int, src: np.ndarray, dst: np.ndarray, keep: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """The corridor states (mask) and the runs they make, each as (state before, state after,
    arcs in the run) in an int64[k, 3] array. ``keep`` marks states never taken into a
    corridor (the start, the goal states)."""
    out_degree = np.bincount(src, minlength=n_states)
    in_degree = np.bincount(dst, minlength=n_states)
    out_offsets, out_targets = csr(n_states, src, dst)
    in_offsets, in_sources = csr(n_states, dst, src)
    inner = (out_degree == 1) & (in_degree == 1) & ~keep
    candidates = np.flatnonzero(inner)
    after = out_targets[out_offsets[candidates]]
    before = in_sources[in_offsets[candidates]]
    inner[candidates[(after == before) | (after == candidates)]] = False
    runs = []
    for s in np.flatnonzero(~inner):
        for k in range(out_offsets[s], out_offsets[s + 1]):
            t, length = int(out_targets[k]), 1
            if not inner[t]:
                continue
            while inner[t]:
                t = int(out_targets[out_offsets[t]])
                length += 1
            runs.append((int(s), t, length))
    return inner, np.array(runs, dtype=np.int64).reshape(-1, 3)
