"""The actuator's bus adapter: `ActuatorService` (plans and commands from the bus -> the
serial link, progress/result/scan poses/faults back).

Pattern: a *command server with one worker*: commands are answered at once from the bus
worker pool; the robot is driven by one job at a time (execute or scan) under ``_job_lock``,
so two jobs can never interleave on the serial line; ``estop`` bypasses the lock and writes
the real-time byte immediately. Logic lives in `executor` (pure) and `link` (serial).
"""

from __future__ import annotations

import argparse
import queue
import sys
import threading
import time
import uuid
from typing import Any

from robocell.common.bus import Busy, CommandFailed, Node
from robocell.common.bus.options import service_endpoints
from robocell.common.bus.payloads import UNSET, Plan
from robocell.common.malloc import freeze_startup_objects
from robocell.common.profile import Profile, ProfileError, load_profile
from robocell.errors import CommandError
from robocell.services.actuator.amend import AmendRefused, RunningPlan
from robocell.services.actuator.executor import (
    Compiler,
    Execution,
    PlanMismatch,
    StepProgress,
    measured_lines,
    measured_steps,
)
from robocell.services.actuator.link import (
    CommandRejectedError,
    EStopNotSentError,
    FirmwareReset,
    FirmwareUnreachableError,
    Link,
    LinkError,
    SerialUrlError,
    check_serial_url,
)

POSE_HOLD_TIMEOUT_S = 5.0
"""Longest wait at a scan pose for the vision service's capture of it."""
IDLE_POLL_S = 0.5
"""While idle, how often the serial line is read for reports the firmware sends on its own
(a reboot's banner) and a dropped line reconnected."""
JOB_CONNECT_GIVE_UP_S = 2.0
"""A job (plan, scan, home) on a line that is down fails after this long."""
JOB_WAIT_S = 3.0
"""Longest a new job waits for the idle watcher to let go of the line."""
CONNECT_ROUND_S = 5.0
"""One round of connecting at start (retries with backoff inside); the reason is reported
at the first failure and in the state after each round."""
CONNECT_RETRY_S = 2.0
"""Pause between rounds of connecting to a firmware that cannot be reached (each round
already retries with backoff); the actuator never stops trying."""


