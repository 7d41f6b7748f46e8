"""Commands: request/reply through the broker with deadlines, explicit errors, no double runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from support.bus import (
    SCRIPTED_SERVICE,
    declared_result,
    robocell_env,
    stop_process,
    wait_registered,
)

from robocell.common.bus import Busy, CommandClient, CommandFailed, Endpoints, Node
from robocell.services.broker.service import Broker

LATE_S = 2.0
"""How late after its deadline a caller may get its timeout: what a loaded machine may delay
the caller's thread by (the point is that it comes at the deadline, not that it is punctual)."""


@pytest.fixture
def solver(broker: Broker):
    """A service node 'solver' with a counted, slow `solve` (whose plan for "broken" lacks
    its primitives) and a failing `explode`."""
    calls: list[str] = []
    release = threading.Event()

    def solve(args, ctx):
        calls.append(args["facelets"])
        if args["facelets"] == "slow":
            release.wait(3)
        plan = declared_result("solver", "solve", facelets=args["facelets"])
        if args["facelets"] == "broken":
            del plan["primitives"]
        return plan

    def explode(args, ctx):
        raise RuntimeError("motor table missing")

    def refuse(args, ctx):
        raise Busy("the arm is already moving")

    with Node("solver", broker.endpoints) as node:
        node.serve("solve", solve)
        node.serve("explode", explode)
        node.serve("refuse", refuse)
        node.set_state("ready")
        wait_registered(broker, "solver", ["solve", "explode", "refuse"])
        node.test_calls = calls
        node.test_release = release
        yield node
        release.set()


def test_command_returns_the_handlers_result(endpoints: Endpoints, solver: Node) -> None:
    client = CommandClient("cli", endpoints)
    try:
        assert client.call("solver", "solve", {"facelets": "UUU"}, timeout=10) == \
            declared_result("solver", "solve", facelets="UUU")
        assert client.call("solver", "ping", timeout=10) == {"service": "solver",
                                                            "state": "ready"}
    finally:
        client.close()


@pytest.mark.parametrize("command, args, code, needle", [
    ("fly", {}, "unknown_command", "offers: explode, ping, refuse, solve"),
    ("solve", {"facelet": "U"}, "invalid_arguments", "missing required field(s) facelets"),
    ("solve", {"facelets": 7}, "invalid_arguments", "expected a string"),
    ("explode", {}, "failed", "RuntimeError: motor table missing"),
    ("refuse", {}, "busy", "already moving"),
])
def test_bad_commands_get_explicit_errors(endpoints: Endpoints, solver: Node, command: str,
                                          args: dict, code: str, needle: str) -> None:
    client = CommandClient("cli", endpoints)
    try:
        reply = client.request("solver", command, args, timeout=10)
        assert not reply.ok and reply.error == code
        assert needle in reply.message
        with pytest.raises(CommandFailed) as info:
            reply.unwrap()
        assert info.value.code == code
    finally:
        client.close()


def test_a_result_that_does_not_fit_its_declaration_is_refused_naming_the_field(
        endpoints: Endpoints, solver: Node) -> None:
    client = CommandClient("cli", endpoints)
    try:
        reply = client.request("solver", "solve", {"facelets": "broken"}, timeout=10)
        assert not reply.ok and reply.error == "invalid_result" and reply.result is None
        assert "solver.solve" in reply.message and "primitives" in reply.message
        with pytest.raises(CommandFailed) as info:
            reply.unwrap()
        assert info.value.code == "invalid_result"
        # a result that fits is handed over as it came
        assert client.call("solver", "solve", {"facelets": "UU"}, timeout=10)["primitives"] == []
    finally:
        client.close()


def test_second_request_while_one_runs_is_answered_busy(endpoints: Endpoints,
                                                        solver: Node) -> None:
    results = {}
    first = threading.Thread(target=lambda: results.setdefault(
        "first", solver.request("solver", "solve", {"facelets": "slow"}, timeout=10)))
    first.start()
    deadline = time.monotonic() + 10
    while solver.test_calls != ["slow"] and time.monotonic() < deadline:
        time.sleep(0.01)  # until the first one runs
    other = CommandClient("other", endpoints)
    try:
        busy = other.request("solver", "solve", {"facelets": "UU"}, timeout=10)
        assert busy.error == "busy" and "already running" in busy.message
    finally:
        other.close()
        solver.test_release.set()
        first.join(15)
    assert results["first"].ok and results["first"].result["facelets"] == "slow"
    assert solver.test_calls == ["slow"]


def test_retried_command_runs_once(endpoints: Endpoints, solver: Node) -> None:
    client = CommandClient("cli", endpoints)
    try:
        threading.Timer(1.0, solver.test_release.set).start()
        # The handler takes ~1 s (3 s at most); the client resends every 0.1 s with the same
        # id (how many times depends on how often a loaded machine lets it run).
        reply = client.request("solver", "solve", {"facelets": "slow"}, timeout=10,
                               retry_interval=0.1)
        assert reply.ok and reply.attempts >= 2
        # A retry after completion is answered from the dedup cache, not run again.
        again = client.request("solver", "solve", {"facelets": "slow"}, timeout=10,
                               request_id=reply.id)
        assert again.ok and again.result == reply.result
        assert solver.test_calls == ["slow"]
    finally:
        client.close()


