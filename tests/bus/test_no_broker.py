"""With no broker at its address, every command that needs the bus says so within a few
seconds -- naming the address and how to start one -- instead of waiting or blaming a service;
the dashboard's /healthz and its page say so too.

Real processes and real sockets on loopback ports where nothing listens.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest
from support.bus import N_PORTS, free_base_port, robocell_cmd, robocell_env

from robocell.common.config import free_port_block, free_port_blocks
from robocell.common.paths import HISTORY_ENV

ANSWER_WITHIN_S = 6.0
"""A few seconds: the probe's own wait and a loaded machine's interpreter start."""
STARTUP_ALLOWANCE_S = 8.0
"""Importing the command on a loaded two-core machine, before its own clock starts."""

COMMANDS = [
    ["bus", "echo", "cell.status"],
    ["bus", "list"],
    ["bus", "hz", "actuator.progress"],
    ["bus", "pub", "cell.status", '{"cycle_id": "x", "stage": "idle"}'],
    ["bus", "call", "cell", "status"],
    ["bus", "record", "{tmp}/run.mcap"],
    ["cycle"],
    ["cell", "scramble"],
    ["health", "solver"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_command_that_needs_the_bus_names_the_missing_broker_at_once(command, tmp_path):
    base = free_base_port()
    argv = [word.replace("{tmp}", str(tmp_path)) for word in command]
    started = time.monotonic()
    out = subprocess.run(robocell_cmd(*argv), env=robocell_env(f"tcp://127.0.0.1:{base}"),
                         capture_output=True, text=True,
                         timeout=ANSWER_WITHIN_S + STARTUP_ALLOWANCE_S + 20)
    took = time.monotonic() - started
    assert out.returncode != 0, out.stdout
    assert "no broker answers" in out.stderr, out.stderr
    assert f"127.0.0.1:{base}" in out.stderr, out.stderr
    assert "robocell broker" in out.stderr and "robocell up" in out.stderr, out.stderr
    assert "no reply from" not in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert took < ANSWER_WITHIN_S + STARTUP_ALLOWANCE_S, took


def _get_json(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_monitor_without_a_broker_is_not_healthy_and_says_why():
    base, port = free_port_blocks(N_PORTS, 1)  # apart: blocks picked one by one could overlap
    env = {**robocell_env(f"tcp://127.0.0.1:{base}"), "ROBOCELL_MONITOR_PORT": str(port)}
    proc = subprocess.Popen(robocell_cmd("monitor"), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60  # only bounds a hang on a loaded machine
        health = None
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            try:
                status, health = _get_json(f"http://127.0.0.1:{port}/healthz")
            except OSError:
                time.sleep(0.2)
                continue
            if health.get("broker") == "absent":
                break
            time.sleep(0.5)
        assert health is not None and status == 503 and health["ok"] is False, health
        assert health["broker"] == "absent" and f"127.0.0.1:{base}" in health["problem"], health
        _, snapshot = _get_json(f"http://127.0.0.1:{port}/api/snapshot")
        assert snapshot["link"]["broker"] == "absent", snapshot.get("link")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


SERVICES = [
    ["solver", "--workers", "1"],
    ["vision", "serve", "--camera", "sim"],
    ["actuator", "--serial", "socket://127.0.0.1:{free}"],
    ["cell", "--history", "{tmp}/cycles.sqlite"],
]
HEARD_AGAIN_S = 5.0
"""How long a service is watched after it said so, to see it said once and still runs."""


def _lines_of(proc: subprocess.Popen) -> queue.Queue:
    """Each line ``proc`` writes, as it comes (a reader thread)."""
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in proc.stdout:
            lines.put(line)
    threading.Thread(target=read, daemon=True).start()
    return lines


@pytest.mark.parametrize("command", SERVICES, ids=lambda c: c[0])
def test_a_service_without_a_broker_says_so_once_and_keeps_retrying(command, tmp_path):
    base = free_base_port()
    argv = [word.replace("{tmp}", str(tmp_path)).replace("{free}", str(free_port_block(1)))
            for word in command]
    env = {**robocell_env(f"tcp://127.0.0.1:{base}"), HISTORY_ENV: str(tmp_path / "h.sqlite")}
    started = time.monotonic()
    proc = subprocess.Popen(robocell_cmd(*argv), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    said: list[str] = []
    try:
        lines = _lines_of(proc)
        said_at = None
        deadline = started + ANSWER_WITHIN_S + STARTUP_ALLOWANCE_S
        while time.monotonic() < (deadline if said_at is None else said_at + HEARD_AGAIN_S):
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                continue
            said.append(line)
            if "no broker answers" in line and said_at is None:
                said_at = time.monotonic()
        assert said_at is not None, "".join(said)
        assert proc.poll() is None, "".join(said)  # it keeps retrying
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    told = [line for line in said if "no broker answers" in line]
    assert len(told) == 1, told
    assert f"127.0.0.1:{base}" in told[0] and "robocell broker" in told[0], told
    assert told[0].startswith(f"{command[0]}:") and "keeps retrying" in told[0], told
