"""Bounded load: 1,000 bus messages per second for a few seconds through a real broker into a
real monitor -- nothing lost, updates coalesced per view, memory flat, the page keeps up."""

from __future__ import annotations

import asyncio
import collections
import json
import threading
import time
from pathlib import Path

import aiohttp
from support.monitor import http_get

from robocell.common.bus import Publisher
from robocell.common.cube import random_facelets
from robocell.services.monitor.dashboard import UPDATE_PERIOD_S

RATE_HZ = 1000
DURATION_S = 4.0
CUBE_EVERY = 10  # one cube state per ten progress messages
RSS_GROWTH_LIMIT_KIB = 12 * 1024
UPDATE_SLACK = 1.5


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for process {pid}")


class UpdateCounter(threading.Thread):
    """A WebSocket client counting the updates of each view and keeping the latest values."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url.replace("http", "ws") + "/ws"
        self.counts: collections.Counter[str] = collections.Counter()
        self.latest: dict[str, object] = {}
        self.ready = threading.Event()
        self.stop = threading.Event()

    def run(self) -> None:
        asyncio.run(self._listen())

    async def _listen(self) -> None:
        async with aiohttp.ClientSession() as session, session.ws_connect(self.url) as ws:
            self.ready.set()
            while not self.stop.is_set():
                try:
                    msg = await ws.receive(0.2)
                except TimeoutError:
                    continue
                data = json.loads(msg.data)
                if data["type"] == "update":
                    for name, value in data["views"].items():
                        self.counts[name] += 1
                        self.latest[name] = value


def test_a_thousand_messages_per_second_are_coalesced_with_flat_memory(cell, page):
    client = UpdateCounter(cell.url)
    client.start()
    assert client.ready.wait(30)
    page.goto(cell.url + "/")
    page.wait_for_selector("#conn[data-state=live]")
    actuator = Publisher("actuator", cell.endpoints)
    vision = Publisher("vision", cell.endpoints)
    assert actuator.wait_linked(10) and vision.wait_linked(10)
    solver = Publisher("solver", cell.endpoints)
    assert solver.wait_linked(10)
    n_total = int(RATE_HZ * DURATION_S)
    solver.publish("solver.plan", {
        "plan_id": "load", "puzzle": "3x3x3", "profile": "six-motor",
        "facelets": random_facelets(3, 0), "primitives": ["R"] * n_total,
        "face_turns": ["R"] * 4, "predicted_ms": 1.0, "search": {}})
    deadline = time.monotonic() + 20  # the plan is shown before the load starts
    while (client.latest.get("plan") or {}).get("plan_id") != "load":
        assert time.monotonic() < deadline, f"no plan view: {client.latest.get('plan')}"
        time.sleep(0.02)
    baseline = dict(client.counts)
    pid = cell.monitor.popen.pid
    sent = collections.Counter()
    rss_samples = []
    cube = ""
    start = time.monotonic()
    for i in range(n_total):
        if i % CUBE_EVERY == 0:
            cube = random_facelets(3, i)
            vision.publish("vision.cube_state", {"scan_id": f"s{i}", "puzzle": "3x3x3",
                                                 "facelets": cube, "confidence": [1.0] * 54})
            sent["vision.cube_state"] += 1
        else:
            actuator.publish("actuator.progress", {
                "plan_id": "load", "step": i, "n_steps": n_total, "primitive": "R",
                "eta_s": (n_total - i) / RATE_HZ, "state": "running"})
            sent["actuator.progress"] += 1
        if i % 50 == 0:  # pace to RATE_HZ
            ahead = start + i / RATE_HZ - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
            if i % RATE_HZ == 0:  # before the load, then every second
                rss_samples.append(rss_kib(pid))
    elapsed = time.monotonic() - start
    last_step = max(i for i in range(n_total) if i % CUBE_EVERY)
    published_at = time.monotonic()

    # the last values reach the browser side promptly: no backlog
    deadline = published_at + 3.0
    while time.monotonic() < deadline:
        progress = client.latest.get("progress")
        if (isinstance(progress, dict) and progress["step"] == last_step
                and (client.latest.get("cube") or {}).get("facelets") == cube):
            break
        time.sleep(0.02)
    lag_s = time.monotonic() - published_at
    page.wait_for_selector(f"#cube-net[data-facelets='{cube}']", timeout=20000)
    page.wait_for_selector(f"#plan-steps li.current[data-step='{last_step}']", timeout=20000)
    rss_samples.append(rss_kib(pid))
    client.stop.set()
    client.join(5)
    for p in (actuator, vision, solver):
        p.close()

    assert client.latest["progress"]["step"] == last_step, f"stale after {lag_s:.2f} s"
    assert client.latest["cube"]["facelets"] == cube
    snapshot = json.loads(http_get(cell.url + "/api/snapshot"))
    seen = snapshot["monitor"]["topics"]
    for topic, count in sent.items():
        assert seen[topic]["messages"] >= count, f"{topic}: monitor saw {seen[topic]} of {count}"
    assert snapshot["monitor"]["receive"]["dropped"] == 0
    # coalesced: at most about one update per view per period, however many messages came
    max_updates = (elapsed + lag_s) / UPDATE_PERIOD_S * UPDATE_SLACK + 5
    for view, topic in (("progress", "actuator.progress"), ("cube", "vision.cube_state")):
        updates = client.counts[view] - baseline.get(view, 0)
        assert 5 <= updates <= max_updates, (
            f"{view}: {updates} updates for {sent[topic]} messages in {elapsed:.1f} s")
    # memory stays flat from the first second to the end
    growth = max(rss_samples[2:]) - rss_samples[1]
    assert growth < RSS_GROWTH_LIMIT_KIB, f"monitor RSS grew {growth} KiB: {rss_samples}"
    assert page.js_errors == []
