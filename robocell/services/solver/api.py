"""The solver's one entry point: any valid cube + a robot profile -> the plan for that robot."""

from __future__ import annotations

from robocell.common.facelets import relabel_by_centres
from robocell.common.profile import load_profile
from robocell.common.validation import validate
from robocell.robot.timing import predicted_plan_ms
from robocell.services.solver.solution import Solution

DEFAULT_PROFILE = {2: "htm", 3: "htm"}


def solve(facelets: str, profile: str | None = None, *, max_length: int | None = None,
          timeout: float | None = None, part: tuple[int, int] = (0, 1)) -> Solution:
    """Plan for a cube given as a facelet string (validated first: an impossible cube raises
    `robocell.common.validation.CubeStateError` with its specific code).

    2x2x2: optimal for the profile, read off full tables (``max_length``/``timeout`` unused).
    3x3x3: two-phase search for at most ``timeout`` seconds or until a solution of at most
    ``max_length`` moves; with a robot profile the least robot time among solutions found.
    ``part`` = (k, n) splits a 3x3 search over n processes: this call searches share k.
    """
    state = validate(facelets)
    size = state.size
    chosen = load_profile(profile or DEFAULT_PROFILE[size])
    if not chosen.fits(size):
        raise ValueError(
            f"profile {chosen.name} is for a {chosen.puzzle} cube, but this cube is "
            f"{size}x{size}x{size}; pick a profile with puzzle = \"{size}x{size}\" or \"any\"")
    if size == 2:
        # lazy: numba and the 2x2 tables (~0.6 s); `robocell cube` loads this module
        from robocell.services.solver.cube2.solver import solve_2x2

        plan = solve_2x2(facelets, chosen)
    else:
        # lazy: numba and the two-phase tables; a 2x2 solve needs neither
        from robocell.services.solver.cube3.solver import solve_3x3

        # a cube sitting rotated (centres not in U R F D L B order) is solved in the robot's
        # frame: name each colour after the position of its centre first
        plan = solve_3x3(relabel_by_centres(facelets), chosen, max_length=max_length,
                         timeout=timeout, part=part)
        plan.facelets = facelets
    plan.robot_ms = predicted_plan_ms(chosen, plan.primitives)
    return plan
