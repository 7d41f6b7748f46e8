"""Every numeric argument of the simulator's scramble is bounded: a billion moves is refused
at once with the bound, never allocated (the process once grew to 6.9 GB and never answered).
A real `robocell firmware-sim --bus` process on a real broker."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator

import pytest
from support.bus import free_base_port, robocell_cmd, robocell_env, stop_process

from robocell.common.bus import CommandFailed, Endpoints, Node
from robocell.services.broker.service import Broker
from robocell.services.firmware.service import MAX_SCRAMBLE_MOVES


@pytest.fixture
def sim_bus() -> Iterator[Node]:
    base = f"tcp://127.0.0.1:{free_base_port()}"
    broker = Broker(Endpoints.from_base(base), stats_period=0.2)
    thread = threading.Thread(target=broker.run, daemon=True)
    thread.start()
    assert broker.ready.wait(5)
    proc = subprocess.Popen(robocell_cmd("firmware-sim", "--profile", "soltvvo-2x2", "--port",
                                         "0", "--bus"), env=robocell_env(base),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        with Node("test-scramble", broker.endpoints) as node:
            deadline = time.monotonic() + 60
            while "firmware-sim" not in node.alive():
                assert time.monotonic() < deadline, "firmware-sim did not join the bus"
                time.sleep(0.1)
            yield node
    finally:
        stop_process(proc)
        broker.stop()
        thread.join(5)


def test_a_billion_scramble_moves_is_refused_at_once_and_the_simulator_goes_on(sim_bus):
    began = time.monotonic()
    with pytest.raises(CommandFailed) as refused:
        sim_bus.call("firmware-sim", "scramble", {"moves": 1_000_000_000}, timeout=10.0)
    assert refused.value.code == "invalid_arguments", refused.value
    assert str(MAX_SCRAMBLE_MOVES) in refused.value.message
    assert time.monotonic() - began < 5.0
    with pytest.raises(CommandFailed) as negative:
        sim_bus.call("firmware-sim", "scramble", {"moves": -1}, timeout=10.0)
    assert negative.value.code == "invalid_arguments"
    done = sim_bus.call("firmware-sim", "scramble", {"moves": MAX_SCRAMBLE_MOVES, "seed": 3},
                        timeout=10.0)
    assert len(done["moves"]) == MAX_SCRAMBLE_MOVES
