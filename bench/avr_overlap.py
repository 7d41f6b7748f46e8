"""Corner cutting on the compiled AVR firmware in simavr, against the host's motion model.

The same perpendicular sequence (R, U, F2 with MARK lines between, as the actuator streams
a plan) runs on `robocell firmware-sim --avr` twice: back to back, then with ``ov=<steps>``
on each move after the first (the firmware's planner queue starts it in the tail of the one
before). From the ``done start= end=`` reports (the board's own clock, µs) it prints, per
cut, how long before the previous move's end the next one started, beside the model's
``time_left_ms`` of those steps, and the sequence's motion time both ways beside the model's
saving. Then an axial pair (R then L, ``ov=`` written anyway) to show it is not overlapped.

    python bench/avr_overlap.py [--profile six-motor] [--ov 44] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import serial

from robocell.common.profile import load_profile
from robocell.robot import protocol as proto
from robocell.robot.motion import load_motors


def start_avr(profile: str) -> tuple[subprocess.Popen, serial.Serial]:
    process = subprocess.Popen(
        [sys.executable, "-m", "robocell", "firmware-sim", "--avr", "--no-twin", "--profile",
         profile, "--port", "0", "--speed", "1"], stdout=subprocess.PIPE, text=True,
        env=dict(os.environ), cwd=Path(__file__).resolve().parents[1])
    line = process.stdout.readline()
    if not line.startswith("listening"):
        process.kill()
        raise SystemExit(f"firmware-sim --avr did not start: {line!r}")
    return process, serial.serial_for_url(line.split()[1], timeout=0.05)


def run(port: serial.Serial, texts: list[str], first: int) -> dict[int, tuple[int, int]]:
    """Send numbered lines, wait for the last done: each line's (start, end) in µs."""
    for n, text in enumerate(texts, first):
        port.write(proto.frame(f"N{n} {text}"))
    last, spans, buffer = first + len(texts) - 1, {}, b""
    deadline = time.monotonic() + 60.0
    while last not in spans and time.monotonic() < deadline:
        buffer += port.read(4096)
        while b"\n" in buffer:
            raw, buffer = buffer.split(b"\n", 1)
            report = proto.parse_report(proto.unframe(raw))
            if report.kind == "done":
                spans[report.line] = proto.motion_span(report)
            elif report.kind in ("err", "fault", "busy", "rs"):
                raise SystemExit(f"the firmware said {report.kind} {report.text()}")
    if last not in spans:
        raise SystemExit(f"no done {last} within 60 s")
    return spans


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="six-motor")
    parser.add_argument("--ov", type=int, default=44, help="ov= steps (default 44)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    motors = load_motors(load_profile(args.profile))
    r, u, f, left = (motors[name] for name in ("R", "U", "F", "L"))
    quarter, half = r.steps(90), f.steps(180)
    cut_model = r.time_left_ms(90.0, r.degrees(args.ov))
    plain = [f"MOVE R:{quarter}", "MARK step=1", f"MOVE U:{u.steps(90)}", "MARK step=2",
             f"MOVE F:{half}"]
    cut = [plain[0], plain[1], f"{plain[2]} ov={args.ov}", plain[3], f"{plain[4]} ov={args.ov}"]
    process, port = start_avr(args.profile)
    cuts, plain_ms, cut_ms, axial = [], [], [], []
    try:
        port.write(proto.frame("HELLO"))
        line = 1
        for _ in range(args.rounds):
            a = run(port, plain, line)
            b = run(port, cut, line + 5)
            plain_ms.append(sum(a[n][1] - a[n][0] for n in (line, line + 2, line + 4)) / 1000)
            cut_ms.append((b[line + 9][1] - b[line + 5][0]) / 1000)
            cuts += [(b[before][1] - b[after][0]) / 1000
                     for before, after in ((line + 5, line + 7), (line + 7, line + 9))]
            c = run(port, [f"MOVE R:{quarter}", f"MOVE L:{left.steps(90)} ov={args.ov}"],
                    line + 10)
            axial.append((c[line + 11][0] - c[line + 10][1]) / 1000)
            line += 12
    finally:
        port.close()
        process.terminate()
        process.wait(10)
    saving = statistics.fmean(plain_ms) - statistics.fmean(cut_ms)
    print(f"# python bench/avr_overlap.py --profile {args.profile} --ov {args.ov} "
          f"--rounds {args.rounds}")
    print(f"{args.profile}: ov={args.ov} steps = {r.degrees(args.ov):g} degrees; "
          f"{args.rounds} rounds; the board's clock (simavr, 16 MHz)")
    print(f"next move started before the previous one's end: mean {statistics.fmean(cuts):.2f} "
          f"ms (min {min(cuts):.2f}, max {max(cuts):.2f}, n={len(cuts)}); model "
          f"{cut_model:.2f} ms")
    print(f"R U F2: back to back {statistics.fmean(plain_ms):.2f} ms of motion, overlapped "
          f"{statistics.fmean(cut_ms):.2f} ms first start to last end: {saving:.2f} ms "
          f"sooner; model {2 * cut_model:.2f} ms (two cuts)")
    print(f"R then L (one axis, ov= written): L started {min(axial):.2f} to {max(axial):.2f} "
          "ms after R ended (never before)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
