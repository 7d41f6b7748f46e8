"""`robocell firmware-sim` / `robocell actuator`: bad options are refused with the reason."""

from __future__ import annotations

import selectors
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from support.bus import (
    free_base_port,
    robocell_cmd,
    robocell_env,
    stop_process,
    wait_for_broker,
)

from robocell.cli import main
from robocell.common.bus import Endpoints

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("argv, message", [
    (["firmware-sim", "--profile", "no-such-robot"], "no profile named 'no-such-robot'"),
    (["firmware-sim", "--speed", "0"], "--speed 0.0: must be positive"),
    (["firmware-sim", "--drop-rate", "1.5"], "--drop-rate 1.5: must be in [0, 1)"),
    (["firmware-sim", "--cube", "UUUU"], "--cube"),
    (["firmware-sim", "--pty", "--disconnect-after", "3"], "--disconnect-after needs TCP"),
    (["firmware-sim", "--listen", "udp://1.2.3.4"], "expected tcp://HOST:PORT"),
    (["firmware-sim", "--profile", "htm"], "motors: missing"),
    (["actuator", "--profile", "htm"], "motors: missing"),
    (["actuator", "--serial", "bogus://x"], "unknown scheme 'bogus'"),
])
def test_bad_options_are_refused_with_the_reason(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def first_line(proc: subprocess.Popen, timeout: float) -> tuple[str, float]:
    """The first line the process writes on stderr and when (monotonic), or ("", inf)."""
    selector = selectors.DefaultSelector()
    selector.register(proc.stderr, selectors.EVENT_READ)
    if selector.select(timeout):
        return proc.stderr.readline(), time.monotonic()
    return "", float("inf")


def test_a_missing_serial_device_is_named_at_once_and_health_fails(tmp_path: Path):
    base = f"tcp://127.0.0.1:{free_base_port()}"
    env = robocell_env(base)
    device = str(tmp_path / "ttyUSB9")
    broker = subprocess.Popen(robocell_cmd("broker"), env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    actuator = None
    try:
        wait_for_broker(Endpoints.from_base(base))
        started = time.monotonic()
        actuator = subprocess.Popen(robocell_cmd("actuator", "--serial", device), env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True)
        line, at = first_line(actuator, 15.0)
        print(f"\n--serial {device}: reason printed {at - started:.2f} s after the start "
              "(Python and imports included)")
        assert device in line and "no such device" in line and "exists" in line
        assert "Traceback" not in line
        # the reason comes as soon as the device is tried (the process start takes the rest)
        health = subprocess.run(robocell_cmd("health", "actuator", "--wait", "5"), env=env,
                                capture_output=True, text=True, timeout=60)
        assert health.returncode != 0
        assert "no such device" in health.stderr
        assert actuator.poll() is None, "the actuator keeps trying"
    finally:
        if actuator is not None:
            stop_process(actuator)
        stop_process(broker)


def test_a_bogus_serial_url_exits_with_the_reason_and_no_traceback():
    proc = subprocess.run(robocell_cmd("actuator", "--serial", "bogus://x"),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "unknown scheme 'bogus'" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_robocell_up_on_hardware_names_the_missing_serial_device(tmp_path: Path):
    """`robocell up` (hardware) stops with the actuator's reason instead of waiting out its
    ready timeout (183 s before) and pointing at an empty output."""
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    compose["services"] = {name: spec for name, spec in compose["services"].items()
                           if name in ("broker", "actuator")}
    path = tmp_path / "compose.yml"
    path.write_text(yaml.safe_dump(compose))
    port = free_base_port()
    device = str(tmp_path / "ttyUSB9")
    env = {**robocell_env(f"tcp://127.0.0.1:{port}"), "ROBOCELL_SERIAL": device,
           "ROBOCELL_BUS_PORT": str(port), "ROBOCELL_BUS_PORT_LAST": str(port + 3)}
    env.pop("ROBOCELL_BUS", None)
    started = time.monotonic()
    proc = subprocess.run(robocell_cmd("up", "--compose", str(path)), env=env,
                          capture_output=True, text=True, timeout=150)
    print(f"\nrobocell up named the reason after {time.monotonic() - started:.1f} s")
    assert proc.returncode != 0
    assert f"actuator is not ready: cannot open {device}: no such device" in proc.stderr
