"""Typed messages: a payload of a declared topic as a Python type, made from and turned into
its payload here only (the declaration in :mod:`robocell.common.bus.topics` stays the
contract)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from robocell.common.bus.schema import validate_payload


@dataclass
class Plan:
    """The `solver.plan` message: a plan for one cube and one robot, in the robot's primitives.

    The solver's `solve` answers with it (and publishes it, latched, for watchers); the cell
    hands it to the actuator's `execute` as the ``plan`` argument. Its fields are the topic's
    fields (checked by the solver tests); `from_payload` validates against that declaration.
    """

    plan_id: str
    puzzle: str
    profile: str
    facelets: str
    primitives: list[str]
    face_turns: list[str]
    predicted_ms: float
    search: dict[str, Any]
    scan_id: str | None = None

    @classmethod
    def from_payload(cls, payload: Any) -> Plan:
        """The plan a payload carries; ValidationError naming the field that does not fit."""
        validate_payload("solver.plan", payload)
        return cls(**payload)

    def to_payload(self) -> dict[str, Any]:
        """The `solver.plan` payload (``scan_id`` only when known)."""
        payload = {"plan_id": self.plan_id, "puzzle": self.puzzle, "profile": self.profile,
                   "facelets": self.facelets, "primitives": list(self.primitives),
                   "face_turns": list(self.face_turns), "predicted_ms": self.predicted_ms,
                   "search": self.search}
        if self.scan_id is not None:
            payload["scan_id"] = self.scan_id
        return payload
