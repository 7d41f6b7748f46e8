"""The README's recipes work as written: the monitor token it shows is one the monitor takes,
the second cell it describes moves every port the first one uses, the hint given when the bus
port is taken names every port to move, and the docs' remote endpoints are bus ports.

Real sockets on loopback for the taken port; the launcher is only asked which ports it needs.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from robocell.common import config
from robocell.common.operator_control import check_configured_token
from robocell.deploy.launcher import Launcher, PortsInUseError

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DOCS = {p.name: p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}
PORT_VARIABLES = (config.BUS_PORT_ENV, config.SIM_PORT_ENV, config.MONITOR_PORT_ENV,
                  config.FOXGLOVE_PORT_ENV)


def test_the_readme_monitor_token_is_one_the_monitor_accepts():
    tokens = re.findall(r"ROBOCELL_MONITOR_TOKEN=(\S+)", README)
    assert tokens, "the README shows no monitor token"
    for token in tokens:
        assert check_configured_token(token) == token


def _second_cell_recipe() -> dict[str, str]:
    found = re.search(r"A second cell on the same host\D*`([^`]+)`", README.replace("\n", " "))
    assert found, "the README has no second-cell recipe"
    return dict(re.findall(r"(ROBOCELL_\w+)=(\S+)", found.group(1)))


def _ports(launcher: Launcher) -> set[int]:
    return {p for need in launcher.ports() for p in (need.span or [need.port])}


def test_the_readme_second_cell_shares_no_port_with_the_first():
    first = Launcher("sim", {})
    second = Launcher("sim", _second_cell_recipe())
    assert _ports(first) and not _ports(first) & _ports(second)


def test_a_taken_bus_port_is_answered_with_every_port_variable_to_move():
    bus, sim, monitor, foxglove = config.free_port_blocks(config.BUS_PORT_COUNT, 1, 1, 1)
    env = {config.BUS_PORT_ENV: str(bus), config.SIM_PORT_ENV: str(sim),
           config.MONITOR_PORT_ENV: str(monitor), config.FOXGLOVE_PORT_ENV: str(foxglove)}
    launcher = Launcher("sim", env)
    with socket.socket() as other:
        other.bind((config.LOOPBACK, bus + 2))
        other.listen()
        with pytest.raises(PortsInUseError) as refused:
            launcher.check_ports()
    hint = re.search(r"run this one beside it with (.*)", str(refused.value))
    assert hint, str(refused.value)
    suggested = dict(re.findall(r"(ROBOCELL_\w+)=(\d+)", hint.group(1)))
    assert set(suggested) == set(PORT_VARIABLES), hint.group(1)
    assert int(suggested[config.BUS_PORT_ENV]) != bus
    moved = Launcher("sim", suggested)
    assert not _ports(moved) & {*range(bus, bus + 4), sim, monitor, foxglove}


def test_bus_addresses_in_the_docs_are_not_another_service_port():
    others = {config.DEFAULT_SIM_PORT, config.DEFAULT_MONITOR_PORT, config.DEFAULT_FOXGLOVE_PORT}
    wrong = [(name, url) for name, text in DOCS.items()
             for url, port in re.findall(r"(tcp://[\w.\-]+:(\d+))", text)
             if int(port) in others or any(int(port) + k in others for k in range(4))]
    assert not wrong, wrong
