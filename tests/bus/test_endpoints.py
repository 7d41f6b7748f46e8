"""Where clients and the broker meet: the base address, per-socket overrides, remote keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from robocell.common.bus import Endpoints
from robocell.common.bus.keys import CurveKey


def test_base_address_gives_four_ports_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROBOCELL_BUS", "ROBOCELL_BUS_SUB", "ROBOCELL_BUS_PUB", "ROBOCELL_BUS_CMD",
                 "ROBOCELL_BUS_TAP", "ROBOCELL_BUS_CURVE_KEY"):
        monkeypatch.delenv(name, raising=False)
    default = Endpoints.resolve()
    assert (default.subscribe, default.publish, default.command, default.tap) == (
        "tcp://127.0.0.1:7600", "tcp://127.0.0.1:7601", "tcp://127.0.0.1:7602",
        "tcp://127.0.0.1:7603")
    monkeypatch.setenv("ROBOCELL_BUS", "tcp://127.0.0.1:9000")
    monkeypatch.setenv("ROBOCELL_BUS_CMD", "ipc:///run/robocell/cmd")
    env = Endpoints.resolve()
    assert env.subscribe == "tcp://127.0.0.1:9000" and env.command == "ipc:///run/robocell/cmd"
    flag = Endpoints.resolve("tcp://127.0.0.1:9100")  # a flag beats the environment
    assert flag.command == "tcp://127.0.0.1:9102"


def test_bad_base_address_is_explained() -> None:
    with pytest.raises(ValueError, match="tcp://HOST:PORT"):
        Endpoints.resolve("localhost:7600")


def test_curve_key_makes_the_broker_remote_and_read_only(tmp_path: Path) -> None:
    broker = CurveKey.generate("broker")
    client = CurveKey.generate("laptop", broker.public)
    key_file, _ = client.write(tmp_path)
    remote = Endpoints.resolve("tcp://10.1.2.3:7700", key_file)
    assert remote.publish is None and remote.tap is None
    assert remote.subscribe == "tcp://10.1.2.3:7700" and remote.command == "tcp://10.1.2.3:7702"
    assert remote.curve is not None and remote.curve.broker == broker.public
