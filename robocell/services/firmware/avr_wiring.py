"""The robot profile turned into the firmware's generated header (``robot_config.h``): the
pin map of the board (the profile's ``[wiring.<mcu>]`` table), steps per turn, speeds,
accelerations as step-time tables, and the servos' angles and pulse widths.

Wiring keys (docs/hardware.md): for each stepper ``NAME = { step = PIN, dir = PIN }``
(optional ``invert = true``), for each servo ``NAME = { pwm = PIN }`` (optional ``min_us``,
``max_us``, ``range_deg``: the pulse at 0 degrees, at ``range_deg`` degrees), and optional
``enable`` (driver enable, active low), ``fault`` (stall input, active low) and ``link``
(host-present input, low when the host is gone). Pins are Arduino pin numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from robocell.common.profile import Profile, ProfileError
from robocell.robot.motion import Motor, load_motors

F_CPU = 16_000_000
STEP_TIMER_HZ = F_CPU // 8
SUBTICKS = 256
SERVO_PERIOD_US = 20_000

# Arduino pin number -> (port letter, bit)
_MEGA_PORTS = (
    "E0 E1 E4 E5 G5 E3 H3 H4 H5 H6 B4 B5 B6 B7 J1 J0 H1 H0 D3 D2 D1 D0 "
    "A0 A1 A2 A3 A4 A5 A6 A7 C7 C6 C5 C4 C3 C2 C1 C0 D7 G2 G1 G0 L7 L6 L5 L4 L3 L2 L1 L0 "
    "B3 B2 B1 B0 F0 F1 F2 F3 F4 F5 F6 F7 K0 K1 K2 K3 K4 K5 K6 K7").split()
_UNO_PORTS = ("D0 D1 D2 D3 D4 D5 D6 D7 B0 B1 B2 B3 B4 B5 C0 C1 C2 C3 C4 C5").split()


@dataclass(frozen=True)
class Board:
    """A microcontroller the firmware builds for."""

    mcu: str
    name: str
    ports: tuple[str, ...]
    pwm: dict[int, tuple[int, str]]   # pin -> (16-bit timer, channel A/B/C)
    reserved: frozenset[int]          # UART0 pins
    bandgap_mux: int
    flash: int
    ram: int
    programmer: str
    baud: int


BOARDS = {
    "atmega2560": Board(
        "atmega2560", "Arduino Mega 2560", tuple(_MEGA_PORTS),
        {11: (1, "A"), 12: (1, "B"), 13: (1, "C"), 5: (3, "A"), 2: (3, "B"), 3: (3, "C"),
         6: (4, "A"), 7: (4, "B"), 8: (4, "C"), 46: (5, "A"), 45: (5, "B"), 44: (5, "C")},
        frozenset({0, 1}), 0b11110, 262_144, 8_192, "wiring", 115_200),
    "atmega328p": Board(
        "atmega328p", "Arduino Uno", tuple(_UNO_PORTS), {9: (1, "A"), 10: (1, "B")},
        frozenset({0, 1}), 0b1110, 32_768, 2_048, "arduino", 115_200),
}
DEFAULT_MCU = "atmega2560"


class WiringError(ProfileError):
    """A profile's wiring that the firmware cannot use on this board."""


@dataclass(frozen=True)
class Pin:
    """One Arduino pin as its AVR port and bit."""

    number: int
    port: str
    bit: int

    @property
    def label(self) -> str:
        return f"P{self.port}{self.bit}"


@dataclass(frozen=True)
class Wiring:
    """The checked pin map of one profile on one board."""

    board: Board
    steppers: tuple[tuple[Motor, Pin, Pin, bool], ...]   # motor, step, dir, inverted
    servos: tuple[tuple[Motor, Pin, int, int, int], ...]  # motor, pwm, min_us, max_us, range
    enable: Pin | None
    fault: Pin | None
    link: Pin | None

    @property
    def motor_names(self) -> list[str]:
        return [m.name for m, *_ in self.steppers] + [m.name for m, *_ in self.servos]


def _pin(board: Board, value: object, where: str, path: object) -> Pin:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(board.ports):
        raise WiringError(path, where, f"expected an Arduino pin number 0..{len(board.ports) - 1} "
                          f"of the {board.name}")
    if value in board.reserved:
        raise WiringError(path, where, f"pin {value} is the serial line to the host (UART0)")
    text = board.ports[value]
    return Pin(value, text[0], int(text[1]))


