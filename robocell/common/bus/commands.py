"""Commands, the client side: request/reply through the broker, with retries and deadlines.

Pattern: **broker-routed request/reply** (a simplified Majordomo). The broker binds one
ROUTER. Each service connects a DEALER whose routing id is ``s:<service>#<instance>``;
clients connect DEALERs with a random routing id. A client sends
``[REQUEST, service, request]``; the broker forwards ``[REQUEST, client_id, request]`` to an
instance of the service, which answers ``[REPLY, client_id, reply]``, and the broker routes
it back. If no such service is connected the broker itself answers ``unavailable`` at once.
The client retries on silence like the guide's **Lazy Pirate** (same request id, resent
until the deadline); the service's dedup cache answers a retry from its cache. Every call
ends in a result or an explicit error: ``unknown_command``, ``invalid_arguments``, ``busy``,
``timeout``, ``unavailable``, ``forbidden`` or ``failed``; and ``invalid_result`` when the
result of a declared command does not fit its declaration (checked here, at the caller's
edge, once: the caller gets a map it can trust, never a KeyError deep in its own code).

Here: the wire constants of the command channel, the client (:class:`CommandClient`),
replies and their errors, and the decoders that peek at a request or reply without
decoding its arguments or result (for the broker's routing).
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import zmq

from robocell.common.bus.endpoints import Endpoints, LinkWatch, send_nowait, zmq_context
from robocell.common.bus.payloads import Payload
from robocell.common.bus.schema import validate, validate_payload, validate_result
from robocell.common.bus.topics import COMMAND_ERRORS
from robocell.common.bus.wire import SCHEMA_VERSION, Envelope, ValidationError, decode, encode
from robocell.errors import RobocellError

# --- wire constants of the command channel -------------------------------------------------

REQUEST = b"\x01"
REPLY = b"\x02"
HELLO = b"\x03"
"""service instance -> broker, every heartbeat: "I serve commands" (+ a msgpack map: commands,
retry_safe, period_s, pid, host). It registers the instance, again after a broker restart."""
BYE = b"\x04"
"""service instance -> broker when it stops: route nothing more to it."""
WELCOME = b"\x05"
"""broker -> service instance, in answer to its first HELLO: requests now reach it."""
REFUSED = b"\x06"
"""broker -> would-be instance, in answer to a HELLO it does not take (+ why, UTF-8): this
key's role does not let it serve as this service. Its requests never come."""
SERVICE_ID_PREFIX = b"s:"
"""Routing ids of service instances: ``s:<service>#<instance token>``."""
INSTANCE_MARK = b"#"
"""Between the service name and the instance token in a service routing id."""
CLIENT_ID_PREFIX = b"c:"

DEFAULT_TIMEOUT_S = 5.0
MAX_RETRY_INTERVAL_S = 1.0
MAX_REQUEST_ID_CHARS = 128
"""Longest request id a service accepts (it keeps DEDUP_CAPACITY of them with their
replies: unbounded ids would let a caller fill its memory)."""


class CommandFailed(RobocellError):
    """A command that did not succeed: ``code`` is one of topics.COMMAND_ERRORS."""

    def __init__(self, code: str, message: str, service: str = "", command: str = "") -> None:
        super().__init__(f"{service}.{command}: {code}: {message}" if service else message)
        self.code = code
        self.message = message
        self.service = service
        self.command = command


class Busy(CommandFailed):
    """Raise from a handler when the service cannot take the command now."""

    def __init__(self, message: str = "the service is busy; retry later") -> None:
        super().__init__("busy", message)


@dataclass
class Reply:
    """The answer to one command: ``ok`` with ``result``, or an ``error`` code and message."""

    id: str
    ok: bool
    result: Any = None
    error: str | None = None
    message: str = ""
    service: str = ""
    command: str = ""
    attempts: int = 1

    def unwrap(self) -> Any:
        """The result, or raise CommandFailed."""
        if not self.ok:
            raise CommandFailed(self.error or "failed", self.message, self.service, self.command)
        return self.result


def reply_payload(request_id: str, *, result: Any = None, error: str | None = None,
                  message: str = "") -> dict[str, Any]:
    """The payload of a ``cmd.reply``."""
    if error is not None and error not in COMMAND_ERRORS:
        raise ValueError(f"unknown command error code {error!r}")
    return {"id": request_id, "ok": error is None, "result": result if error is None else None,
            "error": error, "message": message}


class _RequestHead(msgspec.Struct):
    id: str
    service: str
    command: str
    timeout_ms: float
    args: msgspec.Raw


class _ReplyHead(msgspec.Struct):
    id: str


def _head_decoder(payload: type) -> Callable[[Any], Any]:
    envelope = msgspec.defstruct(f"{payload.__name__}Envelope", [
        ("version", int), ("topic", str), ("source", str), ("seq", int), ("wall_time", float),
        ("mono_time", float), ("payload", payload)], array_like=True)
    return msgspec.msgpack.Decoder(envelope).decode


_decode_request_head = _head_decoder(_RequestHead)
_decode_reply_head = _head_decoder(_ReplyHead)


def _peek(decode: Callable[[Any], Any], topic: str, data: bytes) -> Any:
    """The payload struct ``decode`` reads from ``data`` if it is an envelope of ``topic``
    of this schema version, else None; never raises."""
    try:
        env = decode(data)
    except Exception:  # msgspec's errors, RecursionError on hostile nesting
        return None
    if env.version != SCHEMA_VERSION or env.topic != topic:
        return None
    return env.payload


