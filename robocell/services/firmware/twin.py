"""The digital twin: grippers, arm angles and a cube whose state changes only as the physical
result of motor motion; a motion the mechanism cannot make is a jam (a `TwinFaultError`).

The mechanism is declared in the profile's ``[geometry]`` section (see docs/profiles.md):
``arms`` — each on a cube face, with an optional ``stepper`` that turns it and an optional
``gripper`` servo that engages it (no gripper = always engaged); an engaged arm holds either
``layers`` layers from its face (``holds = "layers"``) or only its face centre
(``holds = "centre"``, a motor on a 3x3 centre). ``rest`` names the face the cube sits on
when no grip holds it (a turntable); without it the cube needs two opposite engaged arms or
it falls. ``tilters`` — servos that tip the whole cube by a rotation when pushed.

Physics, applied when a command completes:
- an engaged arm that turns carries its layers with it; a disengaged arm turns freely;
- the moving stickers may not include any held by a stationary engaged arm, nor may two
  turning arms share stickers — otherwise the motion jams;
- a turning arm that nothing counters (no stationary engaged arm) turns the whole cube if
  the cube rests on it, else the cube slips out: a fault;
- a gripper may only close, and a tilter only push, with the arms square (multiples of 90°);
- an engaged layer left at a non-quarter angle is a misalignment fault;
- corner cutting: a layer may start turning while a perpendicular one still turns only if
  that one stands at most ``cut_tolerance_deg`` from aligned (the physics file's ``[cube]``);
  otherwise the two lock: a jam (`Twin.check_cut`). Without a tolerance the cube takes any
  cut corner (the simulated robot is its profile).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from robocell.common.facelets import (
    FACE_NORMALS,
    FACES,
    OPPOSITE_FACE,
    is_solved_any_orientation,
    solved,
    sticker_geometry,
)
from robocell.common.moves import apply_to_facelets
from robocell.common.notation import Move, NotationError, parse_moves
from robocell.common.profile import Profile, ProfileError
from robocell.errors import RobocellError
from robocell.robot.motion import FACE_AXES, QUARTER_DEG, Motor, load_motors, load_scan

ANGLE_TOLERANCE_DEG = 0.5
"""An arm within this of a multiple of 90 degrees counts as square."""
ROTATION_OF_FACE = {"R": "x", "L": "x'", "U": "y", "D": "y'", "F": "z", "B": "z'"}
"""The whole-cube rotation that turns with a face's clockwise quarter turn."""


