"""Broker-routed request/reply: the service instances, least-outstanding routing, the requests
in flight, and the answers the broker gives on behalf of a service that cannot.

Pattern: a simplified **Majordomo** (ZeroMQ guide) over one ROUTER. Each service *instance*
connects a DEALER whose routing id is ``s:<service>#<instance token>`` and says HELLO every
heartbeat (commands, which of them are safe to retry, its period, pid and host); several
instances may register under one service name, on this host or others. A request for a
service goes to its live instance with the fewest requests in flight; the broker remembers
each request in flight by (caller, request id) until its reply passes back.

The broker never blocks and never goes silent on a caller's behalf:

- an instance whose queue is full (ZeroMQ's high-water mark, or MAX_OUTSTANDING requests in
  flight) is passed over; when every instance is, the caller is answered ``busy``;
- a service with no live instance is answered ``unavailable`` at once;
- an instance that says BYE, disconnects, or stays silent for STALE_AFTER_BEATS heartbeat
  periods (stopped, hung, killed) is dropped; each request it held is sent to another
  instance when its command is declared safe to retry (``retry_safe`` in bus/topics.py) and
  time remains, and is otherwise answered ``unavailable``, saying it may or may not have run;
- a caller's retry of a request in flight goes to the instance that holds it (whose dedup
  cache answers it), and a retry of one already answered goes where the answer came from,
  so no retry runs a command twice.

Instances on other hosts register on the remote endpoint's instance ROUTER (CURVE; only keys
with a service role connect there). Every message from it is judged by its key: an instance
of a service the key does not name is refused (REFUSED, and reported), and so is a HELLO on
the remote command ROUTER. An instance is known by its ROUTER and routing id together, so a
remote peer can never take the place of a local one.
"""

from __future__ import annotations

import collections
import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgpack
import zmq

from robocell.common.bus import STALE_AFTER_BEATS, reply_payload
from robocell.common.bus.commands import (
    BYE,
    CLIENT_ID_PREFIX,
    HELLO,
    INSTANCE_MARK,
    REFUSED,
    REPLY,
    REQUEST,
    SERVICE_ID_PREFIX,
    WELCOME,
    peek_reply_id,
    peek_request,
)
from robocell.common.bus.endpoints import ZMQ_NOBLOCK
from robocell.common.bus.wire import Envelope, MessageError, encode
from robocell.services.broker.zap import Access

LOCAL_ID, REMOTE_ID, SERVE_ID = b"L", b"R", b"S"
"""First byte of a peer's key: which ROUTER it came in on (local, remote commands with
CURVE, remote service instances with CURVE)."""
BATCH = 500
"""Messages taken from one ROUTER before the broker looks at its other sockets."""
MAX_OUTSTANDING = 10_000
"""Requests in flight on one instance beyond which it is passed over (its callers are
answered ``busy`` when every instance is): a stopped instance costs the broker at most this
many remembered requests until it is dropped."""
MAX_INSTANCES = 1_000
"""Instances registered at once; HELLOs beyond are ignored and counted (a rogue local peer
must not grow the broker's tables)."""
ANSWERED_CAPACITY = 20_000
"""Answered requests remembered (where the answer came from), so a late retry is answered
from there and not run again elsewhere."""
EXPIRY_GRACE_S = 1.0
"""A request in flight is forgotten this long after its caller's deadline."""
MIN_HELLO_PERIOD_S = 0.05
MAX_HELLO_PERIOD_S = 60.0
INSTANCE_ID_SHOWN = 8
"""Characters of an instance's token shown in ``bus.stats`` (``id``): enough to tell
instances apart; the rest of its routing id is known to the instance and the broker alone,
so no peer that reads the bus can connect under it and take its requests (the ROUTERs hand a
routing id over to a new connection, which a restarted link needs)."""
HELLO_LIMITS = {"max_str_len": 256, "max_bin_len": 0, "max_array_len": 4096,
                "max_map_len": 16, "max_ext_len": 0}
"""msgpack limits for decoding a HELLO (a list of command names and a few facts)."""


@dataclass(slots=True, eq=False)
class Instance:
    """One registered instance of a service, as its HELLOs describe it."""

    routing_id: bytes
    service: str
    token: str
    origin: bytes = LOCAL_ID
    """the ROUTER it registered on (LOCAL_ID or SERVE_ID)"""
    key_name: str = ""
    """the name of its CURVE key (a remote instance)"""
    commands: list[str] = field(default_factory=list)
    retry_safe: frozenset[str] = frozenset()
    period_s: float = 1.0
    pid: int = 0
    host: str = ""
    last_seen: float = 0.0
    outstanding: dict[bytes, InFlight] = field(default_factory=dict)
    answered: int = 0

    @property
    def key(self) -> bytes:
        return self.origin + self.routing_id

    @property
    def label(self) -> str:
        return f"{self.service}#{self.token} (pid {self.pid} on {self.host or '?'})"

    def describe(self) -> dict[str, Any]:
        described = {"id": self.token[:INSTANCE_ID_SHOWN], "pid": self.pid, "host": self.host,
                     "outstanding": len(self.outstanding), "answered": self.answered,
                     "commands": list(self.commands)}
        if self.origin == SERVE_ID:
            described["key"] = self.key_name  # joined over the CURVE endpoint
        return described


@dataclass(slots=True, eq=False)
class InFlight:
    """A request forwarded to an instance and not answered yet."""

    key: bytes
    client: bytes
    """the ROUTER's mark (LOCAL_ID or REMOTE_ID) + the caller's routing id"""
    service: str
    request_id: str
    command: str
    data: bytes
    deadline: float
    instance: Instance


