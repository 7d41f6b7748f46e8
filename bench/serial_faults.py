"""Serial-line fault figures: how soon `robocell actuator --serial /dev/ttyUSB9` (a device
that does not exist) says what is wrong, on its own output, after the process starts; and
how often the host probes a firmware that has stalled (answers the handshake, then nothing).

Targets (issue 21): the reason within 1 s; a stalled firmware no longer probed ~190 times a
second (5,772 `?` in 30 s before), but with backoff (100 ms doubling to 1 s).
Run: PYTHONPATH=. python bench/serial_faults.py [--runs N] [--stall-s S]
"""

from __future__ import annotations

import argparse
import os
import selectors
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from robocell.robot import protocol as proto
from robocell.services.actuator.link import FirmwareUnreachableError, Link

MISSING_DEVICE = "/dev/ttyUSB9"
REASON_TARGET_S = 1.0
PROBES_BEFORE_PER_S = 5772 / 30
BANNER = ("start fw=stalled version=0 proto=1 boot=5ta11ed0 queue=4 caps=move motors=R "
          "last=0 accepted=0")
REPO = Path(__file__).resolve().parents[1]


def robocell(*args: str) -> list[str]:
    return [sys.executable, "-m", "robocell", *args]


def time_to_reason(runs: int, env: dict[str, str]) -> list[float]:
    """Seconds from starting `robocell actuator --serial /dev/ttyUSB9` to its first line."""
    times = []
    for _ in range(runs):
        started = time.monotonic()
        proc = subprocess.Popen(robocell("actuator", "--serial", MISSING_DEVICE), env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            selector = selectors.DefaultSelector()
            selector.register(proc.stderr, selectors.EVENT_READ)
            if selector.select(30.0):
                line = proc.stderr.readline()
                times.append(time.monotonic() - started)
                if len(times) == 1:
                    print(f"  first line: {line.strip()[:110]}...")
        finally:
            proc.terminate()
            proc.wait(10)
    return times


def stalled_probe_rate(stall_s: float) -> tuple[int, float]:
    """A TCP 'firmware' that answers HELLO and then stays silent: how many `?` the host
    sends while it waits (until its give-up)."""
    server = socket.create_server(("127.0.0.1", 0))
    received = bytearray()

    def serve() -> None:
        conn, _ = server.accept()
        conn.settimeout(0.1)
        with conn:
            while True:
                try:
                    data = conn.recv(4096)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                received.extend(data)
                if b"HELLO" in data:
                    conn.sendall(proto.frame(BANNER))

    threading.Thread(target=serve, daemon=True).start()
    link = Link(f"socket://127.0.0.1:{server.getsockname()[1]}", stall_give_up_s=stall_s)
    link.open()
    started = time.monotonic()
    try:
        link.stream(["MOVE R:400"], lambda i: None)
    except FirmwareUnreachableError:
        pass
    elapsed = time.monotonic() - started
    link.close()
    server.close()
    return received.count(proto.STATUS_BYTE), elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--stall-s", type=float, default=10.0)
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(REPO), ROBOCELL_BUS="tcp://127.0.0.1:1")
    print(f"robocell actuator --serial {MISSING_DEVICE} (no broker needed for the message):")
    times = time_to_reason(args.runs, env)
    print(f"  reason printed after: median {statistics.median(times):.2f} s, max "
          f"{max(times):.2f} s over {len(times)} runs (target {REASON_TARGET_S:g} s; before: "
          "nothing printed)")
    probes, elapsed = stalled_probe_rate(args.stall_s)
    print(f"stalled firmware: {probes} probes in {elapsed:.1f} s = {probes / elapsed:.2f} a "
          f"second (before: {PROBES_BEFORE_PER_S:.0f} a second)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
