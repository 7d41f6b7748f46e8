"""Bus tools: `robocell bus list|echo|hz|pub|call|record|play|info|export` (like `ros2 topic`,
`ros2 service` and `ros2 bag`)."""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import math
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

from robocell.common.bus import (
    REPLAY_PREFIX,
    Liveness,
    Publisher,
    Subscriber,
    is_replayed,
)
from robocell.common.bus.options import (
    add_remote_options,
    broker_endpoints,
    json_object_argument,
)
from robocell.common.bus.topics import TOPIC_SPECS
from robocell.common.bus.views import jsonable
from robocell.common.bus.wire import (
    MAX_SOURCE_CHARS,
    Envelope,
    MessageError,
    decode,
    encode,
    message_frame,
    split_frame,
    unbatch_frame,
)
from robocell.errors import CommandError
from robocell.tools.call_cli import add_call_parser
from robocell.tools.recording import (
    NS_PER_S,
    Recorder,
    RecordingError,
    export_json,
    read_messages,
    recording_info,
    require_intact,
    verify_recording,
)

LIST_WAIT_S = 1.5
HZ_REPORT_PERIOD_S = 1.0
LIST_ITEMS_SHOWN = 16
SKIPPED_ON_PLAY = ("bus.stats", "cmd.request", "cmd.reply")
NEVER_PLAYED = ("heartbeat", "bus.traffic")
"""Liveness and the publishers' traffic reports: a replay of them would be a lie about now."""
LIVE_CHECK_S = 1.5
"""How long `bus play` listens for heartbeats of live services before playing."""


def register(subparsers: argparse._SubParsersAction) -> None:
    bus = subparsers.add_parser("bus", help="inspect, record and replay the bus",
                                description="Tools for the bus, in the spirit of `ros2 topic` "
                                            "and `ros2 bag`.")
    sub = bus.add_subparsers(dest="bus_command", metavar="SUBCOMMAND")
    bus.set_defaults(func=lambda args: bus.print_help() or 2)

    remote_options = add_remote_options

    p = sub.add_parser("list", help="topics with types, rates and publishers; services")
    remote_options(p)
    p.add_argument("--all", action="store_true", help="also list declared topics not seen")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--wait", type=float, default=LIST_WAIT_S, metavar="S",
                   help=f"seconds to listen for heartbeats (default {LIST_WAIT_S})")
    p.set_defaults(func=run_list)

    p = sub.add_parser("echo", help="print the messages of a topic")
    remote_options(p)
    p.add_argument("topic", help="topic name ('' or --prefix for a prefix)")
    p.add_argument("--prefix", action="store_true", help="treat TOPIC as a prefix")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--count", "-n", type=int, default=0, help="stop after N messages")
    p.add_argument("--full", action="store_true", help="do not shorten long lists")
    p.add_argument("--timeout", type=float, default=0, metavar="S",
                   help="give up after S seconds without a message (0: wait forever)")
    p.set_defaults(func=run_echo)

    p = sub.add_parser("hz", help="message rate of a topic")
    remote_options(p)
    p.add_argument("topic")
    p.add_argument("--window", type=int, default=100, help="periods averaged (default 100)")
    p.add_argument("--duration", type=float, default=0, metavar="S",
                   help="stop after S seconds (0: until Ctrl-C)")
    p.set_defaults(func=run_hz)

    p = sub.add_parser("pub", help="publish a message given as JSON",
                       description='Publish a validated message, e.g. `robocell bus pub '
                                   'cell.status \'{"cycle_id": "c1", "stage": "idle"}\'`. '
                                   'Binary fields are written {"$base64": "..."}.')
    remote_options(p)
    p.add_argument("topic")
    p.add_argument("payload", help="the payload as a JSON object")
    p.add_argument("--rate", type=float, default=0, metavar="HZ",
                   help="repeat at this rate (default: once)")
    p.add_argument("--count", "-n", type=int, default=0,
                   help="number of messages (default 1, or endless with --rate)")
    p.add_argument("--source", default="cli", help="source name in the envelope")
    p.set_defaults(func=run_pub)

    add_call_parser(sub)

    p = sub.add_parser("record", help="record topics into an MCAP file")
    remote_options(p)
    p.add_argument("file", type=Path, help="output FILE.mcap")
    p.add_argument("topics", nargs="*", help="topics to record (default: all)")
    p.add_argument("--duration", type=float, default=0, metavar="S",
                   help="stop after S seconds (0: until Ctrl-C)")
    p.add_argument("--count", "-n", type=int, default=0, help="stop after N messages")
    p.add_argument("--tap", action="store_true",
                   help="record from the broker's capture tap (includes command traffic; "
                        "local broker only)")
    p.set_defaults(func=run_record)

    p = sub.add_parser("play", help="replay an MCAP recording with its original timing")
    remote_options(p)
    p.add_argument("file", type=Path)
    p.add_argument("--rate", type=float, default=1.0, help="speed factor (default 1)")
    p.add_argument("--loop", action="store_true", help="start again at the end")
    p.add_argument("--topics", nargs="+", help="only these topics")
    p.add_argument("--all-topics", action="store_true",
                   help=f"also replay {', '.join(SKIPPED_ON_PLAY)} ({', '.join(NEVER_PLAYED)} "
                        "never)")
    p.add_argument("--onto-live", action="store_true",
                   help="play although services are running on this bus (replayed messages "
                        "are marked: source replay:...)")
    p.set_defaults(func=run_play)

    p = sub.add_parser("info", help="summary of an MCAP recording")
    p.add_argument("file", type=Path)
    p.add_argument("--json", action="store_true")
    p.add_argument("--verify", action="store_true",
                   help="read every chunk and check its CRC; exit 1 naming any damaged chunk")
    p.set_defaults(func=run_info)

    p = sub.add_parser("export", help="convert a recording for Foxglove (JSON encoding)")
    p.add_argument("file", type=Path)
    p.add_argument("--json", action="store_true", required=True,
                   help="write JSON-encoded messages with JSON Schemas")
    p.add_argument("--out", "-o", type=Path, help="output file (default FILE.json.mcap)")
    p.set_defaults(func=run_export)


