"""A running plan whose rest may still be replaced: the actuator's side of the rolling search.

While the robot executes the first primitives of a plan, the cell has the solver search the
rest again from the cube as the robot will then hold it. The plan runs with a *hold* at a
step: that step's commands are not sent to the firmware until the cell answers, with a
cheaper rest or with none, and names the next hold. A rest is replaced only while nothing of
it has been sent; when the robot has finished everything before a hold that nobody
released, the rest runs as it is (the robot never waits for a search) and a later amendment
of it is refused. No I/O: `robocell.services.actuator.service` puts it on the bus.
"""

from __future__ import annotations

from dataclasses import dataclass

from robocell.services.actuator.executor import Compiler, Job, PlanMismatch
from robocell.services.actuator.link import Tail


class AmendRefused(PlanMismatch):
    """An amendment that cannot apply to this plan as it stands (bad step, bad hold)."""


@dataclass
class RunningPlan:
    """The plan being executed: its primitives as they stand, its job and its stream's
    changeable tail."""

    plan_id: str
    puzzle: str
    profile: str
    primitives: list[str]
    job: Job
    tail: Tail
    amendments: int = 0
    """Rests replaced so far."""

    @classmethod
    def start(cls, plan_id: str, puzzle: str, profile: str, primitives: list[str], job: Job,
              hold_at: int | None) -> RunningPlan:
        """The plan as it starts, held before step ``hold_at`` (None: no hold).
        AmendRefused unless 0 < hold_at < the number of steps."""
        if hold_at is not None and not 0 < hold_at < job.n_steps:
            raise AmendRefused(f"hold_at {hold_at}: give a step from 1 to {job.n_steps - 1} "
                               f"(the plan has {job.n_steps})")
        hold = None if hold_at is None else job.first_line(hold_at)
        return cls(plan_id, puzzle, profile, list(primitives), job,
                   Tail(job.texts, hold, job.pause_points))

    @property
    def held_step(self) -> int | None:
        """The step the stream is held before, if any."""
        hold = self.tail.hold
        return None if hold is None else self.job.lines[hold].step

    def amend(self, compiler: Compiler, at_step: int, rest: list[str] | None,
              hold_at: int | None) -> tuple[bool, str]:
        """Replace the steps from ``at_step`` on by ``rest`` (None: keep them) and hold
        before ``hold_at`` next (None: run to the end). (True, "") when done; (False, why)
        when the robot has begun ``at_step`` or it is not the step held. AmendRefused (or
        PlanMismatch) for an amendment that cannot apply: nothing changes then."""
        if not 0 < at_step < len(self.primitives):
            raise AmendRefused(f"at_step {at_step}: give a step from 1 to "
                               f"{len(self.primitives) - 1} (the plan has "
                               f"{len(self.primitives)})")
        if at_step != self.held_step:
            return False, self._not_held(at_step)
        primitives = self.primitives if rest is None else self.primitives[:at_step] + rest
        if hold_at is not None and not at_step < hold_at < len(primitives):
            raise AmendRefused(f"hold_at {hold_at}: give a step after {at_step} and before "
                               f"the last ({len(primitives)})")
        if rest is not None and not rest:
            raise AmendRefused(f"the rest from step {at_step} is empty: send the steps that "
                               "finish the plan, or no rest to keep it")
        compiler.check_plan(self.puzzle, self.profile, primitives)
        job = compiler.plan(primitives)
        at_line = job.first_line(at_step)
        hold = None if hold_at is None else job.first_line(hold_at)

        def bookkeeping() -> None:
            if rest is not None:
                self.job.replace_from(at_step, job)
                self.primitives = primitives
                self.amendments += 1

        changed = self.tail.splice(at_line, None if rest is None else job.texts[at_line:],
                                   hold, job.pause_points if rest is not None else None,
                                   bookkeeping)
        return (True, "") if changed else (False, self._not_held(at_step))

    def _not_held(self, at_step: int) -> str:
        if self.job.first_line(at_step) in self.tail.released_idle:
            return (f"too late: the robot reached step {at_step} before the amendment; the "
                    "plan's rest runs as it was")
        held = self.held_step
        where = "no step is held" if held is None else f"the plan is held at step {held}"
        return f"step {at_step} is not held ({where}); the plan's rest runs as it is"
