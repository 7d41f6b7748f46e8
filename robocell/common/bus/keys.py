"""CURVE key files for remote bus access: one TOML file per key pair, and the broker's allow-list.

A key file (``NAME.key``, keep it private) holds a Z85 key pair and, for a client, the public
key of the broker it talks to::

    # robocell CURVE key "laptop" -- secret, keep private
    name = "laptop"
    public = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
    secret = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"
    broker = "..."          # clients only: the broker's public key

A public file (``NAME.pub``, safe to share) holds ``name`` and ``public`` only. The broker
allows a client by its ``.pub`` file with a role: ``read`` (subscribe), ``command``
(subscribe and send commands) or ``service:NAME[,NAME...]`` (all that ``command`` may, and
join as an instance of each service NAME: register, serve its commands, publish its
topics). An allow entry is ``FILE.pub[:ROLE]``; entries for one key add up.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import zmq

from robocell.common.bus.topics import ANY_SERVICE, COMMAND_SPECS, TOPICS
from robocell.errors import RobocellError

Z85_KEY_CHARS = 40
ROLES = ("read", "command", "service:NAME[,NAME...]")
SERVICE_ROLE = "service:"
"""A role that starts so names the services the key may serve as (comma-separated)."""
SERVICE_NAMES: frozenset[str] = frozenset(
    {spec.service for spec in COMMAND_SPECS.values()}
    | {spec.publisher for spec in TOPICS}) - {ANY_SERVICE, "broker"}
"""The services of the cell, as bus/topics.py declares them: what a service role may name."""
_ALLOW_ENTRY = re.compile(r"(?P<path>.+?)(?::(?P<role>read|command|service:[^:]+))?")


class KeyFileError(RobocellError, ValueError):
    """A key file that is missing, unreadable or incomplete."""


@dataclass(frozen=True)
class CurveKey:
    """A CURVE key pair (secret may be empty for a public-only file) and, for clients, the
    broker's public key."""

    name: str
    public: str
    secret: str = ""
    broker: str = ""

    @classmethod
    def generate(cls, name: str, broker_public: str = "") -> CurveKey:
        public, secret = zmq.curve_keypair()
        return cls(name, public.decode("ascii"), secret.decode("ascii"), broker_public)

    def write(self, directory: Path) -> tuple[Path, Path]:
        """Write NAME.key (secret, mode 0600) and NAME.pub into ``directory``."""
        directory.mkdir(parents=True, exist_ok=True)
        secret_path = directory / f"{self.name}.key"
        public_path = directory / f"{self.name}.pub"
        lines = [f'# robocell CURVE key "{self.name}" -- secret, keep private',
                 f'name = "{self.name}"', f'public = "{self.public}"', f'secret = "{self.secret}"']
        if self.broker:
            lines.append(f'broker = "{self.broker}"')
        fd = os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write("\n".join(lines) + "\n")
        public_path.write_text(f'# robocell CURVE public key "{self.name}"\n'
                               f'name = "{self.name}"\npublic = "{self.public}"\n')
        return secret_path, public_path


def load_key(path: Path | str, *, need_secret: bool = True, need_broker: bool = False
             ) -> CurveKey:
    """Read a key file; KeyFileError says what is missing and how to make it."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise KeyFileError(f"key file {path} does not exist; create one with "
                           "`robocell keys generate NAME`") from None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise KeyFileError(f"key file {path} cannot be read: {exc}") from None
    key = CurveKey(str(data.get("name", path.stem)), str(data.get("public", "")),
                   str(data.get("secret", "")), str(data.get("broker", "")))
    wanted = ["public"] + (["secret"] if need_secret else []) + (["broker"] if need_broker
                                                                  else [])
    for field in wanted:
        value = getattr(key, field)
        if len(value) != Z85_KEY_CHARS:
            hint = ("generate it with `robocell keys generate NAME --broker-pub BROKER.pub`"
                    if field == "broker" else "generate it with `robocell keys generate NAME`")
            raise KeyFileError(f"key file {path}: {field!r} must be a {Z85_KEY_CHARS}-character "
                               f"Z85 key, found {value!r}; {hint}")
    return key


def parse_allow(spec: str) -> tuple[CurveKey, str]:
    """``FILE.pub[:ROLE]`` -> (public key, role); role defaults to ``read``; a service role
    must name declared services (``service:solver,vision``)."""
    found = _ALLOW_ENTRY.fullmatch(spec)
    path, role = (found["path"], found["role"] or "read") if found else (spec, "read")
    if Path(spec).exists():
        path, role = spec, "read"
    elif role == "read" and ":" in path and not Path(path).exists():
        raise KeyFileError(f"allow entry {spec!r}: no key file {path!r}, or the role after "
                           f"':' is not one of {', '.join(ROLES)}")
    service_names(role, spec)  # a service role's names are checked before the file is read
    return load_key(path, need_secret=False), role


def service_names(role: str, where: str = "") -> frozenset[str]:
    """The services a role lets its key serve as (none for ``read`` and ``command``);
    KeyFileError for a service role naming no service or one the cell does not have."""
    if not role.startswith(SERVICE_ROLE):
        if role not in ("read", "command"):
            raise KeyFileError(f"role {role!r}{f' in {where!r}' if where else ''} is not one "
                               f"of {', '.join(ROLES)}")
        return frozenset()
    names = [name.strip() for name in role[len(SERVICE_ROLE):].split(",")]
    unknown = [name for name in names if name not in SERVICE_NAMES]
    if unknown or not names:
        raise KeyFileError(f"role {role!r}{f' in {where!r}' if where else ''} names "
                           f"{', '.join(map(repr, unknown)) or 'no service'}; a service role "
                           f"names services of the cell: {', '.join(sorted(SERVICE_NAMES))}")
    return frozenset(names)
