"""Services on other hosts: a key with the service role joins a broker over its CURVE endpoint
as an instance of its service; keys without it never serve, never publish, and are named."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import zmq
from support.bus import (
    N_PORTS,
    declared_result,
    free_base_port,
    recv_topic,
    robocell_cmd,
    robocell_env,
    stop_process,
    wait_for_broker,
    wait_registered,
    wait_subscribed,
)
from support.relay import Relay

from robocell.common.bus import CommandClient, Endpoints, Node, Publisher, Subscriber
from robocell.common.bus.commands import HELLO, REFUSED
from robocell.common.bus.keys import KeyFileError, parse_allow
from robocell.common.config import free_port_blocks

PLAN_ARGS = {"facelets": "U" * 9}


def generate(key_dir: Path, name: str, env: dict, broker_pub: Path | None = None) -> Path:
    args = ["keys", "generate", name, "--dir", str(key_dir)]
    if broker_pub:
        args += ["--broker-pub", str(broker_pub)]
    done = subprocess.run(robocell_cmd(*args), env=env, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    return key_dir / f"{name}.key"


@pytest.fixture(scope="module")
def cell(tmp_path_factory: pytest.TempPathFactory):
    """A broker process with a CURVE endpoint: 'compute' may serve as the solver, 'camera'
    as vision, 'reader' may watch, 'operator' may command; 'stranger' is unknown."""
    key_dir = tmp_path_factory.mktemp("keys")
    # one free block cut in two: blocks picked one by one before either is bound could overlap
    local, remote = (f"tcp://127.0.0.1:{port}" for port in free_port_blocks(N_PORTS, 1))
    env = robocell_env(local)
    generate(key_dir, "broker", env)
    broker_pub = key_dir / "broker.pub"
    keys = {name: generate(key_dir, name, env, broker_pub)
            for name in ("compute", "camera", "reader", "operator", "stranger")}
    proc = subprocess.Popen(
        robocell_cmd("broker", "--stats-period", "0.2", "--remote", remote,
                     "--curve-key", str(key_dir / "broker.key"),
                     "--allow", f"{key_dir / 'compute.pub'}:service:solver",
                     "--allow", f"{key_dir / 'camera.pub'}:service:vision",
                     "--allow", str(key_dir / "reader.pub"),
                     "--allow", f"{key_dir / 'operator.pub'}:command"),
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_broker(Endpoints.from_base(local), proc=proc)
        yield {"local": local, "remote": remote, "keys": keys, "env": env,
               "endpoints": Endpoints.from_base(local)}
    finally:
        stop_process(proc)


def remote_endpoints(cell: dict, key: str, serve: bool = True) -> Endpoints:
    return Endpoints.resolve(cell["remote"], cell["keys"][key], serve=serve)


def diagnostics(sub: Subscriber, code: str, key: str, timeout: float = 10.0):
    """The broker's next diagnostic ``code`` naming ``key``, within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        env = recv_topic(sub, "diagnostics", left)
        if env is not None and env.payload["code"] == code \
                and env.payload.get("peer") == f"key:{key}":
            return env.payload
    return None


def said(sub: Subscriber, key: str, codes: set[str], timeout: float = 10.0) -> dict:
    """The broker's diagnostics naming ``key``, one of each of ``codes``, in any order."""
    found: dict[str, dict] = {}
    deadline = time.monotonic() + timeout
    while set(found) != codes:
        left = deadline - time.monotonic()
        assert left > 0, f"diagnostics naming {key!r}: only {sorted(found)} of {sorted(codes)}"
        env = recv_topic(sub, "diagnostics", left)
        if env is not None and env.payload.get("peer") == f"key:{key}" \
                and env.payload["code"] in codes:
            found[env.payload["code"]] = env.payload
    return found