class TwinFaultError(RobocellError, RuntimeError):
    """A physical fault of the twin: ``code`` is jam, dropped, misaligned or slipped."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


@dataclass(frozen=True)
class Arm:
    face: str
    stepper: str | None
    gripper: str | None
    holds: str
    layers: int


@dataclass(frozen=True)
class Tilter:
    servo: str
    push: float
    rest: float
    rotation: tuple[Move, ...]


@dataclass(frozen=True)
class Geometry:
    size: int
    arms: tuple[Arm, ...]
    tilters: tuple[Tilter, ...]
    rest: str | None


def load_geometry(profile: Profile, motors: dict[str, Motor] | None = None) -> Geometry:
    """The ``[geometry]`` section, validated against the motors."""
    motors = motors if motors is not None else load_motors(profile)
    path = profile.path
    raw = profile.data.get("geometry")
    if not isinstance(raw, dict):
        raise ProfileError(path, "geometry", "missing: the twin needs the robot's geometry")
    size = profile.size
    if size is None:
        raise ProfileError(path, "puzzle", "a robot with geometry needs puzzle 2x2 or 3x3")
    arms = []
    for i, item in enumerate(raw.get("arms", [])):
        where = f"geometry.arms[{i}]"
        if not isinstance(item, dict) or item.get("face") not in FACES:
            raise ProfileError(path, f"{where}.face", "expected one of U R F D L B")
        stepper, gripper = item.get("stepper"), item.get("gripper")
        for key, name, kind in (("stepper", stepper, "stepper"), ("gripper", gripper, "servo")):
            if name is not None and (name not in motors or motors[name].kind != kind):
                raise ProfileError(path, f"{where}.{key}", f"{name!r} is not a {kind} in [motors]")
        if gripper is not None and "closed" not in motors[gripper].positions:
            raise ProfileError(path, f"{where}.gripper",
                               f"servo {gripper} needs a 'closed' position")
        holds = item.get("holds", "layers")
        if holds not in ("layers", "centre"):
            raise ProfileError(path, f"{where}.holds", "expected 'layers' or 'centre'")
        if holds == "centre" and size != 3:
            raise ProfileError(path, f"{where}.holds", "only a 3x3 has centres")
        layers = item.get("layers", 1)
        if not isinstance(layers, int) or not 1 <= layers < size:
            raise ProfileError(path, f"{where}.layers", f"expected 1..{size - 1}")
        arms.append(Arm(item["face"], stepper, gripper, holds, layers))
    if not arms:
        raise ProfileError(path, "geometry.arms", "missing: at least one arm")
    tilters = []
    for i, item in enumerate(raw.get("tilters", [])):
        where = f"geometry.tilters[{i}]"
        servo = item.get("servo") if isinstance(item, dict) else None
        if servo not in motors or motors[servo].kind != "servo":
            raise ProfileError(path, f"{where}.servo", "expected a servo of [motors]")
        pos = motors[servo].positions
        if "push" not in pos or "rest" not in pos:
            raise ProfileError(path, f"{where}.servo", f"servo {servo} needs positions push, rest")
        try:
            rotation = tuple(parse_moves(str(item.get("rotation", ""))))
        except NotationError as exc:
            raise ProfileError(path, f"{where}.rotation", str(exc)) from None
        if not rotation or any(m.name not in "xyz" for m in rotation):
            raise ProfileError(path, f"{where}.rotation", "expected whole-cube rotations x y z")
        tilters.append(Tilter(servo, pos["push"], pos["rest"], rotation))
    rest = raw.get("rest")
    if rest is not None and rest not in [a.face for a in arms]:
        raise ProfileError(path, "geometry.rest", "must be the face of one of the arms")
    return Geometry(size, tuple(arms), tuple(tilters), rest)


@cache
def _layer_stickers(size: int, face: str, layers: int) -> frozenset[int]:
    """Stickers of the cubies in the ``layers`` outermost layers on ``face``."""
    positions, _ = sticker_geometry(size)
    along = positions @ np.array(FACE_NORMALS[face])
    outer = size - 1
    layer = np.where(np.abs(along) == size, np.sign(along) * outer, along)
    wanted = [outer - 2 * j for j in range(layers)]
    return frozenset(int(i) for i in np.flatnonzero(np.isin(layer, wanted)))


@cache
def _centre_sticker(face: str) -> frozenset[int]:
    return frozenset({FACES.index(face) * 9 + 4})


def _square(angle: float) -> bool:
    off = angle % QUARTER_DEG
    return min(off, QUARTER_DEG - off) <= ANGLE_TOLERANCE_DEG


class Twin:
    """The simulated robot and cube. Feed it motor commands; read ``facelets``, ``grips``,
    ``arm_angles``, ``fault``."""

    def __init__(self, profile: Profile, facelets: str | None = None,
                 cut_tolerance_deg: float | None = None) -> None:
        self.profile = profile
        self.cut_tolerance_deg = cut_tolerance_deg
        self.motors = load_motors(profile)
        self.geometry = load_geometry(profile, self.motors)
        self.size = self.geometry.size
        self.facelets = facelets or solved(self.size)
        if len(self.facelets) != 6 * self.size * self.size:
            raise ValueError(f"twin cube of profile {profile.name} is {self.size}x{self.size}"
                             f"x{self.size}; got {len(self.facelets)} facelets")
        self.servo_angles = {n: m.home for n, m in self.motors.items() if m.kind == "servo"}
        self.arm_angles = {a.face: 0.0 for a in self.geometry.arms if a.stepper}
        self.layer_offsets = {a.face: 0.0 for a in self.geometry.arms if a.stepper}
        """Degrees a layer stands turned beyond ``facelets`` (left part-turned by an e-stop);
        a later turn of the arm holding it that makes it square applies the whole turn."""
        self.fault: TwinFaultError | None = None
        self.motions = 0

    # --- state ---------------------------------------------------------------------------
    def engaged(self, arm: Arm) -> bool:
        if arm.gripper is None:
            return True
        closed = self.motors[arm.gripper].positions["closed"]
        return abs(self.servo_angles[arm.gripper] - closed) <= ANGLE_TOLERANCE_DEG

    @property
    def grips(self) -> dict[str, str]:
        return {a.gripper: ("closed" if self.engaged(a) else "open")
                for a in self.geometry.arms if a.gripper}

    @property
    def misaligned(self) -> list[str]:
        """Faces whose layer stands part-turned (between two quarter positions)."""
        return [face for face, offset in self.layer_offsets.items() if not _square(offset)]

    @property
    def jammed(self) -> bool:
        """Two layers locked by a corner cut too soon (until CLEAR)."""
        return self.fault is not None and self.fault.code == "jam"

    @property
    def solved(self) -> bool:
        return (is_solved_any_orientation(self.facelets) and not self.misaligned
                and not self.jammed)

    def state(self) -> dict:
        return {"facelets": self.facelets, "solved": self.solved, "grips": self.grips,
                "arm_angles": {f: round(a, 3) for f, a in self.arm_angles.items()},
                "misaligned": self.misaligned, "jammed": self.jammed,
                "fault": str(self.fault) if self.fault else None}

    def _holds(self, arm: Arm) -> frozenset[int]:
        if arm.holds == "centre":
            return _centre_sticker(arm.face)
        return _layer_stickers(self.size, arm.face, arm.layers)

    def _fail(self, code: str, message: str) -> None:
        self.fault = TwinFaultError(code, message)
        raise self.fault

    # --- motion --------------------------------------------------------------------------
    def move(self, degrees: dict[str, float], fraction: float = 1.0) -> None:
        """Steppers turn by ``degrees`` (by stepper name) together; ``fraction`` < 1 when
        stopped part way (e-stop). Raises TwinFaultError on a jam."""
        if self.fault:
            raise self.fault
        self.motions += 1
        turning = {a: degrees[a.stepper] * fraction for a in self.geometry.arms
                   if a.stepper in degrees and degrees[a.stepper] != 0}
        drivers = {a: d for a, d in turning.items() if self.engaged(a)}
        for arm, d in turning.items():
            self.arm_angles[arm.face] += d
        if not drivers:
            return
        moving: dict[Arm, frozenset[int]] = {
            a: _layer_stickers(self.size, a.face, a.layers) for a in drivers}
        holders = [a for a in self.geometry.arms if self.engaged(a) and a not in turning]
        for arm in drivers:
            for holder in holders:
                if self._holds(holder) & moving[arm]:
                    self._fail("jam", f"arm {arm.face} turned while arm {holder.face} grips "
                               f"part of its layer")
        arms = list(drivers)
        for i, a in enumerate(arms):
            for b in arms[i + 1:]:
                if moving[a] & moving[b]:
                    self._fail("jam", f"arms {a.face} and {b.face} turned together but share "
                               "cubies")
        # a layer left part-turned earlier counts with this turn (homing squares it again)
        drivers = {a: self.layer_offsets.get(a.face, 0.0) + d for a, d in drivers.items()}
        for arm, d in drivers.items():
            if not _square(d):
                for other, e in drivers.items():
                    self.layer_offsets[other.face] = e
                self._fail("misaligned", f"layer {arm.face} stopped at {d % 360:.1f} degrees; "
                           "the cube state is unknown")
        for arm in drivers:
            self.layer_offsets[arm.face] = 0.0
        covered = frozenset().union(*moving.values())
        if not holders and len(covered) < len(self.facelets):
            if len(drivers) == 1 and next(iter(drivers)).face == self.geometry.rest:
                arm, d = next(iter(drivers.items()))
                quarter = round(d / QUARTER_DEG) % 4
                rotation = parse_moves(ROTATION_OF_FACE[arm.face]) * quarter
                self.facelets = apply_to_facelets(self.facelets, rotation, self.size)
                return
            self._fail("slipped", f"arm {'+'.join(a.face for a in drivers)} turned with "
                       "nothing holding the rest of the cube")
        moves = []
        for arm, d in drivers.items():
            quarter = round(d / QUARTER_DEG) % 4
            if quarter:
                name = arm.face if arm.layers == 1 else arm.face + "w"
                moves.append(Move(name, quarter))
        self.facelets = apply_to_facelets(self.facelets, moves, self.size)

    def check_cut(self, starting: list[str], left: dict[str, float]) -> None:
        """Steppers ``starting`` begin to turn while the steppers of ``left`` still have
        that many degrees to go: TwinFaultError ``jam`` if an engaged layer of a starting
        arm is perpendicular to an engaged, turning one standing further from aligned than
        the cube's cut tolerance."""
        if self.fault:
            raise self.fault
        if self.cut_tolerance_deg is None:
            return
        arms = {a.stepper: a for a in self.geometry.arms if a.stepper and self.engaged(a)}
        for name, degrees in left.items():
            turning = arms.get(name)
            off = degrees % QUARTER_DEG
            off = min(off, QUARTER_DEG - off)
            if turning is None or off <= self.cut_tolerance_deg:
                continue
            for start in starting:
                arm = arms.get(start)
                if arm is not None and FACE_AXES[arm.face] != FACE_AXES[turning.face]:
                    self._fail("jam", f"layer {arm.face} started while layer "
                               f"{turning.face} stood {off:.1f} degrees from aligned (the "
                               f"cube takes {self.cut_tolerance_deg:g}): lower overlap_deg")

    def set_servos(self, angles: dict[str, float], fraction: float = 1.0) -> None:
        """Servos move to ``angles`` (degrees) together. Raises TwinFaultError on a jam/drop."""
        if self.fault:
            raise self.fault
        self.motions += 1
        before = dict(self.servo_angles)
        for name, target in angles.items():
            self.servo_angles[name] = before[name] + (target - before[name]) * fraction
        for arm in self.geometry.arms:
            if arm.gripper in angles and self.engaged(arm) and arm.stepper and not _square(
                    self.arm_angles[arm.face]):
                self._fail("jam", f"gripper {arm.gripper} closed on arm {arm.face} standing at "
                           f"{self.arm_angles[arm.face] % 360:.1f} degrees, not square to the face")
        for tilter in self.geometry.tilters:
            was_rest = abs(before[tilter.servo] - tilter.rest) <= ANGLE_TOLERANCE_DEG
            pushed = abs(self.servo_angles[tilter.servo] - tilter.push) <= ANGLE_TOLERANCE_DEG
            if was_rest and pushed:
                self._tilt(tilter)
        self._check_held()

    def _tilt(self, tilter: Tilter) -> None:
        for arm in self.geometry.arms:
            if arm.face == self.geometry.rest:
                if not _square(self.arm_angles.get(arm.face, 0.0)):
                    self._fail("jam", f"tilted with the {arm.face} platform at "
                               f"{self.arm_angles[arm.face] % 360:.1f} degrees")
            elif self.engaged(arm):
                self._fail("jam", f"tilted while arm {arm.face} holds the cube")
        self.facelets = apply_to_facelets(self.facelets, list(tilter.rotation), self.size)

    def _check_held(self) -> None:
        if self.geometry.rest is not None:
            return
        engaged = {a.face for a in self.geometry.arms if self.engaged(a) and a.holds == "layers"}
        centre = {a.face for a in self.geometry.arms if self.engaged(a)}
        if any(OPPOSITE_FACE[f] in engaged for f in engaged):
            return
        if any(OPPOSITE_FACE[f] in centre for f in centre) and all(
                a.holds == "centre" for a in self.geometry.arms):
            return
        self._fail("dropped", "no two opposite arms grip the cube: it fell "
                   f"(closed: {', '.join(sorted(centre)) or 'none'})")


