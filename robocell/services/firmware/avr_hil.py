"""Hardware in the loop: the compiled AVR firmware running in simavr (the ``avrsim`` harness)
behind the same serial line as the Python firmware simulator, its pins moving the same
digital twin.

`PinTwin` turns what the harness reports into twin motion: every stepper's signed STEP count
(rising edges, the sign from its DIR pin) and every servo's pulse width, sampled at each line
the firmware sends. When the firmware reports ``done N`` the twin turns every stepper by the
steps it really emitted since the last motion and sets every servo to the angle its pulse
width means, so a wrong pin map, a lost step or a late stop shows up as a jam or an unsolved
cube. A twin fault is fed back to the firmware on its stall input (``fault`` pin), as a
driver's stall output would. Its log has the simulator's format (``exec`` entries with the
twin's facelets), so the same tests read both.

`serve_avr` is the serial line: TCP (``socket://``) or a pty, fault injection on the bytes
between host and firmware (drops, bit flips, disconnects on the ``link`` input, stalls, a
reset of the microcontroller), the twin, and the bus adapter's control queue.
"""

from __future__ import annotations

import copy
import json
import math
import os
import queue
import select
import subprocess
import time
from typing import IO

from robocell.common.profile import Profile
from robocell.robot import protocol as proto
from robocell.robot.motion import load_motors
from robocell.services.firmware.avr_build import build_firmware, build_harness
from robocell.services.firmware.avr_wiring import DEFAULT_MCU, F_CPU, Wiring, load_wiring
from robocell.services.firmware.serial_server import FirmwareLine, control_watch, run_control
from robocell.services.firmware.simulator import FaultPlan
from robocell.services.firmware.twin import Twin, TwinFaultError

FIRMWARE_NAME = "robocell-avr"
START_TIMEOUT_S = 30.0


def harness_command(binary: str, elf: str, wiring: Wiring, speed: float,
                    trace: str | None = None) -> list[str]:
    """The avrsim command line for a build and its pin map."""
    command = [binary, "--mcu", wiring.board.mcu, "--elf", elf, "--freq", str(F_CPU),
               "--speed", f"{speed:g}", "--sync", "1"]
    for motor, step, direction, _ in wiring.steppers:
        # in motion while the last step is younger than 0.7 of the first step's delay
        # (sqrt(2/a)): longer than any step interval of a motion, shorter than a new start
        first_step_us = 1e6 * math.sqrt(2.0 / (motor.accel_dps2 * motor.steps_per_rev / 360.0))
        command += ["--stepper", f"{step.label}:{direction.label}:{round(0.7 * first_step_us)}"]
    for _, pin, *_ in wiring.servos:
        command += ["--servo", pin.label]
    for name in ("fault", "link"):
        pin = getattr(wiring, name)
        if pin is not None:
            command += ["--input", f"{name}:{pin.label}=1"]
    if trace:
        command += ["--trace", trace]
    return command