# --- helpers ---------------------------------------------------------------------------------


_endpoints = broker_endpoints


def _subscriber(args: argparse.Namespace, topics: list[str], prefix: bool = False,
                endpoints: Any = None) -> Any:
    def warn(rejection: Any) -> None:
        print(f"rejected message on {rejection.topic!r}: {rejection.error}", file=sys.stderr)

    sub = Subscriber((), endpoints or _endpoints(args), on_reject=warn)
    try:
        for topic in topics:
            sub.subscribe(topic, prefix=prefix)
    except MessageError as exc:
        sub.close()
        raise CommandError(str(exc)) from None
    return sub


def _publisher(args: argparse.Namespace, source: str) -> Any:
    endpoints = _endpoints(args)
    try:
        pub = Publisher(source, endpoints)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if not pub.wait_linked():
        pub.close()
        raise CommandError(f"no broker answered at {endpoints.publish}; start one with "
                           "`robocell broker` or check --broker / $ROBOCELL_BUS")
    return pub


class _Stop:
    """Turns SIGTERM into a flag so loops end cleanly (files get finished)."""

    def __init__(self) -> None:
        self.requested = False
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, *_: object) -> None:
        self.requested = True


def _short(value: Any, full: bool) -> Any:
    if isinstance(value, msgspec.Struct):  # a nested declared type
        value = msgspec.to_builtins(value, builtin_types=(bytes,))
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, dict):
        return {k: _short(v, full) for k, v in value.items()}
    if isinstance(value, list):
        items = [_short(v, full) for v in value]
        if not full and len(items) > LIST_ITEMS_SHOWN:
            return items[:LIST_ITEMS_SHOWN] + [f"... {len(items)} items"]
        return items
    return value


def format_pretty(env: Any, full: bool = False) -> str:
    """A human-readable rendering of one envelope."""
    stamp = time.strftime("%H:%M:%S", time.localtime(env.wall_time))
    stamp += f".{int(env.wall_time % 1 * 1000):03d}"
    spec = TOPIC_SPECS.get(env.topic)
    kind = spec.kind.value if spec else "undeclared"
    lines = [f"--- {env.topic}  from {env.source}  seq {env.seq}  at {stamp}  "
             f"({kind}, {env.size} bytes)"]
    for key, value in env.payload.items():
        lines.append(f"{key}: {json.dumps(_short(value, full), ensure_ascii=False)}")
    return "\n".join(lines)


def envelope_json(env: Any) -> str:
    return json.dumps({"topic": env.topic, "source": env.source, "seq": env.seq,
                       "wall_time": env.wall_time, "mono_time": env.mono_time,
                       "payload": jsonable(env.payload)}, ensure_ascii=False)


# --- commands -------------------------------------------------------------------------------


