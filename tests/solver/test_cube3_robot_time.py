"""The 3x3x3 search in a robot's time: its cost is the motion compiler's, its plans solve, and
for short scrambles it finds the least robot time an exhaustive search finds."""

from __future__ import annotations

import heapq
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cube import solved_orientations

from robocell.cli import main
from robocell.common.cube import apply_to_facelets, random_facelets, solved
from robocell.common.moves import move_facelet_permutation
from robocell.common.notation import Move
from robocell.common.profile import Profile, load_profile
from robocell.common.validation import validate
from robocell.services.solver.api import solve
from robocell.services.solver.cube3 import coord
from robocell.services.solver.cube3 import solver as cube3_solver
from robocell.services.solver.cube3.defs import FIRST_SLICE_EDGE, N_PERM_4
from robocell.services.solver.cube3.motion_compiler import compile_plan, motion_tables
from robocell.services.solver.cube3.robot_time import (
    axial_metric,
    block_costs,
    driver,
    phase2_search,
)
from robocell.services.solver.cube3.robot_time.driver import RobotTimeSearch
from robocell.services.solver.cube3.robot_time.profile_costs import profile_costs, steps_bound
from robocell.services.solver.cube3.solver import solve_robot_time

SOLVED = solved(3)
FACE_TURNS = [Move(face, turns) for face in "URFDLB" for turns in (1, 2, 3)]
G1_TURNS = [m for m in FACE_TURNS if m.name in "UD" or m.quarter_turns == 2]
"""The face turns that keep a cube in G1 (phase 2's)."""


def _solved_any_orientation(facelets: str) -> bool:
    return all(len(set(facelets[9 * f: 9 * f + 9])) == 1 for f in range(6))


@pytest.mark.parametrize("profile", ["six-motor", "tilt-spin", "qtm"])
def test_the_plan_costs_what_the_search_said_and_solves(profile: str) -> None:
    for seed in range(3):
        facelets = random_facelets(3, 100 + seed)
        plan = solve(facelets, profile, timeout=0.05)
        assert plan.cost == plan.stats["search_cost"]
        assert plan.cost <= plan.stats["first_cost"]
        assert _solved_any_orientation(apply_to_facelets(facelets, plan.moves))
        # the face turns the search chose, compiled again, cost the same
        turns = [Move(t[0], {"": 1, "2": 2, "'": 3}[t[1:]])
                 for t in plan.stats["face_turns"].split()]
        assert compile_plan(turns, load_profile(profile))[1] == plan.cost


def test_every_solution_found_costs_what_the_motion_compiler_says() -> None:
    profile = load_profile("six-motor")
    state = validate(random_facelets(3, 7), 3)
    found = list(RobotTimeSearch(state, profile).solutions(0.2))
    assert found, "the search found nothing in 0.2 s from no bound"
    costs = [cost for _, cost in found]
    assert costs == sorted(costs, reverse=True) and len(set(costs)) == len(costs)
    for moves, cost in found:
        assert compile_plan(moves, profile)[1] == cost


def test_a_path_cost_worked_out_without_its_vector_is_the_one_chain_returns() -> None:
    """The search refuses most children on their path cost alone (`chain_least`, O(states))
    before it works out their cost vector (`chain`, O(states squared)): the two must agree,
    also where the path cannot be in some states (inf)."""
    costs = profile_costs(load_profile("tilt-spin"))
    cost = np.ascontiguousarray(costs.cost)
    exits = np.ascontiguousarray(cost.min(axis=2))
    n = cost.shape[1]
    rng = np.random.default_rng(5)
    after = np.empty(n)
    for _ in range(500):
        before = rng.integers(0, 3000, n).astype(np.float64)
        before[rng.random(n) < 0.6] = np.inf
        kind = int(rng.choice(axial_metric.block_kinds()))
        least = block_costs.chain_least(before, exits, kind)
        assert least == block_costs.chain(before, cost, kind, after)
        assert least == after.min()