class PinTwin:
    """The twin moved by the firmware's pins; the log in the simulator's format."""

    def __init__(self, profile: Profile, wiring: Wiring, facelets: str | None,
                 log: IO[str] | None, physics: bool = True,
                 cut_tolerance_deg: float | None = None) -> None:
        self.profile = profile
        self.wiring = wiring
        self.motors = load_motors(profile)
        self.twin = Twin(profile, facelets, cut_tolerance_deg)
        self.log = log
        self.on_twin: object = None
        self.boot_id = ""
        self.executed = 0
        self.accepted_count = 0
        self.steppers = [(m.name, -1 if inverted else 1) for m, _, _, inverted in wiring.steppers]
        self.servos = [(m.name, lo, hi, span) for m, _, lo, hi, span in wiring.servos]
        self.applied = [0] * len(self.steppers)
        self.received: dict[int, str] = {}   # line number -> body, as the firmware got it
        self.accepted: dict[int, tuple[str, float]] = {}  # ... once it said ok: (body, t)
        self.rx_buffer = bytearray()
        self.last_end = 0.0
        self.logged_fault: TwinFaultError | None = None
        self.physics = physics  # False: the firmware alone, pins traced but no twin
        self.estopped = False

    # --- log ---------------------------------------------------------------------------
    def _log(self, event: str, **fields: object) -> None:
        if self.log is not None:
            self.log.write(json.dumps({"ev": event, "boot": self.boot_id, **fields}) + "\n")
            self.log.flush()

    def _fault(self, exc: TwinFaultError, line: int) -> bool:
        """Log a twin fault once (a faulted twin raises the same fault again on any motion);
        True when it is new."""
        if exc is self.logged_fault:
            return False
        self.logged_fault = exc
        self._log("fault", code=exc.code, message=str(exc), line=line)
        return True

    # --- what the firmware receives ------------------------------------------------------
    def host_bytes(self, data: bytes) -> None:
        """Bytes on their way into the firmware's UART (after line noise)."""
        for value in data:
            if value in proto.REALTIME_BYTES:
                continue
            if value != 0x0A:
                if len(self.rx_buffer) < proto.MAX_LINE_LENGTH:
                    self.rx_buffer.append(value)
                continue
            raw, self.rx_buffer = bytes(self.rx_buffer), bytearray()
            try:
                parsed = proto.parse_host_line(proto.unframe(raw))
            except proto.ProtocolError:
                continue
            if parsed == "CLEAR":
                self.twin.fault = None
                self.estopped = False
            elif isinstance(parsed, proto.Command):
                self.received[parsed.line] = parsed.body

    # --- what the firmware reports ---------------------------------------------------------
    def _degrees(self, steps: list[int], which: list[int] | None = None) -> dict[str, float]:
        out = {}
        for i, (name, sign) in enumerate(self.steppers):
            if which is not None and i not in which:
                continue
            delta = (steps[i] - self.applied[i]) * sign
            if delta:
                out[name] = self.motors[name].degrees(delta)
        return out

    def _angles(self, widths: list[int]) -> dict[str, float]:
        return {name: round((us - lo) * span / (hi - lo), 2)
                for (name, lo, hi, span), us in zip(self.servos, widths, strict=True) if us}

    def _move_steppers(self, steps: list[int], moving: int = 0) -> None:
        """The twin turns by the steps of every stepper that stands still now (a stepper in
        motion is taken when it stops)."""
        still = [i for i in range(len(self.steppers)) if not moving & (1 << i)]
        degrees = self._degrees(steps, still)
        for i in still:
            self.applied[i] = steps[i]
        if degrees and self.physics:
            self.twin.move(degrees)

    def _set_servos(self, widths: list[int], named: set[str] | None) -> None:
        angles = self._angles(widths)
        changed = {n: a for n, a in angles.items()
                   if named is None or n in named or abs(a - self.twin.servo_angles[n]) > 0.25}
        if changed and self.physics:
            self.twin.set_servos(changed)

    def report(self, t_ms: float, body: str, steps: list[int], widths: list[int],
               moving: int = 0) -> bool:
        """One line from the firmware; True if the twin just faulted (tell the firmware)."""
        try:
            rep = proto.parse_report(body)
        except proto.ProtocolError:
            return False
        if rep.kind == "start":
            if rep.fields.get("boot") != self.boot_id:
                self.boot_id = rep.fields.get("boot", "")
                self.executed = 0
                self.accepted.clear()
                self.received.clear()
                self._log("boot", fw=rep.fields.get("fw"), version=rep.fields.get("version"),
                          t=t_ms)
            return False
        if rep.kind == "ok" and rep.words[1:] != ("dup",) and rep.line in self.received:
            self.accepted[rep.line] = (self.received[rep.line], t_ms)
            self.accepted_count += 1
        elif rep.kind == "done":
            return self._done(rep.line, rep.float_field("t"), steps, widths, moving)
        elif rep.kind == "estop":
            self.estopped = True
            self._log("estop", t=rep.float_field("t"), stopped=rep.float_field("stopped"),
                      discarded=rep.int_field("discarded"))
        elif rep.kind == "fault":
            self._log("firmware-fault", text=rep.text(), line=rep.int_field("line"))
        elif rep.kind == "status" and self.estopped:
            self.idle(steps, moving)
        return False

    def _done(self, line: int, end: float, steps: list[int], widths: list[int],
              moving: int) -> bool:
        body, arrival = self.accepted.pop(line, ("", 0.0))
        verb = body.split()[1] if len(body.split()) > 1 else "?"
        named = {a.partition(":")[0] for a in body.split()[2:]}
        fault = None
        try:
            if verb in ("MOVE", "HOME"):
                self._move_steppers(steps, moving)
            if verb in ("SERVO", "HOME"):
                self._set_servos(widths, None if verb == "HOME" and not named else named)
        except TwinFaultError as exc:
            fault = exc
        self.executed = line
        start = end if verb == "MARK" else max(self.last_end, min(arrival, end))
        self._log("exec", line=line, text=body, start=round(start, 3), end=round(end, 3),
                  idle=round(start - self.last_end, 3), facelets=self.twin.facelets,
                  solved=self.twin.solved)
        self.last_end = end
        if callable(self.on_twin):
            self.on_twin(self)
        return fault is not None and self._fault(fault, line)

    def motion_began(self, starting: int, steps: list[int], widths: list[int],
                     moving: int) -> bool:
        """A motion just began (the harness waits for the answer). First the twin takes what
        finished before it (steppers standing still, in the order things happened); servos
        take their new pulse at once, so the twin follows them now; starting steppers are
        judged by a trial of a turn: an arm turning against a held layer jams at its first
        steps, as a driver's stall output would say. A stepper starting while others still
        turn (the planner queue cutting a corner) is judged by the cube's cut tolerance
        against how far those stand from aligned; the twin takes them when they stop. True
        if the twin faulted."""
        try:
            self._move_steppers(steps, moving & ~starting)
            self._set_servos(widths, set())
            turning = {name: 90.0 for i, (name, _) in enumerate(self.steppers)
                       if starting & (1 << i)}
            running = [i for i in range(len(self.steppers)) if moving & ~starting & (1 << i)]
            if starting and running and self.physics:
                self.twin.check_cut(list(turning), self._off_square(steps, running))
            if starting and self.twin.fault is None and self.physics:
                trial = copy.deepcopy(self.twin)
                try:
                    trial.move(turning)
                except TwinFaultError as exc:
                    if exc.code in ("jam", "slipped"):
                        self.twin.fault = exc
                        raise
        except TwinFaultError as exc:
            return self._fault(exc, self.executed + 1)
        return False

    def _off_square(self, steps: list[int], which: list[int]) -> dict[str, float]:
        """How far each stepper of ``which`` stands from its nearest quarter turn now."""
        turned = self._degrees(steps, which)
        return {name: min(d % 90.0, 90.0 - d % 90.0) for name, d in turned.items()}

    def idle(self, steps: list[int], moving: int = 0) -> None:
        """The steppers stand still: the twin takes their motion (after an e-stop, the part
        that was made)."""
        if steps == self.applied:
            return
        degrees = self._degrees(steps)
        try:
            self._move_steppers(steps, moving)
        except TwinFaultError as exc:
            self._fault(exc, self.executed + 1)
        if self.estopped:
            self._log("interrupted", line=self.executed + 1, degrees=degrees,
                      facelets=self.twin.facelets)


