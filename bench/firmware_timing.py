"""Timing of the real AVR firmware, read from the simavr pin trace (simulated time at the
board's 16 MHz clock): step timing against the planned trapezoid, the time from the e-stop
byte's arrival to the first braking step, the motors' idle gap between queued motions, and
line throughput at 115200 baud.

Targets (issue 23): step jitter under 20 us; deceleration within 1 ms of the e-stop byte;
idle gap between queued motions under 5 ms.
Run: PYTHONPATH=. python bench/firmware_timing.py [--profile P] [--motions N]
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import serial

from robocell.common.profile import load_profile
from robocell.robot import protocol as proto
from robocell.robot.motion import Motor, load_motors

JITTER_TARGET_US = 20.0
ESTOP_TARGET_MS = 1.0
IDLE_TARGET_MS = 5.0
BAUD = 115_200


def planned_steps_s(motor: Motor, n: int) -> list[float]:
    """Planned time of steps 1..n of an n-step move from standstill (the firmware's model)."""
    a = motor.accel_dps2 * motor.steps_per_rev / 360.0
    v = motor.speed_dps * motor.steps_per_rev / 360.0
    ramp = v * v / (2.0 * a)
    if n >= 2 * ramp:
        total = n / v + v / a
        return [math.sqrt(2 * k / a) if k <= ramp else
                total - math.sqrt(2 * (n - k) / a) if k >= n - ramp else k / v + v / (2 * a)
                for k in range(1, n + 1)]
    total = 2 * math.sqrt(n / a)
    return [math.sqrt(2 * k / a) if k <= n / 2 else total - math.sqrt(2 * (n - k) / a)
            for k in range(1, n + 1)]


class Firmware:
    """`robocell firmware-sim --avr --no-twin --trace` and a raw line to it."""

    def __init__(self, profile: str, trace: Path) -> None:
        self.trace = trace
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "robocell", "firmware-sim", "--avr", "--no-twin",
             "--profile", profile, "--port", "0", "--speed", "1000", "--trace", str(trace)],
            stdout=subprocess.PIPE, text=True)
        self.port = serial.serial_for_url(self.proc.stdout.readline().split()[1], timeout=0.01)
        self.buffer = b""
        self.line = 0

    def send(self, verb: str, *args: str) -> int:
        self.line += 1
        self.port.write(proto.Command(self.line, verb, args).encode())
        return self.line

    def wait(self, prefix: str, timeout: float = 120.0) -> proto.Report:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.buffer += self.port.read(4096)
            while b"\n" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\n", 1)
                report = proto.parse_report(proto.unframe(raw))
                if f"{report.kind} {report.text()}".startswith(prefix):
                    return report
        raise TimeoutError(prefix)

    def events(self) -> list[tuple[float, str, list[str]]]:
        time.sleep(0.3)  # the harness flushes its trace while it waits for real time
        rows = []
        text = self.trace.read_text()
        for row in text[:text.rfind("\n") + 1].splitlines():  # whole rows only
            t, kind, *rest = row.split(" ", 2)
            rows.append((int(t) / 1e9, kind, rest[0].split() if rest else []))
        return rows

    def now(self) -> float:
        """The simulated time of the last traced event (0 before any)."""
        events = self.events()
        return events[-1][0] if events else 0.0

    def close(self) -> None:
        self.port.close()
        self.proc.terminate()
        self.proc.wait(10)


def steps_of(events: list, motor: int, after: float = 0.0, before: float = 1e9) -> list[float]:
    return [t for t, kind, rest in events if kind == "S" and int(rest[0]) == motor
            and after <= t < before]


def jitter(fw: Firmware, motor: Motor, index: int, n: int) -> list[float]:
    """|actual - planned| of every step of one move (us), the plan placed by least squares."""
    start = fw.now()
    fw.wait(f"done {fw.send('MOVE', f'{motor.name}:{n}')}")
    actual = steps_of(fw.events(), index, after=start)
    plan = planned_steps_s(motor, n)
    assert len(actual) == n, (len(actual), n)
    offset = statistics.fmean(a - p for a, p in zip(actual, plan, strict=True))
    return [abs(a - p - offset) * 1e6 for a, p in zip(actual, plan, strict=True)]


def estop_reaction(fw: Firmware, motor: Motor, index: int) -> tuple[float, float]:
    """(ms from the e-stop byte's arrival to the first step slower than the one before,
    ms until the last step) during a long move at top speed."""
    n = motor.steps_per_rev * 100  # long enough to be at top speed whenever the byte comes
    line = fw.send("MOVE", f"{motor.name}:{n}")
    fw.wait(f"ok {line}")
    time.sleep(0.5)
    fw.port.write(proto.ESTOP_BYTE)
    fw.wait("estop")
    time.sleep(0.3)  # braking done; a status line makes the harness write out its trace
    fw.port.write(proto.STATUS_BYTE)
    fw.wait("status")
    events = fw.events()
    rx = [t for t, kind, rest in events if kind == "R" and rest[0] == "85"][-1]
    steps = steps_of(events, index, after=rx - 0.05)
    before = [t for t in steps if t < rx]
    if len(before) < 2:
        raise RuntimeError(f"the move was not under way at the e-stop ({len(steps)} steps "
                           f"near it); the simulation ran slower than expected")
    after = [t for t in steps if t >= rx]
    cruise = before[-1] - before[-2]
    first_slow, previous = after[-1], before[-1]
    for t in after:
        if t - previous > cruise * 1.02:
            first_slow = t
            break
        previous = t
    fw.port.write(proto.frame("CLEAR"))
    fw.line = fw.line - 1  # the e-stop discarded the move: its number is free again
    fw.wait("status")
    return (first_slow - rx) * 1e3, (after[-1] - rx) * 1e3