def test_command_to_a_service_that_never_existed_is_unavailable_at_once(
        endpoints: Endpoints) -> None:
    client = CommandClient("cli", endpoints)
    try:
        started = time.monotonic()
        reply = client.request("ghost", "ping", timeout=10)
        assert reply.error == "unavailable" and "'ghost'" in reply.message
        assert time.monotonic() - started < 5  # long before its deadline
    finally:
        client.close()


def test_command_with_no_broker_times_out_within_its_deadline(bus_base: str) -> None:
    client = CommandClient("cli", Endpoints.from_base(bus_base))  # nothing listens there
    try:
        started = time.monotonic()
        reply = client.request("solver", "ping", timeout=0.5)
        elapsed = time.monotonic() - started
        assert reply.error == "timeout" and "within 0.5 s" in reply.message
        assert 0.5 <= elapsed < 0.5 + LATE_S
    finally:
        client.close()


def start_service(bus_base: str, name: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, str(SCRIPTED_SERVICE), name],
                            env=robocell_env(bus_base), stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_command_to_a_hung_service_times_out_within_its_deadline(broker: Broker,
                                                                  bus_base: str) -> None:
    proc = start_service(bus_base, "actuator")
    client = CommandClient("cli", broker.endpoints)
    try:
        wait_registered(broker, "actuator", ["echo"])
        assert client.call("actuator", "echo", {"a": 1}, timeout=10) == {"a": 1}
        os.kill(proc.pid, signal.SIGSTOP)  # alive but not answering
        started = time.monotonic()
        reply = client.request("actuator", "echo", {"a": 2}, timeout=0.8)
        elapsed = time.monotonic() - started
        assert reply.error == "timeout"
        assert 0.8 <= elapsed < 0.8 + LATE_S
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        client.close()
        stop_process(proc)


def test_command_to_a_killed_service_fails_within_its_deadline(broker: Broker,
                                                                bus_base: str) -> None:
    proc = start_service(bus_base, "vision")
    client = CommandClient("cli", broker.endpoints)
    try:
        wait_registered(broker, "vision", ["echo"])
        assert client.call("vision", "echo", {"x": "y"}, timeout=10) == {"x": "y"}
        proc.send_signal(signal.SIGKILL)
        proc.wait(5)
        started = time.monotonic()
        reply = client.request("vision", "echo", {}, timeout=1.0)
        elapsed = time.monotonic() - started
        # Whether the broker has noticed the dead peer yet (unavailable) or not (timeout),
        # the caller gets an explicit error no later than its deadline.
        assert reply.error in ("unavailable", "timeout")
        assert elapsed < 1.0 + LATE_S
    finally:
        client.close()
        stop_process(proc)


def test_node_call_works_from_many_threads(endpoints: Endpoints, solver: Node) -> None:
    solver.serve("solve", lambda args, ctx: declared_result(
        "solver", "solve", facelets=args["facelets"].lower()), concurrency=8)
    errors: list[Exception] = []
    results: dict[int, str] = {}

    def worker(i: int) -> None:
        try:
            results[i] = solver.call("solver", "solve", {"facelets": f"X{i}"},
                                     timeout=10)["facelets"]
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(15)
    assert not errors
    assert results == {i: f"x{i}" for i in range(8)}


def test_a_request_held_by_a_stopped_service_is_not_run_after_its_deadline(
        broker: Broker, bus_base: str, tmp_path) -> None:
    """The caller was told `timeout`; when the service resumes and reads the request, it
    must not run it (docs/bus.md: a request that arrives after its deadline is not run)."""
    log = tmp_path / "runs.log"
    env = dict(robocell_env(bus_base), SCRIPTED_LOG=str(log))
    proc = subprocess.Popen([sys.executable, str(SCRIPTED_SERVICE), "actuator"], env=env,
                            stdout=subprocess.PIPE, text=True)
    client = CommandClient("cli", broker.endpoints)
    try:
        assert proc.stdout.readline().strip() == "ready"
        wait_registered(broker, "actuator", ["record"])
        ran_before = client.call("actuator", "record", {}, timeout=10)
        os.kill(proc.pid, signal.SIGSTOP)
        late = client.request("actuator", "record", {}, timeout=0.8)
        assert late.error == "timeout"
        time.sleep(0.5)  # past the deadline while stopped
        os.kill(proc.pid, signal.SIGCONT)
        # requests are read in order: once this one is answered, the late one was read
        assert client.call("actuator", "echo", {"after": 1}, timeout=10) == {"after": 1}
        ran_after = client.call("actuator", "record", {}, timeout=10)
        runs = [line.split()[0] for line in log.read_text().splitlines()]
        assert runs == [ran_before, ran_after]
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        client.close()
        stop_process(proc)
