"""`robocell firmware-sim` / `robocell actuator`: bad options are refused with the reason."""

from __future__ import annotations

import pytest

from robocell.cli import main


@pytest.mark.parametrize("argv, message", [
    (["firmware-sim", "--profile", "no-such-robot"], "no profile named 'no-such-robot'"),
    (["firmware-sim", "--speed", "0"], "--speed 0.0: must be positive"),
    (["firmware-sim", "--drop-rate", "1.5"], "--drop-rate 1.5: must be in [0, 1)"),
    (["firmware-sim", "--cube", "UUUU"], "--cube"),
    (["firmware-sim", "--pty", "--disconnect-after", "3"], "--disconnect-after needs TCP"),
    (["firmware-sim", "--listen", "udp://1.2.3.4"], "expected tcp://HOST:PORT"),
    (["firmware-sim", "--profile", "htm"], "motors: missing"),
    (["actuator", "--profile", "htm"], "motors: missing"),
])
def test_bad_options_are_refused_with_the_reason(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err