class Harness:
    """The avrsim process: UART bytes in, reports and pin samples out."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
        self.buffer = b""

    def fileno(self) -> int:
        return self.process.stdout.fileno()

    def _send(self, text: str) -> None:
        try:
            self.process.stdin.write(text.encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def uart(self, data: bytes) -> None:
        if data:
            self._send(f"R {data.hex()}\n")

    def set_input(self, name: str, level: int) -> None:
        self._send(f"P {name} {level}\n")

    def reset(self) -> None:
        self._send("X\n")

    def go(self) -> None:
        self._send("G\n")

    def events(self) -> list[list[str]]:
        """Complete event lines that have arrived (reads once; call when readable)."""
        chunk = os.read(self.fileno(), 65536)
        if not chunk:
            err = self.process.stderr.read().decode(errors="replace")
            raise RuntimeError(f"the simavr harness ended: {err.strip()}")
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        return [line.decode().split() for line in lines if line]

    def stop(self) -> None:
        if self.process.poll() is None:
            self._send("Q\n")
            try:
                self.process.wait(2)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(2)


def _samples(fields: list[str]) -> tuple[list[int], list[int], int]:
    """(step counts, pulse widths, moving mask) of a harness event's last three fields."""
    steps = [] if fields[0] == "-" else [int(v) for v in fields[0].split(",")]
    widths = [] if fields[1] == "-" else [int(v) for v in fields[1].split(",")]
    return steps, widths, int(fields[2])


