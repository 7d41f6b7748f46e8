"""Finding free loopback ports: a broker needs a block of consecutive ones (its endpoints
are a base port plus offsets), for a test, a benchmark or a second cell on one host."""

from __future__ import annotations

import socket

LOOPBACK = "127.0.0.1"
HIGHEST_PORT = 65535
ATTEMPTS = 200


def free_port_block(count: int, host: str = LOOPBACK) -> int:
    """A port P such that P .. P + count - 1 are all free on ``host`` right now (the
    operating system picks P; the block is then checked by binding each port)."""
    for _ in range(ATTEMPTS):
        with socket.socket() as probe:
            probe.bind((host, 0))
            base = probe.getsockname()[1]
        if base + count - 1 > HIGHEST_PORT:
            continue
        held: list[socket.socket] = []
        try:
            for offset in range(count):
                sock = socket.socket()
                held.append(sock)
                sock.bind((host, base + offset))
            return base
        except OSError:
            continue
        finally:
            for sock in held:
                sock.close()
    raise RuntimeError(f"no {count} consecutive free ports on {host} after {ATTEMPTS} tries; "
                       "is the host out of ephemeral ports?")
