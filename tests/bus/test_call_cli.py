"""`robocell bus call` as a user runs it: a real CLI process, a real broker, a real service."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from support.bus import declared_result, robocell_cmd, robocell_env, wait_registered

from robocell.common.bus import Node
from robocell.services.broker.service import Broker


@pytest.fixture
def cli_env(broker, bus_base: str) -> dict:
    return robocell_env(bus_base)


@pytest.fixture
def solver(broker: Broker) -> Iterator[Node]:
    """A stand-in solver service: the edge of the unit is the bus, the CLI is real."""

    def solve(args, ctx):
        return declared_result("solver", "solve", facelets=args["facelets"],
                               face_turns=["R", "U'"])

    def dump(args, ctx):  # not declared: any plain result
        return {"raw": b"\x01\x02"}

    def explode(args, ctx):
        raise RuntimeError("motor table missing")

    with Node("solver", broker.endpoints) as node:
        node.serve("solve", solve)
        node.serve("dump", dump)
        node.serve("explode", explode)
        node.set_state("ready")
        wait_registered(broker, "solver", ["solve", "dump", "explode"])
        yield node


def call(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(robocell_cmd("bus", "call", *args), env=env, capture_output=True,
                          text=True, timeout=60)


def test_a_call_prints_the_result_as_json_and_exits_0(solver: Node, cli_env: dict) -> None:
    done = call(cli_env, "solver", "solve", '{"facelets": "UUUU"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == declared_result("solver", "solve", facelets="UUUU",
                                                      face_turns=["R", "U'"])
    done = call(cli_env, "solver", "dump")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"raw": "AQI="}  # bytes as base64


def test_a_call_without_arguments_sends_an_empty_map(solver: Node, cli_env: dict) -> None:
    done = call(cli_env, "solver", "ping")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"service": "solver", "state": "ready"}


@pytest.mark.parametrize("service, command, code, needle", [
    ("solver", "explode", "failed", "RuntimeError: motor table missing"),
    ("solver", "fly", "unknown_command", "dump, explode, ping, solve"),
    ("nobody", "ping", "unavailable", "nobody"),
])
def test_an_error_reply_is_printed_with_its_code_and_exits_1(
        solver: Node, cli_env: dict, service: str, command: str, code: str,
        needle: str) -> None:
    done = call(cli_env, service, command)
    assert done.returncode == 1
    assert done.stdout == ""
    assert f"{service}.{command} failed: {code}:" in done.stderr
    assert needle in done.stderr


@pytest.mark.parametrize("argument, needle", [
    ('{"facelets": "UU"', "not valid JSON: Expecting ',' delimiter at line 1 column 18"),
    ('["UU"]', "must be a JSON object, not list"),
    ('{"facelet": "UU"}', "missing required field(s) facelets; solver.solve takes: "
                          "facelets (str)"),
    ('{"facelets": 7}', "expected a string"),
])
def test_bad_json_arguments_are_refused_before_sending_with_exit_2(
        solver: Node, cli_env: dict, argument: str, needle: str) -> None:
    done = call(cli_env, "solver", "solve", argument)
    assert done.returncode == 2
    assert needle in done.stderr
    assert "Traceback" not in done.stderr


def test_no_broker_is_named_with_exit_2_not_blamed_on_the_service(bus_base: str) -> None:
    done = call(robocell_env(bus_base), "solver", "ping", "--timeout", "0.5")
    assert done.returncode == 2
    assert "no broker answers" in done.stderr and "no reply from" not in done.stderr


@pytest.mark.parametrize("argument, needle", [
    ('{"a": ' + "[" * 5000 + "]" * 5000 + "}", "nested too deep"),
    ('{"a": 18446744073709551616}', "integer out of range"),
    ('{"a": -9223372036854775809}', "integer out of range"),
    ('{"a": "\\ud800"}', "lone surrogate"),
])
def test_hostile_json_is_refused_clearly_with_exit_2(
        solver: Node, cli_env: dict, argument: str, needle: str) -> None:
    done = call(cli_env, "solver", "dump", argument)
    assert done.returncode == 2, done.stderr
    assert needle in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("timeout", ["nan", "inf", "-inf", "0", "-1"])
def test_a_timeout_that_is_not_a_positive_number_is_refused(bus_base: str,
                                                            timeout: str) -> None:
    done = subprocess.run(robocell_cmd("bus", "call", "solver", "ping", f"--timeout={timeout}"),
                          env=robocell_env(bus_base), capture_output=True, text=True,
                          timeout=20)
    assert done.returncode == 2, done.stderr
    assert "--timeout must be a positive number of seconds" in done.stderr
    assert "Traceback" not in done.stderr
