"""Validation: every impossible cube is refused with its specific code and stickers."""

import itertools

import pytest

from robocell.common.cube import (
    CubeStateError,
    apply_to_facelets,
    corner_facelets,
    edge_facelets,
    random_facelets,
    solved,
    validate,
)

SUPERFLIP = "UBULURUFURURFRBRDRFUFLFRFDFDFDLDRDBDLULBLFLDLBUBRBLBDB"
CHECKERBOARD = "UDUDUDUDURLRLRLRLRFBFBFBFBFDUDUDUDUDLRLRLRLRLBFBFBFBFB"


def code_of(facelets: str) -> str:
    with pytest.raises(CubeStateError) as info:
        validate(facelets)
    return info.value.code


def swap(facelets: str, i: int, j: int) -> str:
    chars = list(facelets)
    chars[i], chars[j] = chars[j], chars[i]
    return "".join(chars)


def test_known_states_are_valid():
    superflip = apply_to_facelets(
        solved(3), "U R2 F B R B2 R U2 L B2 R U' D' R2 F R' L B2 U2 F2")
    assert superflip == SUPERFLIP
    assert apply_to_facelets(solved(3), "M2 E2 S2") == CHECKERBOARD
    for facelets in (SUPERFLIP, CHECKERBOARD, solved(2), solved(3)):
        validate(facelets)
    flipped = validate(SUPERFLIP)
    assert flipped.edge_flip.tolist() == [1] * 12


def test_2x2_in_any_orientation_is_valid():
    upside_down = apply_to_facelets(solved(2), "x2")
    assert upside_down == "DDDDRRRRBBBBUUUULLLLFFFF"
    assert validate(upside_down).size == 2
    for rotation in ("y", "z", "x y", "z'"):
        validate(apply_to_facelets(apply_to_facelets(solved(2), "R U F'"), rotation))


def test_3x3_whole_cube_rotation_is_valid():
    validate(apply_to_facelets(solved(3), "R U x y'"))


@pytest.mark.parametrize("facelets, code", [
    ("U" * 53, "length"),
    (solved(3)[:-1] + "X", "letters"),
    (solved(3)[:-1] + "F", "colour_count"),
])
def test_basic_codes(facelets, code):
    assert code_of(facelets) == code


def test_size_mismatch_is_a_length_error():
    with pytest.raises(CubeStateError) as info:
        validate(solved(2), size=3)
    assert info.value.code == "length"


def test_centres_repeated_or_mirrored():
    cube = solved(3)
    assert code_of(swap(cube, 4, 13)) == "centres"          # U and R centres swapped: mirror
    twisted = apply_to_facelets(cube, "R")
    assert code_of(swap(twisted, 4, 22)) in ("centres",)


def test_twisted_corner_flipped_edge_and_swapped_pieces():
    cube = solved(3)
    a, b, c = corner_facelets(3)[0]
    twisted = list(cube)
    twisted[a], twisted[b], twisted[c] = cube[c], cube[a], cube[b]
    assert code_of("".join(twisted)) == "corner_twist"
    e0, e1 = edge_facelets()[0]
    assert code_of(swap(cube, e0, e1)) == "edge_flip"
    # exchange two whole edges: UR and UF
    (p0, p1), (q0, q1) = edge_facelets()[0], edge_facelets()[1]
    two_edges = swap(swap(cube, p0, q0), p1, q1)
    assert code_of(two_edges) == "parity"


def test_mirrored_corner_names_its_stickers():
    cube = solved(3)
    _, b, c = corner_facelets(3)[0]
    with pytest.raises(CubeStateError) as info:
        validate(swap(cube, b, c))
    assert info.value.code == "corner_colours"
    assert set(info.value.stickers) == set(corner_facelets(3)[0])
    assert "URF" in str(info.value)


def test_duplicate_cubie_and_impossible_edge():
    cube = solved(3)
    # UR and DR exchange their U/D stickers: both still real edges, a single swap -> parity
    assert code_of(swap(cube, edge_facelets()[0][0], edge_facelets()[4][0])) == "parity"
    # the F sticker of UF and the R sticker of DR exchange: UF now shows a second UR edge
    with pytest.raises(CubeStateError) as info:
        validate(swap(cube, edge_facelets()[1][1], edge_facelets()[4][1]))
    assert info.value.code == "duplicate_cubie"
    assert set(edge_facelets()[0]) | set(edge_facelets()[1]) == set(info.value.stickers)
    # an edge showing opposite colours U and D is no real edge
    assert code_of(swap(cube, edge_facelets()[0][1], edge_facelets()[5][0])) == "edge_colours"


