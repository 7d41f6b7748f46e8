"""Waiting for a broker process that cannot start says why at once: its exit code and its
own words (a port already taken), not "did not start" after the whole timeout."""

from __future__ import annotations

import signal
import socket
import subprocess
import time

import pytest
from support.bus import (
    BROKER_START_TIMEOUT_S,
    free_base_port,
    robocell_cmd,
    robocell_env,
    stop_process,
    wait_for_broker,
)

from robocell.common.bus import Endpoints


def test_a_broker_that_exits_is_reported_with_its_reason() -> None:
    base = free_base_port()
    taken = socket.socket()
    taken.bind(("127.0.0.1", base + 1))  # its publish port
    taken.listen()
    proc = subprocess.Popen(robocell_cmd("broker"), env=robocell_env(f"tcp://127.0.0.1:{base}"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        start = time.monotonic()
        with pytest.raises(AssertionError) as failed:
            wait_for_broker(Endpoints.from_base(f"tcp://127.0.0.1:{base}"), proc=proc)
        waited = time.monotonic() - start
        assert "exited with 2" in str(failed.value)
        assert "Address already in use" in str(failed.value)
        assert waited < BROKER_START_TIMEOUT_S  # not the whole timeout
    finally:
        stop_process(proc)
        taken.close()


def test_sigusr1_prints_every_threads_stack_and_the_process_goes_on(tmp_path) -> None:
    """What a hung process is doing, without a debugger: `kill -USR1 PID`."""
    base = f"tcp://127.0.0.1:{free_base_port()}"
    log = tmp_path / "broker.err"
    with open(log, "w") as err:
        proc = subprocess.Popen(robocell_cmd("broker", "--stats-period", "0.2"),
                                env=robocell_env(base), stdout=subprocess.DEVNULL, stderr=err)
    try:
        wait_for_broker(Endpoints.from_base(base), proc=proc)
        proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + BROKER_START_TIMEOUT_S
        while "most recent call first" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        said = log.read_text()
        assert said.count("most recent call first") >= 2  # the main thread and the others
        assert "robocell/services/broker" in said
        wait_for_broker(Endpoints.from_base(base), proc=proc)  # still serving
        assert proc.poll() is None
    finally:
        stop_process(proc)
