"""Colour resolution: real colour scans to valid cube states, and precise refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from robocell.common.cube import facelet_name
from robocell.services.vision.interchange import (
    ScanFormatError,
    load_scan,
    parse_scan,
    scan_to_facelet_order,
    to_scan,
)
from robocell.services.vision.resolve import AMBIGUOUS_COST, ResolveError, resolve, same_cube


def expected_facelets(shared_data):
    table = (shared_data / "vision" / "scans" / "expected.tsv").read_text().splitlines()
    rows = [line.split("\t") for line in table if line and not line.startswith("#")]
    return {name: facelets.strip() for name, facelets in rows}


def test_every_real_scan_resolves_to_the_expected_cube(shared_data):
    expected = expected_facelets(shared_data)
    folder = shared_data / "vision" / "scans"
    assert sorted(expected) == sorted(p.name for p in folder.glob("*.json"))
    for name, want in expected.items():
        colours, size = load_scan(folder / name)
        result = resolve(colours, size)
        assert same_cube(result.facelets, want), name  # a 2x2: the same grouping
        assert result.margin >= AMBIGUOUS_COST, name


def test_a_sticker_read_as_a_confusable_colour_is_fixed_by_the_cube(shared_data):
    colours, size = load_scan(shared_data / "vision" / "scans" / "3x3x3-random-02.json")
    want = resolve(colours, size).facelets
    letters = {letter: [i for i, x in enumerate(want) if x == letter] for letter in set(want)}
    mean_rgb = {letter: colours[idx].mean(0) for letter, idx in letters.items()}
    _, near_a, near_b = min((np.abs(mean_rgb[a] - mean_rgb[b]).sum(), a, b)
                            for a in mean_rgb for b in mean_rgb if a < b)
    doubted = []
    for target in letters[near_a]:
        if target % 9 == 4:
            continue  # centres define the colours
        # The sticker reads exactly as the other colour: only the cube's constraints can tell.
        moved = colours.copy()
        moved[target] = mean_rgb[near_b]
        result = resolve(moved, size)
        assert result.facelets == want
        assert result.confidence[target] == min(result.confidence)
        doubted.append(result.confidence[target] < 1.0)
    assert any(doubted)


def test_swapped_stickers_are_named_not_silently_accepted(shared_data):
    colours, size = load_scan(shared_data / "vision" / "scans" / "3x3x3-random-03.json")
    want = resolve(colours, size).facelets
    # Swap the colours of two edge stickers of different colours: no valid cube has them.
    a = 1   # U2
    b = next(i for i in (19, 21, 23, 25) if want[i] != want[a])
    swapped = colours.copy()
    swapped[[a, b]] = colours[[b, a]]
    with pytest.raises(ResolveError) as caught:
        result = resolve(swapped, size)
        assert result.facelets == want  # only acceptable outcome besides an error
        raise ResolveError("fixed", "fixed by the constraints", (a, b), size)
    assert {a, b} <= set(caught.value.stickers)
    assert facelet_name(3, a) in str(caught.value) or caught.value.code == "fixed"


def test_a_grey_cube_is_refused_with_stickers_named():
    rng = np.random.default_rng(3)
    colours = 128 + rng.normal(0, 2, size=(54, 3))
    with pytest.raises(ResolveError) as caught:
        resolve(colours, 3)
    assert caught.value.stickers
    assert caught.value.faces


def test_bad_input_shapes_are_refused():
    with pytest.raises(ResolveError, match="neither a 2x2"):
        resolve(np.zeros((30, 3)))
    with pytest.raises(ResolveError, match="has 54 stickers"):
        resolve(np.zeros((24, 3)), 3)
    bad = np.full((24, 3), 100.0)
    bad[5, 1] = np.nan
    with pytest.raises(ResolveError, match="R2"):
        resolve(bad, 2)


def test_scan_format_round_trips_and_rejects_bad_files(tmp_path):
    order = scan_to_facelet_order(3)
    assert sorted(order.tolist()) == list(range(54))
    # Facelet U1 is scan sticker 1; facelet R1 is the first sticker of the 4th scan face.
    assert order[0] == 0 and order[9] == 27
    colours = np.arange(54 * 3, dtype=float).reshape(54, 3) % 256
    again, size = parse_scan(to_scan(colours, 3))
    assert size == 3 and np.array_equal(again, colours)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({str(i): [1, 2, 3] for i in range(1, 24)}))
    with pytest.raises(ScanFormatError, match="23 stickers"):
        load_scan(bad)
    bad.write_text("{not json")
    with pytest.raises(ScanFormatError, match="not JSON"):
        load_scan(bad)
    data = {str(i): [1, 2, 3] for i in range(1, 25)}
    data["7"] = [1, 2]
    with pytest.raises(ScanFormatError, match="sticker 7"):
        parse_scan(data)
