"""Bus throughput and latency through the broker, side by side with raw pyzmq PUB/SUB.

Run from the repository root::

    python bench/bus_throughput.py            # full run (about a minute)
    python bench/bus_throughput.py --quick    # smaller counts

Cases, each measured for both paths in the same run:

- **small state messages** (``cell.status``, ~100 bytes encoded) and **100 KB image messages**
  (``vision.face`` with a 100 KB JPEG field).
- **raw pyzmq**: one PUB socket bound, one SUB connected, the publisher sending pre-encoded
  envelope bytes (the same bytes the bus carries) in a tight loop, the subscriber only
  receiving.
- **robocell bus**: a real ``robocell broker`` process in between; the publisher uses
  :class:`robocell.common.bus.Publisher` (validate, stamp, encode each message), the broker
  decodes, validates, counts and forwards, the subscriber uses
  :class:`robocell.common.bus.Subscriber` (decode, validate, sequence check).

Throughput: the publisher sends N messages as fast as it can; the subscriber (another
process) reports how many arrived and the time from the first to the last; messages/s =
received / that time. Losses (ZeroMQ drops at a high-water mark) are shown, not hidden.
Latency: the publisher sends at a fixed rate (1,000 messages/s); latency = the subscriber's
``time.monotonic()`` at receipt minus the envelope's ``mono_time`` (one clock on one host).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from robocell.common.bus import Endpoints, Publisher, Subscriber  # noqa: E402
from robocell.common.envelope import Envelope, decode, encode  # noqa: E402

SMALL_TOPIC = "cell.status"
SMALL_PAYLOAD = {"cycle_id": "cycle-000123", "stage": "executing",
                 "detail": "step 12 of 31: R2 (regrip first)"}
IMAGE_TOPIC = "vision.face"
IMAGE_BYTES = 100 * 1024
IMAGE_PAYLOAD = {"scan_id": "scan-000123", "pose": 2, "face": "F", "size": 3,
                 "jpeg": os.urandom(IMAGE_BYTES), "grid": [[10.0, 20.0]] * 9,
                 "colors": [[200, 30, 40]] * 9, "confidence": [0.97] * 9, "ok": True}
LATENCY_RATE_HZ = 1000
IDLE_END_S = 1.5  # the subscriber stops after this long without a message
RAW_HWM = 1000  # pyzmq's default, stated explicitly
MB = 1e6


def free_port_block(n: int = 4) -> int:
    for _ in range(100):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        try:
            held = []
            for offset in range(n):
                s = socket.socket()
                held.append(s)
                s.bind(("127.0.0.1", base + offset))
            return base
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise RuntimeError("no free ports")


# --- subscriber processes ------------------------------------------------------------------


def raw_subscriber(endpoint: str, topic: str, ready: mp.Event, out: mp.Queue,
                   latency: bool) -> None:
    import zmq

    sock = zmq.Context.instance().socket(zmq.SUB)
    sock.rcvhwm = RAW_HWM
    sock.subscribe(topic.encode())
    sock.connect(endpoint)
    ready.set()
    count, nbytes, first, last, lat = 0, 0, 0.0, 0.0, []
    while sock.poll(int(IDLE_END_S * 1000)):
        frames = sock.recv_multipart()
        now = time.monotonic()
        if frames[1] == b"warmup":
            continue
        if latency:
            lat.append(now - decode(frames[1]).mono_time)
        if count == 0:
            first = now
        last = now
        count += 1
        nbytes += len(frames[1])
    out.put({"count": count, "bytes": nbytes, "span": last - first, "latency": lat, "gaps": 0})


def bus_subscriber(endpoints: Endpoints, topic: str, ready: mp.Event, out: mp.Queue,
                   latency: bool) -> None:
    sub = Subscriber([topic], endpoints)
    ready.set()
    count, nbytes, first, last, lat = 0, 0, 0.0, 0.0, []
    while True:
        env = sub.recv(IDLE_END_S)
        if env is None:
            break
        now = time.monotonic()
        if env.payload.get("cycle_id") == "warmup" or env.payload.get("scan_id") == "warmup":
            continue
        if latency:
            lat.append(now - env.mono_time)
        if count == 0:
            first = now
        last = now
        count += 1
        nbytes += env.size
    out.put({"count": count, "bytes": nbytes, "span": last - first, "latency": lat,
             "gaps": sub.stats.gaps, "rejected": sum(sub.stats.rejected.values())})


# --- one measurement ---------------------------------------------------------------------


def measure(path: str, topic: str, payload: dict, n: int, rate_hz: float,
            endpoints: Endpoints | None) -> dict:
    """Send ``n`` messages (as fast as possible when rate_hz == 0) and collect the report."""
    import zmq

    ctx = mp.get_context("fork")
    ready, out = ctx.Event(), ctx.Queue()
    latency = rate_hz > 0
    if path == "raw":
        port = free_port_block(1)
        endpoint = f"tcp://127.0.0.1:{port}"
        pub = zmq.Context.instance().socket(zmq.PUB)
        pub.sndhwm = RAW_HWM
        pub.bind(endpoint)
        proc = ctx.Process(target=raw_subscriber, args=(endpoint, topic, ready, out, latency))
    else:
        pub = Publisher("bench", endpoints)
        assert pub.wait_linked(5), "broker not reachable"
        proc = ctx.Process(target=bus_subscriber, args=(endpoints, topic, ready, out, latency))
    proc.start()
    ready.wait(10)
    topic_frame = topic.encode()
    warm = dict(payload, **({"cycle_id": "warmup"} if "cycle_id" in payload else
                            {"scan_id": "warmup"}))
    # Warm-up: until the subscriber is surely connected and subscribed.
    for _ in range(20):
        if path == "raw":
            pub.send_multipart([topic_frame, b"warmup"])
        else:
            pub.publish(topic, warm)
        time.sleep(0.025)
    time.sleep(0.3)
    seq = 0
    pre_encoded = encode(Envelope.now(topic, "bench", 0, payload))
    started = time.monotonic()
    if rate_hz <= 0:
        if path == "raw":
            send = pub.send_multipart
            frames = [topic_frame, pre_encoded]
            for _ in range(n):
                send(frames)
        else:
            publish = pub.publish
            for _ in range(n):
                publish(topic, payload)
    else:
        period = 1.0 / rate_hz
        next_send = time.monotonic()
        for seq in range(n):
            while time.monotonic() < next_send:  # spin: sleep() is too coarse for 1 ms
                pass
            if path == "raw":
                pub.send_multipart([topic_frame,
                                    encode(Envelope.now(topic, "bench", seq, payload))])
            else:
                pub.publish(topic, payload)
            next_send += period
    send_time = time.monotonic() - started
    report = out.get(timeout=120)
    proc.join(10)
    pub.close()
    report.update(sent=n, send_time=send_time)
    return report


def start_broker(base: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), ROBOCELL_BUS=base)
    proc = subprocess.Popen([sys.executable, "-m", "robocell", "broker", "--no-tap"], env=env,
                            stderr=subprocess.DEVNULL)
    return proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts")
    args = parser.parse_args()
    n_small = 30_000 if args.quick else 100_000
    n_image = 1_000 if args.quick else 3_000
    n_latency = 1_000 if args.quick else 3_000

    base = f"tcp://127.0.0.1:{free_port_block()}"
    endpoints = Endpoints.from_base(base)
    broker = start_broker(base)
    try:
        time.sleep(1.0)
        rows = []
        for label, topic, payload, n in (("small state msg", SMALL_TOPIC, SMALL_PAYLOAD,
                                          n_small),
                                         ("100 KB image msg", IMAGE_TOPIC, IMAGE_PAYLOAD,
                                          n_image)):
            for path in ("raw", "bus"):
                r = measure(path, topic, payload, n, 0, endpoints)
                rows.append((label, path, r))
                print(f"  measured throughput {label:<17} {path}: {r['count']}/{r['sent']} "
                      f"in {r['span']:.2f} s", file=sys.stderr)
        lat_rows = []
        for label, topic, payload in (("small state msg", SMALL_TOPIC, SMALL_PAYLOAD),
                                      ("100 KB image msg", IMAGE_TOPIC, IMAGE_PAYLOAD)):
            for path in ("raw", "bus"):
                r = measure(path, topic, payload, n_latency if "small" in label else
                            n_latency // 3, LATENCY_RATE_HZ if "small" in label else 100,
                            endpoints)
                lat_rows.append((label, path, r))
                print(f"  measured latency {label:<17} {path}", file=sys.stderr)
    finally:
        broker.terminate()
        broker.wait(5)

    print()
    print("Throughput (publisher sends as fast as it can; 2-core host, all processes local)")
    print(f"| {'message':<17} | {'path':<13} | {'sent':>7} | {'received':>8} | "
          f"{'msgs/s':>9} | {'MB/s':>7} | {'vs raw':>6} |")
    print(f"|{'-' * 19}|{'-' * 15}|{'-' * 9}|{'-' * 10}|{'-' * 11}|{'-' * 9}|{'-' * 8}|")
    raw_rate = {}
    for label, path, r in rows:
        rate = r["count"] / r["span"] if r["span"] > 0 else 0.0
        mbps = r["bytes"] / r["span"] / MB if r["span"] > 0 else 0.0
        if path == "raw":
            raw_rate[label] = rate
        ratio = f"{rate / raw_rate[label]:.0%}" if path == "bus" and raw_rate.get(label) else ""
        name = "raw pyzmq" if path == "raw" else "robocell bus"
        print(f"| {label:<17} | {name:<13} | {r['sent']:>7} | {r['count']:>8} | "
              f"{rate:>9,.0f} | {mbps:>7.1f} | {ratio:>6} |")
    print()
    print("Latency (publisher paced; receipt monotonic time minus envelope mono_time)")
    print(f"| {'message':<17} | {'rate':>7} | {'path':<13} | {'received':>8} | "
          f"{'p50 ms':>7} | {'p99 ms':>7} | {'max ms':>7} |")
    print(f"|{'-' * 19}|{'-' * 9}|{'-' * 15}|{'-' * 10}|{'-' * 9}|{'-' * 9}|{'-' * 9}|")
    for label, path, r in lat_rows:
        lat = np.array(r["latency"]) * 1000.0
        rate = f"{LATENCY_RATE_HZ if 'small' in label else 100}/s"
        name = "raw pyzmq" if path == "raw" else "robocell bus"
        if lat.size:
            p50, p99, worst = np.percentile(lat, 50), np.percentile(lat, 99), lat.max()
        else:
            p50 = p99 = worst = float("nan")
        print(f"| {label:<17} | {rate:>7} | {name:<13} | {r['count']:>8} | {p50:>7.3f} | "
              f"{p99:>7.3f} | {worst:>7.3f} |")
    small_bus = next(r for label, path, r in rows if path == "bus" and "small" in label)
    small_ratio = (small_bus["count"] / small_bus["span"]) / raw_rate["small state msg"]
    small_lat = next(r for label, path, r in lat_rows if path == "bus" and "small" in label)
    p99 = float(np.percentile(np.array(small_lat["latency"]) * 1000, 99))
    print()
    print(f"targets: small-message throughput >= 50% of raw: {small_ratio:.0%} "
          f"({'met' if small_ratio >= 0.5 else 'NOT met'}); p99 latency < 1 ms at "
          f"{LATENCY_RATE_HZ}/s: {p99:.3f} ms ({'met' if p99 < 1.0 else 'NOT met'})")


if __name__ == "__main__":
    main()
