"""The running cell from the terminal: `robocell cell scramble`, `robocell cycle` and
`robocell bus call` as a user types them, against the simulated cell of docker-compose.yml."""

from __future__ import annotations

import json
import subprocess

from support.bus import robocell_cmd, robocell_env
from support.cell import bus_address

SCRAMBLED_2X2 = "UUURBBDRRDRFDLDBFFLFLLUB"
"""R U F' applied to a solved 2x2x2 (`robocell cube apply "R U F'" --size 2`)."""


def run(env: dict, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(robocell_cmd(*args), env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_scramble_then_cycle_from_the_terminal_solves_the_twin_and_bus_call_plans(
        launch_cell) -> None:
    with launch_cell("soltvvo-2x2") as cell:
        env = robocell_env(bus_address(cell))

        scrambled = run(env, "cell", "scramble", "--seed", "3")
        assert scrambled.returncode == 0, scrambled.stderr
        assert scrambled.stdout.startswith("twin scrambled: ")
        facelets = scrambled.stdout.split()[2]
        assert len(facelets) == 24 and facelets != "U" * 4 + "R" * 4 + "F" * 4 + "D" * 4 \
            + "L" * 4 + "B" * 4
        again = run(env, "bus", "call", "firmware-sim", "scramble", '{"seed": 3}')
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["facelets"] == facelets  # the seed decides

        cycle = run(env, "cycle")
        assert cycle.returncode == 0, cycle.stdout + cycle.stderr
        assert ": SOLVED in " in cycle.stdout

        planned = run(env, "bus", "call", "solver", "solve",
                      json.dumps({"facelets": SCRAMBLED_2X2}))
        assert planned.returncode == 0, planned.stderr
        plan = json.loads(planned.stdout)
        assert plan["primitives"], plan
        assert plan["predicted_ms"] > 0

        refused = run(env, "bus", "call", "solver", "solve", '{"facelets": "UUUU"}')
        assert refused.returncode == 1
        assert "solver.solve failed: " in refused.stderr
