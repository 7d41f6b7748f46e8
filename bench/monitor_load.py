"""Monitor under load: N bus messages per second through a real broker into a real monitor,
with WebSocket clients counting what reaches them. Prints, per rate: messages in, drops,
updates out per view, the age of the shown value when it reaches the browser, memory and CPU.

    python bench/monitor_load.py [--rates 1000 5000] [--duration 10] [--clients 2]

Target (issue 9): 1,000 msg/s without growing memory or lagging; updates coalesced per view.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import multiprocessing
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import aiohttp
from monitor_rig import cpu_seconds, rss_kib, start_rig

from robocell.common.bus import Endpoints, Publisher
from robocell.common.cube import random_facelets

CUBE_EVERY = 10
RSS_PERIOD_S = 1.0


class Client(threading.Thread):
    """A browser stand-in: a WebSocket client recording each view update and its age."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url.replace("http", "ws") + "/ws"
        self.updates: collections.Counter[str] = collections.Counter()
        self.ages_ms: list[float] = []
        self.last_step = -1
        self.last_change_at = 0.0
        self.ready = threading.Event()
        self.done = threading.Event()

    def run(self) -> None:
        asyncio.run(self._listen())

    async def _listen(self) -> None:
        async with aiohttp.ClientSession() as session, session.ws_connect(self.url) as ws:
            self.ready.set()
            while not self.done.is_set():
                try:
                    msg = await ws.receive(0.2)
                except TimeoutError:
                    continue
                data = json.loads(msg.data)
                if data["type"] != "update":
                    continue
                now = time.time()
                for name, value in data["views"].items():
                    self.updates[name] += 1
                    if name == "progress" and value:
                        self.ages_ms.append((now - value["time"]) * 1000.0)
                        if value["step"] != self.last_step:
                            self.last_step = value["step"]
                            self.last_change_at = now


def publish_load(bus: str, rate: int, duration: float, monitor_pid: int,
                 results: multiprocessing.Queue) -> None:
    """The load, in its own process: paced publishing, monitor RSS sampled every second."""
    endpoints = Endpoints.from_base(bus)
    actuator = Publisher("actuator", endpoints)
    vision = Publisher("vision", endpoints)
    actuator.wait_linked(5)
    vision.wait_linked(5)
    rss = [rss_kib(monitor_pid)]
    n_total = int(rate * duration)
    last_step = 0
    last_wall = 0.0
    start = time.monotonic()
    next_rss = start + RSS_PERIOD_S
    for i in range(n_total):
        if i % CUBE_EVERY == 0:
            vision.publish("vision.cube_state", {
                "scan_id": f"s{i}", "puzzle": "3x3x3", "facelets": random_facelets(3, i),
                "confidence": [1.0] * 54})
        else:
            actuator.publish("actuator.progress", {
                "plan_id": "load", "step": i, "n_steps": n_total, "primitive": "R",
                "eta_s": (n_total - i) / rate, "state": "running"})
            last_step = i
            last_wall = time.time()
        if i % 10 == 0:
            now = time.monotonic()
            ahead = start + i / rate - now
            if ahead > 0:
                time.sleep(ahead)
            if now >= next_rss:
                rss.append(rss_kib(monitor_pid))
                next_rss += RSS_PERIOD_S
    elapsed = time.monotonic() - start
    time.sleep(0.2)  # let the last frames leave before closing
    actuator.close()
    vision.close()
    results.put({"n_total": n_total, "elapsed": elapsed, "last_step": last_step, "rss": rss,
                 "last_wall": last_wall})


def run(rate: int, duration: float, n_clients: int, tmp: Path) -> dict[str, float]:
    rig = start_rig(None, tmp / f"rate-{rate}")
    try:
        clients = [Client(rig.url) for _ in range(n_clients)]
        for c in clients:
            c.start()
            c.ready.wait(10)
        pid = rig.monitor.pid
        time.sleep(1.0)
        base_updates = [dict(c.updates) for c in clients]
        cpu0 = cpu_seconds(pid)
        queue: multiprocessing.Queue = multiprocessing.Queue()
        load = multiprocessing.Process(target=publish_load,
                                       args=(rig.bus, rate, duration, pid, queue))
        load.start()
        outcome = queue.get(timeout=duration * 3 + 30)
        load.join(10)
        sent_at = time.monotonic()
        last_step, n_total, elapsed = outcome["last_step"], outcome["n_total"], outcome["elapsed"]
        while (any(c.last_step != last_step for c in clients)
               and time.monotonic() - sent_at < 5.0):
            time.sleep(0.005)
        catch_up_s = max(0.0, time.monotonic() - sent_at)
        last_late_ms = max((c.last_change_at - outcome["last_wall"]) * 1000.0
                           if c.last_step == last_step else float("inf") for c in clients)
        cpu = cpu_seconds(pid) - cpu0
        rss = outcome["rss"] + [rss_kib(pid)]
        for c in clients:
            c.done.set()
            c.join(5)
        with urllib.request.urlopen(rig.url + "/api/snapshot") as response:
            snapshot = json.loads(response.read())
    finally:
        rig.close()
    monitor = snapshot["monitor"]
    received = sum(t["messages"] for name, t in monitor["topics"].items()
                   if name in ("actuator.progress", "vision.cube_state"))
    progress_updates = statistics.mean(c.updates["progress"] - b.get("progress", 0)
                                       for c, b in zip(clients, base_updates, strict=True))
    cube_updates = statistics.mean(c.updates["cube"] - b.get("cube", 0)
                                   for c, b in zip(clients, base_updates, strict=True))
    ages = sorted(a for c in clients for a in c.ages_ms)
    return {
        "target msg/s": rate, "sent msg/s": n_total / elapsed, "sent": n_total,
        "received": received, "dropped": monitor["receive"]["dropped"],
        "progress updates/s": progress_updates / elapsed,
        "cube updates/s": cube_updates / elapsed,
        "msgs per update": n_total / max(1.0, progress_updates + cube_updates),
        "age p50 ms": ages[len(ages) // 2] if ages else float("nan"),
        "age p99 ms": ages[int(len(ages) * 0.99)] if ages else float("nan"),
        "last value late ms": last_late_ms,
        "RSS @1s MiB": rss[1] / 1024 if len(rss) > 1 else rss[0] / 1024,
        "RSS end MiB": rss[-1] / 1024,
        "RSS growth MiB": (rss[-1] - (rss[1] if len(rss) > 1 else rss[0])) / 1024,
        "monitor CPU %": 100.0 * cpu / (elapsed + catch_up_s),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = [run(rate, args.duration, args.clients, Path(tmp)) for rate in args.rates]
    print(f"monitor load: {args.duration:g} s per rate, {args.clients} WebSocket client(s), "
          f"one cube state per {CUBE_EVERY} messages, the rest actuator.progress")
    print("target: 1,000 msg/s with flat memory and no lag (issue 9)")
    width = max(len(k) for k in results[0])
    for key in results[0]:
        cells = "".join(f"{r[key]:>12.1f}" if isinstance(r[key], float) else f"{r[key]:>12}"
                        for r in results)
        print(f"{key:<{width}} {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
