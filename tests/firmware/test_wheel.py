"""What an installed package has: the firmware sources and the simavr harness travel in the
wheel, so `robocell firmware build` and `--firmware avr` work without a checkout; a build from
an installation writes to the user's cache, not into site-packages.

A real wheel built from this checkout (pip, no network: no dependencies are fetched).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from robocell.services.firmware import avr_build

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_carries_the_firmware_sources_and_harness(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(tmp_path), str(ROOT)], check=True, timeout=600, capture_output=True)
    wheel = next(tmp_path.glob("robocell-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    here = Path("robocell/services/firmware/sources")
    for source in [*(ROOT / "firmware" / "src").iterdir(), ROOT / "firmware/harness/avrsim.c"]:
        assert str(here / source.relative_to(ROOT / "firmware")) in names, source.name


def test_the_build_reads_the_sources_it_ships():
    assert (avr_build.FIRMWARE_DIR / "src" / "firmware.h").is_file()
    assert avr_build.FIRMWARE_DIR == Path(avr_build.__file__).with_name("sources")