class CommandRouter:
    """The command channel of one broker: reads its ROUTERs, routes, answers for services.
    ``counts`` is the broker's command counter (``bus.stats.commands``); ``tap`` gets every
    request and reply that passes (topic, envelope bytes) for recorders; ``report`` is told
    of every malformed message (what is wrong), for the broker's diagnostics."""

    def __init__(self, local: zmq.Socket, remote: zmq.Socket | None,
                 counts: collections.Counter[str],
                 tap: Callable[[str, bytes], None] | None = None,
                 report: Callable[[str], None] | None = None) -> None:
        self.local = local
        self.remote = remote
        self.serve: zmq.Socket | None = None
        """the remote endpoint's instance ROUTER, if any"""
        self.access_of: Callable[[str | None], Access | None] = lambda user_id: None
        """what the remote peer with this ZAP user id may do (None: nothing)"""
        self.refused_key: Callable[[str, str, str], None] | None = None
        """told (code, message, key name) of an allowed key refused something"""
        self.counts = counts
        self.tap = tap
        self.report = report
        self.instances: dict[str, dict[bytes, Instance]] = {}
        """service -> routing id -> instance (live ones only)."""
        self._by_id: dict[bytes, Instance] = {}
        self.in_flight: dict[bytes, InFlight] = {}
        """(caller + NUL + request id) -> the request in flight."""
        self._deadlines: list[tuple[float, bytes]] = []
        self._answered: collections.OrderedDict[bytes, Instance | bytes] = (
            collections.OrderedDict())
        """(caller + NUL + request id) -> the instance that answered, or the broker's own
        answer (encoded)."""

    # -- what the broker reports ---------------------------------------------------------

    def services_alive(self) -> list[str]:
        """Services with at least one live instance."""
        return sorted(name for name, found in self.instances.items() if found)

    def describe(self) -> dict[str, list[dict[str, Any]]]:
        """Per service, its live instances (``bus.stats.instances``)."""
        return {name: [inst.describe() for inst in found.values()]
                for name, found in sorted(self.instances.items()) if found}

    # -- reading the ROUTERs ---------------------------------------------------------------

    def read(self, router: zmq.Socket, origin: bytes) -> None:
        """Handle up to BATCH messages queued on ``router`` (LOCAL_ID or REMOTE_ID)."""
        for _ in range(BATCH):
            try:
                frames = router.recv_multipart(ZMQ_NOBLOCK, copy=False)
            except zmq.Again:
                return
            try:
                self._handle(router, origin, frames)
            except Exception as exc:  # never let one message stop the broker: count, say
                self.counts["internal_errors"] += 1
                if self.report is not None:
                    self.report(f"a command message of {len(frames)} frame(s), whose "
                                f"handling raised {type(exc).__name__}: {exc}")

    def _handle(self, router: zmq.Socket, origin: bytes, frames: list[Any]) -> None:
        sender = frames[0].bytes
        kind = frames[1].bytes if len(frames) > 1 else b""
        is_service_id = sender.startswith(SERVICE_ID_PREFIX)
        via = self._may_serve(router, frames, sender, kind) if (
            origin == SERVE_ID and is_service_id) else None
        service_peer = is_service_id and (origin == LOCAL_ID or via is not None)
        if origin == SERVE_ID and not service_peer:
            if not is_service_id:
                self._malformed(f"a message from {sender[:40]!r} on the instance port, "
                                "which takes service instances alone")
            return  # else refused, and said, by _may_serve
        if kind == REQUEST and len(frames) == 4 and origin != SERVE_ID:
            access = self.access_of(frames[1].get("User-Id")) if origin == REMOTE_ID else None
            if origin == REMOTE_ID and (access is None or not access.may_command):
                self.counts["requests"] += 1
                self._refuse_data(origin + sender, frames[3].bytes, "forbidden",
                                  "this key may only watch the bus; ask the cell's operator "
                                  "to allow it with role 'command'")
                return
            self.request(origin + sender, frames[2].bytes, frames[3].bytes)
        elif kind == REPLY and len(frames) == 4 and service_peer:
            self.reply(origin + sender, frames[2].bytes, frames[3].bytes)
        elif kind == HELLO and len(frames) == 3 and service_peer:
            self.hello(origin + sender, frames[2].bytes, via.name if via else "")
        elif kind == BYE and len(frames) == 2 and service_peer:
            instance = self._by_id.get(origin + sender)
            if instance is not None:
                self.drop(instance, "stopped")
        elif kind == HELLO and origin == REMOTE_ID and is_service_id:
            self._refuse_instance(router, sender, self.access_of(frames[1].get("User-Id")),
                                  "the command port")
        else:
            self._malformed(f"a message of {len(frames)} frame(s) of kind {kind[:8]!r} from "
                            f"{sender[:40]!r}, which is no request, reply, HELLO or BYE")

    def _may_serve(self, router: zmq.Socket, frames: list[Any], sender: bytes,
                   kind: bytes) -> Access | None:
        """The key of a message on the instance ROUTER when it may serve as the service
        its routing id names; else None, refused (and said)."""
        access = self.access_of(frames[1].get("User-Id")) if len(frames) > 1 else None
        name = _service_name(sender)
        if access is not None and name in access.services:
            return access
        if kind in (HELLO, REPLY):
            self._refuse_instance(router, sender, access, "the instance port")
        return None

    def _refuse_instance(self, router: zmq.Socket, sender: bytes, access: Access | None,
                         where: str) -> None:
        """Refuse a remote peer's registration as an instance: REFUSED (why) to it, and
        the key named on ``diagnostics``."""
        self.counts["instances_forbidden"] += 1
        name = _service_name(sender)
        who = access.label() if access is not None else "an unknown key"
        fix = (f"allow it with `robocell broker --allow {access.name}.pub:service:{name}` "
               "if it should serve" if access is not None else "")
        why = (f"the broker refused {who} registering as an instance of service {name!r} on "
               f"{where}: only a key allowed as service:{name} serves as {name!r}, on the "
               f"remote endpoint's instance port" + (f"; {fix}" if fix else ""))
        try:
            router.send_multipart([sender, REFUSED, why.encode()], ZMQ_NOBLOCK)
        except zmq.ZMQError:  # gone or full: the diagnostic still says it
            pass
        if self.refused_key is not None:
            self.refused_key("forbidden_instance", why,
                             access.name if access is not None else "unknown")

    def _malformed(self, what: str) -> None:
        self.counts["malformed"] += 1
        if self.report is not None:
            self.report(what)

    # -- requests --------------------------------------------------------------------------

    def request(self, client: bytes, service: bytes, data: bytes) -> None:
        """A caller's request: to the instance that holds it already (a retry), or answered
        again (a retry of an answered one), or to the least loaded live instance."""
        self.counts["requests"] += 1
        if self.tap is not None:
            self.tap("cmd.request", data)
        head = peek_request(data)
        if head is None:  # without a request id no reply can be matched
            self._malformed(f"a request from {client[1:41]!r} that is no cmd.request "
                            f"envelope ({len(data)} bytes); not routed, not answered")
            return
        key = client + b"\x00" + head.id.encode()
        flight = self.in_flight.get(key)
        if flight is not None:  # a retry while it runs: its instance's dedup cache has it
            self.counts["retries"] += 1
            self._forward(flight.instance, client, data)
            return
        answered = self._answered.get(key)
        if type(answered) is bytes:  # the broker answered it: the same answer again
            self._send_reply(client, answered)
            return
        if answered is not None and answered.key in self._by_id:
            self.counts["retries"] += 1
            self._forward(answered, client, data)  # answered from its dedup cache
            return
        name = service.decode("utf-8", "replace")
        deadline = time.monotonic() + max(0.0, head.timeout_ms) / 1000.0
        self._dispatch(key, client, name, head.id, head.command, data, deadline)

    def _dispatch(self, key: bytes, client: bytes, service: str, request_id: str,
                  command: str, data: bytes, deadline: float) -> None:
        """Send to the live instance of ``service`` with the fewest requests in flight whose
        queue takes it, those that offer ``command`` first (one still warming up offers
        only ping: it answers unknown_command only when no instance offers it); else answer
        busy (every queue full) or unavailable (none live)."""
        found = self.instances.get(service)
        candidates = sorted(found.values(), key=lambda i: (command not in i.commands,
                                                           len(i.outstanding))) if found else []
        full = 0
        for instance in candidates:
            if len(instance.outstanding) >= MAX_OUTSTANDING:
                full += 1
                continue
            try:
                self._router_of(instance).send_multipart(
                    [instance.routing_id, REQUEST, client, data], ZMQ_NOBLOCK)
            except zmq.Again:  # its queue is at the high-water mark: stopped or slow
                full += 1
                continue
            except zmq.ZMQError as exc:
                if exc.errno != zmq.EHOSTUNREACH:
                    raise
                self.drop(instance, "disconnected")
                continue
            flight = InFlight(key, client, service, request_id, command, data, deadline,
                              instance)
            instance.outstanding[key] = flight
            self.in_flight[key] = flight
            heapq.heappush(self._deadlines, (deadline, key))
            return
        if full:
            self._refuse(client, key, request_id, "busy",
                         f"every instance of service {service!r} ({full}) has a full queue "
                         "(stopped or overloaded); retry later, or start another instance")
        else:
            known = ", ".join(self.services_alive()) or "none"
            self._refuse(client, key, request_id, "unavailable",
                         f"no instance of a service named {service!r} is connected to the "
                         f"broker (services connected: {known}); start it or check its name")

    def _forward(self, instance: Instance, client: bytes, data: bytes) -> None:
        """Send a retry to the instance that holds (or answered) it; a full queue drops it
        (the caller retries again, or its deadline ends the call)."""
        try:
            self._router_of(instance).send_multipart(
                [instance.routing_id, REQUEST, client, data], ZMQ_NOBLOCK)
        except zmq.ZMQError:  # zmq.Again (full), EHOSTUNREACH (gone: the sweep drops it)
            self.counts["retries_dropped"] += 1

    def _router_of(self, instance: Instance) -> zmq.Socket:
        """The ROUTER ``instance`` registered on."""
        if instance.origin == SERVE_ID and self.serve is not None:
            return self.serve
        return self.local

    # -- replies ---------------------------------------------------------------------------

    def reply(self, sender: bytes, client: bytes, data: bytes) -> None:
        """A service's reply: forget the request in flight, pass the reply to its caller."""
        self.counts["replies"] += 1
        if self.tap is not None:
            self.tap("cmd.reply", data)
        instance = self._by_id.get(sender)
        if instance is not None:
            instance.last_seen = time.monotonic()
        request_id = peek_reply_id(data)
        if request_id is None:
            self._malformed(f"a reply from {sender[:40]!r} that is no cmd.reply envelope "
                            f"({len(data)} bytes); not passed on")
            return
        key = client + b"\x00" + request_id.encode()
        flight = self.in_flight.get(key)
        if flight is not None and flight.instance is instance:
            del self.in_flight[key]
            instance.outstanding.pop(key, None)
            instance.answered += 1
            self._remember(key, instance)
        elif sender[:1] != LOCAL_ID and (instance is None or self._answered.get(key)
                                         is not instance):
            self.counts["replies_unasked"] += 1  # a remote instance answers what it holds
            return
        self._send_reply(client, data)

    def _send_reply(self, client: bytes, data: bytes) -> None:
        router = self.local if client[:1] == LOCAL_ID else self.remote
        if router is None:
            self.counts["unroutable_replies"] += 1
            return
        try:
            router.send_multipart([client[1:], REPLY, data], ZMQ_NOBLOCK)
        except zmq.ZMQError:  # the caller left (EHOSTUNREACH), or reads nothing (Again)
            self.counts["unroutable_replies"] += 1

    def _refuse(self, client: bytes, key: bytes, request_id: str, code: str,
                message: str) -> None:
        """Answer a request on behalf of the broker with an explicit error (and answer a
        retry of it the same way)."""
        self.counts[code] += 1
        data = encode(Envelope.now("cmd.reply", "broker", 0,
                                   reply_payload(request_id, error=code, message=message)))
        self._remember(key, data)
        self._send_reply(client, data)

    def _refuse_data(self, client: bytes, data: bytes, code: str, message: str) -> None:
        """Refuse an encoded request (its id read without judging the rest)."""
        head = peek_request(data)
        if head is None:
            self._malformed(f"a request from {client[1:41]!r} that is no cmd.request "
                            f"envelope ({len(data)} bytes); not answered")
            return
        try:
            self._refuse(client, client + b"\x00" + head.id.encode(), head.id, code, message)
        except MessageError:  # an id too long to answer: nothing can be matched
            self._malformed("a request whose id is too long to answer")
        if not client[1:].startswith(CLIENT_ID_PREFIX):
            self.counts["odd_client_ids"] += 1

    def _remember(self, key: bytes, answer: Instance | bytes) -> None:
        self._answered[key] = answer
        self._answered.move_to_end(key)
        while len(self._answered) > ANSWERED_CAPACITY:
            self._answered.popitem(last=False)

    # -- instances -------------------------------------------------------------------------

    def hello(self, sender: bytes, data: bytes, key: str = "") -> None:
        """Register or refresh an instance from its HELLO (``sender``: the ROUTER's mark
        and the instance's routing id; ``key``: the name of a remote instance's key)."""
        try:
            info = msgpack.unpackb(data, **HELLO_LIMITS)
        except Exception:  # msgpack raises many types on garbage input
            info = None
        if type(info) is list:  # commands only
            info = {"commands": info}
        commands = info.get("commands") if type(info) is dict else None
        if type(commands) is not list or not all(type(c) is str for c in commands):
            self._malformed(f"a HELLO from {sender[:40]!r} without a list of command names")
            return
        instance = self._by_id.get(sender)
        if instance is None:
            if len(self._by_id) >= MAX_INSTANCES:
                self.counts["instances_refused"] += 1
                return
            origin, routing_id = sender[:1], sender[1:]
            name, _, token = routing_id[len(SERVICE_ID_PREFIX):].partition(INSTANCE_MARK)
            instance = Instance(routing_id, name.decode("utf-8", "replace"),
                                token.decode("utf-8", "replace"), origin, key)
            self.instances.setdefault(instance.service, {})[sender] = instance
            self._by_id[sender] = instance
            self.counts["instances_joined"] += 1
            try:
                self._router_of(instance).send_multipart([routing_id, WELCOME], ZMQ_NOBLOCK)
            except zmq.ZMQError:  # gone or full: it is registered all the same
                pass
        instance.commands = commands
        retry_safe = info.get("retry_safe")
        if type(retry_safe) is list:
            instance.retry_safe = frozenset(c for c in retry_safe if type(c) is str)
        period = info.get("period_s")
        if type(period) in (int, float):
            instance.period_s = min(max(float(period), MIN_HELLO_PERIOD_S), MAX_HELLO_PERIOD_S)
        if type(info.get("pid")) is int:
            instance.pid = info["pid"]
        if type(info.get("host")) is str:
            instance.host = info["host"]
        instance.last_seen = time.monotonic()

    def drop(self, instance: Instance, why: str) -> None:
        """Forget ``instance``; each request it held goes to another instance (a command
        safe to retry, with time left) or is answered unavailable."""
        if self._by_id.pop(instance.key, None) is None:
            return
        found = self.instances.get(instance.service)
        if found is not None:
            found.pop(instance.key, None)
            if not found:
                del self.instances[instance.service]
        self.counts["instances_dropped"] += 1
        now = time.monotonic()
        held, instance.outstanding = instance.outstanding, {}
        for key, flight in held.items():
            self.in_flight.pop(key, None)
            if flight.command in instance.retry_safe and flight.deadline > now:
                self.counts["rerouted"] += 1
                self._dispatch(key, flight.client, flight.service, flight.request_id,
                               flight.command, flight.data, flight.deadline)
                continue
            self._refuse(flight.client, key, flight.request_id, "unavailable",
                         f"instance {instance.label} {why} while it held this request, "
                         f"which may or may not have run ({flight.service}.{flight.command} "
                         "is not declared safe to retry); check the cell's state before "
                         "sending it again")

    def sweep(self, now: float) -> None:
        """Drop instances silent for STALE_AFTER_BEATS periods; forget requests whose
        callers have given up."""
        for instance in list(self._by_id.values()):
            silent = now - instance.last_seen
            if silent > STALE_AFTER_BEATS * instance.period_s:
                self.drop(instance, f"stopped answering (silent for {silent:.1f} s)")
        deadlines = self._deadlines
        while deadlines and deadlines[0][0] + EXPIRY_GRACE_S < now:
            deadline, key = heapq.heappop(deadlines)
            flight = self.in_flight.get(key)
            if flight is not None and flight.deadline == deadline:
                del self.in_flight[key]
                flight.instance.outstanding.pop(key, None)
                self.counts["expired"] += 1


def _service_name(routing_id: bytes) -> str:
    """The service a service routing id (``s:<service>#<token>``) names."""
    name = routing_id[len(SERVICE_ID_PREFIX):].partition(INSTANCE_MARK)[0]
    return name.decode("utf-8", "replace")