class ActuatorService:
    """Executes plans and the scan program on the robot behind ``link``."""

    def __init__(self, node: Any, profile: Profile, link: Link, *,
                 pose_hold_timeout_s: float = POSE_HOLD_TIMEOUT_S) -> None:
        self.node = node
        self.profile = profile
        self.compiler = Compiler(profile)
        self.link = link
        self.pose_hold_timeout_s = pose_hold_timeout_s
        self._job_lock = threading.Lock()
        self._amend_lock = threading.Lock()
        self.running: RunningPlan | None = None
        """The plan being executed, whose rest may still be amended."""
        self._faces = queue.Queue()
        self.job_kind: str | None = None
        self.executed_plans = 0
        self.cube_state_known = True
        self.connection = "connecting"
        self.printed = ""
        """The last problem printed on the actuator's output (each is printed once)."""
        """connecting, connected, or why the line cannot be opened (status and health)."""
        self._stop = threading.Event()
        link.on_event = self._link_event

    # --- wiring ----------------------------------------------------------------------------
    def start(self) -> None:
        self.node.subscribe("vision.captured", lambda env: self._faces.put(env.payload))
        self.node.serve("execute", self.on_execute)
        self.node.serve("amend", self.on_amend, concurrency=4)
        self.node.serve("scan", self.on_scan)
        self.node.serve("pause", self.on_pause, concurrency=4)
        self.node.serve("resume", self.on_resume, concurrency=4)
        self.node.serve("estop", self.on_estop, concurrency=8)
        self.node.serve("status", self.on_status, concurrency=4)
        self.node.serve("home", self.on_home)
        threading.Thread(target=self._connect, name="actuator-connect", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _connect(self) -> None:
        """Connect until the firmware answers, however long it takes; meanwhile the state is
        ``error`` with the reason (so `robocell health actuator` fails and says why)."""
        while not self._stop.is_set():
            try:
                info = self.link.open(give_up_s=CONNECT_ROUND_S)
                break
            except FirmwareReset:
                continue  # rebooted while we were away: its new boot id is accepted
            except SerialUrlError as exc:
                self._unreachable(exc, "give a device path or socket://HOST:PORT")
                return
            except LinkError as exc:
                self._unreachable(exc, "start the firmware (or `robocell firmware-sim`); the "
                                  "actuator keeps trying")
                self._stop.wait(CONNECT_RETRY_S)
        else:
            return
        missing = sorted(set(self.compiler.motors) - set(info.motors))
        if missing:
            self._error("connect", "motor_mismatch", f"firmware {info.name} at {self.link.url} "
                        f"has no motor(s) {', '.join(missing)} of profile {self.profile.name}",
                        "flash firmware configured for this robot or pick the right --profile")
            self.node.set_state("error", error="motor mismatch")
            return
        if any(m.overlap_deg for m in self.compiler.motors.values()) and (
                "overlap" not in info.capabilities):
            self._error("connect", "no_overlap", f"profile {self.profile.name} cuts corners "
                        f"(overlap_deg) but firmware {info.name} at {self.link.url} cannot "
                        "(no 'overlap' in its capabilities)", "use a profile without "
                        "overlap_deg, or a firmware that overlaps moves")
            self.node.set_state("error", error="firmware cannot overlap moves")
            return
        freeze_startup_objects()
        self.connection = "connected"
        self.node.set_state("ready", firmware=f"{info.name} {info.version}", boot_id=info.boot_id,
                            profile=self.profile.name, serial=self.link.url, error=None)
        print(f"actuator: connected to {info.name} {info.version} at {self.link.url} "
              f"(boot {info.boot_id})", file=sys.stderr, flush=True)
        threading.Thread(target=self._watch, name="actuator-watch", daemon=True).start()

    def _watch(self) -> None:
        """Between jobs, notice a firmware reboot or a dropped line when it happens: the
        cube state becomes unknown at once (errors, status), not at the next job."""
        while not self._stop.wait(IDLE_POLL_S):
            if not self._job_lock.acquire(blocking=False):
                continue
            try:
                self.link.poll()
                if self.connection != "connected":
                    self.connection = "connected"
                    self.node.set_state("ready", error=None, retrying=False)
            except FirmwareReset as exc:
                self.cube_state_known = False
                self._fault("idle", exc)
                info = self.link.info
                self.connection = "connected"
                self.node.set_state("ready", error=None, cube_state_known=False,
                                    boot_id=None if info is None else info.boot_id)
            except LinkError as exc:
                self._unreachable(exc, "start the firmware (or `robocell firmware-sim`); the "
                                  "actuator keeps trying")
            except Exception as exc:  # noqa: BLE001 - the watcher must outlive any surprise
                self._error("idle", "internal", f"{type(exc).__name__}: {exc}",
                            "report this bug")
            finally:
                self._job_lock.release()

    def _unreachable(self, exc: LinkError, action: str) -> None:
        message = str(exc)
        if self.connection != message:
            self.connection = message
            self._error("connect", exc.code, message, action)
        self.node.set_state("error", error=message, serial=self.link.url, retrying=True)

    # --- bus inputs ------------------------------------------------------------------------
    def on_execute(self, args: dict, ctx: Any) -> dict:
        """Start executing the plan handed over in ``args["plan"]`` (a `Plan`, checked
        against its declaration by the node as the request arrived), held before step
        ``args["hold_at"]`` if given (see `on_amend`); answers at once, progress and result
        follow on the actuator topics."""
        plan = Plan.from_checked(args["plan"])
        plan_id = plan.plan_id
        try:
            self.compiler.check_plan(plan.puzzle, plan.profile, plan.primitives)
            compiler = (self.compiler if plan.overlap_deg is UNSET
                        else self.compiler.cutting(plan.overlap_deg))
            job = compiler.plan(plan.primitives)
            running = RunningPlan.start(plan_id, plan.puzzle, plan.profile, plan.primitives,
                                        job, args.get("hold_at"))
        except AmendRefused as exc:  # the plan is this robot's; the hold makes no sense
            raise CommandFailed("invalid_arguments", str(exc)) from None
        except PlanMismatch as exc:
            self._error("execute", "plan_mismatch", str(exc), "re-plan for this robot")
            raise CommandFailed("invalid_arguments", str(exc)) from None
        self._take_job("plan")
        self.running = running
        threading.Thread(target=self._run_plan, args=(running,), daemon=True).start()
        return {"plan_id": plan_id, "n_steps": job.n_steps,
                "predicted_ms": round(job.predicted_ms, 1)}

    def on_amend(self, args: dict, ctx: Any) -> dict:
        """Replace the rest of the running plan from the step it is held at, or let it run
        on as it is; hold again at ``hold_at``. ``accepted`` is false (with the reason) when
        the robot has begun that step already: the rest then runs as it was."""
        plan_id, at_step = args["plan_id"], int(args["at_step"])
        rest = args.get("primitives")
        with self._amend_lock:
            running = self.running
            if running is None or running.plan_id != plan_id:
                now = "no plan runs" if running is None else f"plan {running.plan_id} runs"
                return {"accepted": False, "reason": f"plan {plan_id} is not running ({now})"}
            try:
                accepted, reason = running.amend(self.compiler, at_step,
                                                 None if rest is None else list(rest),
                                                 args.get("hold_at"))
            except PlanMismatch as exc:
                raise CommandFailed("invalid_arguments", f"{exc}; the plan runs on as it "
                                    "is") from None
            job = running.job
            out = {"accepted": accepted, "n_steps": job.n_steps,
                   "predicted_ms": round(job.predicted_ms, 1)}
            if not accepted:
                return {**out, "reason": reason}
            if rest is not None:
                self.node.publish("actuator.amended", {
                    "plan_id": plan_id, "at_step": at_step,
                    "primitives": list(running.primitives),
                    "predicted_ms": out["predicted_ms"]})
            return out

    def on_scan(self, args: dict, ctx: Any) -> dict:
        """Run the scan program; answers when the last pose was held and the cube is back."""
        scan_id = args.get("scan_id") or f"scan-{uuid.uuid4().hex[:8]}"
        self._take_job("scan")
        try:
            return self._run_scan(scan_id)
        except LinkError as exc:
            self.cube_state_known = False
            self._fault("scan", exc)
            self.node.set_state(self._idle_state(), cube_state_known=False)
            raise CommandFailed("failed", f"scan {scan_id} stopped: {exc}") from None
        finally:
            self.job_kind = None
            self._job_lock.release()

    def _take_job(self, kind: str) -> None:
        """Hold the robot for a job; Busy if another job runs. The idle watcher holds the
        line only briefly (longer while it reconnects): a job waits for it."""
        deadline = time.monotonic() + JOB_WAIT_S
        while not self._job_lock.acquire(timeout=0.02):
            if self.job_kind is not None:
                raise Busy(f"the actuator is running a {self.job_kind}; wait for its result")
            if time.monotonic() > deadline:
                raise Busy(f"the actuator is reconnecting to the firmware at {self.link.url}: "
                           f"{self.connection}")
        self.job_kind = kind

    def on_pause(self, args: dict, ctx: Any) -> dict:
        self.link.pause()
        return {"paused": True, "job": self.job_kind}

    def on_resume(self, args: dict, ctx: Any) -> dict:
        self.link.resume()
        return {"paused": False, "job": self.job_kind}

    def on_estop(self, args: dict, ctx: Any) -> dict:
        try:
            sent = self.link.estop()
        except EStopNotSentError as exc:
            # never answered as sent: the robot may still be moving
            message = f"e-stop not written: {exc}"
            action = ("cut the robot's power now, then check the serial line "
                      f"{self.link.url}")
            print(f"actuator: {message}; {action}", file=sys.stderr, flush=True)
            self._error("serial", "serial_estop_failed", message, action,
                        extra={"job": self.job_kind})
            raise CommandFailed("failed", f"{message}; {action}") from None
        if self.job_kind is None:
            threading.Thread(target=self._idle_estop, daemon=True).start()
        return {"sent_wall": sent, "job": self.job_kind}

    def on_status(self, args: dict, ctx: Any) -> dict:
        info = self.link.info
        return {"profile": self.profile.name, "serial": self.link.url, "job": self.job_kind,
                "connection": self.connection,
                "firmware": None if info is None else f"{info.name} {info.version}",
                "boot_id": None if info is None else info.boot_id,
                "cube_state_known": self.cube_state_known,
                "last_line": self.link.next_line - 1,
                "link": {k: v for k, v in vars(self.link.events).items() if k != "notes"}}

    def on_home(self, args: dict, ctx: Any) -> dict:
        """Bring the robot to its reference position (docs/serial-protocol.md, "Homing"):
        CLEAR if the firmware is e-stopped or faulted, then ``HOME [motors]``; answers when
        the firmware reports it done, or fails naming what went wrong."""
        motors = args.get("motors") or []
        unknown = sorted(set(motors) - set(self.compiler.motors))
        if unknown:
            raise CommandFailed("invalid_arguments", f"no motor(s) {', '.join(unknown)} in "
                                f"profile {self.profile.name} (motors: "
                                f"{', '.join(self.compiler.motors)})")
        self._take_job("home")
        self.node.set_state("busy", job="home")
        try:
            return self._home(motors)
        except CommandRejectedError as exc:
            self._error("home", exc.code, str(exc), "update the firmware or the profile")
            raise CommandFailed("failed", f"homing refused: {exc}") from None
        except LinkError as exc:
            self.cube_state_known = False
            self._fault("home", exc)
            raise CommandFailed("failed", f"homing failed: {exc}") from None
        finally:
            self.job_kind = None
            self._job_lock.release()
            self.node.set_state(self._idle_state(),
                                cube_state_known=self.cube_state_known)

    def _home(self, motors: list[str]) -> dict:
        started = time.monotonic()
        rebooted = False
        self._check_reachable()
        try:
            self.link.open(give_up_s=JOB_CONNECT_GIVE_UP_S)
        except FirmwareReset:
            rebooted = True  # the new boot id is accepted; homing is what a reboot needs
        info = self.link.info
        assert info is not None
        if "home" not in info.capabilities:
            raise CommandRejectedError(f"firmware {info.name} {info.version} at {self.link.url} "
                                       f"does not support HOME (capabilities: "
                                       f"{', '.join(info.capabilities)})")
        state = self.link.status().fields.get("state")
        cleared = state in ("estop", "fault")
        if cleared:
            self.link.clear()
        result = self.link.stream([" ".join(("HOME", *motors))], lambda i: None)
        if result.outcome == "estop":
            raise LinkError("emergency stop during homing; send home again")
        status = self.link.status()
        self.connection = "connected"
        return {"ok": True, "homed": motors or list(self.compiler.motors),
                "cleared": cleared, "rebooted": rebooted, "boot_id": info.boot_id,
                "duration_s": round(time.monotonic() - started, 4),
                "status": dict(status.fields)}

    def _idle_estop(self) -> None:
        """After an e-stop while no job runs: read the firmware's status (which notices a
        reboot), or say that the line is closed, so the stop is not confirmed."""
        try:
            if self._job_lock.acquire(timeout=1.0):
                try:
                    self.link.status()
                finally:
                    self._job_lock.release()
        except LinkError:
            pass
        except OSError as exc:  # the port is closed (pyserial's errors are OSErrors too)
            message = (f"e-stop not confirmed: the serial line to {self.link.url} is closed "
                       f"({exc}), so the e-stop byte may not have reached the firmware")
            print(f"actuator: {message}", file=sys.stderr, flush=True)
            self._link_event("estop_unconfirmed", message)

    # --- jobs ------------------------------------------------------------------------------
    def _idle_state(self) -> str:
        """The lifecycle state after a job: ready, or error while the line is down."""
        return "ready" if self.connection in ("connected", "connecting") else "error"

    def _check_reachable(self) -> None:
        """Fail a job at once while the firmware has never answered (the reason is known)."""
        if self.link.info is None and self.connection not in ("connecting", "connected"):
            raise FirmwareUnreachableError(f"the firmware has not answered yet: "
                                           f"{self.connection}")

    def _prepare(self) -> None:
        # waits for the connecting thread if it is still at it; a line that is down fails
        # the job within seconds (the watcher keeps reconnecting between jobs)
        self._check_reachable()
        self.link.open(give_up_s=JOB_CONNECT_GIVE_UP_S)
        state = self.link.status().fields.get("state")
        if state in ("estop", "fault"):
            self.link.clear()

    def _run_plan(self, running: RunningPlan) -> None:
        plan_id, job = running.plan_id, running.job
        started = time.monotonic()
        execution = Execution(job)
        error = None
        known = True
        outcome = "completed"
        self.node.set_state("busy", job="plan", plan_id=plan_id)

        def on_done(index: int) -> None:
            for item in execution.line_done(index):
                if isinstance(item, StepProgress):
                    self.node.publish("actuator.progress", {
                        "plan_id": plan_id, "step": item.step, "n_steps": item.n_steps,
                        "primitive": item.name, "eta_s": round(item.eta_s, 3),
                        "state": "paused" if self.link.paused else "running"})

        noise_before = (self.link.events.resends, self.link.events.bad_lines)
        try:
            self._prepare()
            self.link.spans.clear()
            result = self.link.stream(running.tail, on_done)
            outcome = result.outcome
            if outcome == "estop":
                error = "emergency stop: motion stopped part way; check the cube, then rescan"
                known = False
                report = result.estop
                if report is None:
                    self._error("execute", "estop", "e-stop sent but the firmware did not "
                                "confirm it (it does not answer)", "check the robot by hand, "
                                "then home and rescan")
                else:
                    self._error("execute", "estop", f"e-stop: motors stood still "
                                f"{report.stop_after_receipt_ms:.1f} ms (firmware time) after "
                                "the stop byte arrived", "check the cube, then rescan",
                                extra={"received_ms": report.received_ms,
                                       "stopped_ms": report.stopped_ms,
                                       "rx_wall": report.rx_wall,
                                       "sent_wall": report.sent_wall})
        except FirmwareReset as exc:
            error, known = str(exc), False
            self._fault("execute", exc)
        except LinkError as exc:
            error = str(exc)
            known = False
            self._fault("execute", exc)
        except Exception as exc:  # noqa: BLE001 - the service never dies on a job
            error = f"{type(exc).__name__}: {exc}"
            known = False
            self._error("execute", "internal", error, "report this bug")
        finally:
            with self._amend_lock:
                self.running = None
            self.job_kind = None
            self._job_lock.release()
        self.cube_state_known = known
        self._report_noise(noise_before, plan_id)
        if error is None:
            self.executed_plans += 1
        if outcome == "estop" or error:
            self.node.publish("actuator.progress", {
                "plan_id": plan_id, "step": execution.steps_done, "n_steps": job.n_steps,
                "primitive": "", "eta_s": 0.0, "state": "stopped"})
        info = self.link.info
        line_ms = measured_lines(job, self.link.spans) if execution.finished else None
        primitive_ms = measured_steps(job, self.link.spans) if execution.finished else None
        self.node.publish("actuator.result", {
            "plan_id": plan_id, "ok": error is None and execution.finished,
            "executed": execution.steps_done, "n_steps": job.n_steps,
            "duration_s": round(time.monotonic() - started, 4), "error": error,
            "cube_state_known": known, "amendments": running.amendments,
            "primitives": list(running.primitives), "last_line": self.link.next_line - 1,
            "boot_id": None if info is None else info.boot_id,
            "predicted_ms": round(job.predicted_ms, 3),
            "measured_ms": None if primitive_ms is None else round(sum(primitive_ms), 3),
            "primitive_ms": None if primitive_ms is None else [round(m, 3)
                                                                for m in primitive_ms],
            "line_ms": None if line_ms is None else [round(m, 3) for m in line_ms]})
        self.node.set_state(self._idle_state(), executed_plans=self.executed_plans,
                            cube_state_known=known)

    def _run_scan(self, scan_id: str) -> dict:
        job = self.compiler.scan()
        program = self.compiler.scan_program
        n_poses = len(program.poses)
        execution = Execution(job)
        self.node.set_state("busy", job="scan", scan_id=scan_id)
        self._prepare()
        vision_alive = "vision" in self.node.alive()
        while not self._faces.empty():
            self._faces.get_nowait()
        # stream each pose's lines as one job, hold still while the camera captures
        for pose_index in range(n_poses + 1):
            lines = [line for line in job.lines if line.step == pose_index]
            offset = job.lines.index(lines[0])
            result = self.link.stream([line.text for line in lines],
                                      lambda i, o=offset: execution.line_done(o + i))
            if result.outcome == "estop":
                raise LinkError(f"emergency stop during scan {scan_id}")
            if pose_index == n_poses:
                break
            pose = program.poses[pose_index]
            for view in pose.views:
                self.node.publish("actuator.scan_pose", {
                    "scan_id": scan_id, "pose": pose_index, "n_poses": n_poses,
                    "face": view.face, "rotation": view.rotation, "at": view.at,
                    "line": self.link.next_line - 1,
                    "pose_faces": [v.face for v in pose.views]})
            if vision_alive:
                self._await_capture(scan_id, pose_index, len(pose.views))
        self.node.set_state("ready", executed_plans=self.executed_plans)
        self.cube_state_known = True
        return {"scan_id": scan_id, "poses": n_poses}

    def _await_capture(self, scan_id: str, pose: int, n_views: int) -> None:
        """Hold the pose until vision took a frame of every view of it (vision.captured) or
        the hold timeout; the frames are read while the robot moves on."""
        deadline = time.monotonic() + self.pose_hold_timeout_s
        captured = 0
        while time.monotonic() < deadline:
            try:
                face = self._faces.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if face.get("scan_id") == scan_id and face.get("pose") == pose:
                captured += 1
                if captured == n_views:
                    return
        self._error("scan", "no_capture", f"vision did not capture pose {pose} of scan "
                    f"{scan_id} within {self.pose_hold_timeout_s} s; moving on", "check vision")

    # --- reporting -------------------------------------------------------------------------
    def _report_noise(self, before: tuple[int, int], plan_id: str) -> None:
        """One report per job of damaged lines on the serial line (each was resent)."""
        resends = self.link.events.resends - before[0]
        bad = self.link.events.bad_lines - before[1]
        if resends or bad:
            self._error("serial", "serial_noise", f"plan {plan_id}: {resends} resend request(s) "
                        f"from the firmware and {bad} damaged report(s) on {self.link.url}; "
                        "every command still ran exactly once",
                        "check the cable and its shielding if this keeps happening")

    def _link_event(self, kind: str, message: str) -> None:
        if kind == "open_failed":
            # on the actuator's own output at once, and in its state for `health`; each
            # distinct reason once on errors (the line is retried every few seconds)
            if message != self.printed:
                self.printed = message
                print(f"actuator: {message}; retrying", file=sys.stderr, flush=True)
            self.node.set_state("error", error=message, serial=self.link.url, retrying=True)
            if message == self.connection:
                return
            self.connection = message
        elif kind == "reconnected":
            self.connection = "connected"
            self.printed = ""
            self.node.set_state("busy" if self.job_kind else "ready", error=None,
                                retrying=False)
        self._error("serial", f"serial_{kind}", message,
                    "none: the actuator recovers by itself" if kind in (
                        "reconnected", "recovered") else "wait; check the serial line if it "
                    "persists", level_info=kind in ("reconnected", "recovered"))

    def _fault(self, stage: str, exc: LinkError) -> None:
        action = {"firmware_reset": "the cube state is unknown: home (actuator `home`) and "
                  "rescan before the next plan",
                  "protocol": "the firmware sent nonsense: check its version against "
                  "docs/serial-protocol.md; home and rescan",
                  "fault": "free the mechanism, check the motor mapping, then rescan",
                  "unreachable": "check the serial line and the firmware"}.get(
                      exc.code, "check the robot")
        self._error(stage, exc.code, str(exc), action)

    def _error(self, stage: str, code: str, message: str, action: str,
               level_info: bool = False, extra: dict | None = None) -> None:
        self.node.publish("errors", {"service": "actuator", "stage": stage, "code": code,
                                     "message": message, "action": action,
                                     "detail": {"serial": self.link.url, "info": level_info,
                                                **(extra or {})}})


def serve_actuator(args: argparse.Namespace) -> int:
    """`robocell actuator`: serve until Ctrl-C."""
    try:
        profile = load_profile(args.profile)
        Compiler(profile)
    except ProfileError as exc:
        raise CommandError(str(exc)) from None
    try:
        check_serial_url(args.serial)
    except SerialUrlError as exc:
        raise CommandError(str(exc)) from None
    link = Link(args.serial)
    with Node("actuator", service_endpoints(args, "actuator")) as node:
        service = ActuatorService(node, profile, link)
        service.printed = getattr(args, "serial_problem", None) or ""
        service.start()
        node.wait()
        service.stop()
    link.close()
    return 0

