"""Actuator timing figures against a real firmware-sim process over pyserial socket://:
e-stop latency (host write -> motors stopped, simulated ms) and the idle time of the motors
between consecutive commands and primitives while a plan streams (simulated ms).

Targets (issue): e-stop within 50 ms; idle between primitives below 5 ms.
Run: PYTHONPATH=. python bench/actuator_timing.py [--trials N] [--speed S]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from robocell.common.profile import load_profile
from robocell.services.actuator.executor import Compiler, Execution
from robocell.services.actuator.link import Link
from robocell.services.firmware.simulator import motion_gaps

ESTOP_TARGET_MS = 50.0
IDLE_TARGET_MS = 5.0


def start_sim(log: Path, speed: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "robocell", "firmware-sim", "--port", "0",
                             "--speed", str(speed), "--log", str(log)],
                            stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().split()[1]


def bus_estop_latencies(trials: int, speed: float, tmp: Path) -> list[float]:
    """E-stop through the whole cell path: bus command -> broker -> actuator service -> serial
    byte -> firmware, until the motors stand still (simulated ms)."""
    import os
    import socket

    from robocell.common.bus import Endpoints, Node

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        base_port = probe.getsockname()[1]
    base = f"tcp://127.0.0.1:{base_port}"
    env = dict(os.environ, ROBOCELL_BUS=base)
    robocell = [sys.executable, "-m", "robocell"]
    procs = [subprocess.Popen([*robocell, "broker"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    latencies = []
    try:
        from robocell.common.bus import Subscriber

        stats = Subscriber(["bus.stats"], Endpoints.from_base(base))
        if stats.recv(15.0) is None:
            raise SystemExit(f"the broker at {base} did not start")
        stats.close()
        for trial in range(trials):
            # a fresh observer per trial: a restarted actuator repeats the previous one's
            # sequence numbers, which a long-lived subscriber would take for duplicates
            events: list[dict] = []
            with Node(f"bench-estop-{trial}", Endpoints.from_base(base)) as node:
                node.subscribe("errors", lambda env, ev=events: ev.append(env.payload))
                sim = subprocess.Popen([*robocell, "firmware-sim", "--port", "0", "--speed",
                                        str(speed), "--log", str(tmp / f"bus{trial}.jsonl")],
                                       env=env, stdout=subprocess.PIPE, text=True)
                url = sim.stdout.readline().split()[1]
                act = subprocess.Popen([*robocell, "actuator", "--serial", url], env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    deadline = time.monotonic() + 20

                    def ready(pid: int = act.pid) -> bool:
                        peer = node.peers().get("actuator")
                        return bool(peer and peer.alive and peer.pid == pid
                                    and peer.state == "ready")

                    while not ready() and time.monotonic() < deadline:
                        time.sleep(0.05)
                    time.sleep(0.3)
                    plan_id = f"bench-{trial}"
                    node.call("actuator", "execute", {"plan": {
                        "plan_id": plan_id, "puzzle": "2x2x2", "profile": "soltvvo-2x2",
                        "facelets": "", "primitives": ["R2", "B2"] * 10, "face_turns": [],
                        "predicted_ms": 0.0, "search": {}}}, timeout=5)
                    time.sleep(random.uniform(0.2, 0.6) / speed)
                    commanded = time.time()
                    node.call("actuator", "estop", {}, timeout=2)
                    deadline = time.monotonic() + 5
                    stop = None
                    while stop is None and time.monotonic() < deadline:
                        stop = next((e["detail"] for e in events if e["code"] == "estop"), None)
                        time.sleep(0.01)
                    if stop is None:
                        raise SystemExit(f"no e-stop report on the bus: {events}")
                    events.clear()
                    latencies.append((stop["rx_wall"] - commanded) * 1000.0 * speed
                                     + stop["stopped_ms"] - stop["received_ms"])
                finally:
                    for proc in (act, sim):
                        proc.terminate()
                        proc.wait(5)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(5)
    return latencies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10, help="e-stops to measure")
    parser.add_argument("--speed", type=float, default=1.0,
                        help="simulator speed (1 = real time, the honest setting)")
    parser.add_argument("--plans", type=int, default=5, help="random plans for the idle figure")
    args = parser.parse_args()
    profile = load_profile("soltvvo-2x2")
    compiler = Compiler(profile)
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        latencies, after_rx = [], []
        for trial in range(args.trials):
            # a fresh simulator per e-stop: a stop mid-turn leaves arms off square (the twin
            # would jam on the next grip until the robot is homed)
            proc, url = start_sim(Path(tmp) / f"estop{trial}.jsonl", args.speed)
            try:
                link = Link(url)
                link.open()
                job = compiler.plan(["R2", "B2"] * 10)
                execution = Execution(job)
                out = []
                worker = threading.Thread(target=lambda j=job, e=execution, k=link, o=out: o.append(
                    k.stream(j.texts, e.line_done, pause_points=j.pause_points)))
                worker.start()
                time.sleep(rng.uniform(0.2, 0.6) / args.speed)
                link.estop()
                worker.join(10)
                if not out or out[0].estop is None:
                    raise SystemExit(f"e-stop trial ended without an e-stop report: {out}")
                report = out[0].estop
                transport = (report.rx_wall - report.sent_wall) * 1000.0 * args.speed
                latencies.append(transport + report.stop_after_receipt_ms)
                after_rx.append(report.stop_after_receipt_ms)
                link.close()
            finally:
                proc.terminate()
                proc.wait(5)
        log = Path(tmp) / "fw.jsonl"
        proc, url = start_sim(log, args.speed)
        try:
            link = Link(url)
            link.open()
            gaps, prim_gaps = [], []
            for _ in range(args.plans):
                prims, last = [], None
                for _ in range(20):
                    p = rng.choice([q for q in profile.primitives if q.group != last])
                    prims.append(p.name)
                    last = p.group
                first_line = link.next_line
                job = compiler.plan(prims)
                execution = Execution(job)
                link.stream(job.texts, execution.line_done)
                entries = [json.loads(x) for x in log.read_text().splitlines()]
                run = [e for e in entries if e["ev"] == "exec" and e["line"] >= first_line]
                motion, boundary = motion_gaps(run)
                gaps += motion
                prim_gaps += boundary
            link.close()
        finally:
            proc.terminate()
            proc.wait(5)
        bus_latencies = bus_estop_latencies(max(3, args.trials // 2), args.speed, Path(tmp))
    print(f"actuator timing, soltvvo-2x2, firmware-sim --speed {args.speed:g}, pyserial socket://")
    print(f"{'figure':44} {'mean':>8} {'p50':>8} {'max':>8} {'target':>8}")
    rows = [
        ("e-stop: host write -> motors stopped [ms]", latencies, ESTOP_TARGET_MS),
        ("e-stop: byte received -> stopped [ms]", after_rx, ESTOP_TARGET_MS),
        ("e-stop: bus command -> stopped [ms]", bus_latencies, ESTOP_TARGET_MS),
        ("motor idle between motions [ms]", gaps, IDLE_TARGET_MS),
        ("motor idle between primitives [ms]", prim_gaps, IDLE_TARGET_MS),
    ]
    for name, values, target in rows:
        print(f"{name:44} {statistics.mean(values):8.3f} {percentile(values, 0.5):8.3f} "
              f"{max(values):8.3f} {'<= ' + format(target, 'g'):>8}")
    print(f"samples: {len(latencies)} + {len(bus_latencies)} e-stops, {len(gaps)} motion gaps, "
          f"{len(prim_gaps)} primitive boundaries")


if __name__ == "__main__":
    main()
