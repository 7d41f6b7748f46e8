"""Robot profiles: what a robot can do, how long each motion takes, and how it maps to motors.

A profile is one TOML file (read with the standard library). Top-level keys:

``name`` (str, = file stem), ``description`` (str),
``puzzle`` ("2x2", "3x3", or "any" for plain metrics),
``unit_ms`` (float: the length of one cost unit in milliseconds),
``solved_any_orientation`` (bool, default true for 2x2: the cube counts as solved in any of
its 24 whole-cube orientations),
``search_budget_ms`` (float > 0, optional: how much a 3x3 search may compare candidate
solutions for this robot, in milliseconds of one worker's search -- the solver service
splits it over its idle workers; the best budget is where search time plus robot time is
least).

``[sequencing]``: ``rule`` = "none" (default) or "alternate-groups" (consecutive primitives
must come from different ``group``s).

``[[primitives]]``: one table per primitive the solver may use —
``name`` (str, unique), ``moves`` (str: the primitive as face turns and whole-cube rotations
in the robot's frame, standard notation), ``cost`` (float > 0: time in units), ``group``
(str, needed by "alternate-groups"), and for the actuator ``motion`` (list of motor command
strings that perform it; see docs/profiles.md).

Sections the actuator, vision and twin use, kept as plain data here and validated (with the
same `ProfileError`) by the actuator's loaders when a robot is driven or simulated:
``[motors.NAME]`` (``kind`` = "stepper" with ``steps_per_rev``, ``speed_dps``,
``accel_dps2``; or "servo" with named ``positions``, ``home``, ``speed_dps``, ``settle_ms``;
`robocell.robot.motion.load_motors`), each primitive's ``motion`` (motion strings
such as ``"turn R:-90 L:-90"``, ``"grip gR gL"``; `motion.compile_primitives`), ``[scan]``
(``[[scan.poses]]`` with ``name``, ``motion``, ``views`` = [{at, face, rotation}], and
``finish``; `motion.load_scan`), ``[geometry]`` (``[[geometry.arms]]`` with ``face``,
``stepper``, ``gripper``, ``holds``, ``layers``; ``rest``; ``[[geometry.tilters]]``;
`robocell.services.firmware.twin.load_geometry`). Full description: docs/profiles.md.

A bad file raises `ProfileError` naming the file, the key and the problem.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from robocell.common.notation import Move, NotationError, parse_moves
from robocell.errors import RobocellError

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"
PUZZLE_SIZES: dict[str, int | None] = {"2x2": 2, "3x3": 3, "any": None}
"""Puzzle names; "any" is for plain metrics (htm, qtm) that apply to every cube size."""
SEQUENCING_RULES = ("none", "alternate-groups")
TOP_LEVEL_KEYS = {
    "name", "description", "puzzle", "unit_ms", "solved_any_orientation", "sequencing",
    "primitives", "motors", "scan", "geometry", "actuator", "search_budget_ms", "wiring",
    "motion",
}
PRIMITIVE_KEYS = {"name", "moves", "cost", "group", "motion", "description"}


class ProfileError(RobocellError, ValueError):
    """A profile file that cannot be used: names the file, the key and the problem."""

    def __init__(self, path: Path | str, key: str, problem: str) -> None:
        self.path = str(path)
        self.key = key
        self.problem = problem
        super().__init__(f"{path}: {key}: {problem}")


@dataclass(frozen=True)
class Primitive:
    """One motion of the robot the solver can plan with."""

    index: int
    name: str
    moves: tuple[Move, ...]
    cost: float
    group: str | None
    motion: tuple[str, ...] = ()


@dataclass(frozen=True)
class Profile:
    """A robot profile, validated. ``data`` keeps the whole parsed file for the other sections."""

    name: str
    path: Path
    description: str
    puzzle: str
    unit_ms: float
    solved_any_orientation: bool
    sequencing: str
    primitives: tuple[Primitive, ...]
    content_hash: str
    data: dict = field(repr=False, compare=False)
    search_budget_s: float | None = None
    """3x3 search budget for this robot (None: the solver's default)."""
    search_hash: str = ""
    """Digest of what the solver's tables are made from (puzzle, solved orientation,
    sequencing, each primitive's name, moves, cost and group; for a robot that cuts corners
    its ``[motion]`` and ``[motors]`` too, which price a primitive by the one before): the
    tables' manifests hold it, so editing the motions, scan, wiring or comments does not
    rebuild them."""

    @property
    def size(self) -> int | None:
        """Cube size, or None for a metric profile that fits any size."""
        return PUZZLE_SIZES[self.puzzle]

    def fits(self, size: int) -> bool:
        return self.size is None or self.size == size

    @property
    def groups(self) -> tuple[str, ...]:
        """Distinct primitive groups in order of first appearance."""
        seen: list[str] = []
        for p in self.primitives:
            if p.group is not None and p.group not in seen:
                seen.append(p.group)
        return tuple(seen)

    def primitive(self, name: str) -> Primitive:
        for p in self.primitives:
            if p.name == name:
                return p
        raise KeyError(f"profile {self.name} has no primitive {name!r}")

    def cost_ms(self, units: float) -> float:
        return units * self.unit_ms


def available_profiles() -> list[str]:
    """Names of the profiles shipped with robocell."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def profile_path(name_or_path: str | Path) -> Path:
    """A shipped profile by name, or a file path."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or candidate.exists():
        return candidate
    path = PROFILE_DIR / f"{name_or_path}.toml"
    if not path.is_file():
        raise ProfileError(
            path, "name",
            f"no profile named {name_or_path!r}; available: {', '.join(available_profiles())}")
    return path


_CACHE: dict[tuple[str, str], Profile] = {}


def load_profile(name_or_path: str | Path) -> Profile:
    """Load and validate a profile (cached by path and content)."""
    path = profile_path(name_or_path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ProfileError(path, "file", f"cannot read: {exc.strerror}") from None
    digest = hashlib.sha256(raw).hexdigest()
    key = (str(path.resolve()), digest)
    if key not in _CACHE:
        _CACHE[key] = parse_profile(raw.decode("utf-8"), path, digest)
    return _CACHE[key]


def _overlaps(data: dict) -> bool:
    """Whether a profile cuts corners (``overlap_deg`` in ``[motion]`` or a motor)."""
    motion, motors = data.get("motion"), data.get("motors")
    return (isinstance(motion, dict) and bool(motion.get("overlap_deg"))) or (
        isinstance(motors, dict) and any(isinstance(m, dict) and m.get("overlap_deg")
                                         for m in motors.values()))


def _require(data: dict, key: str, kind: type | tuple[type, ...], path: Path,
             where: str = "") -> object:
    label = f"{where}{key}"
    if key not in data:
        raise ProfileError(path, label, "missing")
    value = data[key]
    if isinstance(value, bool) and kind is not bool and bool not in (
            kind if isinstance(kind, tuple) else (kind,)):
        raise ProfileError(path, label, f"expected {_kind_name(kind)}, got a boolean")
    if not isinstance(value, kind):
        raise ProfileError(path, label, f"expected {_kind_name(kind)}, got {type(value).__name__}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "text", int: "a number", float: "a number", bool: "true/false",
             list: "a list", dict: "a table"}
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))