def load_wiring(profile: Profile, mcu: str = DEFAULT_MCU) -> Wiring:
    """The ``[wiring.<mcu>]`` table of a profile, checked: every motor wired, no pin used
    twice, servos on hardware PWM outputs (WiringError naming file, key and problem)."""
    if mcu not in BOARDS:
        raise WiringError(profile.path, "mcu", f"{mcu!r} is not one of {', '.join(BOARDS)}")
    board = BOARDS[mcu]
    motors = load_motors(profile)
    path = profile.path
    raw = profile.data.get("wiring", {}).get(mcu)
    if not isinstance(raw, dict):
        raise WiringError(path, f"wiring.{mcu}", f"missing: this robot has no pin map for the "
                          f"{board.name}" + (" (its pins do not fit that board)"
                                             if profile.data.get("wiring") else ""))
    used: dict[int, str] = {}

    def take(value: object, where: str) -> Pin:
        pin = _pin(board, value, f"wiring.{mcu}.{where}", path)
        if pin.number in used:
            raise WiringError(path, f"wiring.{mcu}.{where}",
                              f"pin {pin.number} is already {used[pin.number]}")
        used[pin.number] = where
        return pin

    steppers, servos = [], []
    for name, motor in motors.items():
        spec = raw.get(name)
        if not isinstance(spec, dict):
            raise WiringError(path, f"wiring.{mcu}.{name}", f"missing: motor {name} is not wired")
        if motor.kind == "stepper":
            steppers.append((motor, take(spec.get("step"), f"{name}.step"),
                             take(spec.get("dir"), f"{name}.dir"), bool(spec.get("invert"))))
        else:
            pin = take(spec.get("pwm"), f"{name}.pwm")
            if pin.number not in board.pwm:
                raise WiringError(path, f"wiring.{mcu}.{name}.pwm",
                                  f"pin {pin.number} has no 16-bit PWM output; servos go on "
                                  f"{', '.join(str(p) for p in sorted(board.pwm))}")
            lo, hi, span = (spec.get("min_us", 500), spec.get("max_us", 2500),
                            spec.get("range_deg", 180))
            if not (isinstance(lo, int) and isinstance(hi, int) and 0 < lo < hi < 20_000
                    and isinstance(span, int) and span > 0):
                raise WiringError(path, f"wiring.{mcu}.{name}",
                                  "min_us < max_us (whole microseconds) and range_deg > 0")
            servos.append((motor, pin, lo, hi, span))
    unknown = set(raw) - set(motors) - {"enable", "fault", "link"}
    if unknown:
        raise WiringError(path, f"wiring.{mcu}", f"unknown keys {sorted(unknown)}: wire motors "
                          "of [motors] or enable/fault/link")
    if len(steppers) > 8 or len(motors) > 16:
        raise WiringError(path, "motors", "the firmware drives at most 8 steppers, 16 motors")
    extra = {key: take(raw[key], key) if key in raw else None
             for key in ("enable", "fault", "link")}
    return Wiring(board, tuple(steppers), tuple(servos), extra["enable"], extra["fault"],
                  extra["link"])