def test_searching_longer_does_not_make_the_plan_slower() -> None:
    facelets = random_facelets(3, 31)
    short = solve(facelets, "six-motor", timeout=0.01)
    long = solve(facelets, "six-motor", timeout=0.3)
    assert long.cost <= short.cost


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), profile=st.sampled_from(["six-motor", "tilt-spin"]))
def test_plans_replayed_on_the_cube_model_solve_it(seed: int, profile: str) -> None:
    facelets = random_facelets(3, seed)
    plan = solve(facelets, profile, timeout=0.02)
    assert _solved_any_orientation(apply_to_facelets(facelets, plan.moves))


def test_the_bound_follows_the_profile() -> None:
    six = profile_costs(load_profile("six-motor"))
    tilt = profile_costs(load_profile("tilt-spin"))
    qtm = profile_costs(load_profile("qtm"))
    assert six.axial and six.step == 10 and six.cost.shape[1] == 1 and six.reversible
    assert not tilt.axial and tilt.cost.shape[1] == 24 and not tilt.reversible
    # a tilt-spin turn ends with its face at the bottom, in one of 4 orientations: the search
    # carries those (and re-orients in the next block), the least costs stay the same
    d_turn = 0 * 16 + 1
    assert np.isfinite(tilt.cost[d_turn]).sum(axis=1).max() == 4
    dense = motion_tables(load_profile("tilt-spin")).block_cost
    assert tilt.cost[d_turn].min() == dense[d_turn][np.isfinite(dense[d_turn])].min()
    assert not qtm.axial and qtm.step == 1
    # an axial move of six-motor costs the longer of its two turns
    u, d2 = 0 * 16 + 1 * 4, 0 * 16 + 2
    assert six.cost[u + d2, 0, 0] == 17 and six.cost[u, 0, 0] == 10
    # four steps cost at least four quarter turns; in phase 2, whose side-face turns are half
    # turns and whose blocks alternate axes, at least two U/D quarter turns and two half turns
    assert steps_bound(six.cost, True)[4, 0, 3] == 40
    assert steps_bound(six.cost, True, kinds=axial_metric.phase2_block_kinds())[4, 0, 3] == 54


def _least_robot_time(facelets: str, profile: Profile, within_g1: bool = False) -> float:
    """Exact least cost of any sequence of the profile's primitives that solves the cube (in
    any orientation): bidirectional Dijkstra over sticker strings, from the cube forward and
    from the 24 solved orientations backward. Independent of the search and the compiler.
    ``within_g1``: only the primitives that keep the cube in G1 (phase 2's)."""
    perms = []
    for prim in profile.primitives:
        if within_g1 and not all(m in G1_TURNS for m in prim.moves):
            continue
        perm = np.arange(54)
        for move in prim.moves:
            perm = perm[move_facelet_permutation(move, 3)]
        perms.append((perm.tolist(), np.argsort(perm).tolist(), float(prim.cost)))
    goals = solved_orientations()
    dist = [{facelets: 0.0}, dict.fromkeys(goals, 0.0)]
    heaps: list[list] = [[(0.0, facelets)], [(0.0, g) for g in goals]]
    done: list[set] = [set(), set()]
    best = np.inf
    while heaps[0] and heaps[1] and heaps[0][0][0] + heaps[1][0][0] < best:
        side = 0 if heaps[0][0][0] <= heaps[1][0][0] else 1
        d, state = heapq.heappop(heaps[side])
        if state in done[side]:
            continue
        done[side].add(state)
        for forward, backward, cost in perms:
            perm = forward if side == 0 else backward
            nxt = "".join(state[i] for i in perm)
            nd = d + cost
            if nd < dist[side].get(nxt, np.inf):
                dist[side][nxt] = nd
                heapq.heappush(heaps[side], (nd, nxt))
                other = dist[1 - side].get(nxt)
                if other is not None and nd + other < best:
                    best = nd + other
    return best