def start_harness(profile: Profile, mcu: str, speed: float, trace: str | None) -> tuple[
        Harness, Wiring]:
    wiring = load_wiring(profile, mcu)
    build = build_firmware(profile, mcu)
    binary = build_harness()
    return Harness(harness_command(str(binary), str(build.elf), wiring, speed, trace)), wiring


# long-function: one select loop owns the line, the harness, the clock and fault injection
def serve_avr(profile: Profile, *, mcu: str = DEFAULT_MCU, port: int | None = None,
              pty_link: str | None = None, speed: float = 1.0, facelets: str | None = None,
              log: IO[str] | None = None, faults: FaultPlan | None = None,
              ready: IO[str] | None = None, max_runtime_s: float | None = None,
              host: str = "127.0.0.1", control: queue.Queue | None = None,
              trace: str | None = None, on_start: object = None,
              physics: bool = True, cut_tolerance_deg: float | None = None) -> None:
    """Run the firmware in simavr behind TCP or a pty until interrupted (or
    ``max_runtime_s``); announces ``listening <url> boot=<id>`` on ``ready``."""
    faults = faults or FaultPlan()
    harness, wiring = start_harness(profile, mcu, speed, trace)
    pins = PinTwin(profile, wiring, facelets, log, physics, cut_tolerance_deg)
    disconnects = sorted(faults.disconnect_after)
    stall_done = reset_done = False
    line: FirmwareLine | None = None
    started = time.monotonic()
    fault_release: float | None = None
    try:
        while not pins.boot_id:  # the firmware's first start line carries its boot id
            if time.monotonic() - started > START_TIMEOUT_S:
                raise RuntimeError("the firmware in simavr sent no start line")
            if select.select([harness], [], [], 0.5)[0]:
                for event in harness.events():
                    if event[0] == "L":
                        body = proto.unframe(bytes.fromhex(event[2]))
                        pins.report(int(event[1]) / 1e6, body, *_samples(event[3:6]))
                    elif event[0] == "M":
                        harness.go()

        def connected() -> None:
            harness.set_input("link", 1)
            pins._log("connect", t=round(time.monotonic() - started, 3))

        def dropped() -> None:
            harness.set_input("link", 0)
            pins._log("disconnect", t=round(time.monotonic() - started, 3))

        line = FirmwareLine(port, pty_link, host, faults, connected, dropped)
        if callable(on_start):
            on_start(pins)
        if ready is not None:
            ready.write(f"listening {line.url} boot={pins.boot_id}\n")
            ready.flush()
        while max_runtime_s is None or time.monotonic() - started < max_runtime_s:
            run_control(control, pins)
            if fault_release is not None and time.monotonic() > fault_release:
                harness.set_input("fault", 1)
                fault_release = None
            readable, _, _ = select.select([harness.fileno(), *line.watch(),
                                            *control_watch(control)], [], [], 0.2)
            if harness.fileno() in readable:
                for event in harness.events():
                    if event[0] == "L":
                        raw = bytes.fromhex(event[2])
                        try:
                            body = proto.unframe(raw)
                        except proto.ProtocolError:
                            body = ""
                        if pins.report(int(event[1]) / 1e6, body, *_samples(event[3:6])):
                            harness.set_input("fault", 0)  # the stall output of a driver
                            fault_release = time.monotonic() + 0.05
                        line.send(raw)
                    elif event[0] == "I":
                        steps, _, moving = _samples(event[3:6])
                        pins.idle(steps, moving)
                    elif event[0] == "M":
                        if pins.motion_began(int(event[2]), *_samples(event[3:6])):
                            harness.set_input("fault", 0)
                            fault_release = time.monotonic() + 0.05
                        harness.go()
            chunk = line.service(readable)
            if chunk is None:
                continue
            pins.host_bytes(chunk)
            harness.uart(chunk)
            count = pins.accepted_count
            if disconnects and count >= disconnects[0]:
                disconnects.pop(0)
                pins._log("inject", fault="disconnect", after=count)
                line.drop()
            elif faults.stall_after is not None and not stall_done and count >= faults.stall_after:
                stall_done = True
                pins._log("inject", fault="stall", after=count, ms=faults.stall_ms)
                time.sleep(faults.stall_ms / 1000.0 / max(speed, 1.0))
            elif faults.reset_after is not None and not reset_done and count >= faults.reset_after:
                reset_done = True
                pins._log("inject", fault="reset", after=count)
                harness.reset()
    finally:
        harness.stop()
        if line is not None:
            line.close()
