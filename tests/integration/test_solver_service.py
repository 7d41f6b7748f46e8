"""The solver service as a real process on a real broker, its neighbours played by this test."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest
from support.bus import wait_subscribed

from robocell.common.bus import CommandClient, Endpoints, Node, Subscriber
from robocell.common.config import free_port_block
from robocell.common.cube import apply_to_facelets, parse_moves, random_facelets, solved


def wait_until(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s"
        time.sleep(0.01)


def wait_ready(node: Node, service: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        peer = node.peers().get(service)
        if peer is not None and peer.alive and peer.state == "ready":
            return
        time.sleep(0.1)
    raise AssertionError(f"{service} not ready within {timeout} s")


@pytest.fixture(scope="module")
def solver_bus():
    base = f"tcp://127.0.0.1:{free_port_block(4)}"
    env = {**os.environ, "ROBOCELL_BUS": base}
    broker = subprocess.Popen([sys.executable, "-m", "robocell", "broker", "--bus", base],
                              env=env)
    solver = subprocess.Popen([sys.executable, "-m", "robocell", "solver", "--workers", "2",
                               "--profile", "soltvvo-2x2", "--timeout", "0.2"],
                              env=env)
    try:
        with Node("test-solver", Endpoints.resolve(base)) as node:
            wait_ready(node, "solver")
            yield node
    finally:
        for proc in (solver, broker):
            proc.terminate()
        for proc in (solver, broker):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_solve_command_returns_a_plan_that_solves(solver_bus):
    for seed in range(5):
        facelets = random_facelets(3, seed)
        plan = solver_bus.call("solver", "solve", {"facelets": facelets}, timeout=30.0)
        assert plan["puzzle"] == "3x3x3" and plan["profile"] == "htm"
        assert apply_to_facelets(facelets, parse_moves(plan["face_turns"])) == \
            solved(3)
        assert plan["search"]["service_ms"] >= plan["search"]["solve_ms"]
        # both workers were idle: the search was shared by them
        assert plan["search"]["workers"] == 2
    cube2 = random_facelets(2, 7)
    plan = solver_bus.call("solver", "solve", {"facelets": cube2}, timeout=30.0)
    assert plan["profile"] == "soltvvo-2x2" and plan["primitives"]
    assert plan["predicted_ms"] > 0


def test_invalid_state_gets_the_specific_error(solver_bus):
    bad = solved(3)[:-1] + "F"
    reply = solver_bus.request("solver", "solve", {"facelets": bad}, timeout=30.0)
    assert not reply.ok and reply.error == "invalid_arguments"
    assert "colour_count" in reply.message


def test_the_cells_solve_request_answers_a_cube_state_with_a_latched_plan(solver_bus):
    # as robocell.services.cell.cycle.run_cycle asks: the scan's state, published for watchers
    facelets = random_facelets(2, 99)
    plans = Subscriber(["solver.plan"], solver_bus.endpoints)
    try:
        wait_subscribed(plans, "solver.plan")
        solver_bus.call("solver", "solve", {"facelets": facelets, "scan_id": "auto-1",
                                            "publish": True}, timeout=30.0)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            env = plans.recv(timeout=0.5)
            if env is not None and env.payload.get("scan_id") == "auto-1":
                assert env.payload["facelets"] == facelets
                return
    finally:
        plans.close()
    raise AssertionError("no plan for the published cube state")


@pytest.mark.slow
def test_a_burst_of_requests_is_all_answered_or_refused_as_busy(solver_bus):
    n = 1000
    threads_n = 50
    cubes = [random_facelets(3, 1000 + i) for i in range(n)]
    replies: list = [None] * n

    def ask(start: int) -> None:
        client = CommandClient(f"burst-{start}", solver_bus.endpoints)
        try:
            for i in range(start, n, threads_n):
                replies[i] = client.request("solver", "solve", {"facelets": cubes[i]},
                                            timeout=30.0)
        finally:
            client.close()

    threads = [threading.Thread(target=ask, args=(k,)) for k in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert all(r is not None for r in replies), "a request got no reply"
    outcomes = {r.error if not r.ok else "ok" for r in replies}
    assert outcomes <= {"ok", "busy"}, outcomes
    assert any(r.ok for r in replies)


def test_the_request_budget_bounds_the_search(solver_bus):
    facelets = random_facelets(3, 4242)
    short = solver_bus.call("solver", "solve", {"facelets": facelets, "budget_ms": 5},
                            timeout=30.0)
    long = solver_bus.call("solver", "solve", {"facelets": facelets, "budget_ms": 150},
                           timeout=30.0)
    # the budget is the search's wall time: split over n idle workers, each searches all of
    # it (a loaded machine stretches the 5 ms one, still short of the service's own 200 ms;
    # a share may start a moment after the budget's clock did)
    assert long["search"]["workers"] == 2
    assert short["search"]["solve_ms"] < 150 and long["search"]["solve_ms"] >= 0.9 * 150
    assert long["search"]["nodes"] > short["search"]["nodes"]
    assert long["search"]["length"] <= short["search"]["length"]


@pytest.mark.slow
def test_a_worker_killed_mid_solve_is_reported_and_replaced():
    from robocell.services.solver.pool import SolverPool, WorkerDied
    from robocell.services.solver.worker import solve_in_worker

    pool = SolverPool(1, ("htm",), queue_limit=2)
    pool.start()
    try:
        worker = pool._all[0].process
        outcome: dict = {}

        def solve_slowly() -> None:
            try:
                job = (solve_in_worker, random_facelets(3, 5), "htm", None, 5.0)
                outcome["result"] = pool.solve(job, time.monotonic() + 30.0)
            except WorkerDied as exc:
                outcome["error"] = exc

        thread = threading.Thread(target=solve_slowly)
        thread.start()
        wait_until(lambda: pool.in_flight == 1 and pool._idle.empty())  # taken: searching
        os.kill(worker.pid, 9)
        thread.join(timeout=30)
        assert isinstance(outcome.get("error"), WorkerDied), outcome
        assert "restarted" in str(outcome["error"])
        # the replacement takes the next request
        answer = pool.solve((solve_in_worker, random_facelets(3, 6), "htm", None, 0.01),
                            time.monotonic() + 120.0)
        assert "plan" in answer and pool._all[0].process.pid != worker.pid
    finally:
        pool.close()


@pytest.mark.slow
def test_the_pool_refuses_past_its_queue_limit_and_drops_late_requests():
    from robocell.services.solver.pool import PoolBusy, PoolTimeout, SolverPool
    from robocell.services.solver.worker import solve_in_worker

    pool = SolverPool(1, ("htm",), queue_limit=1)
    pool.start()
    try:
        holder = threading.Thread(target=pool.solve, args=(
            (solve_in_worker, random_facelets(3, 7), "htm", None, 1.0),
            time.monotonic() + 30.0))
        holder.start()
        wait_until(lambda: pool.in_flight == 1)  # the holder has the only place
        with pytest.raises(PoolBusy):
            pool.solve((solve_in_worker, random_facelets(3, 8), "htm", None, 0.01),
                       time.monotonic() + 5.0)
        holder.join(timeout=30)
        # a deadline shorter than the search: explicit timeout, the worker comes back after
        with pytest.raises(PoolTimeout):
            pool.solve((solve_in_worker, random_facelets(3, 9), "htm", None, 1.0),
                       time.monotonic() + 0.2)
        answer = pool.solve((solve_in_worker, random_facelets(3, 10), "htm", None, 0.01),
                            time.monotonic() + 30.0)
        assert "plan" in answer
    finally:
        pool.close()


SMALL_LEVEL = """\
#######
#.@ # #
#$* $ #
#   $ #
# ..  #
#  *  #
#######
"""


@pytest.mark.slow
def test_sokoban_levels_are_solved_by_the_service(solver_bus):
    from robocell.sokoban.level import parse_levels
    from robocell.sokoban.lurd import replay

    level = parse_levels(SMALL_LEVEL)[0]
    # The first Sokoban request of a fresh checkout compiles the search in the worker (about
    # 30 s on an idle core, before its numba cache exists): the call waits for that.
    pushes = solver_bus.call("solver", "sokoban", {"level": SMALL_LEVEL, "timeout_s": 20},
                             timeout=150.0)
    assert pushes["solved"] and pushes["optimal"] and pushes["metric"] == "pushes"
    assert replay(level, pushes["lurd"]).solved
    moves = solver_bus.call("solver", "sokoban", {"level": SMALL_LEVEL, "metric": "moves",
                                                  "timeout_s": 20}, timeout=30.0)
    assert moves["solved"] and moves["optimal"] and replay(level, moves["lurd"]).solved
    assert moves["moves"] <= pushes["moves"] and moves["pushes"] >= pushes["pushes"]
    assert pushes["service_ms"] >= pushes["solve_ms"]
    # the level last solved stays on the bus (latched) for the dashboard's state-space view
    last = Subscriber(["solver.sokoban_result"], solver_bus.endpoints)
    try:
        env = last.recv(timeout=10.0)
    finally:
        last.close()
    assert env is not None, "no latched solver.sokoban_result after a Sokoban solve"
    assert env.payload["level"] == SMALL_LEVEL and env.payload["metric"] == "moves"
    assert env.payload["lurd"] == moves["lurd"] and env.payload["optimal"]


@pytest.mark.slow
def test_a_fast_sokoban_request_runs_the_schedule(solver_bus, shared_data):
    # XSokoban 60 is out of optimal A*'s reach; the fast request's feature search solves it.
    from robocell.sokoban.level import load_level
    from robocell.sokoban.lurd import replay

    level = load_level(shared_data / "sokoban" / "xsokoban-original-extra.txt", 60)
    reply = solver_bus.call("solver", "sokoban", {"level": level.xsb(), "fast": True,
                                                  "timeout_s": 60}, timeout=90.0)
    assert reply["solved"] and not reply["optimal"] and replay(level, reply["lurd"]).solved
    assert reply["stage"]  # the schedule stage that solved it, e.g. "2fom/0:58"


def test_a_bad_sokoban_level_gets_its_specific_error(solver_bus):
    two_players = SMALL_LEVEL.replace("#   $ #", "#  @$ #")
    reply = solver_bus.request("solver", "sokoban", {"level": two_players}, timeout=30.0)
    assert not reply.ok and reply.error == "invalid_arguments"
    assert "2 players" in reply.message


@pytest.mark.slow
def test_a_split_search_takes_the_cheapest_share_and_adds_up_the_work():
    from robocell.services.solver.planning import merge_outcomes, split_jobs
    from robocell.services.solver.pool import SolverPool

    pool = SolverPool(2, ("six-motor",), queue_limit=2)
    pool.start()
    try:
        facelets = random_facelets(3, 21)
        jobs = split_jobs(facelets, "six-motor", 0.04, 2)
        # each share searches the whole budget, until one moment
        assert [job[5] for job in jobs] == [(0, 2), (1, 2)]
        assert [job[4] for job in jobs] == [0.04, 0.04] and jobs[0][6] == jobs[1][6]
        shares = pool.solve_split(lambda n: split_jobs(facelets, "six-motor", 0.04, n),
                                  time.monotonic() + 30.0)
        assert len(shares) == 2
        plans = [share["plan"] for share in shares]
        merged = merge_outcomes(shares)["plan"]
        assert merged["cost"] == min(p["cost"] for p in plans)
        assert merged["stats"]["candidates"] == sum(p["stats"]["candidates"] for p in plans)
        assert merged["stats"]["workers"] == 2
        # the split solve lasts from the first share's start to the last one's end
        assert merged["solve_ms"] >= max(p["solve_ms"] for p in plans)
        assert apply_to_facelets(facelets, parse_moves(merged["moves"])) == solved(3)
        # one share of a cube still finds a plan on its own (the other directions untried)
        alone = pool.solve(jobs[1], time.monotonic() + 30.0)["plan"]
        assert apply_to_facelets(facelets, parse_moves(alone["moves"])) == solved(3)
        # a 2x2 is a table look-up: never split
        assert len(split_jobs(random_facelets(2, 3), "soltvvo-2x2", 0.04, 2)) == 1
        # an invalid cube: the shares' error comes back, not a plan
        bad = facelets[:4] + facelets[5] + facelets[4] + facelets[6:]
        outcome = merge_outcomes(pool.solve_split(
            lambda n: split_jobs(bad, "six-motor", 0.04, n), time.monotonic() + 30.0))
        assert "error" in outcome and outcome["error"]["code"]
    finally:
        pool.close()
