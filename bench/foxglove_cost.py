"""What watching the cell in Foxglove costs: the bridge's CPU and memory beside the monitor's.

A simulated cell (docker-compose.yml, profile `sim`, local processes) runs --cycles solve
cycles while one Foxglove WebSocket client subscribes to every channel of the bridge (as the
Foxglove app with the cell's layout and more). Prints, for the bridge and for the web
dashboard (`monitor`, the other live viewer, with no browser connected), the CPU seconds
used per cycle and the resident memory at the end, and what the client received per
channel (messages, bytes).

    python bench/foxglove_cost.py --profile six-motor --cycles 5 --speed 20
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import struct
import sys
import threading
import time
from pathlib import Path

import websockets

from robocell.common.bus import Endpoints, Node
from robocell.deploy.launcher import Launcher, temporary_cell_env
from robocell.tools.cycle import follow_cycle

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SUBPROTOCOLS = ["foxglove.sdk.v1", "foxglove.websocket.v1"]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Watcher:
    """A Foxglove client on its own thread, subscribed to every channel, counting."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.messages: collections.Counter[str] = collections.Counter()
        self.bytes: collections.Counter[str] = collections.Counter()
        self.problems: collections.Counter[str] = collections.Counter()
        """diagnostics seen: "service: code" -> count"""
        self.subscribed = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        if not self.subscribed.wait(30):
            raise RuntimeError(f"no Foxglove server answered on {self.url}")
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    async def _run(self) -> None:
        topics: dict[int, str] = {}
        async with websockets.connect(self.url, subprotocols=SUBPROTOCOLS, compression=None,
                                      max_size=None) as ws:
            while not self._stop.is_set():
                try:
                    frame = await asyncio.wait_for(ws.recv(), 0.2)
                except TimeoutError:
                    continue
                if isinstance(frame, str):
                    message = json.loads(frame)
                    if message["op"] == "advertise":
                        subs = []
                        for channel in message["channels"]:
                            topics[channel["id"]] = channel["topic"]
                            subs.append({"id": channel["id"], "channelId": channel["id"]})
                        await ws.send(json.dumps({"op": "subscribe", "subscriptions": subs}))
                        self.subscribed.set()
                elif frame[0] == 1:
                    (sub_id,) = struct.unpack_from("<I", frame, 1)
                    topic = topics.get(sub_id, "?")
                    self.messages[topic] += 1
                    self.bytes[topic] += len(frame)
                    if topic == "diagnostics":
                        diagnostic = json.loads(frame[13:])
                        self.problems[f"{diagnostic['service']}: {diagnostic['level']} "
                                      f"{diagnostic['code']}: {diagnostic['message'][:300]}"] += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="six-motor")
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--speed", type=float, default=20.0)
    args = parser.parse_args()
    with temporary_cell_env(args.profile, args.speed) as env:  # its cycle log: removed after
        launcher = Launcher("sim", env, quiet={"broker", "solver", "firmware-sim", "actuator-sim",
                                               "vision-sim", "cell", "monitor", "foxglove"})
        with launcher:
            launcher.start()
            bus = launcher.services[0].environment["ROBOCELL_BUS"]
            pids = {name: launcher.children[name].process.pid for name in ("foxglove", "monitor")}
            url = f"ws://127.0.0.1:{env['ROBOCELL_FOXGLOVE_PORT']}"
            with Watcher(url) as watcher, Node("bench-foxglove", Endpoints.resolve(bus),
                                               track_peers=False) as node:
                cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
                started = time.monotonic()
                solved = 0
                for cycle in range(args.cycles):
                    node.call("cell", "scramble", {"seed": 500 + cycle}, timeout=10.0)
                    cycle_id = node.call("cell", "start", {}, timeout=5.0)["cycle_id"]
                    solved += bool(follow_cycle(node, cycle_id, 300.0, show=False)["ok"])
                elapsed = time.monotonic() - started
                time.sleep(1.0)  # the last turns drawn
                cpu = {name: cpu_seconds(pid) - cpu0[name] for name, pid in pids.items()}
                rss = {name: rss_mib(pid) for name, pid in pids.items()}
    print(f"foxglove cost: profile {args.profile}, speed x{args.speed:g}, {args.cycles} cycles "
          f"({solved} solved) in {elapsed:.1f} s, one Foxglove client on every channel")
    print(f"{'process':<10} {'CPU s/cycle':>12} {'CPU %':>7} {'RSS MiB':>8}")
    for name in ("foxglove", "monitor"):
        print(f"{name:<10} {cpu[name] / args.cycles:>12.3f} {100 * cpu[name] / elapsed:>7.1f} "
              f"{rss[name]:>8.1f}")
    print(f"\n{'channel':<22} {'messages':>9} {'KiB':>9}")
    for topic, count in sorted(watcher.messages.items()):
        print(f"{topic:<22} {count:>9} {watcher.bytes[topic] / 1024:>9.1f}")
    for problem, count in sorted(watcher.problems.items()):
        print(f"diagnostic x{count}: {problem}")
    return 0 if solved == args.cycles else 1


if __name__ == "__main__":
    sys.exit(main())