def run_list(args: argparse.Namespace) -> int:
    endpoints = _endpoints(args)
    sub = _subscriber(args, ["bus.stats", "heartbeat"], endpoints=endpoints)
    liveness = Liveness()
    stats = None
    deadline = time.monotonic() + args.wait
    try:
        while (remaining := deadline - time.monotonic()) > 0:
            env = sub.recv(remaining)
            if env is None:
                break
            if env.topic == "bus.stats":
                stats = env.payload
            else:
                liveness.update(env)
    finally:
        sub.close()
    if stats is None:
        raise CommandError(f"no bus.stats from a broker at {endpoints.subscribe} within "
                           f"{args.wait} s; is `robocell broker` running?")
    topics = dict(stats["topics"])
    if args.all:
        for name, spec in TOPIC_SPECS.items():
            topics.setdefault(name, {"messages": 0, "bytes": 0, "gaps": 0, "rate_hz": 0.0,
                                     "bytes_per_s": 0.0, "type": spec.type_name,
                                     "kind": spec.kind.value, "publishers": []})
    peers = liveness.peers()
    if args.json:
        print(json.dumps({"topics": topics, "services": {
            name: {"state": p.state, "stale": p.stale, "commands": p.commands,
                   "health": p.health, "pid": p.pid, "host": p.host}
            for name, p in peers.items()}, "instances": stats.get("instances", {}),
            "rejected": stats["rejected"], "commands": stats["commands"]}, indent=2,
            default=str))
        return 0
    print(f"{'TOPIC':<22} {'TYPE':<18} {'KIND':<8} {'RATE/Hz':>8} {'KB/s':>9} "
          f"{'MESSAGES':>9} {'GAPS':>5}  PUBLISHERS")
    for name, t in sorted(topics.items()):
        print(f"{name:<22} {t['type']:<18} {t['kind']:<8} {t['rate_hz']:>8.1f} "
              f"{t['bytes_per_s'] / 1024:>9.1f} {t['messages']:>9} {t['gaps']:>5}  "
              f"{', '.join(t['publishers']) or '-'}")
    print()
    instances = stats.get("instances", {})
    print(f"{'SERVICE':<16} {'STATE':<9} {'ALIVE':<6} {'DROPPED':>7} {'INSTANCES':>9}  COMMANDS")
    for name, p in sorted(peers.items()):
        dropped = p.health.get("bus", {}).get("dropped", 0) if isinstance(
            p.health.get("bus"), dict) else 0
        serving = len(instances.get(name, ())) if p.commands else "-"
        print(f"{name:<16} {p.state:<9} {'no' if p.stale else 'yes':<6} {dropped:>7} "
              f"{serving:>9}  {', '.join(c for c in p.commands if c != 'ping') or '-'}")
    if instances:
        print(f"\n{'INSTANCE':<24} {'PID':>7} {'HOST':<16} {'IN FLIGHT':>9} {'ANSWERED':>9}"
              "  LINK")
        for name, found in sorted(instances.items()):
            for inst in found:
                link = f"curve key {inst['key']}" if "key" in inst else "local"
                print(f"{name + '#' + inst['id']:<24} {inst['pid']:>7} {inst['host']:<16} "
                      f"{inst['outstanding']:>9} {inst['answered']:>9}  {link}")
    rejected = stats["rejected"]
    if rejected:
        print(f"\nrejected by the broker: "
              f"{', '.join(f'{k} {v}' for k, v in sorted(rejected.items()))}")
    return 0


def run_echo(args: argparse.Namespace) -> int:
    sub = _subscriber(args, [args.topic], prefix=args.prefix)
    stop = _Stop()
    shown = 0
    try:
        while not stop.requested and (args.count <= 0 or shown < args.count):
            env = sub.recv(args.timeout if args.timeout > 0 else 0.2)
            if env is None:
                if args.timeout > 0:
                    raise CommandError(f"no message on {args.topic!r} within {args.timeout} s")
                continue
            print(envelope_json(env) if args.json else format_pretty(env, args.full),
                  flush=True)
            shown += 1
    except KeyboardInterrupt:
        pass
    finally:  # a closed pipe (`| head`) goes on to the entry point
        sub.close()
    return 0


