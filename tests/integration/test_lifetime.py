"""Nothing outlives its parent: every process robocell starts ends when the process that
started it ends, however that one ends -- here the hardest way, SIGKILL, which runs no
clean-up at all.

Each test records the whole process tree below the parent before killing it (once killed,
its children are re-parented and no longer found below it), then gives the tree
``FOLLOW_S`` to disappear. Whatever is left is killed by the test itself, so a failure here
does not leak either.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from support.bus import robocell_cmd, robocell_env, stop_process, wait_for_broker
from support.processes import Proc, command_line, descendants, kill_all, proc, survivors

from robocell.common.bus import Endpoints, Node
from robocell.common.config import free_port_block
from robocell.common.cube import random_facelets

FOLLOW_S = 15.0
"""How long the processes of a killed parent may take to end (they notice at once; a loaded
machine may take seconds to run their exit; the failure this rules out is for ever)."""
START_TIMEOUT_S = 180.0


def describe(procs: set[Proc]) -> str:
    return "; ".join(f"{p.pid}: {command_line(p.pid)[:120]}" for p in sorted(procs))


def sigkill_and_follow(parent: subprocess.Popen) -> None:
    """SIGKILL ``parent`` and assert that its whole tree has ended ``FOLLOW_S`` later."""
    tree = descendants(parent.pid)
    assert tree, "the parent had started nothing"
    parent.send_signal(signal.SIGKILL)
    parent.wait(10)
    left = survivors(tree, within=FOLLOW_S)
    described = describe(left)
    kill_all(tree)
    assert not left, f"still running {FOLLOW_S:.0f} s after pid {parent.pid} was killed: " + \
        described


@contextmanager
def broker_at(base: str) -> Iterator[None]:
    broker = subprocess.Popen(robocell_cmd("broker", "--bus", base, "--stats-period", "0.2"),
                              env=robocell_env(base), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        wait_for_broker(Endpoints.resolve(base))
        yield
    finally:
        stop_process(broker)


def wait_ready(node: Node, service: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, f"{service} exited with {process.returncode}"
        peer = node.peers().get(service)
        if peer is not None and peer.alive and peer.state == "ready":
            return
        time.sleep(0.1)
    raise AssertionError(f"{service} not ready within {START_TIMEOUT_S:.0f} s")


@contextmanager
def service_on_a_bus(service: str, *args: str) -> Iterator[tuple[subprocess.Popen, Node]]:
    """``robocell ARGS`` on a broker of its own, once its heartbeat says ready."""
    base = f"tcp://127.0.0.1:{free_port_block(4)}"
    with broker_at(base):
        process = subprocess.Popen(robocell_cmd(*args), env=robocell_env(base),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        tree: set[Proc] = set()
        try:
            with Node(f"test-{service}-lifetime", Endpoints.resolve(base)) as node:
                wait_ready(node, service, process)
                tree = descendants(process.pid)
                yield process, node
        finally:
            stop_process(process)
            kill_all(tree)


@pytest.mark.slow
def test_up_sim_killed_with_sigkill_leaves_no_process_of_the_cell(cell_env):
    up = subprocess.Popen([sys.executable, "-m", "robocell", "up", "--sim"], env=cell_env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    is_up = threading.Event()

    def read() -> None:
        for line in up.stdout or ():
            output.append(line)
            if "the cell is up" in line:
                is_up.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    tree: set[Proc] = set()
    try:
        assert is_up.wait(START_TIMEOUT_S), "".join(output[-30:])
        tree = descendants(up.pid)
        # every service of the sim profile, the solver's worker and the helpers of each
        assert len(tree) >= 7, describe(tree)
        sigkill_and_follow(up)
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
        kill_all(tree)
        reader.join(timeout=5)
        if up.stdout:
            up.stdout.close()


@pytest.mark.slow
def test_a_solver_killed_mid_search_takes_its_workers_and_resource_tracker():
    with service_on_a_bus("solver", "solver", "--workers", "2", "--profile", "htm") as \
            (solver, node):
        tree = descendants(solver.pid)
        names = describe(tree)
        assert "spawn_main" in names and "resource_tracker" in names, names
        # a long search keeps a worker away from its pipe: it must not wait to notice
        asking = threading.Thread(target=node.request, daemon=True, args=(
            "solver", "solve", {"facelets": random_facelets(3, 3), "budget_ms": 60000}),
            kwargs={"timeout": 30.0})
        asking.start()
        time.sleep(1.0)
        sigkill_and_follow(solver)


@pytest.mark.slow
def test_a_vision_service_killed_takes_its_reader_processes():
    with service_on_a_bus("vision", "vision", "serve", "--camera", "sim", "--readers", "2") \
            as (vision, _):
        tree = descendants(vision.pid)
        assert "spawn_main" in describe(tree), describe(tree)
        sigkill_and_follow(vision)


@pytest.mark.slow
@pytest.mark.parametrize("ending", ["closed", "dropped"])
def test_a_solver_pool_ended_in_this_process_leaves_no_worker(ending):
    from robocell.services.solver.pool import SolverPool

    before = descendants(os.getpid())
    pool = SolverPool(2, ("htm",), queue_limit=2)
    pool.start()
    workers = {proc(w.process.pid) for w in pool._all}
    try:
        assert all(workers) and workers <= descendants(os.getpid()) - before
        if ending == "closed":
            pool.close()
        else:
            del pool
            gc.collect()
        left = survivors(workers, within=FOLLOW_S)
        assert not left, f"pool {ending}, workers still running: " + describe(left)
    finally:
        kill_all(workers)


@pytest.mark.slow
def test_a_solver_worker_outlives_the_thread_that_asked_for_it():
    """The kernel's parent of a worker is the thread that started it: a replacement asked
    for by a request's thread must not die when that thread ends."""
    from robocell.services.solver.pool import SolverPool

    pool = SolverPool(1, ("htm",), queue_limit=1)
    started: list = []

    def replace_and_wait() -> None:  # as a request's thread replaces a dead worker
        started.append(pool._spawn(0))
        pool._await_ready(started[0])

    asking = threading.Thread(target=replace_and_wait)
    asking.start()
    asking.join(START_TIMEOUT_S)
    try:
        assert started, "no worker was started"
        time.sleep(1.0)
        assert started[0].process.is_alive(), "the worker ended with the thread that asked"
    finally:
        pool._all[:] = started
        pool.close()
