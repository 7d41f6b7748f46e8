"""The firmware build from a robot profile: the wiring is checked and named when wrong, the
generated header carries the profile's numbers, `robocell firmware build` reports flash and
RAM within half of the Mega, and `robocell firmware flash` runs avrdude with the board's
bootloader settings (checked by the command it would run: no board is attached here)."""

from __future__ import annotations

import re

import pytest

from robocell.cli import main
from robocell.common.profile import load_profile, parse_profile
from robocell.services.firmware.avr_build import FirmwareBuild, flash_command
from robocell.services.firmware.avr_wiring import WiringError, load_wiring, render_header

needs_avr = pytest.mark.usefixtures("avr_toolchain")
SHIPPED = [("soltvvo-2x2", "atmega2560"), ("six-motor", "atmega2560"),
           ("tilt-spin", "atmega2560"), ("six-motor", "atmega328p"), ("tilt-spin", "atmega328p")]


def soltvvo_with(old: str, new: str):
    path = load_profile("soltvvo-2x2").path
    text = path.read_text()
    assert old in text
    return parse_profile(text.replace(old, new), path)


@pytest.mark.parametrize("old, new, message", [
    ("gF = { pwm = 8 }\n", "", "wiring.atmega2560.gF: missing: motor gF is not wired"),
    ("gF = { pwm = 8 }", "gF = { pwm = 9 }", "pin 9 has no 16-bit PWM output"),
    ("F = { step = 26, dir = 28 }", "F = { step = 26, dir = 55 }",
     "wiring.atmega2560.F.dir: pin 55 is already R.dir"),
    ("F = { step = 26, dir = 28 }", "F = { step = 1, dir = 28 }",
     "pin 1 is the serial line to the host"),
    ("F = { step = 26, dir = 28 }", "F = { step = 99, dir = 28 }",
     "expected an Arduino pin number 0..69"),
    ("link = 19", "link = 19\nspeaker = 20", "unknown keys ['speaker']"),
])
def test_a_wrong_wiring_is_named(old, new, message):
    with pytest.raises(WiringError, match=re.escape(message)):
        load_wiring(soltvvo_with(old, new))


def test_a_robot_whose_pins_do_not_fit_the_uno_says_so():
    with pytest.raises(WiringError, match="no pin map for the Arduino Uno"):
        load_wiring(load_profile("soltvvo-2x2"), "atmega328p")


def test_the_header_carries_the_profiles_numbers():
    header = render_header(load_profile("tilt-spin"), "atmega328p")
    assert "#define N_STEPPERS 1" in header and "#define N_SERVOS 2" in header
    assert '"table"' in header and '"cover"' in header and '"flip"' in header
    # the turntable's STEP on Uno pin 2 = PD2; the cover on pin 9 = OC1A; homes in mdeg
    assert "{&PORTD, &DDRD, _BV(2)}" in header
    assert "{&OCR1A, 500, 2500, 180, 60000L, 600, 50}" in header
    # a quarter turn of 3200 steps per revolution aligns HOME
    assert "a[] = {800}" in header


@needs_avr
@pytest.mark.parametrize("profile, mcu", SHIPPED)
def test_build_reports_flash_and_ram_within_half_of_the_board(profile, mcu, capsys):
    assert main(["firmware", "build", "--profile", profile, "--mcu", mcu]) == 0
    out = capsys.readouterr().out
    flash = re.search(r"flash (\d+) of (\d+) bytes", out)
    ram = re.search(r"RAM (\d+) of (\d+) bytes", out)
    assert flash and ram, out
    assert int(flash.group(1)) > 4000 and int(ram.group(1)) > 500
    if mcu == "atmega2560":  # the target: at most half of the Mega
        assert int(flash.group(1)) <= int(flash.group(2)) // 2
        assert int(ram.group(1)) <= int(ram.group(2)) // 2
    assert re.search(r"built \S+firmware\.elf and \S+firmware\.hex", out)


@needs_avr
def test_flash_dry_run_prints_the_avrdude_command(capsys):
    assert main(["firmware", "flash", "--profile", "six-motor", "--mcu", "atmega328p",
                 "--port", "/dev/ttyACM7", "--dry-run"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("avrdude -p m328p -c arduino -P /dev/ttyACM7 -b 115200 -D -U flash:w:")
    assert line.endswith("six-motor-atmega328p/firmware.hex:i")


@needs_avr
def test_flash_to_a_missing_port_is_refused_naming_it(capsys):
    assert main(["firmware", "flash", "--profile", "tilt-spin", "--port", "/dev/ttyNOPE"]) == 2
    assert "--port /dev/ttyNOPE: no such device" in capsys.readouterr().err


def test_the_mega_is_flashed_through_its_stk500v2_bootloader(tmp_path):
    build = FirmwareBuild("soltvvo-2x2", "atmega2560", tmp_path / "f.elf", tmp_path / "f.hex",
                          1, 1)
    assert flash_command(build, "/dev/ttyACM0") == [
        "avrdude", "-p", "m2560", "-c", "wiring", "-P", "/dev/ttyACM0", "-b", "115200", "-D",
        "-U", f"flash:w:{tmp_path / 'f.hex'}:i"]


@pytest.mark.parametrize("argv, message", [
    (["firmware-sim", "--trace", "t.txt"], "--trace and --no-twin need --avr"),
    (["firmware-sim", "--avr", "--queue", "4"], "the AVR firmware's queue is fixed"),
    (["firmware", "build", "--profile", "htm"], "motors: missing"),
])
def test_bad_firmware_options_are_refused_with_the_reason(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err