@pytest.mark.parametrize("size, seed", [(3, 1), (3, 2), (2, 3), (2, 4)])
def test_every_single_sticker_recolouring_is_refused(size, seed):
    cube = random_facelets(size, seed)
    for i, letter in itertools.product(range(len(cube)), "URFDLB"):
        if cube[i] != letter:
            assert code_of(cube[:i] + letter + cube[i + 1:]) == "colour_count"


@pytest.mark.parametrize("size, seed", [(3, 5), (3, 6), (2, 7), (2, 8)])
def test_every_swap_of_two_differently_coloured_stickers_is_refused(size, seed):
    cube = random_facelets(size, seed)
    seen_codes = set()
    for i, j in itertools.combinations(range(len(cube)), 2):
        if cube[i] != cube[j]:
            seen_codes.add(code_of(swap(cube, i, j)))
    assert seen_codes <= {"centres", "corner_colours", "edge_colours", "duplicate_cubie",
                          "corner_twist", "edge_flip", "parity"}


def test_error_carries_machine_readable_fields():
    with pytest.raises(CubeStateError) as info:
        validate(solved(3)[:-1] + "F")
    err = info.value
    assert isinstance(err, ValueError)
    d = err.to_dict()
    assert d["code"] == "colour_count" and 53 in d["stickers"]


def _twist_corner(cube: str, position: int, size: int = 3) -> str:
    a, b, c = corner_facelets(size)[position]
    out = list(cube)
    out[a], out[b], out[c] = cube[c], cube[a], cube[b]
    return "".join(out)


@pytest.mark.parametrize("size", [2, 3])
def test_a_lone_twisted_corner_is_named_with_its_stickers(size):
    with pytest.raises(CubeStateError) as info:
        validate(_twist_corner(solved(size), 3, size))
    assert info.value.code == "corner_twist"
    assert set(info.value.stickers) == set(corner_facelets(size)[3])
    assert "the corner at UBR is twisted in place" in str(info.value)


def test_a_twist_in_a_scrambled_cube_lists_the_corners_that_could_be_at_fault():
    cube = apply_to_facelets(solved(3), "R U F' D2 L B' U R2", 3)
    with pytest.raises(CubeStateError) as info:
        validate(_twist_corner(cube, 3))
    message = str(info.value)
    assert "it cannot be told which" in message
    assert "URF, ULB, UBR, DFR" in message  # UBR, the one twisted, among them


def test_a_lone_flipped_edge_is_named_with_its_stickers():
    e0, e1 = edge_facelets()[7]
    with pytest.raises(CubeStateError) as info:
        validate(swap(solved(3), e0, e1))
    assert info.value.code == "edge_flip"
    assert set(info.value.stickers) == {e0, e1}
    assert "the edge at DB is flipped in place" in str(info.value)


def test_two_swapped_pieces_are_named_when_every_other_piece_is_home():
    (p0, p1), (q0, q1) = edge_facelets()[0], edge_facelets()[1]
    with pytest.raises(CubeStateError) as info:
        validate(swap(swap(solved(3), p0, q0), p1, q1))
    assert info.value.code == "parity"
    assert "the edges at UR and UF have been swapped" in str(info.value)
    assert set(info.value.stickers) == {p0, p1, q0, q1}


def test_a_parity_error_in_a_scrambled_cube_says_why_no_piece_is_named():
    cube = apply_to_facelets(solved(3), "R U F' D2 L B' U R2", 3)
    (p0, p1), (q0, q1) = edge_facelets()[0], edge_facelets()[1]
    with pytest.raises(CubeStateError) as info:
        validate(swap(swap(cube, p0, q0), p1, q1))
    assert info.value.code == "parity"
    assert info.value.stickers == ()
    assert "no piece can be named, since exchanging any two corners or any two edges" \
        in str(info.value)
