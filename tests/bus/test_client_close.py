"""Command clients closed while their link to the broker is still being set up must not stall
the process: each watches its link with a ZeroMQ socket monitor, and libzmq's I/O thread
writes monitor events with a blocking send. A client whose monitor was closed first blocked
that thread on the next event (its handshake finishing), and with it every socket of the
process: a burst of short-lived clients left the next request without any reply (seen as a
60 s timeout of every request in `bench/cell_cycles.py --burst 10`)."""

from __future__ import annotations

import threading

from robocell.common.bus import CommandClient, Endpoints

ROUNDS = 5
CLIENTS = 100


def test_clients_closed_at_once_leave_the_process_able_to_talk(endpoints: Endpoints) -> None:
    probe = CommandClient("probe", endpoints)
    try:
        first = probe.request("nobody", "ping", {}, timeout=5.0)
        assert first.error == "unavailable", first.message  # the broker answers

        def connect_and_close(k: int) -> None:
            client = CommandClient(f"short-{k}", endpoints)
            client.close()

        for round_ in range(ROUNDS):
            threads = [threading.Thread(target=connect_and_close, args=(k,))
                       for k in range(CLIENTS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(10.0)
            assert not any(t.is_alive() for t in threads), "a client's close hung"
            reply = probe.request("nobody", "ping", {}, timeout=5.0)
            # any answer from the broker will do; no answer at all means this process stalled
            assert reply.error == "unavailable", (f"round {round_}: {reply.error}: "
                                                  f"{reply.message}")
    finally:
        probe.close()
