"""Waiting for a broker process that cannot start says why at once: its exit code and its
own words (a port already taken), not "did not start" after the whole timeout."""

from __future__ import annotations

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
