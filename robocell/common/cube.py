"""The cube model in one import: facelets, cubies, notation, moves, validation, scrambles."""

from robocell.common.cubie import CubieState, from_facelets, permutation_parity
from robocell.common.facelets import (
    CORNER_NAMES,
    EDGE_NAMES,
    FACES,
    centre_facelets,
    corner_facelets,
    edge_facelets,
    facelet_name,
    size_of,
    solved,
)
from robocell.common.moves import MoveError, apply_to_cubies, apply_to_facelets
from robocell.common.notation import (
    Move,
    NotationError,
    format_moves,
    invert_moves,
    parse_moves,
    simplify_moves,
)
from robocell.common.scramble import random_cubie_state, random_facelets
from robocell.common.validation import ERROR_CODES, CubeStateError, is_valid, validate

__all__ = [
    "CORNER_NAMES", "EDGE_NAMES", "ERROR_CODES", "FACES", "CubeStateError", "CubieState",
    "Move", "MoveError", "NotationError", "apply_to_cubies", "apply_to_facelets",
    "centre_facelets", "corner_facelets", "edge_facelets", "facelet_name", "format_moves",
    "from_facelets", "invert_moves", "is_valid", "parse_moves", "permutation_parity",
    "random_cubie_state", "random_facelets", "simplify_moves", "size_of", "solved", "validate",
]
