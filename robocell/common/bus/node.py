"""The node: one service on the bus -- publisher, subscriptions, command server, heartbeat.

A service is a :class:`Node`; it connects to the broker, publishes validated messages,
calls back on subscribed topics, answers commands, beats every second and knows who is
alive (see :mod:`robocell.common.bus` for an example). Its command server (the service
side of :mod:`robocell.common.bus.commands`) registers each instance with the broker
(HELLO/WELCOME/BYE) and keeps a **dedup cache** of request ids, so a retry of a request
that is running or done is answered from the cache and never executed twice.

Threading: :meth:`Node.publish` and :meth:`Node.call` may be used from any thread.
Subscription callbacks run on the node's I/O thread (keep them short, hand long work to
your own thread); command handlers run on a small worker pool.
"""

from __future__ import annotations

import collections
import os
import secrets
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import msgpack
import zmq

from robocell.common.bus.commands import (
    BYE,
    DEFAULT_TIMEOUT_S,
    HELLO,
    INSTANCE_MARK,
    MAX_REQUEST_ID_CHARS,
    REFUSED,
    REPLY,
    REQUEST,
    SERVICE_ID_PREFIX,
    WELCOME,
    CommandClient,
    CommandFailed,
    Reply,
    reply_payload,
)
from robocell.common.bus.endpoints import (
    CONNECT_WAIT_S,
    LINGER_MS,
    Endpoints,
    send_nowait,
    zmq_context,
)
from robocell.common.bus.liveness import HEARTBEAT_PERIOD_S, Liveness, PeerStatus
from robocell.common.bus.payloads import Payload
from robocell.common.bus.publisher import Publisher
from robocell.common.bus.schema import command_spec, topic_spec, validate, validate_args
from robocell.common.bus.subscriber import RECV_BATCH, Rejection, Subscriber
from robocell.common.bus.topics import COMMAND_ERRORS, LIFECYCLE_STATES
from robocell.common.bus.wire import MAX_SEQ_JUMP, Envelope, MessageError, decode, encode
from robocell.common.config import host_name

DEDUP_CAPACITY = 4096
DEDUP_TTL_S = 300.0
DIAGNOSTIC_MIN_INTERVAL_S = 1.0


Handler = Callable[[dict[str, Any], "CommandContext"], Any]
Callback = Callable[[Envelope], None]


def request_time_left(env: Envelope, now: float) -> float:
    """Seconds left before the deadline of the request ``env``, received at wall time
    ``now``: the caller's deadline is its stamp plus ``timeout_ms`` (a resent request is
    stamped anew with what is left), so a request read late -- queued while this process
    was stopped or busy -- counts the time it waited. Never more than ``timeout_ms``: a
    stamp ahead of this clock does not lengthen it."""
    timeout_s = env.payload["timeout_ms"] / 1000.0
    return min(timeout_s, env.wall_time + timeout_s - now)


@dataclass
class CommandContext:
    """What a command handler knows about the request it serves."""

    request_id: str
    command: str
    caller: str
    deadline: float  # time.monotonic() after which the caller no longer waits

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline


@dataclass
class _Command:
    handler: Handler
    concurrency: int
    retry_safe: bool = False
    running: int = 0


@dataclass
class _Pending:
    """A request in the dedup cache: running (reply None) or answered."""

    waiters: list[bytes]
    reply: bytes | None = None
    finished: float = 0.0


