"""The actuator's pure core: a plan's primitives -> firmware command lines, the progress of an
execution (step i of n, primitive, ETA) and its exactly-once bookkeeping. No I/O.

Each primitive becomes a ``MARK`` line (``MARK step=<i> <primitive>``, so the firmware log
names what it executed) followed by the primitive's motor commands. A pause may only hold
the stream before a MARK, so a primitive is never left half done. A MOVE that may cut the
corner of the MOVE before it (the profile's ``overlap_deg``; a MARK between them does not
count) carries ``ov=<steps>`` and is predicted shorter by the time it starts early.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from robocell.common.facelets import puzzle_size
from robocell.common.profile import Profile
from robocell.errors import RobocellError
from robocell.robot.calibration import with_overlap
from robocell.robot.motion import (
    MotorModel,
    PrimitiveMotion,
    ScanProgram,
    WireCommand,
    compile_primitives,
    load_motors,
    load_scan,
)
from robocell.robot.timing import timed_overlapped


class PlanMismatch(RobocellError, ValueError):
    """A plan that this robot cannot execute (other puzzle/profile, unknown primitive)."""


@dataclass(frozen=True)
class Line:
    """One command of a job: its text, the step it belongs to, and its predicted duration."""

    text: str
    step: int
    predicted_ms: float
    starts_step: bool = False


@dataclass
class Job:
    """A compiled plan or scan program: the lines to stream and what each step is called."""

    kind: str
    step_names: list[str]
    lines: list[Line]

    @property
    def n_steps(self) -> int:
        return len(self.step_names)

    @property
    def pause_points(self) -> frozenset[int]:
        return frozenset(i for i, line in enumerate(self.lines) if line.starts_step)

    @property
    def predicted_ms(self) -> float:
        return sum(line.predicted_ms for line in self.lines)

    @property
    def texts(self) -> list[str]:
        return [line.text for line in self.lines]

    def first_line(self, step: int) -> int:
        """Index of the line that starts ``step`` (the number of lines when ``step`` is
        one past the last)."""
        if step == self.n_steps:
            return len(self.lines)
        for i, line in enumerate(self.lines):
            if line.starts_step and line.step == step:
                return i
        raise ValueError(f"step {step}: the {self.kind} has steps 0 to {self.n_steps - 1}")

    def replace_from(self, step: int, other: Job) -> None:
        """Take ``other``'s steps from ``step`` on in place of this job's (the steps before
        are the same in both: an amended plan keeps what the robot has begun)."""
        self.lines[self.first_line(step):] = other.lines[other.first_line(step):]
        self.step_names[step:] = other.step_names[step:]


class Compiler:
    """Compiles plans and the scan program of one profile, predicting each line's time."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.motors = load_motors(profile)
        self.primitives: dict[str, PrimitiveMotion] = compile_primitives(profile, self.motors)
        self._scan: ScanProgram | None = None

    def cutting(self, overlap_deg: float) -> Compiler:
        """This robot's compiler with every stepper cutting corners by ``overlap_deg`` (the
        calibration's timing program measures the motors' tails so)."""
        return Compiler(with_overlap(self.profile, overlap_deg))

    @property
    def scan_program(self) -> ScanProgram:
        if self._scan is None:
            self._scan = load_scan(self.profile, self.motors)
        return self._scan

    def check_plan(self, puzzle: str, profile: str, primitives: list[str]) -> None:
        """PlanMismatch unless the plan is for this robot's puzzle and profile and uses only
        its primitives."""
        want = self.profile.puzzle
        try:
            size = puzzle_size(puzzle)
        except ValueError:
            size = None
        if size is None or size != self.profile.size:
            raise PlanMismatch(f"plan is for puzzle {puzzle}, but this robot ({self.profile.name}) "
                               f"holds a {want}; send a plan for {want}")
        if profile != self.profile.name:
            raise PlanMismatch(f"plan was made for profile {profile!r}, but this robot runs "
                               f"{self.profile.name!r}; re-plan with --profile "
                               f"{self.profile.name}")
        for i, name in enumerate(primitives):
            if name not in self.primitives:
                raise PlanMismatch(f"step {i}: primitive {name!r} is not one of profile "
                                   f"{self.profile.name}'s ({', '.join(self.primitives)})")

    def plan(self, primitives: list[str], model: MotorModel | None = None) -> Job:
        model = model or MotorModel(self.motors)
        lines: list[Line] = []
        previous = None
        for step, name in enumerate(primitives):
            motion = self.primitives.get(name)
            if motion is None:
                raise PlanMismatch(f"step {step}: no primitive {name!r} in {self.profile.name}")
            lines.append(Line(f"MARK step={step} {name}", step, 0.0, starts_step=True))
            previous = self._lines(motion.commands, step, model, lines, previous)
        return Job("plan", list(primitives), lines)

    def scan(self, model: MotorModel | None = None) -> Job:
        """The scan program: step i ends when pose i is reached; a last step runs the
        profile's ``finish`` motions (if any, e.g. back to the start orientation)."""
        model = model or MotorModel(self.motors)
        lines: list[Line] = []
        names = []
        program = self.scan_program
        previous = None
        for pose in program.poses:
            lines.append(Line(f"MARK pose={pose.index} {pose.name}", pose.index, 0.0,
                              starts_step=True))
            previous = self._lines(pose.commands, pose.index, model, lines, previous)
            names.append(pose.name)
        finish = len(program.poses)
        lines.append(Line(f"MARK pose={finish} finish", finish, 0.0, starts_step=True))
        self._lines(program.finish, finish, model, lines, previous)
        names.append("finish")
        return Job("scan", names, lines)

    def _lines(self, commands: tuple[WireCommand, ...], step: int, model: MotorModel,
               out: list[Line], previous: WireCommand | None) -> WireCommand | None:
        """Append a step's lines to ``out``; the last command (for the next to overlap)."""
        timed, previous = timed_overlapped(commands, model, self.motors, previous)
        out.extend(Line(sent.text, step, duration) for sent, duration in timed)
        return previous


