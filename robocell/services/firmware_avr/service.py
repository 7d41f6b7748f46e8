"""`robocell firmware-sim --avr`: the AVR firmware in simavr with the twin, optionally on the
bus (the same `FirmwareSimBus` as the Python simulator: twin on ``sim.twin_state``, the
``scramble`` command)."""

from __future__ import annotations

import queue
import sys

from robocell.common.profile import Profile
from robocell.services.firmware_avr.hil import serve_avr
from robocell.services.firmware_sim.firmware import FaultPlan
from robocell.services.firmware_sim.service import FirmwareSimBus


def main_avr(profile: Profile, *, mcu: str, port: int | None, pty_link: str | None,
             speed: float, facelets: str | None, log_path: str | None, faults: FaultPlan,
             max_runtime_s: float | None = None, host: str = "127.0.0.1", bus: bool = False,
             trace: str | None = None, physics: bool = True) -> None:
    """The process body of `robocell firmware-sim --avr`."""
    log = open(log_path, "a", encoding="utf-8") if log_path else None  # noqa: SIM115
    control: queue.Queue | None = queue.Queue() if bus else None
    adapter = FirmwareSimBus(profile, control) if control is not None else None
    try:
        serve_avr(profile, mcu=mcu, port=port, pty_link=pty_link, speed=speed,
                  facelets=facelets, log=log, faults=faults, ready=sys.stdout,
                  max_runtime_s=max_runtime_s, host=host, control=control, trace=trace,
                  on_start=adapter.start if adapter is not None else None, physics=physics)
    finally:
        if adapter is not None:
            adapter.stop()
        if log is not None:
            log.close()