def peek_request(data: bytes) -> _RequestHead | None:
    """The routing facts of an encoded ``cmd.request`` (id, service, command, timeout_ms;
    the arguments left undecoded), or None when ``data`` is not one. For the broker, which
    routes a request without judging its arguments (the service does); never raises."""
    return _peek(_decode_request_head, "cmd.request", data)


def peek_reply_id(data: bytes) -> str | None:
    """The request id an encoded ``cmd.reply`` answers (the result left undecoded), or None
    when ``data`` is not one; never raises."""
    head = _peek(_decode_reply_head, "cmd.reply", data)
    return None if head is None else head.id


class CommandClient:
    """Sends commands to named services through the broker; for one thread at a time
    (:class:`Node` keeps one per calling thread)."""

    def __init__(self, name: str, endpoints: Endpoints | None = None) -> None:
        self.name = name
        self.endpoints = endpoints or Endpoints.resolve()
        self._seq = itertools.count()
        self.sock = zmq_context().socket(zmq.DEALER)
        self.sock.routing_id = CLIENT_ID_PREFIX + f"{name}-{secrets.token_hex(6)}".encode()
        self.refused_replies = 0
        """Replies refused as malformed (never matched to a request)."""
        self.sock.linger = 0
        self.endpoints.secure(self.sock)
        self.link = LinkWatch(self.sock, self.endpoints.curve is not None)
        """Why the broker may not be answering (read when a request times out)."""
        self.sock.connect(self.endpoints.command)

    def request(self, service: str, command: str, args: dict[str, Any] | None = None,
                timeout: float = DEFAULT_TIMEOUT_S, retry_interval: float | None = None,
                request_id: str | None = None) -> Reply:
        """Send and wait; always returns a Reply (error ``timeout`` when the deadline passes,
        ``invalid_result`` when the result does not fit the command's declaration). Silence
        is retried every ``retry_interval`` s with the same request id. An argument may be
        a payload class (robocell.common.bus.payloads): it is sent as its map."""
        args = {} if args is None else {
            name: value.to_payload() if isinstance(value, Payload) else value
            for name, value in args.items()}
        request_id = request_id or f"{self.name[:64]}-{secrets.token_hex(8)}"
        if len(request_id) > MAX_REQUEST_ID_CHARS:
            raise ValueError(f"request id {request_id[:40]!r}... is {len(request_id)} "
                             f"characters; services refuse ids over {MAX_REQUEST_ID_CHARS}")
        payload = {"id": request_id, "service": service, "command": command, "args": args,
                   "timeout_ms": timeout * 1000.0}
        validate_payload("cmd.request", payload)
        interval = retry_interval or max(min(timeout / 3, MAX_RETRY_INTERVAL_S), 0.05)
        deadline = time.monotonic() + timeout
        attempts = 0
        self.link.read()
        disconnects = self.link.disconnects
        while True:
            now = time.monotonic()
            if now >= deadline:
                why = self.link.problem(disconnects if attempts else None)
                return Reply(request_id, False, error="timeout",
                             message=f"no reply from {service!r} to {command!r} within "
                                     f"{timeout:.3g} s ({attempts} attempt(s)); "
                                     + (why if why else "is the service running? "
                                        "(`robocell bus list`)"),
                             service=service, command=command, attempts=attempts)
            payload["timeout_ms"] = (deadline - now) * 1000.0
            env = Envelope.now("cmd.request", self.name, next(self._seq), payload)
            # DEALER blocks while no broker link exists: never wait on that, retry instead
            if send_nowait(self.sock, [REQUEST, service.encode(), encode(env)]):
                attempts += 1
            retry_at = min(deadline, time.monotonic() + interval)
            while (wait := retry_at - time.monotonic()) > 0:
                if not self.sock.poll(int(wait * 1000) + 1):
                    break
                reply = self._read_reply(request_id)
                if reply is not None:
                    reply.service, reply.command, reply.attempts = service, command, attempts
                    return _checked(reply)

    def call(self, service: str, command: str, args: dict[str, Any] | None = None,
             timeout: float = DEFAULT_TIMEOUT_S) -> Any:
        """The command's result; raises CommandFailed with the error code otherwise."""
        return self.request(service, command, args, timeout).unwrap()

    def _read_reply(self, request_id: str) -> Reply | None:
        frames = self.sock.recv_multipart()
        if len(frames) != 2 or frames[0] != REPLY:
            return None
        try:
            env = validate(decode(frames[1]))
        except Exception:  # a MessageError, or anything unforeseen: not our answer
            self.refused_replies += 1
            return None
        p = env.payload
        if env.topic != "cmd.reply" or p["id"] != request_id:
            return None  # a late answer to an earlier, abandoned request
        return Reply(p["id"], p["ok"], p["result"], p["error"], p["message"])

    def close(self) -> None:
        self.link.close()
        self.sock.close()


def _checked(reply: Reply) -> Reply:
    """``reply`` itself if it is an error or its result fits the command's declaration;
    else the error ``invalid_result`` naming the command and the field."""
    if not reply.ok:
        return reply
    try:
        validate_result(reply.service, reply.command, reply.result)
    except ValidationError as exc:
        return Reply(reply.id, False, error="invalid_result",
                     message=f"{exc}; {reply.service} and this caller disagree on the "
                             "declaration in robocell.common.bus.topics (run the same "
                             "version of both)",
                     service=reply.service, command=reply.command, attempts=reply.attempts)
    return reply