class Node:
    """One service on the bus: publisher, subscriptions with callbacks, command server,
    heartbeat and peer liveness, run by one I/O thread. Use as a context manager or call
    start()/stop()."""

    def __init__(self, name: str, endpoints: Endpoints | None = None, *,
                 heartbeat_period: float = HEARTBEAT_PERIOD_S, workers: int = 4,
                 track_peers: bool = True, check: bool = True) -> None:
        self.name = name
        self.endpoints = endpoints or Endpoints.resolve()
        self.heartbeat_period = heartbeat_period
        self.state = "starting"
        self.health: dict[str, Any] = {}
        self.liveness = Liveness()
        self.started = time.monotonic()
        self._callbacks: dict[str, list[tuple[bool, Callback]]] = collections.defaultdict(list)
        self._commands: dict[str, _Command] = {"ping": _Command(self._ping, 1_000_000, True)}
        self._pending: collections.OrderedDict[bytes, _Pending] = collections.OrderedDict()
        """the dedup cache: (caller, request id) -> running or answered request; two callers
        may pick the same id, a caller's retry carries its own again."""
        self._diag_last: dict[tuple[str, str], float] = {}
        self._diag_count: collections.Counter[tuple[str, str]] = collections.Counter()
        self._gaps_reported = 0
        self._jumps_reported = 0
        self.refused_requests = 0
        """Command messages refused before a handler saw them (malformed, hostile)."""
        self._lock = threading.RLock()
        self._clients = threading.local()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.registered = threading.Event()
        """set when the broker has registered this instance (its commands route to it)"""
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"{name}-cmd")
        ctx = zmq_context()
        self.publisher = (Publisher(name, self.endpoints, check=check)
                          if self.endpoints.publish else None)
        self.subscriber = Subscriber((), self.endpoints, check=check,
                                     on_reject=self._report_rejection)
        self._server = ctx.socket(zmq.DEALER)
        # one routing id per instance: several instances of a service may serve at once;
        # the broker shows its first INSTANCE_ID_SHOWN characters, the rest is never told
        # (a remote peer cannot name it to take the instance's connection over)
        self.instance = secrets.token_hex(12)
        self._server.routing_id = (SERVICE_ID_PREFIX + name.encode() + INSTANCE_MARK
                                   + self.instance.encode())
        self._server.linger = LINGER_MS
        self.endpoints.secure(self._server)
        self.refused: str | None = None
        """Why the broker refused to register this instance (its key's role), else None."""
        if self.endpoints.register is not None:  # (a remote watcher registers nowhere)
            self._server.connect(self.endpoints.register)
        wake = f"inproc://robocell-node-{name}-{id(self)}"
        self._inbox = ctx.socket(zmq.PULL)
        self._inbox.bind(wake)
        self._outbox = ctx.socket(zmq.PUSH)  # guarded by self._lock
        self._outbox.connect(wake)
        if track_peers:
            self.subscribe("heartbeat", self.liveness.update)

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> Node:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, wait_linked: float = CONNECT_WAIT_S) -> Node:
        """Start the I/O thread; wait up to ``wait_linked`` s for the broker link."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"{self.name}-bus",
                                            daemon=True)
            self._thread.start()
            if self.publisher is not None and wait_linked > 0:
                deadline = time.monotonic() + wait_linked
                self.publisher.wait_linked(wait_linked)
                # a service is ready only once its commands reach it
                self.registered.wait(max(0.0, deadline - time.monotonic()))
        return self

    def stop(self) -> None:
        """Announce ``stopping``, stop the I/O thread and close every socket."""
        if self._thread is None:
            return
        self.set_state("stopping")
        self._beat()
        self._stop.set()
        self._wake(b"stop")
        self._thread.join(timeout=5)
        self._thread = None
        send_nowait(self._server, [BYE])  # the I/O thread is gone: this thread owns it
        self._pool.shutdown(wait=False, cancel_futures=True)
        for sock in (self._server, self._inbox, self._outbox):
            sock.close()
        self.subscriber.close()
        if self.publisher is not None:
            self.publisher.close()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until stop() (from another thread) or Ctrl-C; True if stopped."""
        try:
            return self._stop.wait(timeout)
        except KeyboardInterrupt:
            return True

    def set_state(self, state: str, **health: Any) -> None:
        """Set the lifecycle state (starting, ready, busy, error, stopping) and merge
        ``health`` details; announced with the next heartbeat (and at once on change)."""
        if state not in LIFECYCLE_STATES:
            raise ValueError(f"lifecycle state {state!r} is not one of "
                             f"{', '.join(LIFECYCLE_STATES)}")
        changed = state != self.state
        self.state = state
        self.health.update(health)
        if changed and self._thread is not None:
            self._wake(b"beat")

    # -- pub/sub -----------------------------------------------------------------------------

    def publish(self, topic: str, payload: dict[str, Any] | Payload) -> int:
        """Publish from any thread (its sequence number); raises MessageError if the
        message is refused. ``payload``: the map, or the topic's payload class."""
        if self.publisher is None:
            raise ValueError("connected to a remote, read-only broker: cannot publish")
        if isinstance(payload, Payload):
            payload = payload.to_payload()
        return self.publisher.publish(topic, payload)

    def subscribe(self, topic: str, callback: Callback, prefix: bool = False) -> None:
        """Call ``callback(envelope)`` on the I/O thread for each message of ``topic``
        (exact name; ``prefix=True`` or ``""`` for a prefix). Latched topics deliver their
        current value at once."""
        if not (prefix or topic == ""):
            topic_spec(topic)
        with self._lock:
            self._callbacks[topic].append((prefix or topic == "", callback))
        self._wake(b"sub" + topic.encode(), b"1" if prefix else b"0")

    def peers(self) -> dict[str, PeerStatus]:
        """Every service heard on the heartbeat topic, with staleness."""
        return self.liveness.peers()

    def alive(self) -> list[str]:
        """Names of services whose heartbeats are current."""
        return self.liveness.alive()

    # -- commands ----------------------------------------------------------------------------

    def serve(self, command: str, handler: Handler, concurrency: int = 1,
              retry_safe: bool | None = None) -> None:
        """Answer ``command`` with ``handler(args, ctx)`` (its return value is the result: a
        map, or the result's payload class; raise CommandFailed/Busy for an explicit error).
        More than ``concurrency`` simultaneous requests are answered ``busy``. Arguments
        are validated first, once: the handler gets them checked against the declaration.
        ``retry_safe`` (default: the command's declaration in topics.py) lets the broker
        hand a request that was in flight on a dead instance to another instance."""
        if retry_safe is None:
            spec = command_spec(self.name, command)
            retry_safe = spec is not None and spec.retry_safe
        with self._lock:
            self._commands[command] = _Command(handler, concurrency, retry_safe)
        self._wake(b"hello")

    def call(self, service: str, command: str, args: dict[str, Any] | None = None,
             timeout: float = DEFAULT_TIMEOUT_S) -> Any:
        """Send a command and return its result; raises CommandFailed (from any thread)."""
        return self.request(service, command, args, timeout).unwrap()

    def request(self, service: str, command: str, args: dict[str, Any] | None = None,
                timeout: float = DEFAULT_TIMEOUT_S) -> Reply:
        """Like call() but returns the Reply instead of raising."""
        client = getattr(self._clients, "client", None)
        if client is None:
            client = self._clients.client = CommandClient(self.name, self.endpoints)
        return client.request(service, command, args, timeout)

    # -- the I/O thread ----------------------------------------------------------------------

    def _wake(self, *frames: bytes) -> None:
        with self._lock:
            self._outbox.send_multipart(list(frames))

    def _loop(self) -> None:
        """Poll subscriptions, commands and the inbox until stop(); beat on time."""
        poller = zmq.Poller()
        for sock in (self.subscriber.sock, self._server, self._inbox):
            poller.register(sock, zmq.POLLIN)
        self._hello()
        next_beat = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_beat:
                self._beat()
                self._hello()  # registers this instance again after a broker restart
                next_beat = now + self.heartbeat_period
            ready = dict(poller.poll(max(0, int((next_beat - now) * 1000)) + 1))
            if self._inbox in ready:
                self._drain_inbox()
            if self.subscriber.sock in ready:
                # a bounded batch, then look at the other sockets
                for env in self.subscriber.recv_batch(0, RECV_BATCH):
                    self._dispatch(env)
                if self.subscriber.stats.gaps > self._gaps_reported:
                    self._report_drops()
                if self.subscriber.stats.seq_jumps > self._jumps_reported:
                    self._report_jumps()
            if self._server in ready:
                for _ in range(RECV_BATCH):  # bounded too: a flood must not starve the rest
                    try:
                        frames = self._server.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    try:
                        self._on_request(frames)
                    except Exception as exc:  # the I/O thread never dies of a request
                        self._diagnose("bad_request", "cmd.request",
                                       f"handling a command request raised "
                                       f"{type(exc).__name__}: {exc}", level="error")

    def _drain_inbox(self) -> None:
        while True:
            try:
                frames = self._inbox.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            kind = frames[0]
            if kind.startswith(b"sub"):
                self.subscriber.subscribe(kind[3:].decode(), prefix=frames[1] == b"1")
            elif kind == b"done":
                command = self._commands.get(frames[1].decode())
                if command is not None:
                    command.running -= 1
                self._deliver(frames[2], frames[3])
            elif kind == b"beat":
                self._beat()
            elif kind == b"hello":
                self._hello()

    def _dispatch(self, env: Envelope) -> None:
        with self._lock:
            targets = [cb for topic, entries in self._callbacks.items()
                       for prefix, cb in entries
                       if topic == env.topic or (prefix and env.topic.startswith(topic))]
        for callback in targets:
            try:
                callback(env)
            except Exception as exc:  # a bad callback must not kill the node
                self._diagnose("callback_failed", env.topic,
                               f"callback {getattr(callback, '__name__', callback)!r} for "
                               f"topic {env.topic!r} raised {type(exc).__name__}: {exc}",
                               level="error")

    def _hello(self) -> None:
        """Tell the broker this instance serves commands (every heartbeat: the broker drops
        an instance that stays silent for STALE_AFTER_BEATS periods)."""
        if self.endpoints.register is None:
            return
        with self._lock:
            commands = sorted(self._commands)
            retry_safe = sorted(n for n, c in self._commands.items() if c.retry_safe)
        send_nowait(self._server, [HELLO, msgpack.packb({
            "commands": commands, "retry_safe": retry_safe, "period_s": self.heartbeat_period,
            "pid": os.getpid(), "host": host_name()})])

    def _beat(self) -> None:
        if self.publisher is None:
            return
        self.publisher.check_link()
        health = dict(self.health)
        health["bus"] = self.subscriber.stats.as_health()
        health["bus"]["refused_requests"] = self.refused_requests
        try:
            self.publish("heartbeat", {
                "service": self.name, "state": self.state, "health": health,
                "period_s": self.heartbeat_period, "pid": os.getpid(),
                "host": host_name(), "uptime_s": time.monotonic() - self.started,
                "commands": sorted(self._commands),
            })
        except MessageError as exc:  # e.g. a health value msgpack cannot carry
            print(f"{self.name}: heartbeat refused: {exc}", file=sys.stderr)

    def _report_drops(self) -> None:
        stats = self.subscriber.stats
        new = stats.gaps - self._gaps_reported
        self._gaps_reported = stats.gaps
        self._diagnose("dropped_messages", "",
                       f"{self.name} missed {new} message(s) (sequence gaps; {stats.gaps} in "
                       "all): it is too slow for its subscriptions or the broker is "
                       "overloaded", count=stats.gaps)

    def _report_jumps(self) -> None:
        jumps = self._jumps_reported = self.subscriber.stats.seq_jumps
        self._diagnose("sequence_jump", "",
                       f"{self.name} saw a sequence number more than {MAX_SEQ_JUMP} past the "
                       f"last of its source ({jumps} in all): taken as a restart of that "
                       "source, not as lost messages; a forged stamp or a broken publisher",
                       count=jumps)

    def _report_rejection(self, rejection: Rejection) -> None:
        error = rejection.error
        self._diagnose("bad_message", rejection.topic or "",
                       f"refused a message on topic {rejection.topic!r} from "
                       f"{error.source or 'unknown source'} ({rejection.size} bytes): "
                       f"{error.reason}: {error}", peer=error.source)

    def _diagnose(self, code: str, topic: str, message: str, *, level: str = "warning",
                  peer: str | None = None, count: int | None = None) -> None:
        """Publish a diagnostic, at most one per (code, topic) per second, with a count."""
        key = (code, topic)
        self._diag_count[key] = self._diag_count[key] + 1 if count is None else count
        now = time.monotonic()
        if now - self._diag_last.get(key, -1e9) < DIAGNOSTIC_MIN_INTERVAL_S:
            return
        self._diag_last[key] = now
        if self.publisher is None:
            print(f"{self.name}: {message}", file=sys.stderr)
            return
        payload: dict[str, Any] = {"service": self.name, "level": level, "code": code,
                                   "message": message, "topic": topic or None,
                                   "count": self._diag_count[key]}
        if peer:
            payload["peer"] = peer
        try:
            self.publish("diagnostics", payload)
        except MessageError as exc:
            print(f"{self.name}: diagnostic refused: {exc}", file=sys.stderr)

    # -- the command server (runs on the I/O thread; handlers on the pool) -----------------

    def _ping(self, args: dict[str, Any], ctx: CommandContext) -> dict[str, Any]:
        return {"service": self.name, "state": self.state}

    def _on_request(self, frames: list[bytes]) -> None:
        if frames == [WELCOME]:
            self.registered.set()
            self.refused = None
            return
        if len(frames) == 2 and frames[0] == REFUSED:
            reason = frames[1].decode("utf-8", "replace")
            if reason != self.refused:  # said once, not every heartbeat
                print(f"{self.name}: {reason}", file=sys.stderr, flush=True)
            self.refused = reason
            return
        if len(frames) != 3 or frames[0] != REQUEST:
            self.refused_requests += 1
            self._diagnose("bad_request", "cmd.request",
                           f"refused a command message of {len(frames)} frame(s): expected "
                           "REQUEST, the caller and the envelope")
            return
        _, client, data = frames
        try:
            env = validate(decode(data))
            if env.topic != "cmd.request":
                raise MessageError(f"expected a cmd.request, got topic {env.topic!r}")
            if len(env.payload["id"]) > MAX_REQUEST_ID_CHARS:
                raise MessageError(f"request id of {len(env.payload['id'])} characters; "
                                   f"at most {MAX_REQUEST_ID_CHARS}")
        except MessageError as exc:
            self.refused_requests += 1
            self._diagnose("bad_request", "cmd.request", f"refused a command request: {exc}")
            return
        p = env.payload
        request_id, command = p["id"], p["command"]
        key = client + b"\x00" + request_id.encode()
        self._expire_pending()
        pending = self._pending.get(key)
        if pending is not None:  # a retry: never execute twice
            if pending.reply is not None:
                send_nowait(self._server, [REPLY, client, pending.reply])
            elif client not in pending.waiters:
                pending.waiters.append(client)
            return
        spec = self._commands.get(command)
        left_s = request_time_left(env, time.time())
        deadline = time.monotonic() + left_s
        error: tuple[str, str] | None = None
        if spec is None:
            error = ("unknown_command", f"service {self.name!r} has no command {command!r}; "
                     f"it offers: {', '.join(sorted(self._commands))}")
        elif left_s <= 0:
            error = ("timeout", f"request {request_id} arrived after its deadline "
                     f"({-left_s:.3g} s late): not run")
        else:
            try:
                validate_args(self.name, command, p["args"])
            except MessageError as exc:
                error = ("invalid_arguments", str(exc))
        if error is None and spec is not None and spec.running >= spec.concurrency:
            error = ("busy", f"{self.name}.{command} is already running "
                     f"({spec.running} of {spec.concurrency} allowed); retry later")
        self._pending[key] = _Pending([client])
        if error is not None:
            self._finish(key, reply_payload(request_id, error=error[0], message=error[1]))
            return
        assert spec is not None
        spec.running += 1
        ctx = CommandContext(request_id, command, env.source, deadline)
        self._pool.submit(self._run, spec, p["args"], ctx, key)

    def _run(self, spec: _Command, args: dict[str, Any], ctx: CommandContext,
             key: bytes) -> None:
        try:
            if ctx.expired():  # waited for a worker (or a stopped process) past its deadline
                raise CommandFailed("timeout", f"request {ctx.request_id} reached its "
                                               "deadline before it could start: not run")
            result = spec.handler(args, ctx)
            if isinstance(result, Payload):
                result = result.to_payload()
            payload = reply_payload(ctx.request_id, result=result)
        except CommandFailed as exc:
            code = exc.code if exc.code in COMMAND_ERRORS else "failed"
            payload = reply_payload(ctx.request_id, error=code, message=exc.message)
        except Exception as exc:
            payload = reply_payload(ctx.request_id, error="failed",
                                    message=f"{self.name}.{ctx.command} raised "
                                            f"{type(exc).__name__}: {exc}")
        self._finish(key, payload, command=ctx.command)

    def _finish(self, key: bytes, payload: dict[str, Any], command: str | None = None
                ) -> None:
        """Send the reply to the request ``key`` (caller + id) to every waiter and cache it;
        ``command`` is set when called from a worker, which hands over to the I/O thread
        (owner of the sockets and the cache)."""
        try:
            data = encode(Envelope.now("cmd.reply", self.name, 0, payload))
        except MessageError as exc:
            data = encode(Envelope.now("cmd.reply", self.name, 0, reply_payload(
                payload["id"], error="failed", message=f"the result cannot be sent: {exc}")))
        if command is not None:
            self._wake(b"done", command.encode(), key, data)
            return
        self._deliver(key, data)

    def _deliver(self, key: bytes, data: bytes) -> None:
        pending = self._pending.get(key)
        if pending is None:
            return
        pending.reply = data
        pending.finished = time.monotonic()
        for client in pending.waiters:
            send_nowait(self._server, [REPLY, client, data])
        pending.waiters.clear()

    def _expire_pending(self) -> None:
        now = time.monotonic()
        while self._pending:
            oldest_id, oldest = next(iter(self._pending.items()))
            too_many = len(self._pending) > DEDUP_CAPACITY
            if oldest.reply is not None and (too_many or now - oldest.finished > DEDUP_TTL_S):
                del self._pending[oldest_id]
            elif too_many:
                self._pending.move_to_end(oldest_id)  # still running: keep it
                break
            else:
                break
