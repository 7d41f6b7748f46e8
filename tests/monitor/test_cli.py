"""`robocell monitor` refuses bad options with a clear message instead of starting."""

from __future__ import annotations

import pytest

from robocell.cli import main


@pytest.mark.parametrize(("argv", "expected"), [
    (["monitor", "--http", "8765"], "must look like HOST:PORT"),
    (["monitor", "--http", "127.0.0.1:99999"], "must look like HOST:PORT"),
    (["monitor", "--token", "short"], "at least 16 characters"),
    (["monitor", "--broker", "udp://cell:7600"], "tcp://HOST:PORT"),
    (["monitor", "--broker", "tcp://cell:7600", "--curve-key", "/nonexistent/laptop.key"],
     "laptop.key"),
])
def test_bad_options_are_refused_with_what_to_do(argv, expected, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("robocell monitor: ")
    assert expected in err