def idle_gaps(fw: Firmware, motors: list[tuple[int, Motor]], count: int) -> list[float]:
    """Motors idle between queued moves (ms): next move's start (its first step less the
    planned delay of a first step) minus the previous move's last step."""
    start = fw.now()
    plan = []
    first = fw.line + 1
    for k in range(count):
        index, motor = motors[k % len(motors)]
        n = motor.steps_per_rev // 4
        plan.append((index, motor, n))
        if k >= 8:  # the queue holds 8: keep it full, as the host does
            fw.wait(f"done {first + k - 8}")
        line = fw.send("MOVE", f"{motor.name}:{n if k % 2 else -n}")
    fw.wait(f"done {line}")
    events = fw.events()
    gaps, previous_end = [], None
    cursor = start
    for index, motor, n in plan:
        steps = steps_of(events, index, after=cursor + 1e-9)[:n]
        first_delay = planned_steps_s(motor, n)[0]
        if previous_end is not None:
            gaps.append((steps[0] - first_delay - previous_end) * 1e3)
        previous_end = cursor = steps[-1]
    return gaps


def throughput(fw: Firmware, bursts: int, size: int = 8) -> tuple[float, float, int]:
    """MARK lines in bursts of ``size`` (the queue's length, so flow control holds): the
    simulated time from a burst's first byte arriving to its last ``done``, summed, leaves
    out the host's own delays. (lines per second, reply bytes per second, lines busy)."""
    span = out_bytes = 0.0
    busy = 0
    for _ in range(bursts):
        first = fw.line + 1
        burst = b"".join(proto.Command(first + k, "MARK", ("t",)).encode() for k in range(size))
        fw.line += size
        before = len([1 for _, kind, _ in fw.events() if kind == "R"])
        fw.port.write(burst)
        fw.wait(f"done {first + size - 1}")
        events = fw.events()
        arrivals = [t for t, kind, _ in events if kind == "R"]
        sent = [(t, rest) for t, kind, rest in events if kind == "T" and len(rest) > 1
                and rest[1].isdigit() and first <= int(rest[1]) < first + size]
        span += sent[-1][0] - arrivals[before]
        busy += sum(1 for _, rest in sent if rest[0] == "busy")
        out_bytes += sum(len(" ".join(rest)) + 1 for _, rest in sent)
    return bursts * size / span, out_bytes / span, busy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="soltvvo-2x2")
    parser.add_argument("--motions", type=int, default=12, help="queued moves for the gaps")
    args = parser.parse_args()
    profile = load_profile(args.profile)
    steppers = [(i, m) for i, m in enumerate(m for m in load_motors(profile).values()
                                             if m.kind == "stepper")]
    with tempfile.TemporaryDirectory() as tmp:
        fw = Firmware(args.profile, Path(tmp) / "trace.txt")
        try:
            index, motor = steppers[0]
            errors = jitter(fw, motor, index, motor.steps_per_rev // 4) + \
                jitter(fw, motor, index, motor.steps_per_rev * 2)
            brake_ms, stop_ms = estop_reaction(fw, motor, index)
            gaps = idle_gaps(fw, steppers, args.motions)
            lines_s, bytes_s, busy = throughput(fw, 25)
        finally:
            fw.close()
    print(f"AVR firmware timing ({args.profile}, ATmega2560 at 16 MHz in simavr, simulated time)")
    print(f"  step timing vs planned trapezoid: max {max(errors):.1f} us, "
          f"mean {statistics.fmean(errors):.1f} us over {len(errors)} steps  "
          f"(target < {JITTER_TARGET_US:g} us)")
    print(f"  e-stop byte -> first braking step: {brake_ms:.3f} ms  (target < "
          f"{ESTOP_TARGET_MS:g} ms); standstill after {stop_ms:.1f} ms")
    print(f"  idle between queued moves: max {max(gaps):.3f} ms, mean "
          f"{statistics.fmean(gaps):.3f} ms over {len(gaps)} gaps  "
          f"(target < {IDLE_TARGET_MS:g} ms)")
    print(f"  line throughput: {lines_s:.0f} lines/s (25 bursts of 8 MARK lines, each "
          f"answered ok + done, {busy} busy); replies {bytes_s:.0f} B/s of the line's "
          f"{BAUD // 10} B/s at {BAUD} baud")
    return 0


if __name__ == "__main__":
    sys.exit(main())