def parse_profile(text: str, path: Path | str = "<profile>", digest: str | None = None) -> Profile:
    """Validate profile TOML text (see the module docstring for the format)."""
    path = Path(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(path, "syntax", str(exc)) from None
    unknown = sorted(set(data) - TOP_LEVEL_KEYS)
    if unknown:
        raise ProfileError(path, unknown[0], f"unknown key; allowed: {sorted(TOP_LEVEL_KEYS)}")
    name = _require(data, "name", str, path)
    puzzle = _require(data, "puzzle", str, path)
    if puzzle not in PUZZLE_SIZES:
        raise ProfileError(path, "puzzle", f"{puzzle!r} is not one of {list(PUZZLE_SIZES)}")
    unit_ms = float(_require(data, "unit_ms", (int, float), path))  # type: ignore[arg-type]
    if unit_ms <= 0:
        raise ProfileError(path, "unit_ms", "must be positive")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ProfileError(path, "description", "expected text")
    any_orientation = data.get("solved_any_orientation", puzzle == "2x2")
    if not isinstance(any_orientation, bool):
        raise ProfileError(path, "solved_any_orientation", "expected true/false")
    budget_ms = data.get("search_budget_ms")
    if budget_ms is not None and (isinstance(budget_ms, bool)
                                  or not isinstance(budget_ms, (int, float)) or budget_ms <= 0):
        raise ProfileError(path, "search_budget_ms", "expected a positive number of milliseconds")
    sequencing = data.get("sequencing", {})
    if not isinstance(sequencing, dict):
        raise ProfileError(path, "sequencing", "expected a table")
    rule = sequencing.get("rule", "none")
    if rule not in SEQUENCING_RULES:
        raise ProfileError(path, "sequencing.rule", f"{rule!r} is not one of {SEQUENCING_RULES}")
    raw_primitives = _require(data, "primitives", list, path)
    if not raw_primitives:
        raise ProfileError(path, "primitives", "a profile needs at least one primitive")
    primitives = []
    names: set[str] = set()
    for i, item in enumerate(raw_primitives):  # type: ignore[arg-type]
        where = f"primitives[{i}]."
        if not isinstance(item, dict):
            raise ProfileError(path, f"primitives[{i}]", "expected a table")
        extra = sorted(set(item) - PRIMITIVE_KEYS)
        if extra:
            raise ProfileError(path, where + extra[0],
                               f"unknown key; allowed: {sorted(PRIMITIVE_KEYS)}")
        pname = _require(item, "name", str, path, where)
        if pname in names:
            raise ProfileError(path, where + "name", f"duplicate primitive name {pname!r}")
        names.add(pname)  # type: ignore[arg-type]
        text_moves = _require(item, "moves", str, path, where)
        try:
            moves = tuple(parse_moves(text_moves))  # type: ignore[arg-type]
        except NotationError as exc:
            raise ProfileError(path, where + "moves", str(exc)) from None
        if not moves:
            raise ProfileError(path, where + "moves", "empty: a primitive must move something")
        cost = float(_require(item, "cost", (int, float), path, where))  # type: ignore[arg-type]
        if cost <= 0:
            raise ProfileError(path, where + "cost", "must be positive")
        group = item.get("group")
        if group is not None and not isinstance(group, str):
            raise ProfileError(path, where + "group", "expected text")
        if rule == "alternate-groups" and group is None:
            raise ProfileError(path, where + "group",
                               "missing: sequencing rule alternate-groups needs every "
                               "primitive's group")
        motion = item.get("motion", [])
        if not isinstance(motion, list) or not all(isinstance(m, str) for m in motion):
            raise ProfileError(path, where + "motion", "expected a list of command strings")
        primitives.append(Primitive(i, pname, moves, cost, group, tuple(motion)))  # type: ignore[arg-type]
    if path.suffix == ".toml" and path.stem != name:
        raise ProfileError(path, "name", f"{name!r} must equal the file name {path.stem!r}")
    content_hash = digest or hashlib.sha256(text.encode("utf-8")).hexdigest()
    search_spec = {"puzzle": puzzle, "solved_any_orientation": any_orientation,
                   "sequencing": rule,
                   "primitives": [[p.name, [str(m) for m in p.moves], p.cost, p.group]
                                  for p in primitives]}
    if _overlaps(data):
        # corner cutting prices a primitive by the one before, from the motors' motion
        search_spec["overlap"] = ["transition credit", data.get("motion"), data.get("motors")]
    search_hash = hashlib.sha256(json.dumps(search_spec, sort_keys=True).encode()).hexdigest()
    return Profile(
        name=name, path=path, description=description, puzzle=puzzle,  # type: ignore[arg-type]
        unit_ms=unit_ms, solved_any_orientation=any_orientation, sequencing=rule,
        primitives=tuple(primitives), content_hash=content_hash, data=data,
        search_budget_s=None if budget_ms is None else float(budget_ms) / 1000.0,
        search_hash=search_hash,
    )