def _stepper_tables(motor: Motor) -> dict:
    """Step-time tables and constants of one stepper (units: subticks of the step timer)."""
    scale = STEP_TIMER_HZ * SUBTICKS
    a = motor.accel_dps2 * motor.steps_per_rev / 360.0
    v = motor.speed_dps * motor.steps_per_rev / 360.0
    b = (motor.estop_decel_dps2 or motor.accel_dps2) * motor.steps_per_rev / 360.0
    ramp = v * v / (2.0 * a)
    acc = [round(scale * math.sqrt(2.0 * j / a)) for j in range(int(ramp) + 2)]
    brk = [round(scale * math.sqrt(2.0 * j / b)) for j in range(int(v * v / (2.0 * b)) + 2)]
    if acc[1] < 256 * SUBTICKS:
        raise ValueError(f"stepper {motor.name}: acceleration too high for the step timer")
    return {"acc": acc, "brk": brk, "cruise": round(scale / v),
            "half": round(scale * v / (2.0 * a)), "ramp256": int(ramp * 256),
            "brake_ratio": round(256 * a / b),
            "align": motor.steps_per_rev // 4}


def _align(profile: Profile, motor: Motor) -> int:
    spec = profile.data.get("motors", {}).get(motor.name, {})
    align = spec.get("home_align_steps", motor.steps_per_rev // 4)
    if not isinstance(align, int) or align <= 0 or motor.steps_per_rev % align:
        raise WiringError(profile.path, f"motors.{motor.name}.home_align_steps",
                          "must be a positive whole number dividing steps_per_rev")
    return align


def _pin_macros(name: str, pin: Pin | None) -> list[str]:
    if pin is None:
        return []
    return [f"#define {name}_PORT PORT{pin.port}", f"#define {name}_DDR DDR{pin.port}",
            f"#define {name}_IN PIN{pin.port}", f"#define {name}_MASK _BV({pin.bit})"]


def render_header(profile: Profile, mcu: str = DEFAULT_MCU) -> str:
    """The text of ``robot_config.h`` for a profile on a board."""
    wiring = load_wiring(profile, mcu)
    names = wiring.motor_names
    lines = [f"/* Generated from robot profile {profile.name} for the {wiring.board.name} "
             f"({mcu}). Do not edit: rebuild with `robocell firmware build`. */",
             "#ifndef ROBOT_CONFIG_H", "#define ROBOT_CONFIG_H",
             f'#define ROBOT_NAME "{profile.name}"',
             f"#define N_STEPPERS {len(wiring.steppers)}",
             f"#define N_SERVOS {len(wiring.servos)}",
             f"#define N_MOTORS {len(names)}",
             f"#define BANDGAP_MUX 0x{wiring.board.bandgap_mux & 0x1F:02X}"]
    lines += _pin_macros("ENABLE_PIN", wiring.enable)
    lines += _pin_macros("FAULT_PIN", wiring.fault)
    lines += _pin_macros("LINK_PIN", wiring.link)
    invert = sum(1 << i for i, (_, _, _, inv) in enumerate(wiring.steppers) if inv)
    lines.append(f"#define DIR_SIGN(i) ((({invert}u >> (i)) & 1u) ? -1 : 1)")
    for i, name in enumerate(names):
        lines.append(f'static const char MOTOR_NAME_{i}[] PROGMEM = "{name}";')
    lines.append("static const char *const MOTOR_NAMES[] PROGMEM = {"
                 + ", ".join(f"MOTOR_NAME_{i}" for i in range(len(names))) + "};")
    lines.append("static inline const char *motor_name(uint8_t i) {"
                 " return (const char *)pgm_read_ptr(&MOTOR_NAMES[i]); }")
    # the axis of the layer each stepper turns (0xFF: on no arm): the planner queue overlaps
    # only moves of perpendicular layers
    axes = [0xFF if m.axis is None else m.axis for m, *_ in wiring.steppers]
    lines.append("static inline uint8_t stepper_axis(uint8_t i) {"
                 f" static const uint8_t a[] = {{{', '.join(map(str, axes or [0xFF]))}}};"
                 " return a[i]; }")
    aligns = [_align(profile, m) for m, *_ in wiring.steppers]
    lines.append("static inline uint32_t stepper_align(uint8_t i) {"
                 f" static const uint32_t a[] = {{{', '.join(map(str, aligns or [1]))}}};"
                 " return a[i]; }")
    lines.append("#endif")
    lines += ["", "#if defined(ROBOT_TABLES) && !defined(ROBOT_TABLES_DONE)",
              "#define ROBOT_TABLES_DONE"]
    configs = []
    shared: dict[tuple, int] = {}
    for i, (motor, step, direction, _) in enumerate(wiring.steppers):
        key = (motor.steps_per_rev, motor.speed_dps, motor.accel_dps2, motor.estop_decel_dps2)
        t = _stepper_tables(motor)
        if key not in shared:
            shared[key] = i
            for table in ("acc", "brk"):
                values = ", ".join(map(str, t[table]))
                lines.append(f"static const uint32_t {table.upper()}_{i}[] PROGMEM = {{{values}}};")
        k = shared[key]
        configs.append(
            f"{{{{&PORT{step.port}, &DDR{step.port}, _BV({step.bit})}}, "
            f"{{&PORT{direction.port}, &DDR{direction.port}, _BV({direction.bit})}}, "
            f"ACC_{k}, {len(t['acc']) - 1}, BRK_{k}, {len(t['brk']) - 1}, {t['cruise']}UL, "
            f"{t['half']}UL, {t['ramp256']}UL, {t['brake_ratio']}}}")
    lines.append(f"#define STEPPER_CONFIG {{{', '.join(configs)}}}")
    servo_cfgs, timers = [], {}
    for motor, pin, lo, hi, span in wiring.servos:
        timer, channel = wiring.board.pwm[pin.number]
        timers.setdefault(timer, []).append((channel, pin))
        servo_cfgs.append(f"{{&OCR{timer}{channel}, {lo}, {hi}, {span}, "
                          f"{round(motor.home * 1000)}L, {round(motor.speed_dps)}, "
                          f"{round(motor.settle_ms)}}}")
    lines.append(f"#define SERVO_CONFIG {{{', '.join(servo_cfgs)}}}")
    init = []
    for timer, channels in sorted(timers.items()):
        com = " | ".join(f"_BV(COM{timer}{c}1)" for c, _ in channels)
        init += [f"ICR{timer} = {SERVO_PERIOD_US * 2 - 1};",
                 f"TCCR{timer}A = {com} | _BV(WGM{timer}1);",
                 f"TCCR{timer}B = _BV(WGM{timer}3) | _BV(WGM{timer}2) | _BV(CS{timer}1);"]
        init += [f"DDR{p.port} |= _BV({p.bit});" for _, p in channels]
    lines.append(f"#define SERVO_HW_INIT() do {{ {' '.join(init)} }} while (0)")
    lines.append("#endif")
    return "\n".join(lines) + "\n"
