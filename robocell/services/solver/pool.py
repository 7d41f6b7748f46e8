"""The solver's worker processes: one duplex pipe per worker, a request straight to an idle one.

Pattern: a *worker pool with direct hand-off*. Each worker process maps the tables, warms the
search and then loops: receive a job on its pipe, solve, send the answer back on the same
pipe. The caller's thread takes an idle worker, writes the job and waits on that pipe: two
process hops and no helper threads in between, so the service adds little to the solve
itself. Requests beyond ``queue_limit`` (running plus waiting) are refused at once; a request
still waiting for a worker when its deadline passes is dropped before it starts
(cancellation); a worker that dies is replaced and its caller told so.

No worker outlives the pool: each follows its parent process (`robocell.common.lifetime`:
the kernel kills it when the solver ends, however it ends), which is why every worker is
started by one thread that lives as long as the pool (the kernel's "parent" is the starting
thread); and a pool dropped without `close` stops its workers when it is collected.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from robocell.common.progress import Ticker
from robocell.common.tables import LoadingLimit
from robocell.errors import RobocellError
from robocell.services.solver.worker import worker_main

WORKER_START_TIMEOUT_S = 600.0
"""Longest a worker may take to map its tables and warm up (a first run may build them)."""
WARM_UP_QUIET_S = 2.0
"""A warm-up that takes longer than this (a compile, not a cache load) is said, with ticks."""
WARM_UP_EXPECTED_S = 60.0
"""What a cold warm-up (numba compiling the searches) takes on two cores, about."""


class PoolBusy(RobocellError):
    """Every worker is busy and the waiting line is full."""


class PoolTimeout(RobocellError):
    """The answer was not ready before the caller's deadline."""


class WorkerDied(RobocellError):
    """A worker process ended while solving (it has been replaced)."""


@dataclass
class _Worker:
    index: int
    process: Any
    conn: Connection


