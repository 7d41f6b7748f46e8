"""The local launcher behind `robocell up`: the compose services as supervised processes.

Pattern: a supervisor. Each service of the chosen compose profile runs as a child process
in dependency order; its output is copied line by line with a ``[name]`` prefix; the
launcher waits until each service's heartbeat says it is alive before starting the ones
that depend on it. It ends when asked (Ctrl-C / `stop()`: every child gets SIGTERM, then
SIGKILL after a grace period) or when a child dies (the others are stopped and the exit
status is non-zero, naming the service).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from robocell.cell.compose import LocalService, load_services

STOP_GRACE_S = 5.0
READY_STATES = ("ready", "busy")
"""Lifecycle states in which a service counts as started."""
READY_TIMEOUT_S = 180.0
"""How long a service may take to become alive (a first run builds solver tables)."""


class LaunchError(RuntimeError):
    """A service did not start or died; the message names it and what to look at."""


@dataclass
class Child:
    service: LocalService
    process: subprocess.Popen
    pump: threading.Thread
    output_tail: list[str] = field(default_factory=list)


class Launcher:
    """Start, watch and stop the cell's processes."""

    def __init__(self, profile: str = "sim", env: dict[str, str] | None = None,
                 out: TextIO | None = None, only: set[str] | None = None,
                 quiet: set[str] | None = None) -> None:
        self.env = dict(os.environ if env is None else env)
        self.services = [s for s in load_services(profile, self.env)
                         if only is None or s.name in only]
        self.out = out or sys.stdout
        self.quiet = quiet or set()
        self.children: dict[str, Child] = {}
        self._print_lock = threading.Lock()
        self._stopping = False

    def log(self, name: str, line: str) -> None:
        with self._print_lock:
            self.out.write(f"[{name}] {line}\n")
            self.out.flush()

    def _pump(self, child_name: str, stream: TextIO, tail: list[str]) -> None:
        for line in stream:
            line = line.rstrip("\n")
            tail.append(line)
            del tail[:-40]
            if child_name not in self.quiet:
                self.log(child_name, line)

    def start_service(self, service: LocalService) -> Child:
        env = {**self.env, **service.environment, "PYTHONUNBUFFERED": "1"}
        process = subprocess.Popen(
            list(service.argv), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, bufsize=1, start_new_session=True)
        tail: list[str] = []
        pump = threading.Thread(target=self._pump, args=(service.name, process.stdout, tail),
                                daemon=True)
        pump.start()
        child = Child(service, process, pump, tail)
        self.children[service.name] = child
        return child

    def start(self, on_ready: Callable[[str], None] | None = None) -> None:
        """Start every service, each once the services it depends on are alive."""
        from robocell.common.bus import Endpoints, Liveness, Subscriber

        bus = self.services[0].environment.get("ROBOCELL_BUS") or self.env.get("ROBOCELL_BUS")
        liveness = Liveness()
        states: dict[str, str] = {}
        subscriber: Subscriber | None = None
        try:
            for service in self.services:
                child = self.start_service(service)
                if subscriber is None:
                    subscriber = Subscriber(["heartbeat"], Endpoints.resolve(bus))
                deadline = time.monotonic() + READY_TIMEOUT_S
                while not (liveness.is_alive(service.bus_name)
                           and states.get(service.bus_name) in READY_STATES):
                    if child.process.poll() is not None:
                        tail = "\n".join(child.output_tail[-15:])
                        raise LaunchError(
                            f"{service.name} exited with status {child.process.returncode} "
                            f"while starting; its last output:\n{tail}")
                    if time.monotonic() > deadline:
                        heard = states.get(service.bus_name, "no heartbeat")
                        raise LaunchError(f"{service.name} was not ready within "
                                          f"{READY_TIMEOUT_S:.0f} s (last state: {heard}); "
                                          f"see its [{service.name}] output")
                    env = subscriber.recv(timeout=0.2)
                    if env is not None and env.topic == "heartbeat":
                        liveness.update(env)
                        states[env.payload["service"]] = env.payload["state"]
                if on_ready:
                    on_ready(service.name)
        except BaseException:
            self.stop()
            raise
        finally:
            if subscriber is not None:
                subscriber.close()

    def dead(self) -> list[tuple[str, int]]:
        """Services that have exited, with their status."""
        return [(name, c.process.returncode) for name, c in self.children.items()
                if c.process.poll() is not None]

    def watch(self, stop: threading.Event | None = None) -> int:
        """Block until ``stop`` is set or a service dies; returns the exit status."""
        try:
            while stop is None or not stop.is_set():
                dead = self.dead()
                if dead:
                    name, code = dead[0]
                    self.log("up", f"{name} exited with status {code}; stopping the cell")
                    return 1
                time.sleep(0.2)
        except KeyboardInterrupt:
            self.log("up", "Ctrl-C: stopping the cell")
        return 0

    def stop(self) -> None:
        """SIGTERM every child (reverse start order), SIGKILL what is left after a grace."""
        if self._stopping:
            return
        self._stopping = True
        for child in reversed(list(self.children.values())):
            if child.process.poll() is None:
                try:
                    os.killpg(child.process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + STOP_GRACE_S
        for child in self.children.values():
            try:
                child.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(child.process.pid, signal.SIGKILL)
                child.process.wait()
        for child in self.children.values():
            child.pump.join(timeout=1)

    def __enter__(self) -> Launcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
