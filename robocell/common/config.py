"""The cell's deployment configuration: where the bus, the firmware simulator and the monitor
listen, read the same way by every command, by `robocell up` and by docker-compose.yml.

| variable | default | what |
| --- | --- | --- |
| ``ROBOCELL_BUS_PORT`` | 7600 | the broker's base port; it uses this port and the next three |
| ``ROBOCELL_BUS_PORT_LAST`` | base + 3 | compose only (it cannot add): the last bus port |
| ``ROBOCELL_BUS`` | ``tcp://127.0.0.1:$ROBOCELL_BUS_PORT`` | the broker's base address |
| ``ROBOCELL_SIM_PORT`` | 7700 | the firmware simulator's TCP port (the actuator's serial line) |
| ``ROBOCELL_MONITOR_PORT`` | 8765 | the dashboard's HTTP port |
| ``ROBOCELL_FOXGLOVE_PORT`` | 8766 | the Foxglove WebSocket bridge's port |

and what the cell is (`profile_name`, `speed`, ... below, read here and nowhere else):

| variable | default | what |
| --- | --- | --- |
| ``ROBOCELL_PROFILE`` | soltvvo-2x2 | the robot profile |
| ``ROBOCELL_SPEED`` | 1 | simulated time runs this many times faster than real time |
| ``ROBOCELL_FIRMWARE`` | python | in simulation, the firmware: python or avr (in simavr) |
| ``ROBOCELL_SERIAL`` | the simulator's port | the actuator's serial line (device or URL) |
| ``ROBOCELL_CAMERA`` | sim | the vision service's camera |
| ``ROBOCELL_PHYSICS`` | none | the simulated robot's physics file (docs/robot-physics.md) |
| ``ROBOCELL_VISION_READERS`` | 2 | views read at once, each in a reader process |
| ``ROBOCELL_SOLVER_WORKERS`` | 2 | solver worker processes |
| ``ROBOCELL_SOLVER_SPLIT``, ``ROBOCELL_ROLLING`` | 1 | switches: 0 turns off |

``ROBOCELL_FIRMWARE_PORT``, the firmware simulator's old variable, is read as an alias of
``ROBOCELL_SIM_PORT`` when that is unset. Every function takes the environment to read
(default ``os.environ``) and raises :class:`ConfigError` naming the variable at fault.
`free_port_block` finds free loopback ports to set them to, for a second cell on one host (a
test, a benchmark).
"""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Mapping
from itertools import accumulate
from pathlib import Path
from urllib.parse import urlsplit

from robocell.errors import RobocellError

LOOPBACK = "127.0.0.1"
BUS_ENV = "ROBOCELL_BUS"
BUS_PORT_ENV = "ROBOCELL_BUS_PORT"
BUS_PORT_LAST_ENV = "ROBOCELL_BUS_PORT_LAST"
SIM_PORT_ENV = "ROBOCELL_SIM_PORT"
FIRMWARE_PORT_ENV = "ROBOCELL_FIRMWARE_PORT"
"""Old name of ROBOCELL_SIM_PORT, still read when ROBOCELL_SIM_PORT is unset."""
MONITOR_PORT_ENV = "ROBOCELL_MONITOR_PORT"
FOXGLOVE_PORT_ENV = "ROBOCELL_FOXGLOVE_PORT"
DEFAULT_BUS_PORT = 7600
DEFAULT_SIM_PORT = 7700
DEFAULT_MONITOR_PORT = 8765
DEFAULT_FOXGLOVE_PORT = 8766
"""Foxglove's own default is 8765, the dashboard's: the bridge takes the next one."""
BUS_PORT_COUNT = 4
"""The broker listens on the base port and the next three (subscribe, publish, command, tap)."""
HIGHEST_PORT = 65535


class ConfigError(RobocellError, ValueError):
    """A configuration variable is malformed or contradicts another; the message says which
    and what to set instead."""


