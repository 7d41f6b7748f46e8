"""`robocell cell`: the cycle coordinator on the bus (commands `cell.start`, `cell.scramble`).

The bus adapter around `robocell.services.cell.cycle.run_cycle`: it keeps the recent messages of the
topics a cycle waits on, runs one cycle at a time in its own thread (a second `start` while
one runs is answered ``busy``), and publishes `cell.status` and `cell.result` (latched).
"""

from __future__ import annotations

import collections
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from robocell.common.bus import Busy, CommandFailed
from robocell.common.malloc import freeze_startup_objects
from robocell.services.cell.cycle import CycleTimeouts, run_cycle

WATCHED_TOPICS = ("vision.cube_state", "actuator.result", "sim.twin_state", "errors",
                  "solver.plan")
HISTORY = 64


class NodeCellBus:
    """`CellBus` over a `Node`: remembers recent messages so no reply can slip past."""

    def __init__(self, node: Any) -> None:
        self.node = node
        self._messages: dict[str, collections.deque] = {
            t: collections.deque(maxlen=HISTORY) for t in WATCHED_TOPICS}
        self._changed = threading.Condition()
        self.stop_requested = threading.Event()
        for topic in WATCHED_TOPICS:
            node.subscribe(topic, self._on_message)

    def _on_message(self, env: Any) -> None:
        with self._changed:
            self._messages[env.topic].append((time.monotonic(), env.payload))
            self._changed.notify_all()

    def call(self, service: str, command: str, args: dict[str, Any], timeout: float) -> Any:
        return self.node.call(service, command, args, timeout=timeout)

    def wait_for(self, topic: str, match: Callable[[dict[str, Any]], bool],
                 timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for _, payload in reversed(self._messages[topic]):
                    if match(payload):
                        return payload
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.stop_requested.is_set():
                    return None
                self._changed.wait(min(remaining, 0.5))

    def latest(self, topic: str) -> dict[str, Any] | None:
        with self._changed:
            return self._messages[topic][-1][1] if self._messages[topic] else None

    def errors_since(self, since: float) -> list[dict[str, Any]]:
        with self._changed:
            return [p for t, p in self._messages["errors"] if t >= since]

    def stopped(self) -> bool:
        return self.stop_requested.is_set()

    def alive(self, service: str) -> bool:
        return self.node.liveness.is_alive(service)

    def status(self, cycle_id: str, stage: str, detail: str = "") -> None:
        stage_name = {"done": "done", "failed": "failed"}.get(stage, stage)
        self.node.publish("cell.status", {"cycle_id": cycle_id, "stage": stage_name,
                                          "detail": detail})


class CellService:
    """Runs cycles on request, one at a time."""

    def __init__(self, node: Any, speed: float) -> None:
        self.node = node
        self.bus = NodeCellBus(node)
        self.speed = speed
        self._running: threading.Thread | None = None
        self._lock = threading.Lock()
        self.cycles = 0
        self.failures = 0

    def start(self) -> None:
        self.node.serve("start", self.on_start, concurrency=4)
        self.node.serve("scramble", self.on_scramble, concurrency=1)
        self.node.serve("estop", self.on_estop, concurrency=8)
        self.node.publish("cell.status", {"cycle_id": "", "stage": "idle"})
        freeze_startup_objects()
        self.node.set_state("ready", cycles=0, failures=0)

    def on_start(self, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        with self._lock:
            if self._running is not None and self._running.is_alive():
                raise Busy("cell: a cycle is already running; wait for its cell.result")
            cycle_id = uuid.uuid4().hex[:12]
            self.bus.stop_requested.clear()
            self._running = threading.Thread(target=self._run, args=(cycle_id,), daemon=True)
            self._running.start()
        return {"cycle_id": cycle_id}

    @property
    def simulated(self) -> bool:
        """A simulated cell is one whose firmware simulator is alive on the bus."""
        return "firmware-sim" in self.node.alive()

    def _run(self, cycle_id: str) -> None:
        self.node.set_state("busy", cycle=cycle_id)
        result = run_cycle(self.bus, self.simulated, self.speed, CycleTimeouts(),
                           cycle_id=cycle_id)
        self.cycles += 1
        self.failures += 0 if result.ok else 1
        self.node.publish("cell.result", result.payload())
        if not result.ok:
            self.node.publish("errors", {
                "service": "cell", "stage": result.failed_stage or "cycle",
                "code": "cycle_failed", "message": result.error or "cycle failed",
                "action": "fix the named stage, then start a new cycle"})
        self.node.set_state("ready", cycles=self.cycles, failures=self.failures)

    def on_estop(self, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        """Stop the robot at once and abandon the running cycle (it reports `failed`)."""
        self.bus.stop_requested.set()
        try:
            self.node.call("actuator", "estop", {}, timeout=min(1.0, ctx.remaining()))
            robot = "stopped"
        except CommandFailed as exc:
            robot = f"not confirmed: {exc}"
        return {"cycle_running": bool(self._running and self._running.is_alive()),
                "actuator": robot}

    def on_scramble(self, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        """Simulation only: hand the twin to the firmware simulator's scramble."""
        try:
            return self.node.call("firmware-sim", "scramble", dict(args),
                                  timeout=max(1.0, ctx.remaining() - 0.1))
        except CommandFailed as exc:
            if exc.code == "unavailable":
                raise CommandFailed("failed", "cell.scramble only exists in simulation (no "
                                    "firmware simulator is running): scramble the real cube "
                                    "by hand and start a cycle") from None
            raise
