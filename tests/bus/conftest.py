"""Fixtures for the bus tests: brokers on random loopback ports, in a thread or a process."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator

import pytest
from support.bus import free_base_port, robocell_cmd, robocell_env, stop_process, wait_for_broker

from robocell.common.bus import Endpoints
from robocell.services.broker.service import Broker


@pytest.fixture
def bus_base() -> str:
    return f"tcp://127.0.0.1:{free_base_port()}"


@pytest.fixture
def broker(bus_base: str) -> Iterator[Broker]:
    """An in-process broker on random ports (run on a thread), stopped after the test."""
    b = Broker(Endpoints.from_base(bus_base), stats_period=0.2)
    thread = threading.Thread(target=b.run, daemon=True)
    thread.start()
    assert b.ready.wait(5)
    yield b
    b.stop()
    thread.join(5)
    assert not thread.is_alive()


@pytest.fixture
def endpoints(broker: Broker) -> Endpoints:
    return broker.endpoints


@pytest.fixture
def broker_process(bus_base: str) -> Iterator[tuple[subprocess.Popen, Endpoints]]:
    """A real `robocell broker` process on random ports, terminated after the test."""
    proc = subprocess.Popen(robocell_cmd("broker", "--stats-period", "0.2"),
                            env=robocell_env(bus_base), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    endpoints = Endpoints.from_base(bus_base)
    try:
        wait_for_broker(endpoints, proc=proc)
        yield proc, endpoints
    finally:
        stop_process(proc)
