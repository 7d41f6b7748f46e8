"""A block of free loopback ports is free, and a taken port is never handed out."""

from __future__ import annotations

import socket

from robocell.common.config import LOOPBACK, free_port_block


def test_a_free_block_can_be_bound_whole_and_does_not_hold_a_taken_port() -> None:
    with socket.socket() as taken:
        taken.bind((LOOPBACK, 0))
        taken.listen()
        busy = taken.getsockname()[1]
        for _ in range(20):
            base = free_port_block(4)
            assert not base <= busy < base + 4
            held = [socket.socket() for _ in range(4)]
            try:
                for offset, sock in enumerate(held):
                    sock.bind((LOOPBACK, base + offset))  # raises if one was not free
            finally:
                for sock in held:
                    sock.close()
