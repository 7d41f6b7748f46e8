"""Hostile input: nothing a sender puts on the bus may take down a broker or a service.

Every receiver bounds what it decodes (depth, size, map keys, string length; see
robocell.common.bus.wire) and refuses the rest with a MessageError, which is counted and
reported; no other exception may escape into a broker's or a service's I/O loop.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import msgpack
import pytest
import zmq
from support.bus import SCRIPTED_SERVICE, robocell_env, stop_process

from robocell.common.bus import CommandClient, Endpoints, Node, Publisher, Subscriber
from robocell.common.bus.commands import (
    CLIENT_ID_PREFIX,
    HELLO,
    INSTANCE_MARK,
    REPLY,
    REQUEST,
    SERVICE_ID_PREFIX,
)
from robocell.common.bus.schema import TOPIC_WIRE_DECODERS, validate, validate_args
from robocell.common.bus.wire import (
    MAX_DEPTH,
    SCHEMA_VERSION,
    TOPIC_END,
    DecodeError,
    Envelope,
    MessageError,
    decode,
    encode,
)
from robocell.services.broker.service import Broker

DEEP = 10_000
"""Nesting far past every recursion limit (Python's, msgpack's, msgspec's)."""
ERRORS = {"service": "x", "stage": "scan", "code": "c", "message": "m"}


def nested(depth: int, leaf: object = None, as_map: bool = False) -> object:
    """A value ``depth`` containers deep (lists, or maps with key "k")."""
    value = leaf
    for _ in range(depth):
        value = {"k": value} if as_map else [value]
    return value


def packed_nested(depth: int, as_map: bool = False) -> bytes:
    """msgpack bytes of a value ``depth`` containers deep, written without recursion."""
    return (b"\x81\xa1k" if as_map else b"\x91") * depth + b"\xc0"


def raw_envelope(topic: str, payload_fields: dict[str, bytes], seq: int = 0) -> bytes:
    """An envelope whose payload fields are given as msgpack bytes (any depth)."""
    head = msgpack.packb([SCHEMA_VERSION, topic, "rogue", seq, 1.0, 1.0])[1:]
    payload = bytes([0x80 + len(payload_fields)]) + b"".join(
        msgpack.packb(name) + value for name, value in payload_fields.items())
    return bytes([0x97]) + head + payload


@pytest.mark.parametrize("depth", [40, 450, 900, DEEP])
@pytest.mark.parametrize("as_map", [False, True])
def test_deep_nesting_is_refused_with_a_message_error_by_decode_and_validate(
        depth: int, as_map: bool) -> None:
    data = raw_envelope("errors", {**{k: msgpack.packb(v) for k, v in ERRORS.items()},
                                   "detail": b"\x81\xa1d" + packed_nested(depth, as_map)})
    with pytest.raises(DecodeError, match="deep"):
        decode(data)
    env = Envelope.now("errors", "x", 0, {**ERRORS, "detail": {"d": nested(
        min(depth, 900), as_map=as_map)}})
    with pytest.raises(MessageError):
        validate(env)
    with pytest.raises(MessageError):
        validate_args("nobody", "undeclared", {"a": nested(min(depth, 900), as_map=as_map)})
    assert not TOPIC_WIRE_DECODERS["errors"].accepts(data)


def test_subscriber_refuses_deep_messages_without_raising() -> None:
    sub = Subscriber.__new__(Subscriber)  # only the frame handling, no socket
    Subscriber.__init__(sub, ["errors"])
    try:
        for depth in (40, 450, 900, DEEP):
            data = raw_envelope("errors", {**{k: msgpack.packb(v) for k, v in ERRORS.items()},
                                           "detail": b"\x81\xa1d" + packed_nested(depth)})
            assert sub.handle_frame(b"errors" + TOPIC_END + data) is None
        assert sub.stats.rejected["decode"] == 4
    finally:
        sub.close()


def test_depth_limit_is_generous_for_real_payloads() -> None:
    env = Envelope.now("errors", "x", 0, {**ERRORS, "detail": {"d": nested(MAX_DEPTH - 2)}})
    validate(env)


# --- the hostile-input suite: every socket of a real broker process, and a service ----------

SEED = 20240611
SERVICE = "hostile-svc"
PONG = {"service": SERVICE, "state": "ready"}
"""The ping reply the stand-in broker hands the client (it fits the declaration)."""
N_ROUNDS = 3
N_RANDOM = 30
"""Random inputs of each kind per socket and round (bounded: the file runs in well under a
minute on a small shared machine)."""
HUGE_BYTES = 50 * 1024 * 1024
MILLION_KEYS = 1_000_000
RSS_GROWTH_LIMIT_KB = 96 * 1024
"""How much a broker or service process may grow over the suite (after a warm-up round)."""
DEPTHS = (40, 450, 900, DEEP)
GOOD_FIELDS: dict[str, dict[str, object]] = {
    "heartbeat": {"service": "rogue", "state": "ready", "health": {}, "period_s": 1.0,
                  "pid": 1, "host": "h", "uptime_s": 1.0, "commands": []},
    "errors": dict(ERRORS),
    "cmd.reply": {"id": "r1", "ok": True, "result": None, "error": None, "message": ""},
    "bus.traffic": {"instance": "rogue-1", "topics": {}, "before_link": 0},
    "sim.twin_state": {"puzzle": "3x3x3", "facelets": "U" * 54, "solved": False,
                       "grips": {}, "arm_angles": {}},
    "vision.face": {"scan_id": "s", "pose": 0, "face": "U", "size": 3, "jpeg": b"",
                    "grid": [], "colors": [], "confidence": [], "ok": True},
}
DEEP_FIELDS = (  # (topic, field, how a deep value fits the field's type)
    ("cmd.reply", "result", "any"),
    ("errors", "detail", "map"),
    ("heartbeat", "health", "map"),
    ("heartbeat", "commands", "list[str]"),
    ("vision.face", "grid", "list[list[float]]"),
    ("bus.traffic", "topics", "map[map[int]]"),
    ("sim.twin_state", "grips", "map[str]"),
    ("sim.twin_state", "arm_angles", "map[float]"),
)


def deep_value(kind: str, depth: int, as_map: bool) -> bytes:
    """msgpack of a value ``depth`` levels deep shaped to get as far as possible into a
    field of type ``kind`` (a map field gets a map first, a list field a list)."""
    inner = packed_nested(depth, as_map)
    if kind.startswith("map"):
        return b"\x81\xa1k" + inner
    if kind.startswith("list"):
        return b"\x91" + inner
    return inner


def envelope_with(topic: str, field: str, value: bytes, seq: int = 0) -> bytes:
    fields = {k: msgpack.packb(v) for k, v in GOOD_FIELDS[topic].items()}
    fields[field] = value
    return raw_envelope(topic, fields, seq)


def million_key_map() -> bytes:
    """msgpack of a map of MILLION_KEYS distinct 3-character keys (about 5 MB)."""
    alphabet = [chr(c) for c in range(0x21, 0x7F)]
    keys = itertools.islice((a + b + c for a in alphabet for b in alphabet
                             for c in alphabet), MILLION_KEYS)
    body = b"".join(b"\xa3" + key.encode() + b"\xc0" for key in keys)
    return b"\xdf" + MILLION_KEYS.to_bytes(4, "big") + body


def request_envelope(service: str, args_packed: bytes, request_id: str = "h-1",
                     seq: int = 0) -> bytes:
    fields = {"id": msgpack.packb(request_id), "service": msgpack.packb(service),
              "command": msgpack.packb("echo"), "args": args_packed,
              "timeout_ms": msgpack.packb(500.0)}
    return raw_envelope("cmd.request", fields, seq)


def wrong_type_envelope(rng: random.Random) -> bytes:
    fields: list[object] = [SCHEMA_VERSION, "cell.status", "rogue", 0, 1.0, 1.0,
                            {"cycle_id": "c", "stage": "idle"}]
    junk = [None, -1, 2**64 - 1, 1.5, "x" * rng.randrange(300), b"\x00", [1, [2]],
            {"a": {"b": None}}, True, {1: 2}]
    for _ in range(rng.randrange(1, 4)):
        fields[rng.randrange(len(fields))] = rng.choice(junk)
    if rng.random() < 0.2:
        fields = fields[:rng.randrange(len(fields))] + [None] * rng.randrange(3)
    return msgpack.packb(fields, strict_types=False)


def envelope_inputs(rng: random.Random, big: bool) -> list[bytes]:
    """Hostile envelopes (what follows the topic of a frame, or a command's envelope frame):
    random bytes, truncated and wrong-type envelopes, deep nesting in every field type,
    deep command arguments and request envelopes, and (``big``) a 1 M-key map."""
    good = encode(Envelope.now("cell.status", "rogue", 1, {"cycle_id": "c", "stage": "idle"}))
    inputs = [rng.randbytes(rng.randrange(0, 2000)) for _ in range(N_RANDOM)]
    inputs += [good[:rng.randrange(len(good))] for _ in range(N_RANDOM)]
    inputs += [wrong_type_envelope(rng) for _ in range(N_RANDOM)]
    for topic, field, kind in DEEP_FIELDS:
        for depth in DEPTHS:
            inputs.append(envelope_with(topic, field, deep_value(kind, depth,
                                                                  rng.random() < 0.5)))
    for depth in DEPTHS:
        inputs.append(request_envelope(SERVICE, deep_value("map", depth, False)))
        inputs.append(b"\x97" + b"\x91" * depth + b"\xc0" + good[2:])  # a deep version
        inputs.append(b"\x91" * depth + b"\xc0")  # a deep envelope
    if big:
        inputs.append(envelope_with("errors", "detail", million_key_map()))
        inputs.append(request_envelope(SERVICE, million_key_map()))
    return inputs


def vm_rss_kb(pid: int) -> int:
    """Resident memory of process ``pid`` in KiB (/proc/PID/status VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for process {pid}")


def raw_socket(kind: int, endpoint: str, routing_id: bytes | None = None) -> zmq.Socket:
    sock = zmq.Context.instance().socket(kind)
    sock.linger = 0
    sock.sndhwm = sock.rcvhwm = 200
    if routing_id is not None:
        sock.routing_id = routing_id
    sock.connect(endpoint)
    return sock


def drain(*socks: zmq.Socket) -> None:
    for sock in socks:
        while True:
            try:
                sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break


def send_all(sock: zmq.Socket, messages: list[list[bytes]]) -> int:
    """Send each message without blocking (a full queue drops it); how many were tried."""
    for frames in messages:
        try:
            sock.send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            time.sleep(0.002)
    return len(messages)


@pytest.fixture
def hostile_cell(broker_process) -> Iterator[dict]:
    """A `robocell broker` process and a service process (a Node serving echo) on it."""
    proc, endpoints = broker_process
    base = endpoints.subscribe.rsplit(":", 1)[0] + ":" + str(
        int(endpoints.subscribe.rsplit(":", 1)[1]))
    service = subprocess.Popen([sys.executable, str(SCRIPTED_SERVICE), SERVICE, "0.2"],
                               env=robocell_env(base), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert service.stdout is not None and service.stdout.readline().strip() == "ready"
        yield {"broker": proc, "service": service, "endpoints": endpoints}
    finally:
        stop_process(service)


def canaries_pass(endpoints: Endpoints, publisher: Publisher, sub: Subscriber,
                  client: CommandClient, tag: str) -> bool:
    """A message published now reaches a subscriber, and the service answers ping."""
    payload = {"cycle_id": tag, "stage": "idle"}
    deadline = time.monotonic() + 15  # (only bounds a dead bus; a live one answers at once)
    got = False
    while not got and time.monotonic() < deadline:
        publisher.publish("cell.status", payload)
        publisher.flush()
        end = time.monotonic() + 0.5
        while (left := end - time.monotonic()) > 0:
            env = sub.recv(left)
            if env is not None and env.payload.get("cycle_id") == tag:
                got = True
                break
    reply = client.request(SERVICE, "ping", timeout=15)
    return got and reply.ok and reply.result["service"] == SERVICE


@pytest.mark.slow
def test_hostile_input_on_every_broker_socket_and_a_service_leaves_both_alive_and_bounded(
        hostile_cell) -> None:
    """Random, truncated, wrong-type, 10,000-deep, 1 M-key, 50 MB and wrongly framed input
    on the broker's XSUB, XPUB, command ROUTER and tap, and on a service's command channel:
    after every round the broker and the service live, a canary message and a canary
    command get through, and neither process grows beyond a bound."""
    rng = random.Random(SEED)
    endpoints: Endpoints = hostile_cell["endpoints"]
    pids = {"broker": hostile_cell["broker"].pid, "service": hostile_cell["service"].pid}
    publisher = Publisher("canary", endpoints)
    assert publisher.wait_linked(10)
    sub = Subscriber(["cell.status"], endpoints)
    stats = Subscriber(["bus.stats", "heartbeat"], endpoints)
    client = CommandClient("canary", endpoints)
    pub_raw = raw_socket(zmq.XPUB, endpoints.publish)
    assert pub_raw.poll(10000) and pub_raw.recv()  # the broker's subscription to everything
    sub_raw = raw_socket(zmq.XSUB, endpoints.subscribe)
    tap_raw = raw_socket(zmq.XSUB, endpoints.tap)
    cmd_raw = raw_socket(zmq.DEALER, endpoints.command, CLIENT_ID_PREFIX + b"hostile")
    hello_raw = raw_socket(zmq.DEALER, endpoints.command, SERVICE_ID_PREFIX + b"rogue")
    tried = crashes = 0
    rss_start: dict[str, int] = {}
    started = time.monotonic()
    try:
        for round_ in range(N_ROUNDS):
            big = round_ == 1
            inputs = envelope_inputs(rng, big)
            topics = [b"cell.status", b"heartbeat", b"errors", b"cmd.reply", b"bus.traffic",
                      b"sim.twin_state", b"vision.face", b"no.such", b""]
            # the publish side (XSUB): frames, batch-marked frames, several frames at once
            messages = [[rng.choice(topics) + TOPIC_END + data] for data in inputs]
            messages += [[b"heartbeat" + TOPIC_END + b"\xdc\x00\x07" + data]
                         for data in inputs[:N_RANDOM]]
            messages += [[b"cell.status" + TOPIC_END + data] * rng.randrange(2, 5)
                         for data in inputs[:10]]
            messages += [[b""], [b"\x00"], [rng.randbytes(600)]]
            # (a deep heartbeat reaches the service too: it subscribes to heartbeats)
            for topic, field, kind in DEEP_FIELDS[:4]:
                messages.append([topic.encode() + TOPIC_END + envelope_with(
                    topic, field, deep_value(kind, DEEP, False))])
            if big:
                messages.append([b"cell.status" + TOPIC_END + bytes(HUGE_BYTES)])
            tried += send_all(pub_raw, messages)
            # the subscribe side and the tap (XPUB): junk, subscriptions, frames, 50 MB
            for sock in (sub_raw, tap_raw):
                messages = [[data] for data in inputs[:N_RANDOM * 3]]
                messages += [[b"\x01" + rng.randbytes(rng.randrange(0, 200))]
                             for _ in range(N_RANDOM)]
                messages += [[b"\x00" + rng.randbytes(20)], [b"\x01", b"x", b"y"]]
                # over SUBSCRIPTION_MAX_BYTES: libzmq keeps subscriptions in a trie that
                # recurses once per byte, so a 50 MB one would overflow the stack of the
                # sender (here) and, were it taken, of the broker; 50 MB go as other data
                messages.append([b"\x01" + rng.randbytes(8192)])
                if big:
                    messages.append([b"\x02" + bytes(HUGE_BYTES)])
                tried += send_all(sock, messages)
            # the command ROUTER: requests to the service (through the broker, as a client
            # would), to no service (the broker's refusal path), replies, hellos, framing
            messages = [[REQUEST, SERVICE.encode(), data] for data in inputs]
            messages += [[REQUEST, b"no-such-service", data] for data in inputs]
            messages += [[REPLY, b"Lc:nobody", data] for data in inputs[:N_RANDOM]]
            messages += [[HELLO, data] for data in inputs[:N_RANDOM]]
            messages += [[b""], [REQUEST], [REQUEST, SERVICE.encode()], [b"\x09", b"x"],
                         [REQUEST, SERVICE.encode(), b"x", b"y", b"z"]]
            if big:
                messages.append([REQUEST, SERVICE.encode(), bytes(HUGE_BYTES)])
            tried += send_all(cmd_raw, messages)
            tried += send_all(hello_raw, [[HELLO, data] for data in inputs[:N_RANDOM]]
                              + [[HELLO, msgpack.packb(["x" * 100] * 5000)],
                                 [REPLY, CLIENT_ID_PREFIX + b"x", b"junk"]])
            time.sleep(0.3)
            drain(pub_raw, sub_raw, tap_raw, cmd_raw, hello_raw)
            alive = all(hostile_cell[name].poll() is None for name in ("broker", "service"))
            if not (alive and canaries_pass(endpoints, publisher, sub, client,
                                            f"canary-{round_}")):
                crashes += 1
            if round_ == 0:
                rss_start = {name: vm_rss_kb(pid) for name, pid in pids.items()}
        growth = {name: vm_rss_kb(pid) - rss_start[name] for name, pid in pids.items()}
        rejected, both_reported = rejected_so_far(stats)
        if not both_reported:  # a broker or service that stopped reporting has died
            crashes += 1
    finally:
        for sock in (pub_raw, sub_raw, tap_raw, cmd_raw, hello_raw):
            sock.close(linger=0)
        for closable in (publisher, sub, stats, client):
            closable.close()
    print(f"\nhostile input (broker process and service process): {tried} inputs tried, "
          f"{rejected} rejected by the broker's checks and the service, {crashes} crashes; "
          f"RSS growth after warm-up (KiB): {growth}; {time.monotonic() - started:.1f} s")
    assert crashes == 0
    assert rejected > 0
    for name, kb in growth.items():
        assert kb < RSS_GROWTH_LIMIT_KB, f"{name} grew by {kb} KiB"


def rejected_so_far(stats: Subscriber) -> tuple[int, bool]:
    """What the broker's check tap and command routing, and the service, refused so far
    (their latest bus.stats and heartbeat), and whether both reported."""
    broker = service = None
    asked = time.time()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (broker is None or service is None):
        env = stats.recv(0.5)
        if env is None or env.wall_time < asked:
            continue  # queued before the question: the counts of an earlier moment
        if env.topic == "bus.stats":
            broker = (sum(env.payload["rejected"].values())
                      + env.payload["commands"].get("malformed", 0)
                      + env.payload["commands"].get("internal_errors", 0))
        elif env.topic == "heartbeat" and env.payload["service"] == SERVICE:
            bus = env.payload["health"]["bus"]
            service = sum(bus["rejected"].values()) + bus["refused_requests"]
    return (broker or 0) + (service or 0), broker is not None and service is not None


def ping_request(request_id: str) -> bytes:
    return encode(Envelope.now("cmd.request", "canary", 0, {
        "id": request_id, "service": SERVICE, "command": "ping", "args": {},
        "timeout_ms": 2000.0}))


@pytest.mark.slow
def test_a_service_and_a_client_take_hostile_frames_on_their_own_sockets_and_still_work(
        broker, bus_base: str) -> None:
    """A stand-in broker ROUTER sends a Node raw hostile requests (any frame count, 50 MB)
    and a CommandClient hostile replies: the node's I/O thread lives and answers ping, the
    client ignores the junk and takes the real reply."""
    rng = random.Random(SEED + 1)
    router = zmq.Context.instance().socket(zmq.ROUTER)
    router.linger = 0
    port = router.bind_to_random_port("tcp://127.0.0.1")
    endpoints = Endpoints(broker.endpoints.subscribe, broker.endpoints.publish,
                          f"tcp://127.0.0.1:{port}")
    inputs = envelope_inputs(rng, big=True)
    client = CommandClient("canary", endpoints)
    try:
        with Node(SERVICE, endpoints) as node:
            node_id = SERVICE_ID_PREFIX + SERVICE.encode() + INSTANCE_MARK + node.instance.encode()
            node.serve("echo", lambda args, ctx: args)
            assert router.poll(10000) and router.recv_multipart()[:2] == [node_id, HELLO]
            messages = [[node_id, REQUEST, b"c:x", data] for data in inputs]
            messages += [[node_id], [node_id, REQUEST], [node_id, REQUEST, b"c:x"],
                         [node_id, REQUEST, b"c:x", b"y", b"z"], [node_id, REPLY, b"c:x", b"y"],
                         [node_id, b"\x07", rng.randbytes(64)],
                         [node_id, REQUEST, b"c:x", bytes(HUGE_BYTES)]]
            tried = send_all(router, messages)
            router.send_multipart([node_id, REQUEST, b"c:canary", ping_request("ping-1")])
            deadline = time.monotonic() + 10
            answered = False
            while not answered and router.poll(max(1, int((deadline - time.monotonic()) * 1000))):
                frames = router.recv_multipart()
                answered = frames[2] == b"c:canary"
            assert answered and node._thread is not None and node._thread.is_alive()
            refused = node.refused_requests
            # the client: hostile replies to its request, then the real one
            result: dict = {}
            caller = threading.Thread(target=lambda: result.update(
                reply=client.request(SERVICE, "ping", timeout=10)))
            caller.start()
            assert router.poll(10000)
            client_id, _, _, data = router.recv_multipart()
            request_id = decode(data).payload["id"]
            replies = [[client_id, REPLY, data] for data in inputs]
            replies += [[client_id], [client_id, REPLY], [client_id, REPLY, b"x", b"y"]]
            tried += send_all(router, replies)
            good = encode(Envelope.now("cmd.reply", SERVICE, 0, {
                "id": request_id, "ok": True, "result": PONG, "error": None,
                "message": ""}))
            router.send_multipart([client_id, REPLY, good])
            caller.join(15)
            assert result["reply"].ok and result["reply"].result == PONG
    finally:
        client.close()
        router.close(linger=0)
    print(f"\nhostile input (a service's and a client's command sockets): {tried} inputs "
          f"tried, {refused + client.refused_replies} rejected, 0 crashes")
    assert refused > len(inputs) // 2
    assert client.refused_replies > len(inputs) // 2


@pytest.mark.slow
def test_an_oversize_request_is_dropped_by_the_broker_and_the_client_says_so(
        bus_base: str) -> None:
    """A request over the broker's size limit drops the caller's connection (ZMQ_MAXMSGSIZE
    on the command ROUTER); the caller's timeout says why instead of "is it running?"."""
    small = Broker(Endpoints.from_base(bus_base), stats_period=0.2, max_bytes=100_000)
    thread = threading.Thread(target=small.run, daemon=True)
    thread.start()
    assert small.ready.wait(10)
    try:
        with Node(SERVICE, small.endpoints) as node:
            node.serve("echo", lambda args, ctx: args)
            client = CommandClient("canary", small.endpoints)
            try:
                assert client.call(SERVICE, "ping", timeout=10)["service"] == SERVICE
                # (3 s: long enough for the dropped connection to be seen on a loaded machine)
                reply = client.request(SERVICE, "echo", {"blob": b"x" * 300_000}, timeout=3)
                assert reply.error == "timeout"
                assert "dropped the connection" in reply.message
                assert "size limit" in reply.message
                assert client.call(SERVICE, "ping", timeout=10)["service"] == SERVICE
            finally:
                client.close()
    finally:
        small.stop()
        thread.join(5)
