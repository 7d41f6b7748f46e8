"""`robocell calibrate --out FILE.toml`: a robot profile fitted to its robot, written as a
complete profile file the cell can run with ``--profile FILE.toml`` (its name is the file's).

Without ``--overlap``: the running cell's robot is timed and its motors and primitive costs
fitted (`robocell.tools.calibrate`, docs/robot-physics.md). With ``--overlap``: the largest
corner cut the simulated cube takes (`overlap_probe`, on this package's firmware simulator
with the robot's physics file), backed off by a margin, written as the profile's
``[motion] overlap_deg`` (docs/profiles.md).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from robocell.common import config
from robocell.common.profile import ProfileError, load_profile
from robocell.errors import CommandError
from robocell.robot.motion import load_motors
from robocell.robot.physics import PhysicsError, load_physics
from robocell.services.firmware.overlap_probe import (
    MARGIN_DEG,
    OverlapFound,
    find_safe_overlap,
    probe_program,
    simulated_trial,
)
from robocell.tools.calibrate import (
    add_timing_options,
    calibrate_timing,
    timing_options_given,
)

_NAME_LINE = re.compile(r'^name\s*=\s*"[^"]*"\s*$', re.MULTILINE)
_TABLE_LINE = re.compile(r"^\[", re.MULTILINE)
_MOTION_SECTION = re.compile(r"^\[motion\]\n(?:(?!\[).*\n)*", re.MULTILINE)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `calibrate` to the subcommands."""
    p = subparsers.add_parser(
        "calibrate", help="fit a robot profile to the robot (--overlap: its safe corner cut)",
        description="Time the running cell's robot ($ROBOCELL_BUS): the profile's primitives "
                    "several times each, in seeded random orders; fit the motors' speed, "
                    "acceleration and settle and each primitive's cost to the robot's own "
                    "measured times, and write the profile with the fitted values. With "
                    "--overlap instead: step the profile's overlap_deg up on the simulated "
                    "robot (its physics file) until the cube jams, back off by "
                    f"{MARGIN_DEG:g} degrees, and write the profile with it.")
    p.add_argument("--out", type=Path, required=True, metavar="FILE.toml",
                   help="where to write the calibrated profile; its file name is its "
                        "profile name, under which its solver tables are built")
    p.add_argument("--profile", default=config.default_profile(),
                   help="the profile to start from (default $ROBOCELL_PROFILE or "
                        "%(default)s)")
    p.add_argument("--overlap", action="store_true",
                   help="find the largest safe overlap_deg (corner cutting) in simulation "
                        "instead of timing the running cell")
    p.add_argument("--physics", type=Path, default=None, metavar="FILE",
                   help="with --overlap: the simulated robot's physics file (default "
                        "$ROBOCELL_PHYSICS)")
    add_timing_options(p)
    p.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    if args.out.suffix != ".toml":
        raise CommandError(f"--out {args.out}: write a profile file ending in .toml")
    name = Path(args.profile).stem
    if args.out.stem == name:
        raise CommandError(f"--out {args.out}: name the file other than {name}.toml (the "
                           "file name is the profile's name, and its tables would take the "
                           f"place of {name}'s)")
    if not args.overlap:
        if args.physics is not None:
            raise CommandError("--physics goes with --overlap: timing measures the running "
                               "cell's robot (give the firmware simulator its --physics)")
        return calibrate_timing(args)
    given = timing_options_given(args)
    if given:
        raise CommandError(f"{', '.join(given)}: the timing program's; --overlap runs its "
                           "own trials in simulation, drop them")
    return calibrate_overlap(args)


def calibrate_overlap(args: argparse.Namespace) -> int:
    """`robocell calibrate --overlap`: the safe corner cut, written into the profile."""
    physics_path = args.physics or config.physics_file()
    try:
        profile = load_profile(args.profile)
        physics = load_physics(physics_path) if physics_path else None
        if physics is not None:
            physics.apply(load_motors(profile))
    except (ProfileError, PhysicsError) as exc:
        raise CommandError(str(exc)) from None
    if not probe_program(load_motors(profile), MARGIN_DEG):
        arms = ", ".join(f"{arm['stepper']} ({arm['face']})" for arm in
                         profile.data.get("geometry", {}).get("arms", []) if arm.get("stepper"))
        raise CommandError(f"profile {profile.name} has no two steppers turning perpendicular "
                           f"layers (steppers on arms: {arms or 'none'}): it has no corner to "
                           "cut, so overlap_deg does not apply to it")
    if physics is None or physics.cut_tolerance_deg is None:
        raise CommandError("the simulated cube takes any cut corner without a physics file "
                           "that sets [cube] cut_tolerance_deg; give --physics FILE")
    found = find_safe_overlap(simulated_trial(profile, physics))
    if found.jammed_at_deg is None:
        raise CommandError(f"the cube never jammed up to {found.largest_ok_deg:g} degrees; "
                           "check the physics file's cut_tolerance_deg")
    print(f"overlap {found.largest_ok_deg:g} deg taken, {found.jammed_at_deg:g} deg jammed "
          f"({found.jam}); safe overlap {found.safe_deg:g} deg ({MARGIN_DEG:g} deg margin, "
          f"{found.trials} trials)")
    text = profile_with_overlap(profile.path.read_text(encoding="utf-8"), args.out.stem,
                                found)
    args.out.write_text(text, encoding="utf-8")
    try:
        load_motors(load_profile(args.out))
    except ProfileError as exc:  # the file written must load: a bug here, not the user's
        raise CommandError(f"the profile written is not valid: {exc}") from None
    print(f"wrote {args.out}")
    return 0


def profile_with_overlap(text: str, name: str, found: OverlapFound) -> str:
    """A profile file's text renamed to ``name`` with ``[motion] overlap_deg`` set to the
    safe overlap, commented with how it was found."""
    text, renamed = _NAME_LINE.subn(f'name = "{name}"', text, count=1)
    if not renamed:
        raise CommandError("the profile has no name line to rename")
    section = (f"[motion]\n# robocell calibrate --overlap: the simulated cube took "
               f"{found.largest_ok_deg:g} degrees and jammed at {found.jammed_at_deg:g} "
               f"({found.trials} trials);\n# {MARGIN_DEG:g} degrees backed off for a real "
               f"cube.\noverlap_deg = {found.safe_deg:g}\n\n")
    if _MOTION_SECTION.search(text):
        return _MOTION_SECTION.sub(section, text, count=1)
    first = _TABLE_LINE.search(text)
    if first is None:
        return text.rstrip("\n") + "\n\n" + section
    return text[:first.start()] + section + text[first.start():]
