"""What a small robot host's processes load: the bus-only ones no numpy."""

from __future__ import annotations

import subprocess
import sys


def test_the_bus_only_processes_load_no_numpy():
    """The broker, `up`, the actuator and the monitor hold no numpy (~18 MB each on a small
    robot host: bench/results/two_hosts.txt); the facelet geometry imports it where made."""
    code = ("import sys, robocell.services.broker.service, robocell.deploy.cli, "
            "robocell.services.actuator.service, robocell.services.monitor.service; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numpy'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout
