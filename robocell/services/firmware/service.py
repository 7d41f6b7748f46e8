"""The firmware simulator's bus adapter: `FirmwareSimBus` publishes the twin on the latched
``sim.twin_state`` topic and answers the sim-only ``scramble`` and ``twin`` commands;
`main_with_args` is the `robocell firmware-sim` process (the core on its serial line, and on
the bus if asked); `main_avr` the same with the compiled AVR firmware in simavr in place of
the Python core.
"""

from __future__ import annotations

import queue
import sys
from typing import Any

from robocell.common.bus import CommandFailed, Endpoints, Node
from robocell.common.cube import apply_to_facelets, solved
from robocell.common.notation import Move
from robocell.common.profile import Profile
from robocell.common.scramble import random_turns
from robocell.common.validation import CubeStateError, validate
from robocell.robot.physics import Physics
from robocell.services.firmware.avr_hil import serve_avr
from robocell.services.firmware.serial_server import ControlQueue, serve
from robocell.services.firmware.simulator import FaultPlan, FirmwareCore

DEFAULT_SCRAMBLE_MOVES = 25
MAX_SCRAMBLE_MOVES = 1000
"""The most random turns one scramble makes (a person's scramble is 20-30; each turn costs
the reply a few bytes, so a billion would never be answered)."""


class FirmwareSimBus:
    """The simulator on the bus: publishes the twin (latched ``sim.twin_state``) after every
    motion and answers ``scramble`` (a person's hands on the simulated cube) and ``twin``
    (the twin now: what the cell verifies a solve by, since anyone may publish the topic)."""

    def __init__(self, profile: Profile, control: queue.Queue,
                 endpoints: Endpoints | None = None) -> None:
        self.profile = profile
        self.control = control
        self.node = Node("firmware-sim", endpoints)

    def start(self, core: Any) -> None:
        core.on_twin = self.publish
        self.node.start()
        self.node.serve("scramble", self.on_scramble)
        self.node.serve("twin", self.on_twin, concurrency=4)
        self.node.set_state("ready", profile=self.profile.name, boot_id=core.boot_id)
        self.publish(core)

    def stop(self) -> None:
        self.node.stop()

    def publish(self, core: Any) -> None:
        self.node.publish("sim.twin_state", twin_report(core))

    def on_twin(self, args: dict, ctx: Any) -> dict:
        """The twin as the simulator's loop holds it now, read on that loop's thread."""
        return self._on_loop(twin_report, ctx, "read the twin")

    def _on_loop(self, function: Any, ctx: Any, what: str) -> Any:
        """``function(core)`` run on the simulator's loop (which owns the core), waited for
        within the caller's deadline."""
        reply: queue.Queue = queue.Queue()
        self.control.put((function, reply))
        try:
            result = reply.get(timeout=max(0.05, min(5.0, ctx.remaining())))
        except queue.Empty:
            raise CommandFailed("timeout", f"the simulator's loop did not {what} in time"
                                ) from None
        if isinstance(result, Exception):
            raise CommandFailed("failed", f"could not {what}: {result}")
        return result

    def on_scramble(self, args: dict, ctx: Any) -> dict:
        size = self.profile.size or 3
        facelets = args.get("facelets")
        moves: list[Move] = []
        if facelets is None:
            count = args.get("moves", DEFAULT_SCRAMBLE_MOVES)
            if not 0 <= count <= MAX_SCRAMBLE_MOVES:
                raise CommandFailed("invalid_arguments", f"scramble moves {count}: give 0 to "
                                    f"{MAX_SCRAMBLE_MOVES} random turns")
            moves = random_turns(count, args.get("seed"))
            facelets = apply_to_facelets(solved(size), moves, size)
        else:
            try:
                validate(facelets, size)
            except CubeStateError as exc:
                raise CommandFailed("invalid_arguments", f"scramble facelets: {exc}") from None

        def set_cube(core: Any) -> str:
            core.twin.facelets = facelets
            core.twin.fault = None
            core._log("scramble", facelets=facelets)
            self.publish(core)
            return facelets

        result = self._on_loop(set_cube, ctx, "scramble")
        return {"facelets": result, "moves": [str(m) for m in moves]}


def twin_report(core: Any) -> dict[str, Any]:
    """The twin of ``core`` as `sim.twin_state` and the ``twin`` command report it."""
    twin = core.twin
    state = twin.state()
    return {"puzzle": f"{twin.size}x{twin.size}x{twin.size}", "facelets": state["facelets"],
            "solved": state["solved"], "grips": state["grips"],
            "arm_angles": state["arm_angles"], "misaligned": state["misaligned"],
            "fault": state["fault"], "jammed": state["jammed"], "boot_id": core.boot_id,
            "line": core.executed}


def main_with_args(profile: Profile, *, port: int | None, pty_link: str | None, speed: float,
                   facelets: str | None, queue_size: int, log_path: str | None,
                   faults: FaultPlan, max_runtime_s: float | None = None,
                   host: str = "127.0.0.1", bus: bool = False,
                   endpoints: Endpoints | None = None, physics: Physics | None = None) -> None:
    """The `robocell firmware-sim` process body (with ``bus``: twin on sim.twin_state and the
    ``scramble`` command, see `FirmwareSimBus`; ``physics``: how the robot really moves)."""
    log = open(log_path, "a", encoding="utf-8") if log_path else None  # noqa: SIM115
    adapter = None
    control: queue.Queue | None = None
    try:
        core = FirmwareCore(profile, facelets, queue_size, log, physics=physics)
        if bus:
            control = ControlQueue()
            adapter = FirmwareSimBus(profile, control, endpoints)
            adapter.start(core)
        serve(core, port=port, pty_link=pty_link, speed=speed, faults=faults,
              ready=sys.stdout, max_runtime_s=max_runtime_s, host=host, control=control)
    finally:
        if adapter is not None:
            adapter.stop()
        if log is not None:
            log.close()


def main_avr(profile: Profile, *, mcu: str, port: int | None, pty_link: str | None,
             speed: float, facelets: str | None, log_path: str | None, faults: FaultPlan,
             max_runtime_s: float | None = None, host: str = "127.0.0.1", bus: bool = False,
             endpoints: Endpoints | None = None,
             trace: str | None = None, physics: bool = True,
             cut_tolerance_deg: float | None = None) -> None:
    """The process body of `robocell firmware-sim --avr` (``cut_tolerance_deg``: the twin
    cube's, from a physics file's ``[cube]``)."""
    log = open(log_path, "a", encoding="utf-8") if log_path else None  # noqa: SIM115
    control: queue.Queue | None = ControlQueue() if bus else None
    adapter = FirmwareSimBus(profile, control, endpoints) if control is not None else None
    try:
        serve_avr(profile, mcu=mcu, port=port, pty_link=pty_link, speed=speed,
                  facelets=facelets, log=log, faults=faults, ready=sys.stdout,
                  max_runtime_s=max_runtime_s, host=host, control=control, trace=trace,
                  on_start=adapter.start if adapter is not None else None, physics=physics,
                  cut_tolerance_deg=cut_tolerance_deg)
    finally:
        if adapter is not None:
            adapter.stop()
        if log is not None:
            log.close()
