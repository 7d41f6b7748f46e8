"""Every service takes `--broker tcp://HOST:PORT --curve-key FILE`; a service's endpoints on a
remote broker publish and register there, a tool's only watch and command."""

from __future__ import annotations

from pathlib import Path

import pytest

from robocell.cli import build_parser
from robocell.common.bus.keys import CurveKey
from robocell.common.bus.options import endpoints_of, service_endpoints, services_endpoints
from robocell.errors import CommandError

SERVICES = [["solver"], ["vision", "serve"], ["actuator"], ["cell"], ["monitor"],
            ["foxglove"], ["firmware-sim", "--publish-twin"]]


@pytest.fixture
def compute_key(tmp_path: Path) -> Path:
    broker = CurveKey.generate("broker")
    CurveKey.generate("compute", broker.public).write(tmp_path)
    return tmp_path / "compute.key"


def parse(argv: list[str]):
    return build_parser(argv).parse_args(argv)


@pytest.mark.parametrize("command", SERVICES, ids=lambda c: c[0])
def test_every_service_takes_a_remote_broker_and_a_curve_key(command, compute_key) -> None:
    args = parse([*command, "--broker", "tcp://robot.local:7620",
                  "--curve-key", str(compute_key)])
    endpoints = endpoints_of(args, serve=True)
    assert endpoints.curve is not None and endpoints.curve.name == "compute"
    assert (endpoints.subscribe, endpoints.publish, endpoints.command, endpoints.serve) == (
        "tcp://robot.local:7620", "tcp://robot.local:7621", "tcp://robot.local:7622",
        "tcp://robot.local:7623")
    assert endpoints.register == endpoints.serve


def test_a_tool_with_a_key_only_watches_and_commands(compute_key) -> None:
    args = parse(["bus", "list", "--broker", "tcp://robot.local:7620",
                  "--curve-key", str(compute_key)])
    endpoints = endpoints_of(args)
    assert endpoints.publish is None and endpoints.register is None
    assert endpoints.command == "tcp://robot.local:7622"


def test_the_solver_takes_several_brokers_with_a_key_each(compute_key) -> None:
    args = parse(["solver", "--broker", "tcp://127.0.0.1:7600", "--curve-key", "",
                  "--broker", "tcp://robot.local:7620", "--curve-key", str(compute_key)])
    local, remote = services_endpoints(args, "solver")
    assert local.curve is None and local.register == "tcp://127.0.0.1:7602"
    assert remote.curve is not None and remote.register == "tcp://robot.local:7623"
    shared = parse(["solver", "--broker", "tcp://a:7620", "--broker", "tcp://b:7620",
                    "--curve-key", str(compute_key)])
    assert [e.serve for e in services_endpoints(shared, "solver")] == [
        "tcp://a:7623", "tcp://b:7623"]
    assert service_endpoints(shared, "solver").subscribe == "tcp://a:7620"
    wrong = parse(["solver", "--broker", "tcp://a:7620", "--broker", "tcp://b:7620",
                   "--broker", "tcp://c:7620", "--curve-key", str(compute_key),
                   "--curve-key", str(compute_key)])
    with pytest.raises(CommandError, match="3 --broker and 2 --curve-key"):
        services_endpoints(wrong, "solver")