def run_hz(args: argparse.Namespace) -> int:
    sub = _subscriber(args, [args.topic])
    stop = _Stop()
    arrivals: collections.deque[float] = collections.deque(maxlen=args.window + 1)
    started = time.monotonic()
    next_report = started + HZ_REPORT_PERIOD_S
    try:
        while not stop.requested:
            now = time.monotonic()
            if args.duration and now - started >= args.duration:
                break
            env = sub.recv(max(0.0, next_report - now))
            if env is not None:
                arrivals.append(time.monotonic())
            if time.monotonic() >= next_report:
                next_report += HZ_REPORT_PERIOD_S
                print(hz_line(list(arrivals), sub.stats.gaps), flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        sub.close()
    return 0


def hz_line(arrivals: list[float], gaps: int = 0) -> str:
    """`ros2 topic hz`-style summary of arrival times (seconds)."""
    if len(arrivals) < 2:
        return "no new messages"
    periods = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
    mean = statistics.fmean(periods)
    std = statistics.pstdev(periods) if len(periods) > 1 else 0.0
    rate = 1.0 / mean if mean > 0 else math.inf
    return (f"average rate: {rate:.3f} Hz  min: {min(periods):.4f}s  max: {max(periods):.4f}s"
            f"  std dev: {std:.5f}s  window: {len(periods)}  dropped: {gaps}")


def run_pub(args: argparse.Namespace) -> int:
    payload = json_object_argument(args.payload, "payload", '{"field": 1}')
    count = args.count or (0 if args.rate > 0 else 1)
    pub = _publisher(args, args.source)
    stop = _Stop()
    sent = 0
    try:
        next_send = time.monotonic()
        while not stop.requested and (count == 0 or sent < count):
            try:
                pub.publish(args.topic, payload)
            except MessageError as exc:
                raise CommandError(str(exc)) from None
            sent += 1
            if args.rate <= 0:
                continue
            next_send += 1.0 / args.rate
            time.sleep(max(0.0, next_send - time.monotonic()))
        print(f"published {sent} message(s) on {args.topic}", file=sys.stderr)
    except KeyboardInterrupt:
        pass
    finally:
        time.sleep(0.1)  # let the last message leave before the socket closes
        pub.close()
    return 0


def run_record(args: argparse.Namespace) -> int:
    endpoints = _endpoints(args)
    if args.tap:
        if endpoints.tap is None:
            raise CommandError("--tap needs a local broker (the tap is not offered remotely)")
        endpoints = dataclasses.replace(endpoints, subscribe=endpoints.tap)
    topics = args.topics or [""]
    sub = _subscriber(args, topics, endpoints=endpoints)
    try:
        recorder = Recorder(args.file, {"topics": " ".join(args.topics) or "*",
                                        "broker": endpoints.subscribe})
    except RecordingError as exc:
        sub.close()
        raise CommandError(str(exc)) from None
    stop = _Stop()
    started = time.monotonic()
    print(f"recording {', '.join(args.topics) or 'all topics'} into {args.file} "
          "(Ctrl-C to stop)", file=sys.stderr, flush=True)
    try:
        while not stop.requested:
            if args.duration and time.monotonic() - started >= args.duration:
                break
            if args.count and recorder.count >= args.count:
                break
            if not sub.sock.poll(100):
                continue
            frame = sub.unwrap(sub.sock.recv())  # (the broker's answer of latched state)
            try:  # a batch frame is recorded as the messages it carries, one by one
                frames = unbatch_frame(frame)
            except MessageError:
                frames = [frame]  # refused (and counted) by handle_frame
            for one in frames:
                env = sub.handle_frame(one)
                if env is not None:  # MCAP keeps the envelope; the topic is the channel's
                    recorder.write(env.topic, split_frame(one)[1], time.time_ns(),
                                   int(env.wall_time * NS_PER_S), env.seq)
    except KeyboardInterrupt:
        pass
    finally:
        recorder.close()
        sub.close()
    s = sub.stats
    print(f"recorded {recorder.count} messages in {time.monotonic() - started:.1f} s to "
          f"{args.file}; rejected {sum(s.rejected.values())}, lost on the way (gaps) {s.gaps}",
          file=sys.stderr)
    return 0


def run_play(args: argparse.Namespace) -> int:
    if args.rate <= 0:
        raise CommandError("--rate must be positive (1 = original speed)")
    skipped = NEVER_PLAYED + (() if args.all_topics else SKIPPED_ON_PLAY)
    try:  # read once up front: errors before anything is sent, and exact timing after
        require_intact(args.file)
        messages = [m for m in read_messages(args.file, args.topics) if m.topic not in skipped]
    except RecordingError as exc:
        raise CommandError(str(exc)) from None
    if not messages:
        raise CommandError(f"{args.file} has no messages to play"
                           + (f" on {', '.join(args.topics)}" if args.topics else ""))
    if not args.onto_live:
        live = _live_services(args)
        if live:
            raise CommandError(
                f"services are running on this bus ({', '.join(live)}): a replay would mix "
                "recorded state with theirs; stop them, or play anyway with --onto-live "
                "(replayed messages are marked with the source replay:...)")
    pub = _publisher(args, "player")
    stop = _Stop()
    sent = 0
    try:
        while not stop.requested:
            first = messages[0].log_time_ns
            start = time.monotonic()
            for message in messages:
                due = start + (message.log_time_ns - first) / NS_PER_S / args.rate
                while (wait := due - time.monotonic()) > 0 and not stop.requested:
                    time.sleep(min(wait, 0.1))
                if stop.requested:
                    break
                pub.send_frame(message_frame(message.topic, _replayed(message.data)))
                sent += 1
            if not args.loop:
                break
    except KeyboardInterrupt:
        pass
    finally:
        time.sleep(0.1)
        pub.close()
    print(f"played {sent} messages from {args.file}", file=sys.stderr)
    return 0


def _replayed(data: bytes) -> bytes:
    """The envelope ``data`` with the replay marker in front of its source (see
    robocell.common.bus.REPLAY_PREFIX); anything that does not decode goes as it was
    (receivers refuse it, as they would have)."""
    try:
        env = decode(data)
    except MessageError:
        return data
    if is_replayed(env.source):
        return data
    source = (REPLAY_PREFIX + env.source)[:MAX_SOURCE_CHARS]
    return encode(Envelope(env.topic, source, env.seq, env.wall_time, env.mono_time,
                           env.payload))


def _live_services(args: argparse.Namespace) -> list[str]:
    """The services (not the broker) whose heartbeats are heard within LIVE_CHECK_S."""
    sub = _subscriber(args, ["heartbeat"])
    liveness = Liveness()
    deadline = time.monotonic() + LIVE_CHECK_S
    try:
        while (remaining := deadline - time.monotonic()) > 0:
            env = sub.recv(remaining)
            if env is not None and env.payload["state"] != "stopping":
                liveness.update(env)
    finally:
        sub.close()
    return [name for name in liveness.alive() if name != "broker"]


def run_info(args: argparse.Namespace) -> int:
    try:
        info = recording_info(args.file)
        verified = verify_recording(args.file) if args.verify else None
    except RecordingError as exc:
        raise CommandError(str(exc)) from None
    if verified is not None:
        info["verified"] = {"ok": verified.ok, "chunks": verified.chunks,
                            "messages": verified.messages,
                            "damage": [dataclasses.asdict(d) for d in verified.damage]}
    if args.json:
        print(json.dumps(info, indent=2))
        return 0 if verified is None or verified.ok else 1
    start = info["start_ns"] / 1e9
    print(f"file:      {info['path']}" + ("" if info["complete"] else "  (unfinished)"))
    print(f"profile:   {info['profile'] or '-'}  library: {info['library']}")
    print(f"messages:  {info['messages']}")
    print(f"duration:  {info['duration_s']:.3f} s")
    if info["messages"]:
        print(f"start:     {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(start))}")
    print(f"{'TOPIC':<24} {'MESSAGES':>9}  {'ENCODING':<9} SCHEMA")
    for name, t in info["topics"].items():
        print(f"{name:<24} {t['messages']:>9}  {t['encoding']:<9} {t['schema']}")
    if verified is None:
        print("CRCs:      not checked (--verify reads every chunk and checks them)")
        return 0
    if verified.ok:
        print(f"CRCs:      ok ({verified.chunks} chunks, {verified.messages} messages read)")
        return 0
    print(verified.describe(), file=sys.stderr)
    return 1


def run_export(args: argparse.Namespace) -> int:
    out = args.out or args.file.with_suffix(".json.mcap")
    if out.resolve() == args.file.resolve():
        raise CommandError("--out must differ from the input file")
    try:
        require_intact(args.file)  # before anything is written
        counts = export_json(args.file, out)
    except RecordingError as exc:
        raise CommandError(str(exc)) from None
    total = sum(v for k, v in counts.items() if k != "skipped")
    print(f"wrote {out}: {total} JSON messages on {len(counts) - ('skipped' in counts)} "
          f"channels" + (f", skipped {counts['skipped']} undecodable" if "skipped" in counts
                         else "") + " -- open it in Foxglove")
    return 0
