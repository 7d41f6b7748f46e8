"""Building the AVR firmware and its simavr harness, and the avrdude command that flashes it.

`build_firmware` writes the generated header and compiles ``firmware/src`` with avr-gcc into
``build/firmware/<profile>-<mcu>/firmware.{elf,hex}`` (git-ignored, rebuilt when a source
or the profile changes) and reads flash and RAM use with avr-size. `build_harness` compiles
``firmware/harness/avrsim.c`` against libsimavr. `flash_command` is the avrdude command line
for a board on a serial port.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from robocell.common.paths import is_checkout, user_cache_dir
from robocell.common.profile import Profile
from robocell.errors import RobocellError
from robocell.services.firmware.avr_wiring import BOARDS, DEFAULT_MCU, F_CPU, render_header

REPO = Path(__file__).resolve().parents[3]
FIRMWARE_DIR = Path(__file__).with_name("sources")
"""The C sources and the harness: ``firmware/`` of a checkout (this links to it), shipped in the
wheel as package data."""
BUILD_DIR = Path(os.environ.get("ROBOCELL_FIRMWARE_BUILD") or (
    REPO / "build" / "firmware" if is_checkout() else user_cache_dir() / "firmware"))
AVR_PACKAGES = "gcc-avr avr-libc binutils-avr"
SIM_PACKAGES = "simavr libsimavr-dev libsimavrparts1 libelf-dev"
CFLAGS = ("-Os", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-ffunction-sections",
          "-fdata-sections", "-Wl,--gc-sections")
AVRDUDE_PART = {"atmega2560": "m2560", "atmega328p": "m328p"}


class ToolchainError(RobocellError):
    """The AVR toolchain or simavr is missing, or a build step failed."""


@dataclass(frozen=True)
class FirmwareBuild:
    """The outputs of one build and their size."""

    profile: str
    mcu: str
    elf: Path
    hex: Path
    flash_bytes: int
    ram_bytes: int

    @property
    def flash_total(self) -> int:
        return BOARDS[self.mcu].flash

    @property
    def ram_total(self) -> int:
        return BOARDS[self.mcu].ram

    def summary(self) -> str:
        return (f"{self.profile} on {BOARDS[self.mcu].name} ({self.mcu}): "
                f"flash {self.flash_bytes} of {self.flash_total} bytes "
                f"({100.0 * self.flash_bytes / self.flash_total:.1f} %), "
                f"RAM {self.ram_bytes} of {self.ram_total} bytes "
                f"({100.0 * self.ram_bytes / self.ram_total:.1f} %) before the stack")


def missing_tools(names: tuple[str, ...]) -> list[str]:
    return [name for name in names if shutil.which(name) is None]


def require_avr_toolchain() -> None:
    missing = missing_tools(("avr-gcc", "avr-objcopy", "avr-size"))
    if missing or not Path("/usr/lib/avr/include/avr/io.h").exists():
        raise ToolchainError(f"the AVR toolchain is missing ({', '.join(missing) or 'avr-libc'});"
                             f" install it with: apt-get install {AVR_PACKAGES}")


def simavr_available() -> bool:
    return (shutil.which("gcc") is not None
            and Path("/usr/include/simavr/sim_avr.h").exists()
            and any(Path(d).glob("libsimavr.so*") for d in
                    ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib")))


def _run(command: list[str], what: str) -> str:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ToolchainError(f"{what} failed ({' '.join(command[:2])} ...):\n"
                             f"{result.stderr.strip() or result.stdout.strip()}")
    return result.stdout


def _stale(target: Path, sources: list[Path]) -> bool:
    if not target.exists():
        return True
    built = target.stat().st_mtime
    return any(source.stat().st_mtime > built for source in sources)


def _sources() -> list[Path]:
    if not (FIRMWARE_DIR / "src").is_dir():
        raise ToolchainError(f"no firmware sources in {FIRMWARE_DIR / 'src'}; build from a "
                             "clone of the repository")
    return sorted((FIRMWARE_DIR / "src").glob("*.[ch]"))


def output_dir(profile: Profile, mcu: str) -> Path:
    return BUILD_DIR / f"{profile.name}-{mcu}"


def build_firmware(profile: Profile, mcu: str = DEFAULT_MCU) -> FirmwareBuild:
    """Compile the firmware for a profile and board (skipped when nothing changed)."""
    header = render_header(profile, mcu)  # checks the wiring first: a clear error, no tools
    require_avr_toolchain()
    out = output_dir(profile, mcu)
    out.mkdir(parents=True, exist_ok=True)
    header_path = out / "robot_config.h"
    if not header_path.exists() or header_path.read_text() != header:
        header_path.write_text(header)
    elf, hex_path = out / "firmware.elf", out / "firmware.hex"
    sources = _sources()
    if _stale(elf, [*sources, header_path]):
        _run(["avr-gcc", f"-mmcu={mcu}", f"-DF_CPU={F_CPU}UL", *CFLAGS, f"-I{out}",
              "-o", str(elf), *(str(s) for s in sources if s.suffix == ".c")], "avr-gcc")
        _run(["avr-objcopy", "-O", "ihex", "-R", ".eeprom", str(elf), str(hex_path)],
             "avr-objcopy")
    flash, ram = firmware_size(elf)
    return FirmwareBuild(profile.name, mcu, elf, hex_path, flash, ram)


def firmware_size(elf: Path) -> tuple[int, int]:
    """(flash, static RAM) bytes of an ELF: text+data and data+bss, as avr-size counts."""
    text = _run(["avr-size", "-A", str(elf)], "avr-size")
    sizes = {m.group(1): int(m.group(2))
             for m in re.finditer(r"^\.(\w+)\s+(\d+)\s+\d+", text, re.MULTILINE)}
    return (sizes.get("text", 0) + sizes.get("data", 0),
            sizes.get("data", 0) + sizes.get("bss", 0) + sizes.get("noinit", 0))


def build_harness() -> Path:
    """Compile the simavr harness (once; again when its source changes)."""
    if not simavr_available():
        raise ToolchainError(f"simavr is missing; install it with: apt-get install {SIM_PACKAGES}")
    source = FIRMWARE_DIR / "harness" / "avrsim.c"
    binary = BUILD_DIR / "avrsim"
    if _stale(binary, [source]):
        BUILD_DIR.mkdir(parents=True, exist_ok=True)
        _run(["gcc", "-O2", "-Wall", "-Wextra", "-o", str(binary), str(source),
              "-lsimavr", "-lelf"], "building the simavr harness")
    return binary


def flash_command(build: FirmwareBuild, port: str, baud: int | None = None) -> list[str]:
    """The avrdude command that writes a build to a board on ``port`` through its
    bootloader (the Mega's stk500v2 'wiring' bootloader, the Uno's optiboot 'arduino')."""
    board = BOARDS[build.mcu]
    return ["avrdude", "-p", AVRDUDE_PART[build.mcu], "-c", board.programmer, "-P", port,
            "-b", str(baud or board.baud), "-D", "-U", f"flash:w:{build.hex}:i"]
