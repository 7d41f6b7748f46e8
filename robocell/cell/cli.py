"""`robocell demo`: the main job a new user runs first."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("demo", help="run the demo: scramble, check, solve, show")
    p.add_argument("--size", type=int, choices=(2, 3), default=3)
    p.add_argument("--seed", type=int, default=None)
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    import numpy as np

    from robocell.common.cube import apply_to_facelets, format_moves, random_facelets, validate
    from robocell.common.cube_cli import render_net
    from robocell.common.scramble import scramble_moves

    rng = np.random.default_rng(args.seed)
    facelets = random_facelets(args.size, rng)
    validate(facelets)
    print(f"scrambled {args.size}x{args.size}x{args.size}: {facelets}")
    print(render_net(facelets))
    moves = scramble_moves(facelets)
    print(f"a sequence reaching it: {format_moves(moves)}")
    from robocell.services.solver.api import solve

    plan = solve(facelets)
    print(f"solution ({plan.length} moves, {plan.solve_ms:.1f} ms): {format_moves(plan.moves)}")
    result = apply_to_facelets(facelets, plan.moves)
    print(render_net(result))
    return 0