def _environ(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def _port(env: Mapping[str, str], name: str, highest: int = HIGHEST_PORT) -> int | None:
    text = (env.get(name) or "").strip()
    if not text:
        return None
    if not text.isdigit() or not 0 < int(text) <= highest:
        raise ConfigError(f"{name}={text!r} is not a port number; set it to a number from 1 "
                          f"to {highest}, or unset it for the default")
    return int(text)


def _bus_url_port(env: Mapping[str, str]) -> int | None:
    """The port of $ROBOCELL_BUS, or None when it is unset or not a tcp:// address (the
    endpoint code explains a malformed address)."""
    url = env.get(BUS_ENV)
    if not url:
        return None
    try:
        parts = urlsplit(url)
        return parts.port if parts.scheme == "tcp" else None
    except ValueError:
        return None


def bus_port(env: Mapping[str, str] | None = None) -> int:
    """The broker's base port: $ROBOCELL_BUS_PORT, else the port of $ROBOCELL_BUS, else 7600.
    ConfigError when the two variables name different ports, or $ROBOCELL_BUS_PORT_LAST is
    set and is not the base port + 3."""
    env = _environ(env)
    port = _port(env, BUS_PORT_ENV, HIGHEST_PORT - BUS_PORT_COUNT + 1)
    url_port = _bus_url_port(env)
    if port is not None and url_port is not None and url_port != port:
        raise ConfigError(f"{BUS_ENV}={env[BUS_ENV]} and {BUS_PORT_ENV}={port} name different "
                          f"bus ports; set one of them (or make them agree)")
    base = port if port is not None else url_port if url_port is not None else DEFAULT_BUS_PORT
    check_bus_block(base, env)
    return base


def check_bus_block(base: int, env: Mapping[str, str] | None = None) -> None:
    """ConfigError unless $ROBOCELL_BUS_PORT_LAST is unset or ``base`` + 3: compose publishes
    the ports from the base to it, and a broker on ``base`` uses the four from ``base``."""
    last = _port(_environ(env), BUS_PORT_LAST_ENV)
    if last is not None and last != base + BUS_PORT_COUNT - 1:
        raise ConfigError(f"{BUS_PORT_LAST_ENV}={last} but the bus uses ports {base}-"
                          f"{base + BUS_PORT_COUNT - 1}; set {BUS_PORT_LAST_ENV}="
                          f"{base + BUS_PORT_COUNT - 1} (docker compose cannot add) or unset it")


def bus_ports(env: Mapping[str, str] | None = None) -> range:
    """Every port the broker listens on."""
    base = bus_port(env)
    return range(base, base + BUS_PORT_COUNT)


def bus_address(env: Mapping[str, str] | None = None) -> str:
    """The broker's base address: $ROBOCELL_BUS, else tcp://127.0.0.1:$ROBOCELL_BUS_PORT."""
    env = _environ(env)
    return env.get(BUS_ENV) or f"tcp://{LOOPBACK}:{bus_port(env)}"


def sim_port(env: Mapping[str, str] | None = None) -> int:
    """The firmware simulator's port: $ROBOCELL_SIM_PORT, else $ROBOCELL_FIRMWARE_PORT (its
    old name), else 7700."""
    env = _environ(env)
    port = _port(env, SIM_PORT_ENV)
    if port is None:
        port = _port(env, FIRMWARE_PORT_ENV)
    return DEFAULT_SIM_PORT if port is None else port


def sim_serial_url(env: Mapping[str, str] | None = None) -> str:
    """The actuator's serial line to the local firmware simulator."""
    return f"socket://{LOOPBACK}:{sim_port(env)}"


def monitor_port(env: Mapping[str, str] | None = None) -> int:
    """The dashboard's port: $ROBOCELL_MONITOR_PORT, else 8765."""
    port = _port(_environ(env), MONITOR_PORT_ENV)
    return DEFAULT_MONITOR_PORT if port is None else port


def monitor_http(env: Mapping[str, str] | None = None) -> str:
    """Where a local dashboard listens, HOST:PORT."""
    return f"{LOOPBACK}:{monitor_port(env)}"


def foxglove_port(env: Mapping[str, str] | None = None) -> int:
    """The Foxglove bridge's port: $ROBOCELL_FOXGLOVE_PORT, else 8766."""
    port = _port(_environ(env), FOXGLOVE_PORT_ENV)
    return DEFAULT_FOXGLOVE_PORT if port is None else port


def settled(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with every port variable set to the value the commands above read from it, so
    that docker-compose.yml's ``${VAR:-default}`` interpolation agrees with them (it knows
    neither $ROBOCELL_BUS's port nor the old $ROBOCELL_FIRMWARE_PORT, and cannot add)."""
    out = dict(env)
    base = bus_port(env)
    out[BUS_PORT_ENV] = str(base)
    out[BUS_PORT_LAST_ENV] = str(base + BUS_PORT_COUNT - 1)
    out[SIM_PORT_ENV] = str(sim_port(env))
    out[MONITOR_PORT_ENV] = str(monitor_port(env))
    out[FOXGLOVE_PORT_ENV] = str(foxglove_port(env))
    return out


FREE_PORT_ATTEMPTS = 200
LOWEST_FREE_PORT = 20000
"""`free_port_block` stays above the ports well-known servers and development tools use."""
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL_PORTS = range(32768, HIGHEST_PORT + 1)
"""Where the range cannot be read: Linux's default start to the top (covering the IANA range
other systems use)."""


def ephemeral_ports() -> range:
    """The ports the operating system gives the local end of outgoing connections."""
    try:
        low, high = (int(v) for v in EPHEMERAL_RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL_PORTS
    return range(low, high + 1)


def free_port_block(count: int, host: str = LOOPBACK) -> int:
    """A port P such that P .. P + count - 1 are all free on ``host`` right now (checked by
    binding each), chosen at random outside the ephemeral range: a port from that range can
    be taken at any moment as the local end of an outgoing connection -- even by a client
    reconnecting to that very port, which then talks to itself -- so a server restarted on
    its block could find it gone."""
    ephemeral = ephemeral_ports()
    spans = [range(LOWEST_FREE_PORT, min(ephemeral.start, HIGHEST_PORT + 1) - count + 1),
             range(max(ephemeral.stop, LOWEST_FREE_PORT), HIGHEST_PORT - count + 2)]
    spans = [span for span in spans if len(span) > 0]
    if not spans:
        raise RuntimeError(f"no room for {count} ports between {LOWEST_FREE_PORT} and "
                           f"{HIGHEST_PORT} outside the ephemeral range {ephemeral.start}-"
                           f"{ephemeral.stop - 1}")
    chooser = random.Random()  # seeded from the OS: parallel processes pick apart
    weights = [len(span) for span in spans]
    for _ in range(FREE_PORT_ATTEMPTS):
        span = chooser.choices(spans, weights)[0]
        base = chooser.choice(span)
        held: list[socket.socket] = []
        try:
            for offset in range(count):
                sock = socket.socket()
                held.append(sock)
                sock.bind((host, base + offset))
            return base
        except OSError:
            continue
        finally:
            for sock in held:
                sock.close()
    raise RuntimeError(f"no {count} consecutive free ports on {host} after "
                       f"{FREE_PORT_ATTEMPTS} tries outside the ephemeral range; free some "
                       "ports or set the ports explicitly")


def free_port_blocks(*counts: int, host: str = LOOPBACK) -> list[int]:
    """The first ports of blocks of ``counts`` ports each, all free on ``host`` right now and
    no two sharing a port (blocks chosen one by one could overlap): one free block of their
    sum, cut in order."""
    base = free_port_block(sum(counts), host)
    return list(accumulate(counts[:-1], initial=base))


# --- what the cell is ------------------------------------------------------------------

PROFILE_ENV = "ROBOCELL_PROFILE"
SPEED_ENV = "ROBOCELL_SPEED"
FIRMWARE_ENV = "ROBOCELL_FIRMWARE"
SERIAL_ENV = "ROBOCELL_SERIAL"
CAMERA_ENV = "ROBOCELL_CAMERA"
PHYSICS_ENV = "ROBOCELL_PHYSICS"
VISION_READERS_ENV = "ROBOCELL_VISION_READERS"
SOLVER_WORKERS_ENV = "ROBOCELL_SOLVER_WORKERS"
SOLVER_SPLIT_ENV = "ROBOCELL_SOLVER_SPLIT"
ROLLING_ENV = "ROBOCELL_ROLLING"
TABLE_BUDGET_ENV = "ROBOCELL_TABLE_BUDGET_MB"
HOST_NAME_ENV = "ROBOCELL_HOST_NAME"
BROKER_REMOTE_ENV = "ROBOCELL_BROKER_REMOTE"
BROKER_KEY_ENV = "ROBOCELL_BROKER_KEY"
BROKER_ALLOW_ENV = "ROBOCELL_BROKER_ALLOW"
DEFAULT_PROFILE = "soltvvo-2x2"
FIRMWARE_BACKENDS = ("python", "avr")


def profile_name(env: Mapping[str, str] | None = None) -> str | None:
    """The robot profile the cell is configured with, None when unset."""
    return (_environ(env).get(PROFILE_ENV) or "").strip() or None


def default_profile(env: Mapping[str, str] | None = None) -> str:
    """The configured robot profile, else `DEFAULT_PROFILE`."""
    return profile_name(env) or DEFAULT_PROFILE


def _number(env: Mapping[str, str], name: str, default: float, kind: type = float,
            lowest: float = 0.0, strict: bool = True) -> float:
    text = (env.get(name) or "").strip()
    if not text:
        return default
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or value < lowest or (strict and value == lowest):
        bound = "above" if strict else "at least"
        raise ConfigError(f"{name}={text!r}: give a number {bound} {lowest:g}, or unset it "
                          f"for the default {default:g}")
    return value


def speed(env: Mapping[str, str] | None = None) -> float:
    """The simulation speed factor (1 = real time)."""
    return _number(_environ(env), SPEED_ENV, 1.0)


def firmware_backend(env: Mapping[str, str] | None = None) -> str:
    """The firmware behind a simulated serial line: "python" or "avr"."""
    text = (_environ(env).get(FIRMWARE_ENV) or "python").strip()
    if text not in FIRMWARE_BACKENDS:
        raise ConfigError(f"{FIRMWARE_ENV}={text!r}: set it to python or avr")
    return text


def serial_url(env: Mapping[str, str] | None = None) -> str:
    """The actuator's serial line: $ROBOCELL_SERIAL, else the firmware simulator's port."""
    return (_environ(env).get(SERIAL_ENV) or "").strip() or sim_serial_url(env)


def camera(env: Mapping[str, str] | None = None) -> str:
    """The vision service's camera: "sim", a device index, a file, URL or folder."""
    return (_environ(env).get(CAMERA_ENV) or "").strip() or "sim"


def physics_file(env: Mapping[str, str] | None = None) -> str | None:
    """The simulated robot's physics file, None when unset (the robot is its profile)."""
    return (_environ(env).get(PHYSICS_ENV) or "").strip() or None


def vision_readers(default: int, env: Mapping[str, str] | None = None) -> int:
    """Reader processes of the vision service (0: read in the service process)."""
    return int(_number(_environ(env), VISION_READERS_ENV, default, int, 0, strict=False))


def solver_workers(env: Mapping[str, str] | None = None) -> int:
    """Worker processes of the solver service."""
    return int(_number(_environ(env), SOLVER_WORKERS_ENV, 2, int, 1, strict=False))


def table_budget_mb(env: Mapping[str, str] | None = None) -> float | None:
    """The most solver tables a solver may map, in MB (None: unset, every table of its
    profile)."""
    text = (_environ(env).get(TABLE_BUDGET_ENV) or "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise ConfigError(f"{TABLE_BUDGET_ENV}={text!r}: give the megabytes of tables the "
                          "solver may map (e.g. 128), or unset it for every table of the "
                          "profile")
    return value


def broker_remote(env: Mapping[str, str] | None = None
                  ) -> tuple[str | None, str | None, list[str]]:
    """The broker's CURVE endpoint as the environment gives it: its address
    ($ROBOCELL_BROKER_REMOTE), its key file ($ROBOCELL_BROKER_KEY) and the keys allowed
    ($ROBOCELL_BROKER_ALLOW, ``FILE.pub[:ROLE]`` separated by spaces); unset: None, None,
    []."""
    env = _environ(env)
    return ((env.get(BROKER_REMOTE_ENV) or "").strip() or None,
            (env.get(BROKER_KEY_ENV) or "").strip() or None,
            (env.get(BROKER_ALLOW_ENV) or "").split())


def host_name(env: Mapping[str, str] | None = None) -> str:
    """The name a service gives its host in its heartbeat and HELLO (`bus list`, `health`,
    the dashboard): $ROBOCELL_HOST_NAME (e.g. a container's host), else the machine's."""
    return (_environ(env).get(HOST_NAME_ENV) or "").strip() or socket.gethostname()


def switch(name: str, env: Mapping[str, str] | None = None) -> bool:
    """An on/off variable (on unless set to "" or "0")."""
    return _environ(env).get(name, "1") not in ("", "0")