@dataclass
class StepProgress:
    """A progress report: step i (0-based) of n is running, with an ETA in seconds."""

    step: int
    n_steps: int
    name: str
    eta_s: float


@dataclass
class Execution:
    """Bookkeeping of one job being executed: which lines are done (each exactly once, in
    order), which step is running, and the ETA from the measured pace."""

    job: Job
    started: float = field(default_factory=time.monotonic)
    done_lines: int = 0
    completed_steps: list[int] = field(default_factory=list)

    def line_done(self, index: int, now: float | None = None) -> list[StepProgress | int]:
        """Record that line ``index`` finished. Returns a `StepProgress` when a new step starts
        and the index of a step when it completed. ValueError if a line is reported twice or
        out of order — the exactly-once invariant."""
        if index != self.done_lines:
            raise ValueError(f"line {index} reported done, expected line {self.done_lines}: "
                             "exactly-once violated")
        self.done_lines += 1
        out: list[StepProgress | int] = []
        line = self.job.lines[index]
        following = self.job.lines[index + 1] if index + 1 < len(self.job.lines) else None
        if following is None or following.step != line.step:
            self.completed_steps.append(line.step)
            out.append(line.step)
        if line.starts_step:
            out.insert(0, StepProgress(line.step, self.job.n_steps, self.job.step_names[line.step],
                                   self.eta_s(now)))
        return out

    @property
    def finished(self) -> bool:
        return self.done_lines == len(self.job.lines)

    @property
    def steps_done(self) -> int:
        return len(self.completed_steps)

    def eta_s(self, now: float | None = None) -> float:
        """Seconds to the end: predicted remaining robot time scaled by the pace measured so
        far (so a sped-up simulator gets honest ETAs)."""
        now = time.monotonic() if now is None else now
        lines = self.job.lines
        predicted_done = sum(line.predicted_ms for line in lines[:self.done_lines])
        remaining = sum(line.predicted_ms for line in lines[self.done_lines:])
        if predicted_done > 0:
            pace = (now - self.started) / (predicted_done / 1000.0)
            return remaining / 1000.0 * pace
        return remaining / 1000.0


def measured_lines(job: Job, spans: dict[int, tuple[int, int] | None]) -> list[float] | None:
    """Each line's robot time (ms) from the firmware's own clock: the (start, end) µs of every
    line, each line counting only the time past the latest end before it, so an overlapped
    start is counted once and the robot standing idle (a held stream) not at all. None unless
    every line of the job reported its motion."""
    if any(spans.get(i) is None for i in range(len(job.lines))):
        return None
    out = []
    latest = None
    for index in range(len(job.lines)):
        start, end = spans[index]  # type: ignore[misc]
        begin = start if latest is None else max(start, latest)
        out.append(max(0, end - begin) / 1000.0)
        latest = end if latest is None else max(latest, end)
    return out


def measured_steps(job: Job, spans: dict[int, tuple[int, int] | None]) -> list[float] | None:
    """Each step's robot time (ms): the sum of its lines' (`measured_lines`)."""
    lines = measured_lines(job, spans)
    if lines is None:
        return None
    per_step = [0.0] * job.n_steps
    for line, ms in zip(job.lines, lines, strict=True):
        per_step[line.step] += ms
    return per_step
