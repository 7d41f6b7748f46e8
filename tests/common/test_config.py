"""The one deployment configuration: every command reads the ports the same way."""

from __future__ import annotations

import socket

import pytest

from robocell.common import config


def test_bus_address_follows_ROBOCELL_BUS_PORT_unless_ROBOCELL_BUS_names_one():
    assert config.bus_address({}) == "tcp://127.0.0.1:7600"
    assert config.bus_address({"ROBOCELL_BUS_PORT": "7610"}) == "tcp://127.0.0.1:7610"
    assert config.bus_address({"ROBOCELL_BUS": "tcp://cell:7700"}) == "tcp://cell:7700"
    assert config.bus_port({"ROBOCELL_BUS": "tcp://127.0.0.1:7620"}) == 7620
    assert list(config.bus_ports({"ROBOCELL_BUS_PORT": "7610"})) == [7610, 7611, 7612, 7613]


@pytest.mark.parametrize(("env", "named"), [
    ({"ROBOCELL_BUS_PORT": "76OO"}, "ROBOCELL_BUS_PORT='76OO'"),
    ({"ROBOCELL_BUS_PORT": "65535"}, "ROBOCELL_BUS_PORT='65535'"),  # no room for four
    ({"ROBOCELL_BUS_PORT": "7610", "ROBOCELL_BUS": "tcp://127.0.0.1:7600"}, "different"),
    ({"ROBOCELL_BUS_PORT": "7610", "ROBOCELL_BUS_PORT_LAST": "7603"},
     "ROBOCELL_BUS_PORT_LAST=7613"),
])
def test_a_bad_or_contradictory_bus_port_is_named(env, named):
    with pytest.raises(config.ConfigError, match=named):
        config.bus_port(env)


def test_sim_port_reads_the_old_firmware_variable_as_an_alias():
    assert config.sim_port({}) == 7700
    assert config.sim_port({"ROBOCELL_FIRMWARE_PORT": "7001"}) == 7001
    assert config.sim_port({"ROBOCELL_SIM_PORT": "7710", "ROBOCELL_FIRMWARE_PORT": "7001"}) == 7710
    assert config.sim_serial_url({"ROBOCELL_SIM_PORT": "7710"}) == "socket://127.0.0.1:7710"
    assert config.monitor_http({"ROBOCELL_MONITOR_PORT": "8775"}) == "127.0.0.1:8775"


def test_settled_environment_spells_out_what_compose_cannot_work_out():
    env = config.settled({"ROBOCELL_BUS": "tcp://127.0.0.1:7620",
                          "ROBOCELL_FIRMWARE_PORT": "7001"})
    assert env["ROBOCELL_BUS_PORT"] == "7620" and env["ROBOCELL_BUS_PORT_LAST"] == "7623"
    assert env["ROBOCELL_SIM_PORT"] == "7001" and env["ROBOCELL_MONITOR_PORT"] == "8765"
    assert env["ROBOCELL_FOXGLOVE_PORT"] == "8766"


def test_free_port_blocks_lie_outside_the_ports_the_os_gives_outgoing_connections():
    """A test or a bench that restarts a server on its block needs the block to stay free in
    between. Ports from the ephemeral range can be taken meanwhile as the local end of any
    outgoing connection -- even a client reconnecting to that very port, which then talks to
    itself -- so the blocks come from outside it."""
    ephemeral = config.ephemeral_ports()
    assert len(ephemeral) > 1000  # read from the OS (or its usual default)
    for count in (1, 4):
        for _ in range(50):
            base = config.free_port_block(count)
            block = range(base, base + count)
            assert not (set(block) & set(ephemeral)), (block, ephemeral)
            assert config.LOWEST_FREE_PORT <= base and block[-1] <= config.HIGHEST_PORT
            # and free right now
            for port in block:
                with socket.socket() as probe:
                    probe.bind((config.LOOPBACK, port))


def test_the_ephemeral_range_is_read_from_the_os(tmp_path, monkeypatch):
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("40000\t50000\n")
    monkeypatch.setattr(config, "EPHEMERAL_RANGE_FILE", ranges)
    assert config.ephemeral_ports() == range(40000, 50001)
    ranges.write_text("garbage\n")
    assert config.ephemeral_ports() == config.DEFAULT_EPHEMERAL_PORTS