def test_the_phase2_bound_never_exceeds_the_least_cost_within_g1() -> None:
    """Phase 2's step bound (its blocks only: side-face turns are half turns) against the exact
    least cost of solving with phase 2's primitives, on cubes scrambled within G1."""
    profile = load_profile("six-motor")
    costs = profile_costs(profile)
    T, D = axial_metric.block_tables(), axial_metric.distances(True)
    H = steps_bound(costs.cost, True)
    H2 = steps_bound(costs.cost, True, kinds=axial_metric.phase2_block_kinds())
    rng = np.random.default_rng(2)
    tighter = 0
    for _ in range(12):
        scramble = [G1_TURNS[i] for i in rng.integers(0, len(G1_TURNS), 6)]
        facelets = apply_to_facelets(SOLVED, scramble)
        if facelets == SOLVED:
            continue
        cube = validate(facelets, 3)
        ep = cube.edge_perm.astype(np.int64)
        corners = coord.get_corners(cube.corner_perm.astype(np.int64))
        slice_perm = coord.perm_rank(ep[FIRST_SLICE_EDGE:] - FIRST_SLICE_EDGE, 4)
        steps = max(phase2_search.distance2(T, D, corners, coord.get_ud_edges(ep)),
                    int(D.cornslice_depth[corners * N_PERM_4 + slice_perm]))
        least = _least_robot_time(facelets, profile, within_g1=True)
        assert H2[steps, 0, 3] <= least, scramble
        tighter += H2[steps, 0, 3] > H[steps, 0, 3]
    assert tighter >= 6  # and it bounds tighter than the all-blocks bound


@pytest.mark.parametrize("profile_name,turns,count,moves", [
    ("six-motor", 6, 6, FACE_TURNS), ("tilt-spin", 5, 3, FACE_TURNS),
    ("six-motor", 4, 5, G1_TURNS)])
def test_short_scrambles_get_the_least_robot_time(profile_name: str, turns: int, count: int,
                                                  moves: list,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "PHASE2_CAP", 10**9)  # no phase-2 search cut short
    # the robot-time search alone, from the first face-turn solution
    monkeypatch.setattr(cube3_solver, "SEED_SHARE", {"one-state": 0.0, "re-orienting": 0.0})
    profile = load_profile(profile_name)
    rng = np.random.default_rng(22)
    for _ in range(count):
        n = int(rng.integers(1, turns + 1))
        scramble = [moves[i] for i in rng.integers(0, len(moves), n)]
        facelets = apply_to_facelets(SOLVED, scramble)
        if facelets == SOLVED:
            continue
        state = validate(facelets, 3)
        _, _, cost, stats = solve_robot_time(state, profile, timeout=30.0)
        assert stats["exhausted"], f"{scramble}: the search did not finish in 30 s"
        assert cost == _least_robot_time(facelets, profile), scramble


def test_cli_splits_a_batch_over_two_processes_in_input_order(
        capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    cubes = [random_facelets(3, seed) for seed in (41, 42, 43)]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(cubes) + "\n"))
    assert main(["solve", "--profile", "six-motor", "--workers", "2", "--timeout", "0.02",
                 "-"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["facelets"] for r in rows] == cubes
    for row in rows:
        assert row["stats"]["workers"] == 2
        assert row["cost_ms"] == 10 * row["cost"] > 0  # six-motor: 10 ms a unit
        assert row["stats"]["face_turn_count"] == len(row["stats"]["face_turns"].split())
        assert _solved_any_orientation(apply_to_facelets(row["facelets"], row["moves"]))


def test_cli_prints_the_predicted_robot_time_beside_the_face_turns(
        capsys: pytest.CaptureFixture) -> None:
    assert main(["solve", "--profile", "six-motor", "--workers", "1", "--timeout", "0.02",
                 random_facelets(3, 44)]) == 0
    err = capsys.readouterr().err
    assert "face turns" in err and "predicted robot time" in err and "ms" in err