class SolverPool:
    """``workers`` solver processes sharing the memory-mapped tables (page cache), each held
    to ``table_limit``'s groups when given."""

    def __init__(self, workers: int, profiles: tuple[str, ...], queue_limit: int,
                 table_limit: LoadingLimit | None = None) -> None:
        if workers < 1:
            raise ValueError(f"a solver pool needs at least one worker, not {workers}")
        self.workers = workers
        self.profiles = profiles
        self.queue_limit = queue_limit
        self.table_limit = table_limit
        """The table groups every worker is held to (a table budget), None: any."""
        self._ctx = multiprocessing.get_context("spawn")
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self.in_flight = 0
        self.closed = False
        # the one thread that starts workers, replacements included (a replacement started
        # by a short-lived thread would be killed when that thread ends)
        self._starter = ThreadPoolExecutor(1, thread_name_prefix="solver-worker-starter")
        self._finalizer = weakref.finalize(self, _stop_workers, self._all, self._starter)

    def _spawn(self, index: int) -> _Worker:
        return self._starter.submit(self._start_worker, index).result()

    def _start_worker(self, index: int) -> _Worker:
        parent, child = self._ctx.Pipe(duplex=True)
        process = self._ctx.Process(target=worker_main,
                                    args=(child, self.profiles, os.getpid(), self.table_limit),
                                    name=f"solver-worker-{index}", daemon=True)
        process.start()
        child.close()
        return _Worker(index, process, parent)

    def start(self) -> None:
        """Start every worker and wait until each has warmed up."""
        self._all[:] = [self._spawn(i) for i in range(self.workers)]
        with Ticker(f"solver: warming up {self.workers} worker(s) for "
                    f"{', '.join(self.profiles)} (compiling the search: first run only)",
                    WARM_UP_EXPECTED_S, after_s=WARM_UP_QUIET_S):
            for worker in self._all:
                self._await_ready(worker)
                self._idle.put(worker)

    def _await_ready(self, worker: _Worker) -> None:
        if not worker.conn.poll(WORKER_START_TIMEOUT_S):
            raise RuntimeError(f"solver worker {worker.index} did not warm up within "
                               f"{WORKER_START_TIMEOUT_S:.0f} s")
        try:
            message = worker.conn.recv()
        except EOFError:
            raise RuntimeError(f"solver worker {worker.index} ended while warming up (exit "
                               f"code {worker.process.exitcode}); run `robocell solver` in "
                               "the foreground to see why") from None
        if message != "ready":
            raise RuntimeError(f"solver worker {worker.index} said {message!r} instead of "
                               "ready")

    def solve(self, job: tuple, deadline: float) -> Any:
        """Run ``job`` (a module-level function and its arguments) on an idle worker,
        answering by ``deadline`` (time.monotonic()). Raises PoolBusy, PoolTimeout or
        WorkerDied."""
        return self.solve_split(lambda n: [job], deadline, max_parts=1)[0]

    def solve_split(self, jobs_for: Callable[[int], list[tuple]], deadline: float,
                    max_parts: int | None = None) -> list[Any]:
        """One request shared by the workers that are idle when it starts: waits for one
        worker, takes up to ``max_parts`` (default: all) of those idle at that moment,
        and runs ``jobs_for(n)`` -- a list of at most n jobs -- one per worker. Answers in
        job order, by ``deadline``. Counts as one request against the queue limit. Raises
        PoolBusy, PoolTimeout or WorkerDied (the others' answers are then collected in the
        background)."""
        with self._lock:
            if self.closed:
                raise WorkerDied("the solver is shutting down")
            if self.in_flight >= self.queue_limit:
                raise PoolBusy(f"all {self.workers} workers busy and "
                               f"{self.in_flight - self.workers} requests waiting")
            self.in_flight += 1
        try:
            try:
                workers = [self._idle.get(timeout=max(0.0, deadline - time.monotonic()))]
            except queue.Empty:
                raise PoolTimeout("no worker became free before the deadline; the request "
                                  "was dropped before it started") from None
            while len(workers) < (max_parts or self.workers):
                try:
                    workers.append(self._idle.get_nowait())
                except queue.Empty:
                    break
            jobs = jobs_for(len(workers))
            for spare in workers[len(jobs):]:
                self._idle.put(spare)
            workers = workers[:len(jobs)]
            return self._run_on(workers, jobs, deadline)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _run_on(self, workers: list[_Worker], jobs: list[tuple], deadline: float) -> list[Any]:
        answers: list[Any] = []
        sent: list[_Worker] = []
        current = workers[0]
        try:
            for current, job in zip(workers, jobs, strict=True):
                current.conn.send(job)
                sent.append(current)
            for current in workers:
                if not current.conn.poll(max(0.0, deadline - time.monotonic())):
                    break
                answers.append(current.conn.recv())
                self._idle.put(current)
        except (EOFError, OSError):
            self._replace(current)
            self._release([w for w in workers[len(answers):] if w is not current], sent)
            raise WorkerDied(f"solver worker {current.index} ended while solving (exit "
                             f"code {current.process.exitcode}); it was restarted") from None
        if len(answers) == len(workers):
            return answers
        # the caller stopped waiting; each search is bounded by its budget, so collect the
        # answers in the background and give the workers back afterwards
        self._release(workers[len(answers):], sent)
        raise PoolTimeout("the plan was not ready before the deadline")

    def _release(self, workers: list[_Worker], sent: list[_Worker]) -> None:
        """Give back workers whose answers nobody waits for any more."""
        for worker in workers:
            if any(worker is done for done in sent):
                threading.Thread(target=self._collect_late, args=(worker,),
                                 daemon=True).start()
            else:
                self._idle.put(worker)

    def _collect_late(self, worker: _Worker) -> None:
        try:
            worker.conn.recv()
        except (EOFError, OSError):
            self._replace(worker)
            return
        self._idle.put(worker)

    def _replace(self, worker: _Worker) -> None:
        if self.closed:
            return
        worker.conn.close()
        worker.process.join(timeout=1.0)
        try:
            fresh = self._spawn(worker.index)
        except RuntimeError:  # closed meanwhile: its starting thread is gone
            return
        with self._lock:
            self._all[worker.index] = fresh
        threading.Thread(target=self._admit, args=(fresh,), daemon=True).start()

    def _admit(self, worker: _Worker) -> None:
        try:
            self._await_ready(worker)
        except RuntimeError:
            return
        self._idle.put(worker)

    def close(self) -> None:
        """Stop every worker (a worker in the middle of a search is terminated)."""
        with self._lock:
            self.closed = True
        self._finalizer()


def _stop_workers(workers: list[_Worker], starter: ThreadPoolExecutor) -> None:
    """Ask each worker to stop, terminate those that do not within a grace, and let the
    starting thread go (`SolverPool.close`, or the pool's collection without it)."""
    workers = list(workers)
    for worker in workers:
        try:
            worker.conn.send(None)
        except (OSError, ValueError):
            pass
    for worker in workers:
        worker.process.join(timeout=2.0)
        if worker.process.is_alive():
            worker.process.terminate()
            worker.process.join(timeout=2.0)
        worker.conn.close()
    starter.shutdown(wait=False)
