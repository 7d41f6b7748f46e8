"""Reading docker-compose.yml for the local launcher, so local runs and containers never drift.

Only what the launcher needs: each service's command, environment, profiles and
dependencies, with ``${VAR}``, ``${VAR:-default}`` and ``${VAR-default}`` interpolated
from the environment as Compose does. Run locally, every service shares the host's
loopback, so a URL host naming a compose service, and the wildcard ``0.0.0.0``, become
``127.0.0.1`` (but not the broker's CURVE endpoint, which is for other hosts); a variable
naming a path on one of the service's volumes (a path inside its container, e.g. the cell's
data directory) is left out, so the host's own setting or default applies.

Which file (`find_compose_file`, first found): ``--compose FILE``; ``./docker-compose.yml``
in the current directory (a checkout's top level); the copy shipped inside this package, so
an installation without a checkout runs the same cell (a test keeps it equal to the
checkout's top-level file).
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from robocell.common import config
from robocell.errors import RobocellError

COMPOSE_FILE_NAME = "docker-compose.yml"
PACKAGED_COMPOSE_FILE = Path(__file__).with_name(COMPOSE_FILE_NAME)
"""The deployment as shipped with the package (package data, equal to the top-level file)."""
FOR_OTHER_HOSTS = frozenset({config.BROKER_REMOTE_ENV})
"""Variables naming where other hosts reach this one: never made loopback (the broker's
CURVE endpoint on 0.0.0.0 is meant for them)."""
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}")


class ComposeError(RobocellError, ValueError):
    """docker-compose.yml cannot be used to start the cell locally."""


@dataclass(frozen=True)
class LocalService:
    """One compose service as a local process."""

    name: str
    argv: tuple[str, ...]
    environment: dict[str, str]
    depends_on: tuple[str, ...]
    bus_name: str
    """Name the service announces on the bus (its heartbeat), from its healthcheck."""


def interpolate(text: str, env: dict[str, str]) -> str:
    def replace(match: re.Match) -> str:
        name, op, default = match.group(1), match.group(2), match.group(3)
        value = env.get(name)
        if op == ":-" and not value:
            return default or ""
        if op == "-" and value is None:
            return default or ""
        return value or ""
    return _VARIABLE.sub(replace, text)


def _localise(text: str, service_names: set[str]) -> str:
    text = text.replace("0.0.0.0", "127.0.0.1")
    for name in service_names:
        text = re.sub(rf"(://){re.escape(name)}(:\d)", r"\g<1>127.0.0.1\2", text)
    return text


def _volume_targets(spec: dict) -> list[str]:
    """Where a service's volumes are mounted in its container (short or long syntax)."""
    targets = []
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict):
            target = volume.get("target")
        else:
            parts = str(volume).split(":")
            target = parts[1] if len(parts) > 1 else parts[0]
        if target:
            targets.append(str(target).rstrip("/") or "/")
    return targets


def _on_volume(value: str, targets: list[str]) -> bool:
    return any(value == t or value.startswith(t + "/") for t in targets)


def find_compose_file(explicit: Path | None = None, cwd: Path | None = None) -> Path:
    """The compose file to read: ``explicit`` (``--compose``; ComposeError if it is missing),
    else ``docker-compose.yml`` in ``cwd`` (default the current directory), else the copy
    shipped in this package."""
    if explicit is not None:
        if not explicit.is_file():
            raise ComposeError(f"{explicit}: no such compose file (--compose)")
        return explicit
    here = (Path.cwd() if cwd is None else cwd) / COMPOSE_FILE_NAME
    return here if here.is_file() else PACKAGED_COMPOSE_FILE


def load_services(profile: str, env: dict[str, str] | None = None,
                  path: Path | None = None) -> list[LocalService]:
    """Services of a compose profile ("sim" or "hardware") in dependency order, from ``path``
    (default: `find_compose_file`)."""
    path = find_compose_file() if path is None else path
    env = dict(os.environ if env is None else env)
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ComposeError(f"{path}: cannot read: {exc}") from None
    services = document.get("services") or {}
    names = set(services)
    profiled = {name for name, spec in services.items()
                if profile in (spec.get("profiles") or [profile])}
    chosen: dict[str, LocalService] = {}
    for name, spec in services.items():
        if profile not in (spec.get("profiles") or [profile]):
            continue
        command = spec.get("command")
        if not isinstance(command, list) or not command or command[0] != "robocell":
            raise ComposeError(f"{path}: services.{name}.command must be a list starting "
                               "with robocell")
        argv = [sys.executable, "-m", "robocell"] + [
            _localise(interpolate(str(a), env), names) for a in command[1:]]
        mounted = _volume_targets(spec)
        environment = {k: interpolate(str(v), env) if k in FOR_OTHER_HOSTS
                       else _localise(interpolate(str(v), env), names)
                       for k, v in (spec.get("environment") or {}).items()
                       if not _on_volume(interpolate(str(v), env), mounted)}
        health = (spec.get("healthcheck") or {}).get("test") or []
        bus_name = health[-1] if len(health) >= 4 and health[2] == "health" else name
        depends = spec.get("depends_on") or []
        if isinstance(depends, dict):
            # a dependency marked `required: false` is started elsewhere when it is not in
            # this profile (the robot host's solver runs on a compute host)
            depends = [dep for dep, how in depends.items()
                       if (how or {}).get("required", True) or dep in profiled]
        chosen[name] = LocalService(name, tuple(argv), environment, tuple(depends), bus_name)
    ordered: list[LocalService] = []
    placed: set[str] = set()

    def place(name: str, trail: tuple[str, ...] = ()) -> None:
        if name in placed:
            return
        if name in trail:
            raise ComposeError(f"{path}: depends_on cycle: {' -> '.join(trail + (name,))}")
        if name not in chosen:
            raise ComposeError(f"{path}: a service depends on {name!r}, which is not in "
                               f"profile {profile!r}")
        for dep in chosen[name].depends_on:
            place(dep, trail + (name,))
        placed.add(name)
        ordered.append(chosen[name])

    for name in chosen:
        place(name)
    return ordered
