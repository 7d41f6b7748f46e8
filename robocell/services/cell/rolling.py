"""The rest of a plan searched again while the robot executes it: the rolling search.

A 3x3 robot's plan is the best its search found in the profile's ``search_budget_ms`` (the
budget where waiting and motion together are least). The robot then moves for seconds while
the solver idles. So the cell starts the plan *held* before the step that follows its first
layer turn, and meanwhile has the solver search the rest again, from the cube as the robot
will hold it then, for as long as the steps before the hold take (less a margin for the
messages). A cheaper rest replaces the old one (`actuator.amend`); either way the plan is
held again after the next layer turn, and so on to its end. The robot never waits for a
search: a hold it reaches unreleased lets the rest run as it is
(`robocell.services.actuator.amend`), and the cell stops rolling that plan.

`bench/robot_rolling.py` measures what it gains; the cell's ``--no-rolling`` turns it off.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from robocell.common.bus import CommandFailed
from robocell.common.moves import apply_to_facelets
from robocell.common.notation import ROTATIONS
from robocell.common.profile import Profile, ProfileError, load_profile
from robocell.robot.timing import predicted_plan_ms

MARGIN_S = 0.02
"""A rest's search ends this long before the robot needs it: the solver's reply and the
amendment cross the bus, and the actuator must send the step before the robot idles."""
MIN_WINDOW_S = 0.02
"""A window shorter than this is not searched (at a high simulation speed, say)."""
CALL_GRACE_S = 1.0
"""A search's command deadline beyond its budget."""
EPS = 1e-6


def turns_a_layer(profile: Profile, primitive: str) -> bool:
    """Whether the primitive turns a layer of the cube (not only re-orients it)."""
    return any(m.name not in ROTATIONS for m in profile.primitive(primitive).moves)


def hold_after(profile: Profile, primitives: list[str], start: int) -> int | None:
    """The step after the first primitive from ``start`` on that turns a layer; None when
    no step would be left after it."""
    for i in range(start, len(primitives)):
        if turns_a_layer(profile, primitives[i]):
            return i + 1 if i + 1 < len(primitives) else None
    return None


def rolling_profile(plan: dict[str, Any]) -> Profile | None:
    """The plan's robot profile when its rest is worth searching again: a 3x3 plan of a
    profile with a search budget (a 2x2 plan is optimal already); else None."""
    if plan.get("puzzle") != "3x3x3":
        return None
    try:
        profile = load_profile(plan["profile"])
    except (ProfileError, KeyError):
        return None
    return profile if profile.search_budget_s is not None else None


@dataclass
class Rolling:
    """One plan rolled: its primitives as they stand and what the rolling did."""

    plan: dict[str, Any]
    profile: Profile
    speed: float = 1.0
    primitives: list[str] = field(init=False)
    searches: int = 0
    replaced: int = 0
    stopped: str = ""
    """Why the rolling ended before the plan did (a late or refused amendment), if it did."""

    def __post_init__(self) -> None:
        self.primitives = list(self.plan["primitives"])

    def window_s(self, start: int, end: int) -> float:
        """Seconds the robot takes for steps [start, end), at the simulation speed, less
        the margin."""
        units = sum(self.profile.primitive(p).cost for p in self.primitives[start:end])
        return self.profile.cost_ms(units) / 1000.0 / self.speed - MARGIN_S

    def first_hold(self) -> int | None:
        """Where to hold the plan as it starts (None: not worth rolling)."""
        hold = hold_after(self.profile, self.primitives, 0)
        if hold is None or self.window_s(0, hold) < MIN_WINDOW_S:
            return None
        return hold

    def cost(self, start: int) -> float:
        return sum(self.profile.primitive(p).cost for p in self.primitives[start:])

    def run(self, call: Callable[[str, str, dict[str, Any], float], Any], hold: int,
            running: Callable[[], bool]) -> None:
        """Roll the plan started with ``hold``: search each rest while the robot executes
        the steps before it, amend, hold again, until the end or ``running()`` is false.
        ``call(service, command, args, timeout)`` is the bus's command call."""
        start, plan_id = 0, self.plan["plan_id"]
        while hold is not None and running():
            window = self.window_s(start, hold)
            rest = None
            if window >= MIN_WINDOW_S:
                rest = self._search(call, hold, window)
            primitives = self.primitives if rest is None else self.primitives[:hold] + rest
            following = hold_after(self.profile, primitives, hold)
            if following is not None and self.window_s(hold, following) < MIN_WINDOW_S:
                following = None
            args: dict[str, Any] = {"plan_id": plan_id, "at_step": hold}
            if rest is not None:
                args["primitives"] = rest
            if following is not None:
                args["hold_at"] = following
            try:
                reply = call("actuator", "amend", args, 2.0)
            except CommandFailed as exc:
                self.stopped = f"the actuator did not take the amendment: {exc}"
                return
            if not reply.get("accepted"):
                self.stopped = reply.get("reason") or "the amendment was refused"
                return
            if rest is not None:
                self.primitives, self.replaced = primitives, self.replaced + 1
            start, hold = hold, following

    def _search(self, call: Callable[[str, str, dict[str, Any], float], Any], at: int,
                window: float) -> list[str] | None:
        """A cheaper rest from step ``at`` (searched ``window`` seconds), or None."""
        moves = [m for p in self.primitives[:at] for m in self.profile.primitive(p).moves]
        facelets = apply_to_facelets(self.plan["facelets"], moves)
        self.searches += 1
        try:
            found = call("solver", "solve", {"facelets": facelets,
                                             "profile": self.profile.name,
                                             "budget_ms": round(window * 1000.0, 3)},
                         window + CALL_GRACE_S)
        except CommandFailed:
            return None  # the rest runs as it is; a busy solver is no fault of the plan
        if found["primitives"] and float(found["search"]["cost_units"]) < self.cost(at) - EPS:
            return list(found["primitives"])
        return None


def amended_plan(plan: dict[str, Any], primitives: list[str], amendments: int
                 ) -> dict[str, Any]:
    """The plan as the robot executed it after ``amendments`` rests were replaced: its
    primitives and predicted time; the face turns of the plan as found no longer describe
    it, so they are left out (``found_predicted_ms`` keeps what it predicted)."""
    profile = load_profile(plan["profile"])
    return {**plan, "primitives": primitives, "face_turns": [],
            "predicted_ms": round(predicted_plan_ms(profile, primitives), 3),
            "amendments": amendments,
            "found_predicted_ms": plan["predicted_ms"]}
