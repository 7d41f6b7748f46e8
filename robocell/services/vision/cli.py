"""`robocell vision ...`: detect a face in an image, resolve a colour scan, scan a folder of
six face images, calibrate a camera, render sim-camera frames, and run the vision service."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import cv2
import numpy as np

from robocell.common import config
from robocell.common.bus.options import add_remote_options
from robocell.common.cube import solved
from robocell.common.facelets import FACES
from robocell.errors import CommandError
from robocell.services.vision.calibration import ENV_VAR as CALIBRATION_ENV
from robocell.services.vision.calibration import (
    Calibration,
    CalibrationError,
    calibrate,
    read_cube,
)
from robocell.services.vision.calibration import load as load_calibration
from robocell.services.vision.calibration import save as save_calibration
from robocell.services.vision.detect import (
    DetectionError,
    FaceReading,
    detect,
    draw_debug,
    draw_failure,
)
from robocell.services.vision.interchange import ScanFormatError, load_colours
from robocell.services.vision.net import draw_net
from robocell.services.vision.reading import DEFAULT_THREADS
from robocell.services.vision.resolve import (
    AMBIGUOUS_COST,
    CONFIDENT_GAP,
    Resolution,
    ResolveError,
    resolve,
)
from robocell.services.vision.scan import (
    ScanError,
    assemble,
    find_face_files,
    read_faces,
    read_image,
    resolve_readings,
)
from robocell.services.vision.simcam import CLEAN, Conditions, capture_poses
from robocell.services.vision.sources import SimSource, SourceError, is_device, open_source

DEFAULT_CALIBRATION_FILE = "vision-calibration.json"


def register(subparsers: argparse._SubParsersAction) -> None:
    vision = subparsers.add_parser(
        "vision", help="read cube faces from images, resolve colours to a cube state",
        description="Camera frames -> sticker colours -> a valid cube state.")
    vision.set_defaults(func=lambda args: (vision.print_help(), 0)[1])
    commands = vision.add_subparsers(dest="vision_command", metavar="COMMAND")

    detect = commands.add_parser(
        "detect", help="find the sticker grid in one image and print its colours")
    detect.add_argument("image", help="image file (PNG, JPEG, ...)")
    detect.add_argument("--size", type=int, choices=(2, 3), help="cube size (default: guess)")
    detect.add_argument("--debug", metavar="OUT.png", help="write an annotated copy here")
    detect.add_argument("--json", action="store_true", help="print the reading as JSON")
    detect.set_defaults(func=cmd_detect)

    resolve = commands.add_parser(
        "resolve", help="resolve a colour scan (JSON interchange format) to facelets")
    resolve.add_argument("scan", help='JSON file {"1": [r, g, b], ...}, faces U L F R B D, '
                         "or what `vision scan --json` printed")
    resolve.add_argument("--size", type=int, choices=(2, 3), help="cube size (default: from "
                         "the number of stickers)")
    resolve.add_argument("--json", action="store_true",
                         help="print facelets, per-sticker confidence and colours as JSON")
    resolve.add_argument("--debug", metavar="OUT.png", help="draw the measured colours as a "
                         "net here, the doubtful stickers marked (also when refused)")
    resolve.set_defaults(func=cmd_resolve)

    scan = commands.add_parser(
        "scan", help="read six face images (*-U.png ... *-D.png) and resolve the cube")
    scan.add_argument("folder", help="folder holding one image per face")
    scan.add_argument("--size", type=int, choices=(2, 3), help="cube size (default: guess)")
    scan.add_argument("--debug", metavar="DIR", help="write annotated frames and the net of "
                      "measured colours here (also, above all, when the scan is refused)")
    scan.add_argument("--json", action="store_true", help="print the result as JSON")
    scan.add_argument("--calibration", metavar="FILE", help="read with this calibration "
                      "(`vision calibrate`): faces not found are read at their calibrated "
                      "place, colours named by the calibrated ones; says where the frames "
                      "no longer match it")
    scan.set_defaults(func=cmd_scan)

    calibrate = commands.add_parser(
        "calibrate", help="learn where each face is in the frame and the cube's colours under "
                          "this light, from a solved cube in the scan poses",
        description="Show the camera a solved cube (or the cube given with --cube) in each "
                    "scan pose: from a folder of six photos (*-U.png ... *-D.png), or live "
                    "from a camera, one face at a time. Writes the calibration file that "
                    "`vision serve` and `vision scan` read (--calibration or "
                    f"${CALIBRATION_ENV}).")
    calibrate.add_argument("--camera", required=True, metavar="SRC",
                           help="folder of six photos, device index, video file or URL, "
                                "or sim")
    calibrate.add_argument("--size", type=int, choices=(2, 3), help="cube size (default: "
                           "found in the frames)")
    calibrate.add_argument("--cube", metavar="FACELETS",
                           help="the state the cube is in (default: solved)")
    calibrate.add_argument("--out", default=None, metavar="FILE",
                           help=f"calibration file to write (default ${CALIBRATION_ENV}, "
                                f"else {DEFAULT_CALIBRATION_FILE})")
    calibrate.add_argument("--json", action="store_true", help="print the calibration")
    calibrate.set_defaults(func=cmd_calibrate)

    render = commands.add_parser(
        "render", help="render the six faces of a cube state with the sim camera")
    render.add_argument("facelets", help="facelet string, URFDLB order (24 or 54 letters)")
    render.add_argument("--out", required=True, metavar="DIR",
                        help="folder for sim-U.png ... sim-D.png")
    render.add_argument("--seed", type=int, default=0)
    render.add_argument("--clean", action="store_true",
                        help="no clutter, noise, glare or lighting changes")
    render.set_defaults(func=cmd_render)

    register_serve(commands)


def _read(path: str):
    try:
        return read_image(path)
    except ScanError as exc:
        raise CommandError(str(exc)) from exc


def cmd_detect(args: argparse.Namespace) -> int:
    image = _read(args.image)
    try:
        reading = detect(image, args.size)
    except DetectionError as exc:
        raise CommandError(f"{args.image}: {exc}") from exc
    if args.debug:
        if not cv2.imwrite(args.debug, draw_debug(image, reading)):
            raise CommandError(f"cannot write {args.debug}; check the folder and the suffix")
    if args.json:
        print(json.dumps(reading.to_message()))
        return 0
    n = reading.size
    print(f"{n}x{n} face, angle {reading.angle_deg:.1f} deg, pitch {reading.pitch_px:.0f} px, "
          f"{int(reading.found.sum())}/{n * n} stickers seen (the rest inferred)")
    for index, (rgb, conf) in enumerate(zip(reading.colours, reading.confidence, strict=True)):
        r, g, b = (int(round(c)) for c in rgb)
        how = "seen" if reading.found[index] else "inferred"
        print(f"  {index + 1}: rgb({r:3d}, {g:3d}, {b:3d})  confidence {conf:.2f}  {how}")
    return 0


def _resolution_json(result: Resolution, colours: np.ndarray, tints: np.ndarray | None) -> str:
    """The JSON `vision resolve` and `vision scan` print; `vision resolve` reads it back."""
    return json.dumps({
        "facelets": result.facelets,
        "size": result.size,
        "confidence": [round(c, 3) for c in result.confidence],
        "colours": {face: list(rgb) for face, rgb in result.class_rgb.items()},
        "margin": None if result.margin == float("inf") else round(result.margin, 2),
        "stickers": [[int(round(c)) for c in rgb] for rgb in colours],
        "tints": None if tints is None else [
            None if not np.all(np.isfinite(rgb)) else [round(float(c), 1) for c in rgb]
            for rgb in tints],
    })


def _margin_note(result: Resolution) -> str:
    if result.margin == float("inf"):
        return (f"margin > {CONFIDENT_GAP:g}: no other valid cube comes near the colours "
                f"(refused below {AMBIGUOUS_COST:g})")
    return (f"margin {result.margin:.1f}: the nearest other valid cube fits the colours that "
            f"much worse (refused below {AMBIGUOUS_COST:g})")


def _resolve_error(where: str, exc) -> CommandError:
    faces = f" (faces {exc.faces})" if getattr(exc, "faces", "") else ""
    return CommandError(f"{where}: {exc}{faces}")


def _write(path: Path, image: np.ndarray) -> None:
    if not cv2.imwrite(str(path), image):
        raise CommandError(f"cannot write {path}; check the folder and the suffix")


def cmd_resolve(args: argparse.Namespace) -> int:
    try:
        colours, size, tints = load_colours(args.scan, args.size)
    except ScanFormatError as exc:
        raise CommandError(str(exc)) from exc
    try:
        result = resolve(colours, size, tints)
    except ResolveError as exc:
        if args.debug:
            _write(Path(args.debug), draw_net(colours, size, exc.stickers,
                                              title=f"{args.scan}: refused ({exc.code})"))
        raise _resolve_error(args.scan, exc) from exc
    if args.debug:
        _write(Path(args.debug), draw_net(colours, size, letters=result.facelets,
                                          title=f"{args.scan}: read"))
    print(_resolution_json(result, colours, tints) if args.json else result.facelets)
    print(_margin_note(result), file=sys.stderr)
    return 0


def _scan_pictures(out: Path, frames: dict[str, np.ndarray], readings: dict[str, FaceReading],
                   failed: dict[str, str], doubtful: tuple[int, ...] = (),
                   letters: str | None = None) -> None:
    """Write each face's annotated frame (doubtful stickers ringed; a face without a grid with
    the reason written on it) and, when every face was read, the net of measured colours."""
    out.mkdir(parents=True, exist_ok=True)
    size = next(iter(readings.values())).size if readings else 0
    for f, face in enumerate(FACES):
        if face in readings:
            area = readings[face].size ** 2
            mine = tuple(i - f * area for i in doubtful if i // area == f)
            picture = draw_debug(frames[face], readings[face], mine)
        else:
            picture = draw_failure(frames[face], failed.get(face, "not read"))
        _write(out / f"debug-{face}.png", picture)
    if len(readings) == len(FACES) and len({r.size for r in readings.values()}) == 1:
        colours = assemble(readings).colours
        title = "read" if letters else "refused" if doubtful else "not read"
        _write(out / "debug-net.png", draw_net(colours, size, doubtful, letters,
                                               title=f"{out}: {title}"))
    print(f"wrote debug pictures to {out}", file=sys.stderr)


def cmd_scan(args: argparse.Namespace) -> int:
    try:
        files = find_face_files(args.folder)
        frames = {face: read_image(path) for face, path in files.items()}
    except ScanError as exc:
        raise CommandError(str(exc)) from exc
    calibration = _load_calibration(args.calibration) if args.calibration else None
    readings: dict[str, FaceReading] = {}
    failed: dict[str, str] = {}
    try:
        if calibration:
            calibrated = read_cube(frames, calibration)
            for problem in calibrated.problems:
                print(f"calibration: {problem}", file=sys.stderr)
            result = calibrated.scan
        else:
            readings, failed = read_faces(frames, args.size)
            if failed:
                raise ScanError("; ".join(f"{face}: {why}" for face, why in failed.items()),
                                "".join(failed))
            result = resolve_readings(readings)
    except (ScanError, ResolveError) as exc:
        if args.debug:
            if calibration:
                readings, failed = read_faces(frames, calibration.size)
            _scan_pictures(Path(args.debug), frames, readings, failed,
                           getattr(exc, "stickers", ()))
        if isinstance(exc, ResolveError):
            raise _resolve_error(args.folder, exc) from exc
        raise CommandError(f"{exc}" + (f" (rescan faces {exc.faces})" if exc.faces else "")
                           ) from exc
    if args.debug:
        _scan_pictures(Path(args.debug), frames, result.readings, {},
                       letters=result.resolution.facelets)
    if args.json:
        print(_resolution_json(result.resolution, result.colours, result.tints))
    else:
        print(result.resolution.facelets)
    print(_margin_note(result.resolution), file=sys.stderr)
    return 0


def _load_calibration(path: str) -> Calibration:
    try:
        return load_calibration(path)
    except CalibrationError as exc:
        raise CommandError(str(exc)) from None


def calibration_frames(camera: str, cube: str | None, size: int | None = None) -> dict:
    """One frame per face: from a folder of six photos; from the sim camera (looking at
    ``cube``, default solved); or from a live camera, one face at a time as the user shows
    it (Enter when the face is in its scan pose)."""
    if Path(camera).is_dir():
        return {face: read_image(path) for face, path in find_face_files(camera).items()}
    if camera == "sim":
        source = SimSource(facelets=cube or solved(size or 3))
        return {face: source.capture(face, 0) for face in FACES}
    try:
        source = open_source(camera)
    except SourceError as exc:
        raise CommandError(str(exc)) from None
    frames = {}
    try:
        for face in FACES:
            print(f"put face {face} in view as in its scan pose, then press Enter",
                  file=sys.stderr, flush=True)
            if not sys.stdin.readline():
                raise CommandError(f"stdin closed before face {face} was shown")
            frames[face] = source.capture(face, 0)
    except SourceError as exc:
        raise CommandError(str(exc)) from None
    finally:
        source.close()
    return frames


def cmd_calibrate(args: argparse.Namespace) -> int:
    out = Path(args.out or os.environ.get(CALIBRATION_ENV) or DEFAULT_CALIBRATION_FILE)
    try:
        frames = calibration_frames(args.camera, args.cube, args.size)
        calibration = calibrate(frames, args.size, args.cube, source=args.camera)
    except (ScanError, CalibrationError) as exc:
        raise CommandError(str(exc)) from None
    try:
        save_calibration(calibration, out)
    except OSError as exc:
        raise CommandError(f"cannot write {out}: {exc.strerror}") from None
    if args.json:
        print(json.dumps(calibration.to_json()))
    else:
        n = calibration.size
        state = "solved" if calibration.cube == solved(n) else calibration.cube
        print(f"{n}x{n}x{n} cube, {state}")
        for face in FACES:
            region = calibration.regions[face]
            x, y = region.centres.mean(axis=0)
            r, g, b = (int(round(v)) for v in calibration.colours[face])
            print(f"  {face}: {n * n} stickers around ({x:.0f}, {y:.0f}) px, pitch "
                  f"{region.pitch_px:.0f} px; colour rgb({r}, {g}, {b}), spread Delta E "
                  f"{calibration.spread[face]:.1f}")
    for warning in calibration.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"wrote {out}; the vision service reads it with --calibration {out} or "
          f"${CALIBRATION_ENV}", file=sys.stderr)
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    facelets = args.facelets.strip()
    if len(facelets) not in (24, 54) or set(facelets) - set("URFDLB"):
        raise CommandError(f"{facelets!r} is not a facelet string: give 24 or 54 letters from "
                           "URFDLB")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    poses = tuple((face, 0) for face in "URFDLB")
    frames = capture_poses(facelets, poses, args.seed, CLEAN if args.clean else Conditions())
    for face, frame in frames.items():
        path = out / f"sim-{face}.png"
        if not cv2.imwrite(str(path), frame):
            raise CommandError(f"cannot write {path}")
    print(f"wrote {len(frames)} frames to {out}", file=sys.stderr)
    return 0


def register_serve(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser(
        "serve", help="run the vision service on the bus",
        description="Capture at every actuator.scan_pose, publish vision.face results and "
                    "the vision.cube_state (or an errors message saying what to rescan).")
    serve.add_argument("--camera", default=config.camera(),
                       help="sim | device index | video file or URL | folder of images "
                            "(default $ROBOCELL_CAMERA or sim)")
    serve.add_argument("--size", type=int, choices=(2, 3),
                       help="cube size (default: the size of $ROBOCELL_PROFILE's robot, else "
                            "guessed per face)")
    serve.add_argument("--readers", type=int,
                       default=config.vision_readers(DEFAULT_THREADS),
                       help="views read at once, each in its own reader process (default "
                            f"$ROBOCELL_VISION_READERS or {DEFAULT_THREADS}; 0: one view at a "
                            "time, in the service process)")
    serve.add_argument("--seed", type=int, default=0, help="sim camera seed")
    serve.add_argument("--state", help="sim camera: look at this facelet string until the "
                                       "twin publishes its state")
    serve.add_argument("--scripted", type=float, metavar="SECONDS", default=None,
                       help="without an actuator: run the scripted pose sequence now and "
                            "then every SECONDS (0: once)")
    serve.add_argument("--calibration", metavar="FILE",
                       default=os.environ.get(CALIBRATION_ENV) or None,
                       help="calibration file from `vision calibrate` (default "
                            f"${CALIBRATION_ENV}); a frame that no longer matches it is "
                            "reported on the errors topic")
    add_remote_options(serve)
    serve.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    # the service (bus, reader processes) is loaded only to serve, not to read an image
    from robocell.services.vision.service import serve

    if is_device(args.camera):
        return serve(args, None)
    try:
        source = open_source(args.camera, args.seed)
    except SourceError as exc:
        raise CommandError(str(exc)) from None
    return serve(args, source)
