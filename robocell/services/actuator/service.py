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
import threading
import time
import uuid
from typing import Any

from robocell.common.bus import Busy, CommandFailed, Node
from robocell.common.bus.messages import Plan
from robocell.common.bus.wire import ValidationError
from robocell.common.malloc import freeze_startup_objects
from robocell.common.profile import Profile, ProfileError, load_profile
from robocell.errors import CommandError
from robocell.services.actuator.executor import Compiler, Execution, Job, PlanMismatch, StepProgress
from robocell.services.actuator.link import FirmwareReset, Link, LinkError

POSE_HOLD_TIMEOUT_S = 5.0
"""Longest wait at a scan pose for the vision service's capture of it."""


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
        self._faces = queue.Queue()
        self.job_kind: str | None = None
        self.executed_plans = 0
        self.cube_state_known = True
        link.on_event = self._link_event

    # --- wiring ----------------------------------------------------------------------------
    def start(self) -> None:
        self.node.subscribe("vision.captured", lambda env: self._faces.put(env.payload))
        self.node.serve("execute", self.on_execute)
        self.node.serve("scan", self.on_scan)
        self.node.serve("pause", self.on_pause, concurrency=4)
        self.node.serve("resume", self.on_resume, concurrency=4)
        self.node.serve("estop", self.on_estop, concurrency=8)
        self.node.serve("status", self.on_status, concurrency=4)
        threading.Thread(target=self._connect, name="actuator-connect", daemon=True).start()

    def _connect(self) -> None:
        try:
            info = self.link.open()
        except LinkError as exc:
            self._error("connect", exc.code, str(exc), "start the firmware (or "
                        "`robocell firmware-sim`) and restart the actuator")
            self.node.set_state("error", error=str(exc))
            return
        missing = sorted(set(self.compiler.motors) - set(info.motors))
        if missing:
            self._error("connect", "motor_mismatch", f"firmware {info.name} at {self.link.url} "
                        f"has no motor(s) {', '.join(missing)} of profile {self.profile.name}",
                        "flash firmware configured for this robot or pick the right --profile")
            self.node.set_state("error", error="motor mismatch")
            return
        freeze_startup_objects()
        self.node.set_state("ready", firmware=f"{info.name} {info.version}", boot_id=info.boot_id,
                            profile=self.profile.name, serial=self.link.url)

    # --- bus inputs ------------------------------------------------------------------------
    def on_execute(self, args: dict, ctx: Any) -> dict:
        """Start executing the plan handed over in ``args["plan"]`` (a `solver.plan`
        payload); answers at once, progress and result follow on the actuator topics."""
        try:
            plan = Plan.from_payload(args["plan"])
        except ValidationError as exc:
            raise CommandFailed("invalid_arguments", f"plan: {exc}; send the solver's plan "
                                "as it is") from None
        plan_id = plan.plan_id
        try:
            self.compiler.check_plan(plan.puzzle, plan.profile, plan.primitives)
            job = self.compiler.plan(plan.primitives)
        except PlanMismatch as exc:
            self._error("execute", "plan_mismatch", str(exc), "re-plan for this robot")
            raise CommandFailed("invalid_arguments", str(exc)) from None
        if not self._job_lock.acquire(blocking=False):
            raise Busy(f"the actuator is running a {self.job_kind}; wait for its result")
        self.job_kind = "plan"
        threading.Thread(target=self._run_plan, args=(plan_id, job), daemon=True).start()
        return {"plan_id": plan_id, "n_steps": job.n_steps,
                "predicted_ms": round(job.predicted_ms, 1)}

    def on_scan(self, args: dict, ctx: Any) -> dict:
        """Run the scan program; answers when the last pose was held and the cube is back."""
        scan_id = args.get("scan_id") or f"scan-{uuid.uuid4().hex[:8]}"
        if not self._job_lock.acquire(blocking=False):
            raise Busy(f"the actuator is running a {self.job_kind}; wait for its result")
        self.job_kind = "scan"
        try:
            return self._run_scan(scan_id)
        except LinkError as exc:
            self._fault("scan", exc)
            raise CommandFailed("failed", f"scan {scan_id} stopped: {exc}") from None
        finally:
            self.job_kind = None
            self._job_lock.release()

    def on_pause(self, args: dict, ctx: Any) -> dict:
        self.link.pause()
        return {"paused": True, "job": self.job_kind}

    def on_resume(self, args: dict, ctx: Any) -> dict:
        self.link.resume()
        return {"paused": False, "job": self.job_kind}

    def on_estop(self, args: dict, ctx: Any) -> dict:
        sent = self.link.estop()
        if self.job_kind is None:
            threading.Thread(target=self._idle_estop, daemon=True).start()
        return {"sent_wall": sent, "job": self.job_kind}

    def on_status(self, args: dict, ctx: Any) -> dict:
        info = self.link.info
        return {"profile": self.profile.name, "serial": self.link.url, "job": self.job_kind,
                "firmware": None if info is None else f"{info.name} {info.version}",
                "boot_id": None if info is None else info.boot_id,
                "cube_state_known": self.cube_state_known,
                "last_line": self.link.next_line - 1,
                "link": {k: v for k, v in vars(self.link.events).items() if k != "notes"}}

    def _idle_estop(self) -> None:
        try:
            if self._job_lock.acquire(timeout=1.0):
                try:
                    self.link.status()
                finally:
                    self._job_lock.release()
        except LinkError:
            pass

    # --- jobs ------------------------------------------------------------------------------
    def _prepare(self) -> None:
        self.link.open()  # waits for the connecting thread if it is still at it
        state = self.link.status().fields.get("state")
        if state in ("estop", "fault"):
            self.link.clear()

    def _run_plan(self, plan_id: str, job: Job) -> None:
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
            result = self.link.stream(job.texts, on_done, pause_points=job.pause_points)
            outcome = result.outcome
            if outcome == "estop":
                error = "emergency stop: motion stopped part way; check the cube, then rescan"
                known = False
                report = result.estop
                self._error("execute", "estop", f"e-stop: motors stood still "
                            f"{report.stop_after_receipt_ms:.1f} ms (firmware time) after the "
                            "stop byte arrived", "check the cube, then rescan",
                            extra={"received_ms": report.received_ms,
                                   "stopped_ms": report.stopped_ms,
                                   "rx_wall": report.rx_wall, "sent_wall": report.sent_wall})
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
        self.node.publish("actuator.result", {
            "plan_id": plan_id, "ok": error is None and execution.finished,
            "executed": execution.steps_done, "n_steps": job.n_steps,
            "duration_s": round(time.monotonic() - started, 4), "error": error,
            "cube_state_known": known})
        self.node.set_state("ready", executed_plans=self.executed_plans,
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
                    "line": self.link.next_line - 1})
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
        self._error("serial", f"serial_{kind}", message,
                    "none: the actuator recovers by itself" if kind in (
                        "reconnected", "recovered") else "wait; check the serial line if it "
                    "persists", level_info=kind in ("reconnected", "recovered"))

    def _fault(self, stage: str, exc: LinkError) -> None:
        action = {"firmware_reset": "the cube state is unknown: rescan before the next plan",
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
    link = Link(args.serial)
    with Node("actuator") as node:
        service = ActuatorService(node, profile, link)
        service.start()
        node.wait()
    link.close()
    return 0

