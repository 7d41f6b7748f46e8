"""Solve latency through a broker's CURVE endpoint (a solver on another host) against the
local endpoint, side by side: the same solver process, the same cubes, the same run.

One `robocell solver --broker A --broker B_REMOTE` serves two brokers at once: cell A, whose
solver is registered on its local (loopback, plain) command port, and cell B, whose solver is
registered over B's CURVE endpoint with a key allowed as service:solver. For each of the
seeded random cubes a caller asks each way in turn (the order rotated), and, to show the
transport alone, a `ping`:

- ``local``        caller -> broker A -> solver (plain loopback)
- ``curve``        caller -> broker B -> CURVE -> solver (the remote solver)
- ``curve both``   caller -> CURVE -> broker B -> CURVE -> solver (an operator elsewhere too)

All on one machine (loopback): the figures are the cost of CURVE and the extra hop, not of a
network; the netns runs add a link.

    python bench/remote_solve_latency.py [--requests 200] [--profile soltvvo-2x2] [--size 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from robocell.common.bus import CommandClient, Endpoints, Subscriber
from robocell.common.bus.keys import CurveKey
from robocell.common.config import free_port_blocks
from robocell.common.scramble import random_facelets

READY_TIMEOUT_S = 300.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def robocell(*args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "robocell", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_registered(endpoints: Endpoints, service: str, command: str) -> None:
    """Until bus.stats lists an instance of ``service`` offering ``command`` (the solver
    serves `solve` once its workers are warm)."""
    sub = Subscriber(["bus.stats"], endpoints)
    deadline = time.monotonic() + READY_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            env = sub.recv(1.0)
            found = env.payload.get("instances", {}).get(service, []) if env else []
            if any(command in instance["commands"] for instance in found):
                return
        raise SystemExit(f"no {service} registered at {endpoints.subscribe} within "
                         f"{READY_TIMEOUT_S:g} s")
    finally:
        sub.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--profile", default="soltvvo-2x2")
    parser.add_argument("--size", type=int, default=2, help="cube size of the requests")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--seed", type=int, default=50_000)
    args = parser.parse_args()
    base_a, base_b, remote_b = (f"tcp://127.0.0.1:{port}" for port in free_port_blocks(4, 4, 4))
    env = {**os.environ}
    for name in ("ROBOCELL_BUS", "ROBOCELL_BUS_CURVE_KEY", "ROBOCELL_BUS_SUB",
                 "ROBOCELL_BUS_PUB", "ROBOCELL_BUS_CMD", "ROBOCELL_BUS_TAP"):
        env.pop(name, None)
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory() as keys_dir:
        keys = Path(keys_dir)
        broker = CurveKey.generate("broker")
        broker.write(keys)
        for name in ("compute", "operator"):
            CurveKey.generate(name, broker.public).write(keys)
        try:
            procs.append(robocell("broker", "--bus", base_a, env=env))
            procs.append(robocell("broker", "--bus", base_b, "--remote", remote_b,
                                  "--curve-key", str(keys / "broker.key"),
                                  "--allow", f"{keys / 'compute.pub'}:service:solver",
                                  "--allow", f"{keys / 'operator.pub'}:command", env=env))
            procs.append(robocell("solver", "--workers", str(args.workers), "--profile",
                                  args.profile, "--broker", base_a, "--curve-key", "",
                                  "--broker", remote_b, "--curve-key",
                                  str(keys / "compute.key"), env=env))
            wait_registered(Endpoints.from_base(base_a), "solver", "solve")
            wait_registered(Endpoints.from_base(base_b), "solver", "solve")
            ways = {"local": CommandClient("bench", Endpoints.from_base(base_a)),
                    "curve": CommandClient("bench", Endpoints.from_base(base_b)),
                    "curve both": CommandClient("bench", Endpoints.resolve(
                        remote_b, keys / "operator.key"))}
            rows = measure(ways, args)
        finally:
            for proc in reversed(procs):
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
    print(f"{args.requests} requests each way, {args.size}x{args.size} cubes (seeds "
          f"{args.seed}..) for profile {args.profile}, solver --workers {args.workers}; "
          "one solver process serving both brokers; milliseconds, caller's wall time")
    print(f"{'way':<12} {'command':<8} {'p50':>7} {'p99':>7} {'mean':>7} {'max':>7}")
    for (way, command), times in rows.items():
        print(f"{way:<12} {command:<8} {pct(times, .5):>7.2f} {pct(times, .99):>7.2f} "
              f"{statistics.fmean(times):>7.2f} {max(times):>7.2f}")
    return 0


def measure(ways: dict[str, CommandClient], args: argparse.Namespace
            ) -> dict[tuple[str, str], list[float]]:
    """Each cube asked each way (order rotated), then a ping each way; caller's wall ms."""
    rows: dict[tuple[str, str], list[float]] = {}
    names = list(ways)
    for client in ways.values():  # warm: the first request of a connection is not timed
        client.call("solver", "ping", timeout=30)
    for i in range(args.requests):
        facelets = random_facelets(args.size, args.seed + i)
        order = names[i % len(names):] + names[:i % len(names)]
        for way in order:
            for command, call_args in (("solve", {"facelets": facelets}), ("ping", {})):
                start = time.perf_counter()
                ways[way].call("solver", command, call_args, timeout=30)
                rows.setdefault((way, command), []).append(
                    (time.perf_counter() - start) * 1000)
    for client in ways.values():
        client.close()
    return dict(sorted(rows.items(), key=lambda item: (item[0][1] != "solve", item[0][0])))


if __name__ == "__main__":
    sys.exit(main())
