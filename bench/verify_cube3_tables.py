"""Truth checks of the 3x3x3 two-phase tables that are computations rather than quick tests.

1. Breadth-first search of the whole cube to depth 6 in the half-turn metric: positions per
   depth against the published 1, 18, 243, 3240, 43239, 574908, 7618438.
2. The phase-1 pruning table, rebuilt with exact distances and expanded from the 64,430
   flip-slice classes x 2187 twists to all 2,217,093,120 phase-1 cosets: cosets per distance.
3. The phase-2 table's distance distribution over its classes (no published figure; printed).

    python bench/verify_cube3_tables.py     # about a minute and 1 GB on one core
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "solver"))

from test_cube3_pruning import PUBLISHED_HTM_COUNTS, htm_level_counts  # noqa: E402

from robocell.services.solver.cube3 import moves, pruning, symmetries  # noqa: E402
from robocell.services.solver.cube3.defs import N_PHASE1_COSETS  # noqa: E402

KOCIEMBA_PHASE1 = [1, 4, 50, 592, 7156, 87236, 1043817, 12070278, 124946368, 821605960,
                   1199128738, 58202444, 476]
"""Phase-1 cosets per distance (HTM) as published on kociemba.org."""
ISSUE_PHASE1 = [1, 4, 74, 1230, 18056, 245902, 3082221, 34529024, 301243996, 1209021801,
                663711855, 5238847, 109]
"""The list quoted in the issue. It cannot be the HTM phase-1 distribution: the 4 cosets at
distance 1 have at most 4 x 18 = 72 neighbours, so distance 2 cannot hold 74."""


def main() -> int:
    report: dict = {}
    ok = True
    started = time.monotonic()
    counts = htm_level_counts(6)
    report["htm_bfs"] = counts
    same = counts == PUBLISHED_HTM_COUNTS
    ok &= same
    print(f"HTM breadth-first counts, depth 0..6: {counts} "
          f"({'= published' if same else '!= published ' + str(PUBLISHED_HTM_COUNTS)}) "
          f"[{time.monotonic() - started:.0f}s]")

    started = time.monotonic()
    move_tables = moves.build_move_tables()
    sym_tables = symmetries.build_sym_tables()
    depth1 = pruning.phase1_depth(move_tables, sym_tables)
    distribution = pruning.phase1_coset_distribution(depth1, sym_tables).tolist()
    report["phase1_cosets"] = distribution
    total = sum(distribution)
    same = distribution == KOCIEMBA_PHASE1 and total == N_PHASE1_COSETS
    ok &= same
    print(f"phase-1 cosets per distance (sum {total:,} of {N_PHASE1_COSETS:,}):")
    print(f"  {distribution}")
    print(f"  {'= kociemba.org' if same else '!= kociemba.org ' + str(KOCIEMBA_PHASE1)}; "
          f"the issue's list {'matches' if distribution == ISSUE_PHASE1 else 'differs'} "
          f"(it has 74 at distance 2, more than the 72 neighbours of the 4 cosets at "
          f"distance 1) [{time.monotonic() - started:.0f}s]")
    report["phase1_classes"] = np.bincount(depth1).tolist()
    del depth1

    depth2 = pruning.phase2_depth(move_tables, sym_tables)
    report["phase2_classes"] = np.bincount(depth2).tolist()
    print(f"phase-2 table entries per distance: {report['phase2_classes']}")
    out = ROOT / "bench" / "results" / "verify_cube3_tables.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print("all truth checks passed" if ok else "TRUTH CHECK FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
