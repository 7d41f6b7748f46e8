"""`robocell vision ...`: detect a face in an image, resolve a colour scan, scan a folder of
six face images, render sim-camera frames, and run the vision service."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cv2

from robocell.errors import CommandError
from robocell.services.vision.detect import DetectionError, detect, draw_debug
from robocell.services.vision.interchange import ScanFormatError, load_scan
from robocell.services.vision.resolve import ResolveError, resolve
from robocell.services.vision.scan import ScanError, find_face_files, read_image, scan_frames
from robocell.services.vision.simcam import CLEAN, Conditions, capture_poses


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
    resolve.add_argument("scan", help='JSON file {"1": [r, g, b], ...}, faces U L F R B D')
    resolve.add_argument("--size", type=int, choices=(2, 3), help="cube size (default: from "
                         "the number of stickers)")
    resolve.add_argument("--json", action="store_true",
                         help="print facelets, per-sticker confidence and colours as JSON")
    resolve.set_defaults(func=cmd_resolve)

    scan = commands.add_parser(
        "scan", help="read six face images (*-U.png ... *-D.png) and resolve the cube")
    scan.add_argument("folder", help="folder holding one image per face")
    scan.add_argument("--size", type=int, choices=(2, 3), help="cube size (default: guess)")
    scan.add_argument("--debug", metavar="DIR", help="write annotated images here")
    scan.add_argument("--json", action="store_true", help="print the result as JSON")
    scan.set_defaults(func=cmd_scan)

    render = commands.add_parser(
        "render", help="render the six faces of a cube state with the sim camera")
    render.add_argument("facelets", help="facelet string, URFDLB order (24 or 54 letters)")
    render.add_argument("--out", required=True, metavar="DIR",
                        help="folder for sim-U.png ... sim-D.png")
    render.add_argument("--seed", type=int, default=0)
    render.add_argument("--clean", action="store_true",
                        help="no clutter, noise, glare or lighting changes")
    render.set_defaults(func=cmd_render)

    try:
        # lazy and guarded: the service needs the bus, which an installation may leave out
        from robocell.services.vision import service
    except ImportError:  # the bus is not part of this installation
        return
    service.register(commands)


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


def _resolution_json(result, colours) -> str:
    return json.dumps({
        "facelets": result.facelets,
        "size": result.size,
        "confidence": [round(c, 3) for c in result.confidence],
        "colours": {face: list(rgb) for face, rgb in result.class_rgb.items()},
        "margin": None if result.margin == float("inf") else round(result.margin, 2),
        "stickers": [[int(round(c)) for c in rgb] for rgb in colours],
    })


def _resolve_error(where: str, exc) -> CommandError:
    faces = f" (faces {exc.faces})" if getattr(exc, "faces", "") else ""
    return CommandError(f"{where}: {exc}{faces}")


def cmd_resolve(args: argparse.Namespace) -> int:
    try:
        colours, size = load_scan(args.scan, args.size)
        result = resolve(colours, size)
    except ScanFormatError as exc:
        raise CommandError(str(exc)) from exc
    except ResolveError as exc:
        raise _resolve_error(args.scan, exc) from exc
    print(_resolution_json(result, colours) if args.json else result.facelets)
    return 0


def cmd_scan(args: argparse.Namespace) -> int:
    try:
        files = find_face_files(args.folder)
        frames = {face: read_image(path) for face, path in files.items()}
        result = scan_frames(frames, args.size)
    except ScanError as exc:
        raise CommandError(f"{exc}" + (f" (rescan faces {exc.faces})" if exc.faces else "")
                           ) from exc
    except ResolveError as exc:
        raise _resolve_error(args.folder, exc) from exc
    if args.debug:
        out = Path(args.debug)
        out.mkdir(parents=True, exist_ok=True)
        for face, reading in result.readings.items():
            cv2.imwrite(str(out / f"debug-{face}.png"), draw_debug(frames[face], reading))
    if args.json:
        print(_resolution_json(result.resolution, result.colours))
    else:
        print(result.resolution.facelets)
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
