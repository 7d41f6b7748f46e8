"""Remote access: CURVE endpoint, ZAP allow-list, read-only versus command-allowed keys."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import zmq
from support.bus import (
    N_PORTS,
    declared_result,
    recv_topic,
    robocell_cmd,
    robocell_env,
    stop_process,
    wait_for_broker,
    wait_registered,
)

from robocell.common.bus import CommandClient, Endpoints, Node, Publisher, Subscriber
from robocell.common.bus.keys import KeyFileError, load_key
from robocell.common.config import free_port_blocks

STATUS = {"cycle_id": "c7", "stage": "executing"}


def generate(key_dir: Path, name: str, env: dict, broker_pub: Path | None = None) -> Path:
    args = ["keys", "generate", name, "--dir", str(key_dir)]
    if broker_pub:
        args += ["--broker-pub", str(broker_pub)]
    done = subprocess.run(robocell_cmd(*args), env=env, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    return key_dir / f"{name}.key"


@pytest.fixture(scope="module")
def remote_cell(tmp_path_factory: pytest.TempPathFactory):
    """A broker process with a CURVE endpoint allowing 'reader' (read) and 'operator'
    (command); 'stranger' has a key the broker does not know. A 'solver' node serves."""
    key_dir = tmp_path_factory.mktemp("keys")
    # one free block cut in two: blocks picked one by one before either is bound could overlap
    local, remote = (f"tcp://127.0.0.1:{port}" for port in free_port_blocks(N_PORTS, 1))
    env = robocell_env(local)
    generate(key_dir, "broker", env)
    broker_pub = key_dir / "broker.pub"
    keys = {name: generate(key_dir, name, env, broker_pub)
            for name in ("reader", "operator", "stranger")}
    proc = subprocess.Popen(
        robocell_cmd("broker", "--stats-period", "0.2", "--remote", remote,
                     "--curve-key", str(key_dir / "broker.key"),
                     "--allow", str(key_dir / "reader.pub"),
                     "--allow", f"{key_dir / 'operator.pub'}:command"),
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    local_endpoints = Endpoints.from_base(local)
    try:
        wait_for_broker(local_endpoints, proc=proc)
        with Node("solver", local_endpoints) as solver:
            solver.serve("solve", lambda args, ctx: declared_result(
                "solver", "solve", facelets=args["facelets"]))
            solver.set_state("ready")
            solver.publish("cell.status", STATUS)
            wait_registered(local_endpoints, "solver", ["solve"])
            local = Subscriber(["cell.status"], local_endpoints)
            try:  # once it has passed the proxy, the broker's cache answers with it
                assert recv_topic(local, "cell.status") is not None
            finally:
                local.close()
            yield {"remote": remote, "keys": keys, "key_dir": key_dir, "solver": solver}
    finally:
        stop_process(proc)


def test_allowed_key_receives_latched_state_and_live_messages(remote_cell) -> None:
    endpoints = Endpoints.resolve(remote_cell["remote"], remote_cell["keys"]["reader"])
    assert endpoints.publish is None  # remote clients never publish
    sub = Subscriber(["cell.status"], endpoints)
    try:
        env = recv_topic(sub, "cell.status")
        assert env is not None and env.payload == STATUS
        remote_cell["solver"].publish("cell.status", {**STATUS, "stage": "done"})
        env = recv_topic(sub, "cell.status")
        assert env is not None and env.payload["stage"] == "done"
        remote_cell["solver"].publish("cell.status", STATUS)
    finally:
        sub.close()


def test_key_not_on_the_allow_list_receives_nothing(remote_cell) -> None:
    stranger = Endpoints.resolve(remote_cell["remote"], remote_cell["keys"]["stranger"])
    sub = Subscriber([""], stranger)  # everything, if it were allowed
    plain = zmq.Context.instance().socket(zmq.SUB)  # no CURVE at all
    plain.linger = 0
    plain.subscribe(b"")
    plain.connect(stranger.subscribe)
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            remote_cell["solver"].publish("cell.status", STATUS)
            assert sub.recv(0.1) is None
            assert not plain.poll(10)
        assert sub.stats.received == 0
    finally:
        sub.close()
        plain.close()


@pytest.mark.slow
def test_read_only_key_is_refused_commands_and_command_key_is_served(remote_cell) -> None:
    reader = CommandClient("laptop", Endpoints.resolve(remote_cell["remote"],
                                                       remote_cell["keys"]["reader"]))
    operator = CommandClient("ops", Endpoints.resolve(remote_cell["remote"],
                                                      remote_cell["keys"]["operator"]))
    stranger = CommandClient("x", Endpoints.resolve(remote_cell["remote"],
                                                    remote_cell["keys"]["stranger"]))
    try:
        refused = reader.request("solver", "solve", {"facelets": "U"}, timeout=10)
        assert refused.error == "forbidden" and "only watch" in refused.message
        assert operator.call("solver", "solve", {"facelets": "U"},
                             timeout=10)["facelets"] == "U"
        # (3 s: long enough for the refused CURVE handshake to be seen on a loaded machine)
        unknown_key = stranger.request("solver", "ping", timeout=3)
        assert unknown_key.error == "timeout"
        assert "refused this CURVE key" in unknown_key.message
        assert "is the service running" not in unknown_key.message
    finally:
        for client in (reader, operator, stranger):
            client.close()


def test_remote_endpoints_cannot_publish_and_key_files_are_checked(remote_cell) -> None:
    endpoints = Endpoints.resolve(remote_cell["remote"], remote_cell["keys"]["reader"])
    with pytest.raises(ValueError, match="read-only"):
        Publisher("laptop", endpoints)
    with pytest.raises(KeyFileError, match="'broker' must be"):
        load_key(remote_cell["key_dir"] / "broker.key", need_broker=True)
    secret = (remote_cell["key_dir"] / "reader.key").stat().st_mode & 0o777
    assert secret == 0o600


@pytest.mark.parametrize("command", [["bus", "list", "--wait", "2"], ["bus", "echo", "cell.status"],
                                     ["bus", "call", "solver", "ping"]],
                         ids=lambda c: " ".join(c[:2]))
def test_a_command_with_a_refused_key_is_told_so_not_asked_whether_a_broker_runs(
        remote_cell, command) -> None:
    env = robocell_env(remote_cell["remote"])
    out = subprocess.run(robocell_cmd(*command, "--broker", remote_cell["remote"],
                                      "--curve-key", str(remote_cell["keys"]["stranger"])),
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "refused this CURVE key" in out.stderr and "--allow" in out.stderr, out.stderr
    assert "is `robocell broker` running" not in out.stderr, out.stderr
    assert "no broker answers" not in out.stderr, out.stderr
