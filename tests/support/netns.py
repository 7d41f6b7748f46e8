"""Hosts on one machine: Linux network namespaces the test makes itself, joined by veth pairs.

A `Hosts` is a set of network namespaces with unique names, each with its own loopback and
one address from the benchmarking range 198.18.0.0/15 (RFC 2544: never another network) on a
veth pair to the first one, the robot host: a star whose links can be cut and restored
(`cut`, `restore`). Processes started with `Hosts.run` live in a host's namespace (``ip
netns exec``). `close` kills what was started, by its pid, and deletes the namespaces (the
veth pairs go with them). Making namespaces needs root and ``ip``; `NamespacesUnavailable`
says why they cannot be made here.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
from dataclasses import dataclass, field

ADDRESS_RANGE = "198.18.0.0/15"
"""Addresses of the test hosts: the benchmarking range, routed nowhere."""


class NamespacesUnavailable(RuntimeError):
    """Network namespaces cannot be made here (not root, no ``ip``, or no kernel support)."""


@dataclass
class Host:
    name: str
    """The host's role, e.g. "robot" or "compute"."""
    namespace: str
    address: str
    """Its address on the link to the robot host (the robot host's own for the robot)."""
    link: str = ""
    """Its end of the veth pair to the robot host (none for the robot host itself)."""
    peer_link: str = ""
    """The robot host's end of that pair."""


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise NamespacesUnavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")


def namespaces_problem() -> str | None:
    """Why network namespaces cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs as root)"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2) to make network namespaces"
    probe = f"rcprobe{os.getpid()}"
    done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if done.returncode != 0:
        return f"`ip netns add` failed: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


@dataclass
class Hosts:
    """The namespaces of one test run (see the module docstring)."""

    hosts: dict[str, Host] = field(default_factory=dict)
    started: list[subprocess.Popen] = field(default_factory=list)

    @classmethod
    def make(cls, *names: str) -> Hosts:
        """Namespaces for ``names`` (the first is the robot host), linked to the first."""
        tag = f"{os.getpid() % 10000}{random.randrange(100):02d}"
        subnet = random.randrange(256)  # 198.18.SUBNET.0/24, a /30 per link
        made = cls()
        try:
            for name in names:
                namespace = f"rc-{name}-{tag}"
                _ip("netns", "add", namespace)
                made.hosts[name] = Host(name, namespace, "")
                _ip("-n", namespace, "link", "set", "lo", "up")
            robot = made.hosts[names[0]]
            for i, name in enumerate(names[1:]):
                host = made.hosts[name]
                near, far = f"rc{tag}r{i}", f"rc{tag}h{i}"
                _ip("link", "add", near, "netns", robot.namespace, "type", "veth", "peer",
                    "name", far, "netns", host.namespace)
                robot_address = f"198.18.{subnet}.{4 * i + 1}"
                host.address = f"198.18.{subnet}.{4 * i + 2}"
                _ip("-n", robot.namespace, "addr", "add", f"{robot_address}/30", "dev", near)
                _ip("-n", host.namespace, "addr", "add", f"{host.address}/30", "dev", far)
                _ip("-n", robot.namespace, "link", "set", near, "up")
                _ip("-n", host.namespace, "link", "set", far, "up")
                host.link, host.peer_link = far, near
                if not robot.address:
                    robot.address = robot_address
        except BaseException:
            made.close()
            raise
        return made

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def robot_address_for(self, name: str) -> str:
        """The robot host's address on its link to host ``name``."""
        host = self.hosts[name]
        last = int(host.address.rsplit(".", 1)[1]) - 1
        return f"{host.address.rsplit('.', 1)[0]}.{last}"

    def command(self, name: str, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.hosts[name].namespace, *argv]

    def run(self, name: str, argv: list[str], **popen) -> subprocess.Popen:
        """Start ``argv`` on host ``name``; stopped by `close` if still running."""
        proc = subprocess.Popen(self.command(name, argv), **popen)
        self.started.append(proc)
        return proc

    def call(self, name: str, argv: list[str], timeout: float = 120.0,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run ``argv`` on host ``name`` to its end."""
        return subprocess.run(self.command(name, argv), capture_output=True, text=True,
                              timeout=timeout, env=env)

    def cut(self, name: str) -> None:
        """Cut host ``name``'s link to the robot host (both ends down)."""
        host = self.hosts[name]
        _ip("-n", host.namespace, "link", "set", host.link, "down")
        _ip("-n", self.hosts_robot().namespace, "link", "set", host.peer_link, "down")

    def restore(self, name: str) -> None:
        host = self.hosts[name]
        _ip("-n", self.hosts_robot().namespace, "link", "set", host.peer_link, "up")
        _ip("-n", host.namespace, "link", "set", host.link, "up")

    def hosts_robot(self) -> Host:
        return next(iter(self.hosts.values()))

    def pids(self, name: str) -> list[int]:
        """Every process in host ``name``'s namespace."""
        done = subprocess.run(["ip", "netns", "pids", self.hosts[name].namespace],
                              capture_output=True, text=True)
        return [int(p) for p in done.stdout.split()]

    def close(self) -> None:
        """Stop what was started (SIGTERM, then SIGKILL), then every process left in the
        namespaces (all started here), and delete the namespaces."""
        for proc in self.started:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.started:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        for name, host in self.hosts.items():
            for pid in self.pids(name):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True)
        self.hosts.clear()