def run_commands(twin: Twin, commands: list | tuple) -> None:
    """Feed compiled `WireCommand`s (motion module) to a twin, as the firmware would."""
    for command in commands:
        values = {name: float(v) for name, _, v in (a.partition(":") for a in command.args)}
        if command.verb == "MOVE":
            twin.move({name: twin.motors[name].degrees(v) for name, v in values.items()})
        elif command.verb == "SERVO":
            twin.set_servos(values)


def observed_views(profile: Profile) -> list[list[tuple[str, str, int]]]:
    """Run the profile's scan program on a twin whose stickers are all distinct and report,
    per pose and per declared view position ``at``, which face (named by where it is when
    the scan ends) is in view and turned by how many clockwise quarter turns — the truth the
    declared ``views`` must match."""
    scan = load_scan(profile)
    twin = Twin(profile)
    size = twin.size
    per_face = size * size
    twin.facelets = "".join(chr(0x30 + i) for i in range(6 * per_face))
    seen: list[list[tuple[str, np.ndarray]]] = []
    for pose in scan.poses:
        run_commands(twin, pose.commands)
        grids = []
        for view in pose.views:
            start = FACES.index(view.at) * per_face
            grids.append((view.at, np.array(list(twin.facelets[start:start + per_face]))
                          .reshape(size, size)))
        seen.append(grids)
    run_commands(twin, scan.finish)
    final = twin.facelets
    result = []
    for grids in seen:
        row = []
        for at, grid in grids:
            found = None
            for f, face in enumerate(FACES):
                target = np.array(list(final[f * per_face:(f + 1) * per_face])).reshape(size, size)
                for r in range(4):
                    if np.array_equal(grid, np.rot90(target, k=-r)):
                        found = (at, face, r)
            if found is None:
                raise ValueError(f"pose shows a mixed face at {at}: the scan program moved a "
                                 "layer, not the whole cube")
            row.append(found)
        result.append(row)
    return result
