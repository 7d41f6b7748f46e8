"""The local launcher behind `robocell up`: the compose services as supervised processes.

Pattern: a supervisor. Each service of the chosen compose profile runs as a child process
in dependency order; its output is copied line by line with a ``[name]`` prefix; the
launcher waits until each service's heartbeat says it is alive before starting the ones
that depend on it. It ends when asked (Ctrl-C / `stop()`: every child gets SIGTERM, then
SIGKILL after a grace period) or when a child dies (the others are stopped and the exit
status is non-zero, naming the service). Each child also follows the launcher
(`robocell.common.lifetime`): however the launcher ends, SIGKILL included, the kernel sends
every service SIGTERM, and each stops as it would on Ctrl-C (its own helpers follow it in
turn). Services are started from the thread that calls `start` (the main thread of `up`).

Another cell may already run on the same host. The launcher reads the ports from the one
configuration (:mod:`robocell.common.config`) and refuses, before starting anything, when
one of them is taken (:class:`PortsInUseError`); and it counts a service as started only on a
heartbeat from the very process it started (its pid on this host), so another cell's
services on the same bus are never taken for its own.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from robocell.common import config
from robocell.common.bus import Endpoints, Liveness, Subscriber
from robocell.common.lifetime import follow_parent_at_exec
from robocell.common.paths import HISTORY_ENV, HISTORY_FILE_NAME
from robocell.deploy.compose import LocalService, find_compose_file, load_services
from robocell.errors import RobocellError

STOP_GRACE_S = 5.0
READY_STATES = ("ready", "busy")
ERROR_GRACE_S = 5.0
"""A service still announcing ``error`` this long after it first did stops the launch, with
the reason from its heartbeat (e.g. the actuator's serial device that cannot be opened)."""
"""Lifecycle states in which a service counts as started."""
READY_TIMEOUT_S = 600.0
"""A starting service that is not ready and has said nothing for this long is given up on."""
WAITING_NOTE_S = 8.0
"""While a service starts, the launch says what it waits for this often (never silent for
ten seconds: a first run builds tables and compiles for minutes)."""
"""How long a service may take to become alive: a first run builds the solver's tables
(for a 3x3 robot profile about 4 minutes on a 2-core machine)."""


class LaunchError(RobocellError, RuntimeError):
    """A service did not start or died; the message names it and what to look at."""


class PortsInUseError(LaunchError):
    """A port the cell needs is taken (another cell, or another program): nothing started."""


@dataclass(frozen=True)
class CellPort:
    """One port the cell listens on, and the variable that moves it."""

    port: int
    variable: str
    what: str
    span: range | None = None
    """For the bus: every port of the block (the variable names its first)."""


def port_taken(port: int, host: str = config.LOOPBACK) -> bool:
    """Whether binding ``host:port`` fails, as the service's own bind would. SO_REUSEADDR,
    as ZeroMQ and aiohttp set it, so that connections of a cell that just ended (TIME_WAIT)
    do not count: only a socket bound or listening there does."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def isolated_cell_env(profile: str, speed: float, history: Path, solver_workers: int = 1,
                      env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default the process's) for a simulated cell beside any other on this host:
    its bus, simulator, monitor and Foxglove ports moved to free loopback ports, and its cycle
    log ``history`` (a benchmark, a test; see temporary_cell_env)."""
    cell = dict(os.environ if env is None else env)
    cell[HISTORY_ENV] = str(history)
    bus, sim, monitor, foxglove = config.free_port_blocks(config.BUS_PORT_COUNT, 1, 1, 1)
    cell.update({
        "ROBOCELL_PROFILE": profile,
        "ROBOCELL_SPEED": str(speed),
        config.BUS_PORT_ENV: str(bus),
        config.SIM_PORT_ENV: str(sim),
        config.MONITOR_PORT_ENV: str(monitor),
        config.FOXGLOVE_PORT_ENV: str(foxglove),
        "ROBOCELL_SOLVER_WORKERS": str(solver_workers),
    })
    return cell


@contextmanager
def temporary_cell_env(profile: str, speed: float, solver_workers: int = 1,
                       env: dict[str, str] | None = None) -> Iterator[dict[str, str]]:
    """isolated_cell_env with its cycle log in a fresh temporary directory, removed (with the
    log) on leaving: stop the cell's processes before."""
    with tempfile.TemporaryDirectory(prefix="robocell-cell-") as folder:
        history = Path(folder) / HISTORY_FILE_NAME
        yield isolated_cell_env(profile, speed, history, solver_workers, env)


def free_port_near(port: int, count: int = 1, avoid: frozenset[int] = frozenset()
                   ) -> int | None:
    """A port after ``port`` (in steps of 10) such that it and the ``count`` - 1 after it are
    free and not in ``avoid``, to suggest."""
    for candidate in range(port + 10, min(port + 500, 65536 - count), 10):
        block = range(candidate, candidate + count)
        if not any(p in avoid or port_taken(p) for p in block):
            return candidate
    return None


def left_out_services(services: list[LocalService], without: set[str],
                      profile: str) -> set[str]:
    """The compose names of the services ``without`` names (each by its compose name or
    the name it has on the bus: ``--without actuator`` leaves out actuator-sim too); a
    name that is no service of the profile raises LaunchError listing those there are."""
    left_out = set()
    for name in without:
        matching = {s.name for s in services if name in (s.name, s.bus_name)}
        if not matching:
            known = ", ".join(sorted({s.name for s in services}))
            raise LaunchError(f"--without {name}: no service of that name in compose "
                              f"profile {profile} ({known})")
        left_out |= matching
    return left_out


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
                 quiet: set[str] | None = None, compose_file: Path | None = None,
                 talking: set[str] | None = None, without: set[str] | None = None) -> None:
        # every port variable set to the value the commands read, so that the compose
        # file's interpolation agrees with them (ConfigError names a malformed one)
        self.env = config.settled(os.environ if env is None else env)
        self.compose_file = find_compose_file(compose_file)
        services = load_services(profile, self.env, self.compose_file)
        left_out = left_out_services(services, without or set(), profile)
        self.services = [s for s in services
                         if (only is None or s.name in only) and s.name not in left_out]
        self.ready_timeout_s = READY_TIMEOUT_S
        """A starting service is given up on once it has been neither ready nor said anything
        for this long (one that keeps saying how it goes, e.g. a big table build, is waited
        for)."""
        self.heard: dict[str, float] = {}
        """service -> when it last wrote a line of output (monotonic)."""
        self.out = out or sys.stdout
        self.quiet = quiet or set()
        self.talking = talking or set()
        """Quiet services whose output is shown until they are ready (what they build)."""
        self.ready: set[str] = set()
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
            self.heard[child_name] = time.monotonic()
            tail.append(line)
            del tail[:-40]
            if child_name not in self.quiet or (child_name in self.talking
                                                and child_name not in self.ready):
                self.log(child_name, line)

    def start_service(self, service: LocalService) -> Child:
        env = {**self.env, **service.environment, "PYTHONUNBUFFERED": "1"}
        process = subprocess.Popen(
            list(service.argv), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, bufsize=1, start_new_session=True,
            preexec_fn=follow_parent_at_exec(signal.SIGTERM))
        tail: list[str] = []
        pump = threading.Thread(target=self._pump, args=(service.name, process.stdout, tail),
                                daemon=True)
        pump.start()
        child = Child(service, process, pump, tail)
        self.children[service.name] = child
        return child

    def ports(self) -> list[CellPort]:
        """The loopback ports this launch will listen on, from the one configuration."""
        names = {s.name for s in self.services}
        ports: list[CellPort] = []
        if "broker" in names:
            span = config.bus_ports(self.env)
            ports.append(CellPort(span.start, config.BUS_PORT_ENV, "the bus", span))
        if "firmware-sim" in names:
            ports.append(CellPort(config.sim_port(self.env), config.SIM_PORT_ENV,
                                  "the firmware simulator"))
        if "monitor" in names:
            ports.append(CellPort(config.monitor_port(self.env), config.MONITOR_PORT_ENV,
                                  "the dashboard"))
        if "foxglove" in names:
            ports.append(CellPort(config.foxglove_port(self.env), config.FOXGLOVE_PORT_ENV,
                                  "the Foxglove bridge"))
        return ports

    def _shared_ports(self) -> list[str]:
        """What is wrong where the configuration gives two services one port."""
        problems: list[str] = []
        needs = self.ports()
        for i, need in enumerate(needs):
            for earlier in needs[:i]:
                shared = sorted(set(need.span or [need.port]) & set(earlier.span or [earlier.port]))
                if shared:
                    problems.append(
                        f"port {shared[0]} is both {need.what}'s ({need.variable}={need.port}) "
                        f"and {earlier.what}'s ({earlier.variable}={earlier.port}"
                        + (f": ports {earlier.span.start}-{earlier.span.stop - 1}"
                           if earlier.span is not None else "")
                        + "); give each its own port")
        return problems

    def _second_cell_ports(self) -> str:
        """Every port variable of this launch set to a free port near its own, none shared:
        what a second cell on this host needs (moving the bus alone collides on the rest)."""
        chosen: list[str] = []
        avoid: set[int] = {p for need in self.ports() for p in (need.span or [need.port])}
        for need in self.ports():
            count = len(need.span) if need.span is not None else 1
            other = free_port_near(need.port, count, frozenset(avoid))
            if other is not None:
                avoid.update(range(other, other + count))
            chosen.append(f"{need.variable}={other if other is not None else 'ANOTHER_PORT'}")
        return " ".join(chosen)

    def check_ports(self) -> None:
        """PortsInUseError, naming each taken port, its variable and how to find who holds it,
        unless every port the cell needs is free."""
        problems = self._shared_ports()
        for need in self.ports():
            taken = [p for p in (need.span or [need.port]) if port_taken(p)]
            if not taken:
                continue
            if need.span is not None:
                problems.append(
                    f"port {taken[0]} of {need.what} ({need.variable}={need.port}: ports "
                    f"{need.span.start}-{need.span.stop - 1}) is in use; another cell there "
                    f"shows with `{need.variable}={need.port} robocell bus list`; run this one "
                    f"beside it with {self._second_cell_ports()}")
            else:
                problems.append(
                    f"port {need.port} of {need.what} ({need.variable}) is in use (`ss -ltnp "
                    f"'sport = :{need.port}'` shows by whom); set {need.variable} to a free port")
        if problems:
            raise PortsInUseError("nothing started: " + "\n  ".join(problems))

    def start(self, on_ready: Callable[[str], None] | None = None,
              check_ports: bool = True) -> None:
        """Start every service, each once the services it depends on are alive. First, unless
        ``check_ports`` is false, refuse (PortsInUseError) if a port the cell needs is taken."""
        if check_ports:
            self.check_ports()
        bus = self.services[0].environment.get("ROBOCELL_BUS") or config.bus_address(self.env)
        here = socket.gethostname()
        liveness = Liveness()
        states: dict[str, str] = {}
        others: dict[str, tuple[int, str]] = {}
        subscriber: Subscriber | None = None
        try:
            for service in self.services:
                child = self.start_service(service)
                if subscriber is None:
                    subscriber = Subscriber(["heartbeat"], Endpoints.resolve(bus))
                began = time.monotonic()
                said = began
                error_since: float | None = None
                while not (liveness.is_alive(service.bus_name)
                           and states.get(service.bus_name) in READY_STATES):
                    if child.process.poll() is not None:
                        tail = "\n".join(child.output_tail[-15:])
                        raise LaunchError(
                            f"{service.name} exited with status {child.process.returncode} "
                            f"while starting; its last output:\n{tail}")
                    quiet_s = time.monotonic() - max(began, self.heard.get(service.name, 0.0))
                    if quiet_s > self.ready_timeout_s:
                        raise LaunchError(self._not_ready(service, states, others,
                                                          time.monotonic() - began))
                    if time.monotonic() - said >= WAITING_NOTE_S:
                        said = time.monotonic()
                        self._note_waiting(child, said - began, states)
                    env = subscriber.recv(timeout=0.2)
                    if env is None or env.topic != "heartbeat":
                        continue
                    p = env.payload
                    if not self._ours(p["service"], p["pid"], p["host"], here):
                        others[p["service"]] = (p["pid"], p["host"])
                        continue
                    liveness.update(env)
                    states[p["service"]] = p["state"]
                    if p["service"] != service.bus_name:
                        continue
                    if p["state"] != "error":
                        error_since = None
                    elif error_since is None:
                        error_since = time.monotonic()
                    elif time.monotonic() - error_since > ERROR_GRACE_S:
                        reason = (p.get("health") or {}).get("error") or "no reason given"
                        raise LaunchError(
                            f"{service.name} is not ready: {reason} (up stopped the cell after "
                            f"{ERROR_GRACE_S:.0f} s of this error; fix it and run up again; "
                            f"see its [{service.name}] output)")
                self.ready.add(service.name)
                if on_ready:
                    on_ready(service.name)
        except BaseException:
            self.quiet = {s.name for s in self.services}  # their shutdown noise hides why
            self.stop()
            raise
        finally:
            if subscriber is not None:
                subscriber.close()

    def _note_waiting(self, child: Child, waited_s: float, states: dict[str, str]) -> None:
        """Say what the launch waits for, and what that service last said or is doing."""
        name = child.service.name
        heard = states.get(child.service.bus_name)
        doing = "; ".join(filter(None, (
            f"its state: {heard}" if heard else "",
            f"it last said: {child.output_tail[-1].strip()[:100]}" if child.output_tail
            else ""))) or "it has not said anything yet"
        self.log("launch", f"waiting for {name} ({waited_s:.0f} s so far; {doing})")

    def _ours(self, bus_name: str, pid: int, host: str, here: str) -> bool:
        """Whether a heartbeat of ``bus_name`` comes from the process this launcher started."""
        return host == here and any(
            c.service.bus_name == bus_name and c.process.pid == pid
            for c in self.children.values())

    def _not_ready(self, service: LocalService, states: dict[str, str],
                   others: dict[str, tuple[int, str]], waited_s: float) -> str:
        heard = states.get(service.bus_name, "no heartbeat")
        message = (f"{service.name} was not ready after {waited_s:.0f} s and has said nothing "
                   f"for {self.ready_timeout_s:.0f} s (last state: {heard}); see its "
                   f"[{service.name}] output")
        if service.bus_name in others:
            pid, host = others[service.bus_name]
            message += (f". A {service.bus_name} of another cell (pid {pid} on {host}) "
                        f"answers on this bus: this cell's ports are shared with it; set "
                        f"{config.BUS_PORT_ENV} to a free port")
        return message

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
