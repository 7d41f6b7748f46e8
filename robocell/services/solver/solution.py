"""A solution: what the solver library returns for one cube and one robot profile.

The bus carries it as a plan, `robocell.common.bus.payloads.Plan` (see
`robocell.services.solver.planning.plan_message`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from robocell.common.notation import Move


@dataclass
class Solution:
    """The library's answer. ``moves`` are face turns (and rotations) in the robot's frame that
    take ``facelets`` to solved (in any orientation when the profile allows it);
    ``primitives`` name the profile's primitives in execution order; ``cost`` is the robot
    time in profile units (for metric profiles: the move count), the price the search
    minimised; ``robot_ms`` the robot time its motion model predicts for the primitives
    (`robocell.robot.timing.predicted_plan_ms`, set by `robocell.services.solver.api.solve`):
    what the robot is expected to take, and what its measured time is checked against."""

    puzzle: str
    profile: str
    facelets: str
    primitives: list[str]
    moves: list[Move]
    cost: float
    cost_ms: float
    solve_ms: float
    optimal: bool = False
    stats: dict = field(default_factory=dict)
    robot_ms: float | None = None

    @property
    def length(self) -> int:
        return len(self.moves)

    def to_dict(self) -> dict:
        """The solution as plain data (what a worker process sends back): the moves as a
        list of their names in standard notation."""
        return {
            "puzzle": self.puzzle, "profile": self.profile, "facelets": self.facelets,
            "primitives": list(self.primitives), "moves": [str(m) for m in self.moves],
            "length": self.length, "cost": self.cost, "cost_ms": self.cost_ms,
            "robot_ms": self.robot_ms, "solve_ms": round(self.solve_ms, 4),
            "optimal": self.optimal, "stats": self.stats,
        }