def refused_while(publish, sub: Subscriber, key: str, text: str, timeout: float = 10.0):
    """Publish (every 0.2 s: the broker says a refusal at most once a second per key) until
    the broker's diagnostic naming ``key`` says ``text``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        publish()
        found = diagnostics(sub, "forbidden_publish", key, 0.2)
        if found is not None and text in found["message"]:
            return found
    raise AssertionError(f"no diagnostic naming key {key!r} saying {text!r}")


def test_a_service_key_registers_serves_publishes_and_is_listed_with_its_host(cell) -> None:
    local = cell["endpoints"]
    watcher = Subscriber(["heartbeat", "solver.plan"], local)
    client = CommandClient("cell", local)
    try:
        wait_subscribed(watcher, "heartbeat", "solver.plan")
        with Node("solver", remote_endpoints(cell, "compute")) as solver:
            solver.serve("solve", lambda args, ctx: declared_result(
                "solver", "solve", facelets=args["facelets"]))
            solver.set_state("ready")
            assert solver.registered.wait(10), "the remote solver was never welcomed"
            wait_registered(local, "solver", ["solve"])
            answer = client.call("solver", "solve", PLAN_ARGS, timeout=10)
            assert answer["facelets"] == PLAN_ARGS["facelets"]
            solver.publish("solver.plan", declared_result("solver", "solve", plan_id="p1"))
            plan = recv_topic(watcher, "solver.plan")
            assert plan is not None and plan.source == "solver"
            assert plan.payload["plan_id"] == "p1"
            deadline = time.monotonic() + 10
            beat = None
            while beat is None or beat.payload["service"] != "solver":
                assert time.monotonic() < deadline, "no heartbeat of the remote solver"
                beat = recv_topic(watcher, "heartbeat", 1.0)
            listed = subprocess.run(
                robocell_cmd("bus", "list", "--json", "--wait", "1.5"), env=cell["env"],
                capture_output=True, text=True, timeout=60)
            assert listed.returncode == 0, listed.stderr
            shown = json.loads(listed.stdout)
            (instance,) = shown["instances"]["solver"]
            assert instance["key"] == "compute" and instance["host"] == beat.payload["host"]
            # the bus shows a third of the instance's token: nobody can connect under it
            assert solver.instance.startswith(instance["id"])
            assert len(instance["id"]) * 3 == len(solver.instance)
            assert instance["answered"] >= 1 and shown["services"]["solver"]["host"]
            table = subprocess.run(robocell_cmd("bus", "list", "--wait", "1.5"),
                                   env=cell["env"], capture_output=True, text=True,
                                   timeout=60)
            assert f"solver#{instance['id']}" in table.stdout
            assert "curve key compute" in table.stdout
    finally:
        watcher.close()
        client.close()


def test_a_service_key_publishes_its_own_topics_alone(cell) -> None:
    local = cell["endpoints"]
    watcher = Subscriber(["cell.status", "heartbeat", "diagnostics"], local)
    wait_subscribed(watcher, "cell.status", "heartbeat", "diagnostics")
    compute = remote_endpoints(cell, "compute")
    as_solver = Publisher("solver", compute)
    as_cell = Publisher("cell", compute)  # a solver key speaking for the cell
    try:
        assert as_solver.wait_linked(10) and as_cell.wait_linked(10)
        refused = refused_while(lambda: as_solver.publish(
            "cell.status", {"cycle_id": "forged", "stage": "done"}), watcher, "compute",
            "'cell.status'")
        assert "service 'cell'" in refused["message"]
        refused_while(lambda: as_cell.publish("heartbeat", {
            "service": "cell", "state": "ready", "health": {}, "period_s": 1.0, "pid": 1,
            "host": "elsewhere", "uptime_s": 1.0, "commands": []}), watcher, "compute",
            "as source 'cell'")
    finally:
        as_solver.close()
        as_cell.close()
    end = time.monotonic() + 1.0
    while (left := end - time.monotonic()) > 0:
        env = watcher.recv(left)
        assert env is None or env.topic != "cell.status", env
        assert env is None or env.topic != "heartbeat" or env.payload["service"] != "cell"
    watcher.close()


@pytest.mark.parametrize("key", ["reader", "operator"])
def test_keys_without_the_service_role_never_serve_and_are_named(cell, key) -> None:
    local = cell["endpoints"]
    watcher = Subscriber(["diagnostics"], local)
    wait_subscribed(watcher, "diagnostics")
    client = CommandClient("cell", local)
    served = []
    try:
        with Node("solver", remote_endpoints(cell, key), heartbeat_period=0.2) as impostor:
            impostor.serve("solve", lambda args, ctx: served.append(args) or {})
            impostor.set_state("ready")
            found = said(watcher, key, {"forbidden_instance", "forbidden_publish"})
            for refused in found.values():  # registering, publishing: both named
                assert f"key {key!r}" in refused["message"]
                assert "service:NAME" in refused["message"]
            reply = client.request("solver", "solve", PLAN_ARGS, timeout=2)
            assert reply.error == "unavailable", reply
            assert not impostor.registered.is_set()
        assert served == []
    finally:
        watcher.close()
        client.close()


def test_a_hello_on_the_command_port_is_refused_and_named(cell) -> None:
    """A key without the service role that says HELLO where it may connect (the command
    port) is told REFUSED, named on diagnostics, and gets no request."""
    local = cell["endpoints"]
    watcher = Subscriber(["diagnostics"], local)
    wait_subscribed(watcher, "diagnostics")
    reader = remote_endpoints(cell, "reader", serve=False)
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    sock.routing_id = b"s:solver#feedbeef"
    reader.secure(sock)
    sock.connect(reader.command)
    client = CommandClient("cell", local)
    try:
        sock.send_multipart([HELLO, b'{"commands": ["solve"]}'])
        assert sock.poll(10_000), "no answer to a refused HELLO"
        kind, why = sock.recv_multipart()
        assert kind == REFUSED and b"key 'reader'" in why
        refused = diagnostics(watcher, "forbidden_instance", "reader")
        assert refused is not None and "command port" in refused["message"]
        assert client.request("solver", "solve", PLAN_ARGS, timeout=2).error == "unavailable"
        assert not sock.poll(200)
    finally:
        sock.close()
        watcher.close()
        client.close()


def test_a_key_for_one_service_cannot_register_as_another(cell) -> None:
    with Node("solver", remote_endpoints(cell, "camera"), heartbeat_period=0.2) as wrong:
        wrong.serve("solve", lambda args, ctx: {})
        deadline = time.monotonic() + 10
        while wrong.refused is None:
            assert time.monotonic() < deadline, "the broker never said REFUSED"
            time.sleep(0.05)
        assert "key 'camera' (role service:vision)" in wrong.refused
        assert "service:solver" in wrong.refused
        assert not wrong.registered.is_set()


def test_an_unknown_key_gets_no_connection_and_no_request(cell) -> None:
    client = CommandClient("cell", cell["endpoints"])
    try:
        with Node("solver", remote_endpoints(cell, "stranger"), heartbeat_period=0.2) as x:
            served = []
            x.serve("solve", lambda args, ctx: served.append(args) or {})
            assert client.request("solver", "solve", PLAN_ARGS, timeout=2).error \
                == "unavailable"
            assert not x.registered.is_set() and x.refused is None and served == []
            assert not x.publisher.wait_linked(0.5)
    finally:
        client.close()


def test_allow_entries_name_roles_and_declared_services(tmp_path: Path) -> None:
    env = robocell_env("tcp://127.0.0.1:7600")
    generate(tmp_path, "compute", env)
    pub = tmp_path / "compute.pub"
    assert parse_allow(f"{pub}:service:solver,vision")[1] == "service:solver,vision"
    assert parse_allow(f"{pub}:command")[1] == "command"
    assert parse_allow(str(pub))[1] == "read"
    with pytest.raises(KeyFileError, match="'slover'.*solver"):
        parse_allow(f"{pub}:service:slover")
    with pytest.raises(KeyFileError, match="not one of read, command"):
        parse_allow(f"{pub}:admin")


@pytest.mark.slow
@pytest.mark.parametrize("forget", [False, True], ids=["link back", "connections lost"])
def test_a_remote_service_comes_back_by_itself_after_its_link_is_cut(cell, forget) -> None:
    """The link to a remote solver goes silent (no FIN, no RST), then comes back -- with
    its TCP connections, or without them (a router that restarted: the old ones carry
    nothing, ever, and nobody is told). The solver, never restarted, notices by its ZeroMQ
    heartbeats, makes the link again, says HELLO and answers; meanwhile its callers are told
    at once that no solver is connected."""
    remote_port = int(cell["remote"].rsplit(":", 1)[1])
    relay_base = free_base_port()
    relay = Relay(relay_base, remote_port, range(4))
    via_relay = Endpoints.resolve(f"tcp://127.0.0.1:{relay_base}", cell["keys"]["compute"],
                                  serve=True)
    client = CommandClient("cell", cell["endpoints"])
    try:
        with Node("solver", via_relay) as solver:
            solver.serve("solve", lambda args, ctx: declared_result(
                "solver", "solve", facelets=args["facelets"]))
            wait_registered(cell["endpoints"], "solver", ["solve"])
            assert client.call("solver", "solve", PLAN_ARGS, timeout=10)
            relay.cut.set()
            deadline = time.monotonic() + 20
            while client.request("solver", "solve", PLAN_ARGS, timeout=2).error \
                    != "unavailable":
                assert time.monotonic() < deadline, "the silent instance was never dropped"
            relay.restore(forget)
            deadline = time.monotonic() + 20
            while not (reply := client.request("solver", "solve", PLAN_ARGS, timeout=2)).ok:
                assert reply.error == "unavailable", reply
                assert time.monotonic() < deadline, "the solver never came back"
                time.sleep(0.2)
            assert reply.result["facelets"] == PLAN_ARGS["facelets"]
            assert solver.registered.is_set()
    finally:
        client.close()
        relay.close()
