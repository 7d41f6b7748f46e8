"""The 2x2x2 cost-to-go tables: published distributions, exact robot costs, manifests."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from robocell.common import tables
from robocell.common.profile import load_profile, parse_profile
from robocell.services.solver.cube2.coord import N_STATES, SOLVED, normal_coordinate, normalisers
from robocell.services.solver.cube2.robot import ProfileNotSupported, compile_profile
from robocell.services.solver.cube2.search import UNREACHED, table_value
from robocell.services.solver.cube2.tables import LAYOUT_BITS, group_for, load_tables

# published distance distributions of the 2x2x2 up to orientation
HTM_DISTRIBUTION = [1, 9, 54, 321, 1847, 9992, 50136, 227536, 870072, 1887748, 623800, 2644]
QTM_DISTRIBUTION = [1, 6, 27, 120, 534, 2256, 8969, 33058, 114149, 360508, 930588, 1350852,
                    782536, 90280, 276]


def unpacked(profile: str) -> np.ndarray:
    _, arrays = load_tables(load_profile(profile))
    packed, layout = arrays["cost_to_go"], arrays["layout"]
    if int(layout[LAYOUT_BITS]) == 4:
        low = packed & 0xF
        high = packed >> 4
        return np.stack([low, high], axis=-1).reshape(packed.shape[0], -1)
    return np.asarray(packed)


@pytest.mark.parametrize("profile, published", [("htm", HTM_DISTRIBUTION),
                                                ("qtm", QTM_DISTRIBUTION)])
def test_metric_distance_distributions_equal_the_published_ones(profile, published):
    distances = unpacked(profile)
    assert distances.shape == (1, N_STATES)
    assert np.bincount(distances[0]).tolist() == published


def test_reference_robot_reaches_every_class_and_table_is_bellman_consistent():
    profile = load_profile("soltvvo-2x2")
    model = compile_profile(profile)
    _, arrays = load_tables(profile)
    packed, bits = arrays["cost_to_go"], int(arrays["layout"][LAYOUT_BITS])
    values = unpacked("soltvvo-2x2")
    assert (values != UNREACHED[bits]).all()
    assert values[0, SOLVED] == 0 and (values[0, 1:] > 0).all()
    # h(s, q) = min over primitives allowed after q of cost + h(s p, q_p): checked from the
    # primitives' own face turns on the cube model, not from the compiled search edges
    from robocell.common.cube import apply_to_facelets, from_facelets, random_facelets

    norm = normalisers()

    def h(facelets: str, state: int) -> int:
        cube = from_facelets(facelets)
        g_cp, g_co = model.carrier_cp[state], model.carrier_co[state]
        cp = cube.corner_perm[g_cp]
        co = (cube.corner_twist[g_cp] + g_co) % 3
        coord = normal_coordinate(cp.astype(np.int8), co.astype(np.int8), *norm)
        return int(table_value(packed, bits, int(model.table_of_state[state]), coord))

    for seed in range(300):
        facelets = random_facelets(2, seed)
        for state in range(model.n_states):
            best = min(
                p.cost + h(apply_to_facelets(facelets, list(p.moves)), int(model.prim_state[i]))
                for i, p in enumerate(profile.primitives) if model.allowed[state, i])
            assert h(facelets, state) == best


def test_manifest_records_profile_hash_and_checksums():
    profile = load_profile("soltvvo-2x2")
    group = group_for(profile)
    tables.load(group)
    manifest = tables.read_manifest(group)
    assert manifest["params"]["profile_hash"] == profile.search_hash
    assert set(manifest["arrays"]) == {"perm_moves", "twist_moves", "cost_to_go", "layout"}
    assert manifest["arrays"]["cost_to_go"]["shape"] == [1, N_STATES]
    assert tables.verify(group) == []


def test_editing_a_profile_makes_its_table_stale(tmp_path):
    text = load_profile("soltvvo-2x2").path.read_text()
    edited = parse_profile(text.replace("cost = 3", "cost = 4", 1),
                           tmp_path / "soltvvo-2x2.toml")
    assert tables.staleness(group_for(edited)) == "built with other parameters"


def test_editing_what_the_search_does_not_read_keeps_the_table(tmp_path):
    """Motions, the scan program, wiring and comments are not what the tables are made of:
    editing them must not cost a rebuild."""
    text = load_profile("soltvvo-2x2").path.read_text()
    edited_text = text.replace('finish = ["turn F:90 B:-90", "grip gR gL"]',
                               'finish = ["turn F:90 B:-90", "grip gR gL"]  # back to start')
    edited_text += "\n# a note on the wiring\n"
    assert edited_text != text
    edited = parse_profile(edited_text, tmp_path / "soltvvo-2x2.toml")
    profile = load_profile("soltvvo-2x2")
    assert edited.content_hash != profile.content_hash
    assert edited.search_hash == profile.search_hash
    assert group_for(edited).params == group_for(profile).params


def test_profiles_the_tables_cannot_serve_are_refused_with_the_key(tmp_path):
    text = load_profile("htm").path.read_text().replace(
        "solved_any_orientation = true", "solved_any_orientation = false")
    fixed = parse_profile(text, tmp_path / "htm.toml")
    with pytest.raises(ProfileNotSupported, match="solved_any_orientation"):
        group_for(fixed)


@pytest.mark.slow
def test_tables_cli_verifies_and_describes_the_cube2_groups():
    for profile in ("htm", "qtm", "soltvvo-2x2"):
        tables.load(group_for(load_profile(profile)))
    out = subprocess.run([sys.executable, "-m", "robocell", "tables", "verify", "--json", "--all"],
                         capture_output=True, text=True, timeout=300)
    rows = {r["group"]: r for r in map(json.loads, out.stdout.splitlines())}
    for name in ("cube2-classes", "cube2-htm", "cube2-qtm", "cube2-soltvvo-2x2"):
        assert rows[name]["ok"], rows[name]
    info = subprocess.run([sys.executable, "-m", "robocell", "tables", "info", "--json",
                           "--profile", "soltvvo-2x2"], capture_output=True, text=True,
                          timeout=300)
    row = json.loads(info.stdout.splitlines()[1])
    assert row["group"] == "cube2-soltvvo-2x2" and row["status"] == "ok"
    assert row["arrays"]["cost_to_go"]["dtype"] == "uint8"


@pytest.mark.slow
def test_plan_cost_of_every_class_agrees_with_the_plans_and_has_the_known_mean():
    from robocell.common.cubie import CubieState
    from robocell.services.solver.api import solve
    from robocell.services.solver.cube2.moves import perm8_unrank, twist7_unrank
    from robocell.services.solver.cube2.solver import plan_costs

    costs, scale = plan_costs(load_profile("soltvvo-2x2"))
    assert scale == 1 and costs.shape == (N_STATES,) and costs.min() == 0
    assert np.count_nonzero(costs == 0) == 1
    rng = np.random.default_rng(5)
    cp = np.empty(8, dtype=np.int8)
    co = np.empty(8, dtype=np.int8)
    for coord in rng.integers(0, N_STATES, 300).tolist():
        classes, _ = load_tables(load_profile("soltvvo-2x2"))
        perm8_unrank(int(classes["normal_perm8"][coord // 729]), cp)
        twist7_unrank((coord % 729) * 3, co)
        facelets = CubieState(2, cp.copy(), co.copy()).to_facelets()
        assert solve(facelets, "soltvvo-2x2").cost == costs[coord]
    # htm: before the first turn the plan length is the distance itself
    htm_costs, _ = plan_costs(load_profile("htm"))
    assert np.bincount(htm_costs).tolist() == HTM_DISTRIBUTION


def test_solve_on_a_table_with_a_bad_checksum_says_so_and_how_to_rebuild(tmp_path):
    """A damaged table is named as such (like `tables verify`), not as one that does not fit
    the profile, and the command exits 2 without a traceback."""
    profile = load_profile("soltvvo-2x2")
    for group in (group_for(profile), group_for(load_profile("htm"))):
        tables.load(group)
    for name in ("cube2-classes", group_for(profile).name, group_for(load_profile("htm")).name):
        shutil.copytree(tables.tables_dir() / name, tmp_path / name)
    damaged = np.load(tmp_path / group_for(profile).name / "cost_to_go.npy", mmap_mode="r+")
    damaged[:] = 0
    damaged.flush()
    del damaged
    env = dict(os.environ, ROBOCELL_TABLES=str(tmp_path),
               PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-m", "robocell", "solve", "--profile", "soltvvo-2x2",
                           "UFFLFDBBUDBLLURRFRBDRLDU"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert "Traceback" not in done.stderr
    assert done.returncode == 2, done.stderr
    assert "checksum mismatch" in done.stderr
    assert "do not fit the profile" not in done.stderr
    assert "robocell tables build --force --profile soltvvo-2x2" in done.stderr
