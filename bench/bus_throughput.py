"""Bus throughput and latency through the broker, side by side with raw pyzmq PUB/SUB.

Run from the repository root::

    python bench/bus_throughput.py            # full run (about a minute)
    python bench/bus_throughput.py --quick    # smaller counts

Cases, each measured for both paths in the same run:

- **small state messages** (``cell.status``, ~100 bytes encoded) and **100 KB image messages**
  (``vision.face`` with a 100 KB JPEG field).
- **raw pyzmq**: one PUB socket bound, one SUB connected, the publisher sending a
  pre-encoded message frame (the same single frame the bus carries: topic, zero byte,
  envelope) in a tight loop, the subscriber only receiving -- with the same lean calls the
  bus uses (pyzmq's Cython ``send``/``recv`` called directly, plain int flags, large frames
  sent zero-copy) and the same high-water marks as the bus's publisher and subscriber
  sockets (``PUB_HWM``, ``SUB_HWM``), so that the baseline is not handicapped. The targets
  are measured against this one.
- **raw, zmq.Socket** (throughput only): the same through the public ``zmq.Socket`` methods,
  whose Python wrapper costs about 0.2 us a call, for comparison.
- **robocell bus**: a real ``robocell broker`` process in between; the publisher uses
  :class:`robocell.common.bus.Publisher` (validate, stamp, encode each message, count it per
  topic), the broker forwards in C (``zmq.proxy_steerable``) and keeps the latest value of
  the latched topic in libzmq (CONFLATE) while its budgeted check tap decodes and validates
  what it can, the subscriber uses :class:`robocell.common.bus.Subscriber` (decode, validate,
  sequence check, an Envelope per message; ``recv_batch`` takes what is queued in one call,
  as a Node does).

Throughput: the publisher sends N messages as fast as it can; the subscriber (another
process) reports how many arrived and when the last one did; messages/s = messages
delivered / the window from the first send to the last receipt -- the same window for every
path (one monotonic clock on one host). Losses (ZeroMQ drops at a high-water mark) are
shown, not hidden: a path that drops is credited only with what it delivered.
CPU time per message of each process (``time.process_time`` and ``/proc``) is printed too: it
does not depend on what else the host runs, unlike the rates. Each cell is the median of
several interleaved runs. Latency: the publisher sends at a fixed rate (1,000 messages/s);
latency = the subscriber's ``time.monotonic()`` at receipt minus the envelope's
``mono_time`` (one clock on one host).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from robocell.common.bus import PUB_HWM, SUB_HWM, Endpoints, Publisher, Subscriber
from robocell.common.bus.endpoints import COPY_THRESHOLD
from robocell.common.bus.wire import Envelope, decode_frame, encode_frame, subscription
from robocell.common.config import free_port_block

REPO = Path(__file__).resolve().parents[1]

SMALL_TOPIC = "cell.status"
SMALL_PAYLOAD = {"cycle_id": "cycle-000123", "stage": "executing",
                 "detail": "step 12 of 31: R2 (regrip first)"}
IMAGE_TOPIC = "vision.face"
IMAGE_BYTES = 100 * 1024
IMAGE_PAYLOAD = {"scan_id": "scan-000123", "pose": 2, "face": "F", "size": 3,
                 "jpeg": os.urandom(IMAGE_BYTES), "grid": [[10.0, 20.0]] * 9,
                 "colors": [[200, 30, 40]] * 9, "confidence": [0.97] * 9, "ok": True}
LATENCY_RATE_HZ = 1000
IMAGE_LATENCY_RATE_HZ = 100
IDLE_END_S = 1.5  # the subscriber stops after this long without a message
SPIN_S = 0.0003  # the publisher busy-waits only this close to a send time
MB = 1e6
WARMUP = b"warmup"  # the raw path's warm-up frame ends so; the bus's are real messages




# --- subscriber processes ------------------------------------------------------------------


def raw_subscriber(endpoint: str, topic: str, ready: mp.Event, out: mp.Queue,
                   latency: bool, public_api: bool = False) -> None:
    import zmq

    sock = zmq.Context.instance().socket(zmq.SUB)
    sock.rcvhwm = SUB_HWM  # as the bus's Subscriber
    sock.rcvtimeo = int(IDLE_END_S * 1000)
    sock.subscribe(subscription(topic))
    sock.connect(endpoint)
    ready.set()
    cpu_start = time.process_time()
    count, nbytes, last, lat = 0, 0, 0.0, []
    # pyzmq's Cython method, without the Python wrapper of zmq.Socket: as the bus does
    # (public_api: zmq.Socket.recv itself, for comparison).
    recv = zmq.Socket.recv if public_api else zmq.backend.Socket.recv
    while True:  # the leanest loop: blocking receive of the one frame, no decoding
        try:
            data = recv(sock, 0)  # a copy into a bytes object: as the bus does
        except zmq.Again:
            break
        now = time.monotonic()
        if data.endswith(WARMUP):
            continue
        if latency:
            lat.append(now - decode_frame(data).mono_time)
        last = now
        count += 1
        nbytes += len(data)
    out.put({"count": count, "bytes": nbytes, "last": last, "latency": lat, "gaps": 0,
             "sub_cpu": time.process_time() - cpu_start})


def bus_subscriber(endpoints: Endpoints, topic: str, ready: mp.Event, out: mp.Queue,
                   latency: bool, start: Any) -> None:
    """``start.value``: the publisher's monotonic time when the measured messages began
    (infinite until then): earlier ones (the warm-up, the latched value of an earlier run
    replayed by the broker) are not counted. One clock for all processes of the host."""
    sub = Subscriber([topic], endpoints)
    topic_bytes = len(subscription(topic))  # topic and the zero byte before the envelope
    ready.set()
    cpu_start = time.process_time()
    count, nbytes, last, lat = 0, 0, 0.0, []
    while True:
        batch = sub.recv_batch(IDLE_END_S)  # what is queued, in one call (see its docs)
        if not batch:
            break
        now = time.monotonic()
        started = start.value
        for env in batch:
            if env.mono_time < started:
                continue
            if latency:
                lat.append(now - env.mono_time)
            last = now
            count += 1
            nbytes += env.size + topic_bytes  # the whole frame, as the raw path counts
    out.put({"count": count, "bytes": nbytes, "last": last, "latency": lat,
             "gaps": sub.stats.gaps, "rejected": sum(sub.stats.rejected.values()),
             "sub_cpu": time.process_time() - cpu_start})


# --- one measurement ---------------------------------------------------------------------


def measure(path: str, topic: str, payload: dict, n: int, rate_hz: float,
            endpoints: Endpoints | None, broker_pid: int = 0) -> dict:
    """Send ``n`` messages (as fast as possible when rate_hz == 0) and collect the report."""
    import zmq

    ctx = mp.get_context("fork")
    ready, out = ctx.Event(), ctx.Queue()
    start = ctx.Value("d", math.inf)  # (bus path) when the measured messages begin
    latency = rate_hz > 0
    raw = path.startswith("raw")
    if raw:
        port = free_port_block(1)
        endpoint = f"tcp://127.0.0.1:{port}"
        pub = zmq.Context.instance().socket(zmq.PUB)
        pub.sndhwm = PUB_HWM  # as the bus's Publisher
        pub.bind(endpoint)
        proc = ctx.Process(target=raw_subscriber, args=(endpoint, topic, ready, out, latency,
                                                        path == "raw-api"))
    else:
        pub = Publisher("bench", endpoints)
        assert pub.wait_linked(5), "broker not reachable"
        proc = ctx.Process(target=bus_subscriber,
                           args=(endpoints, topic, ready, out, latency, start))
    proc.start()
    ready.wait(10)
    topic_frame = subscription(topic)  # topic and the zero byte
    warm = dict(payload, **({"cycle_id": "warmup"} if "cycle_id" in payload else
                            {"scan_id": "warmup"}))
    # Warm-up: until the subscriber is surely connected and subscribed.
    for _ in range(20):
        if raw:
            pub.send(topic_frame + WARMUP)
        else:
            pub.publish(topic, warm)
        time.sleep(0.025)
    time.sleep(0.3)
    seq = 0
    pre_encoded = encode_frame(Envelope.now(topic, "bench", 0, payload))
    broker_cpu_start = process_cpu(broker_pid) if not raw else 0.0
    pub_cpu_start = time.process_time()
    started = time.monotonic()
    start.value = started
    if rate_hz <= 0:
        if raw:  # the fastest pyzmq send, as the bus's: the Cython method itself, plain
            # int flags (raw-api: zmq.Socket.send, the public wrapper, for comparison)
            send = zmq.Socket.send if path == "raw-api" else zmq.backend.Socket.send
            copy = len(pre_encoded) < COPY_THRESHOLD
            for _ in range(n):
                send(pub, pre_encoded, 0, copy)
        else:
            publish = pub.publish
            for _ in range(n):
                publish(topic, payload)
    else:
        period = 1.0 / rate_hz
        next_send = time.monotonic()
        for seq in range(n):
            wait = next_send - time.monotonic()
            if wait > SPIN_S:
                time.sleep(wait - SPIN_S)  # sleep most of the gap, spin only the last bit
            while time.monotonic() < next_send:
                pass
            if raw:
                data = encode_frame(Envelope.now(topic, "bench", seq, payload))
                pub.send(data, copy=len(data) < COPY_THRESHOLD)
            else:
                pub.publish(topic, payload)
            next_send += period
    send_time = time.monotonic() - started
    pub_cpu = time.process_time() - pub_cpu_start
    report = out.get(timeout=120)
    proc.join(10)
    pub.close()
    broker_cpu = process_cpu(broker_pid) - broker_cpu_start if not raw else 0.0
    report.update(sent=n, send_time=send_time, pub_cpu=pub_cpu, broker_cpu=broker_cpu,
                  window=report["last"] - started if report["count"] else 0.0)
    return report


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_broker(base: str, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), ROBOCELL_BUS=base)
    proc = subprocess.Popen([sys.executable, "-m", "robocell", "broker", "--no-tap", *extra],
                            env=env, stderr=subprocess.DEVNULL)
    return proc


CASES = (("small state msg", SMALL_TOPIC, SMALL_PAYLOAD),
         ("100 KB image msg", IMAGE_TOPIC, IMAGE_PAYLOAD))
PATHS = ("raw", "raw-api", "bus")
PATH_NAMES = {"raw": "raw pyzmq", "raw-api": "raw, zmq.Socket", "bus": "robocell bus"}
LATENCY_PATHS = ("raw", "bus")


def median_run(runs: list[dict], key) -> dict:
    """The run whose ``key`` is the median of all runs."""
    ordered = sorted(runs, key=key)
    return ordered[len(ordered) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts, 3 repeats")
    parser.add_argument("--repeats", type=int, default=0,
                        help="runs per cell, the median is shown (default 5, quick 3)")
    parser.add_argument("--broker-no-check", action="store_true",
                        help="start the broker with --no-check (what its check tap costs)")
    args = parser.parse_args()
    n_small = 30_000 if args.quick else 100_000
    n_image = 1_000 if args.quick else 3_000
    n_latency = 1_000 if args.quick else 3_000
    repeats = args.repeats or (3 if args.quick else 5)
    load = os.getloadavg()[0]

    base = f"tcp://127.0.0.1:{free_port_block(4)}"
    endpoints = Endpoints.from_base(base)
    broker = start_broker(base, *(("--no-check",) if args.broker_no_check else ()))
    brokers = {path: (broker, endpoints) for path in PATHS}
    throughput: dict[tuple[str, str], list[dict]] = {}
    latency: dict[tuple[str, str], list[dict]] = {}
    try:
        time.sleep(1.0)
        for rep in range(repeats):  # interleaved, so that load changes hit both paths alike
            for label, topic, payload in CASES:
                n = n_small if "small" in label else n_image
                for path in PATHS:
                    proc, eps = brokers[path]
                    r = measure(path, topic, payload, n, 0, eps, proc.pid)
                    r["rate"] = r["count"] / r["window"] if r["window"] > 0 else 0.0
                    throughput.setdefault((label, path), []).append(r)
                for path in LATENCY_PATHS:
                    rate = LATENCY_RATE_HZ if "small" in label else IMAGE_LATENCY_RATE_HZ
                    count = n_latency if "small" in label else n_latency // 3
                    r = measure(path, topic, payload, count, rate, endpoints, broker.pid)
                    lat = np.array(r["latency"]) * 1000.0
                    r["p50"], r["p99"], r["max"] = (
                        (np.percentile(lat, 50), np.percentile(lat, 99), lat.max())
                        if lat.size else (float("nan"),) * 3)
                    latency.setdefault((label, path), []).append(r)
            print(f"  run {rep + 1}/{repeats} done", file=sys.stderr)
    finally:
        for proc, _ in brokers.values():
            if proc.poll() is None:
                proc.terminate()
                proc.wait(5)

    load_end = os.getloadavg()[0]
    print()
    print(f"Bus benchmark: median of {repeats} interleaved runs per cell; 2-core host shared "
          f"with other work (1-minute load average {load:.1f} at start, {load_end:.1f} at "
          "the end); all processes on loopback"
          + ("; broker started with --no-check." if args.broker_no_check else "."))
    print()
    print("Throughput (publisher sends N messages as fast as it can; msgs/s = received / time "
          "from the first send to the last receipt, the same window on every path)")
    print(f"| {'message':<17} | {'path':<15} | {'sent':>7} | {'received':>8} | "
          f"{'msgs/s':>9} | {'MB/s':>7} | {'vs raw':>6} | {'msgs/s min-max':>17} |")
    print(f"|{'-' * 19}|{'-' * 17}|{'-' * 9}|{'-' * 10}|{'-' * 11}|{'-' * 9}|{'-' * 8}|"
          f"{'-' * 19}|")
    medians: dict[tuple[str, str], dict] = {}
    for label, _, _ in CASES:
        for path in PATHS:
            runs = throughput[(label, path)]
            r = medians[(label, path)] = median_run(runs, lambda x: x["rate"])
            mbps = r["bytes"] / r["window"] / MB if r["window"] > 0 else 0.0
            raw = medians[(label, "raw")]["rate"]
            ratio = f"{r['rate'] / raw:.0%}" if path != "raw" and raw else ""
            spread = f"{min(x['rate'] for x in runs):,.0f}-{max(x['rate'] for x in runs):,.0f}"
            print(f"| {label:<17} | {PATH_NAMES[path]:<15} | {r['sent']:>7} | "
                  f"{r['count']:>8} | {r['rate']:>9,.0f} | {mbps:>7.1f} | {ratio:>6} | "
                  f"{spread:>17} |")
    print()
    print("CPU time per message in the throughput runs (median run; independent of load)")
    print(f"| {'message':<17} | {'path':<15} | {'publisher us':>12} | {'broker us':>9} | "
          f"{'subscriber us':>13} | {'total us':>8} |")
    print(f"|{'-' * 19}|{'-' * 17}|{'-' * 14}|{'-' * 11}|{'-' * 15}|{'-' * 10}|")
    for label, _, _ in CASES:
        for path in PATHS:
            r = medians[(label, path)]
            us = [r["pub_cpu"] / r["sent"] * 1e6, r["broker_cpu"] / r["sent"] * 1e6,
                  r["sub_cpu"] / max(r["count"], 1) * 1e6]
            broker_cell = f"{us[1]:>9.1f}" if path == "bus" else f"{'-':>9}"
            print(f"| {label:<17} | {PATH_NAMES[path]:<15} | {us[0]:>12.1f} | {broker_cell} | "
                  f"{us[2]:>13.1f} | {sum(us):>8.1f} |")
    print()
    print("Latency (publisher paced; receipt time minus the envelope's mono_time, one clock)")
    print(f"| {'message':<17} | {'rate':>7} | {'path':<15} | {'received':>8} | "
          f"{'p50 ms':>7} | {'p99 ms':>7} | {'max ms':>7} | {'p99 min-max':>13} |")
    print(f"|{'-' * 19}|{'-' * 9}|{'-' * 17}|{'-' * 10}|{'-' * 9}|{'-' * 9}|{'-' * 9}|"
          f"{'-' * 15}|")
    for label, _, _ in CASES:
        rate = LATENCY_RATE_HZ if "small" in label else IMAGE_LATENCY_RATE_HZ
        for path in LATENCY_PATHS:
            runs = latency[(label, path)]
            r = median_run(runs, lambda x: x["p99"])
            spread = f"{min(x['p99'] for x in runs):.3f}-{max(x['p99'] for x in runs):.3f}"
            print(f"| {label:<17} | {f'{rate}/s':>7} | {PATH_NAMES[path]:<15} | "
                  f"{r['count']:>8} | {r['p50']:>7.3f} | {r['p99']:>7.3f} | {r['max']:>7.3f} | "
                  f"{spread:>13} |")
    small_bus = medians[("small state msg", "bus")]["rate"]
    small_ratio = small_bus / medians[("small state msg", "raw")]["rate"]
    api_ratio = small_bus / medians[("small state msg", "raw-api")]["rate"]
    p99 = median_run(latency[("small state msg", "bus")], lambda x: x["p99"])["p99"]
    print()
    print(f"targets: small-message throughput >= 50% of raw: {small_ratio:.0%} "
          f"({'met' if small_ratio >= 0.5 else 'NOT met'}; {api_ratio:.0%} of raw through the "
          f"zmq.Socket wrapper); p99 latency < 1 ms at {LATENCY_RATE_HZ}/s: {p99:.3f} ms "
          f"({'met' if p99 < 1.0 else 'NOT met'})")


if __name__ == "__main__":
    main()
