"""The collection benchmark's stage log holds one run: a rerun into the same file replaces it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run_bench(microban: Path, log: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, str(ROOT / "bench" / "sokoban_collections.py"),
                    str(microban), "--levels", "1,2", "--schedule", "1:5|2:5",
                    "--stage-log", str(log)], check=True, env=env, cwd=ROOT,
                   capture_output=True, timeout=300)


def test_a_rerun_replaces_the_stage_log(microban, tmp_path):
    log = tmp_path / "stages.jsonl"
    _run_bench(microban, log)
    first = [json.loads(line) for line in log.read_text().splitlines()]
    # Two lanes a level: each lane's stage ends are logged.
    assert {entry["level"] for entry in first} == {1, 2}
    assert any(entry["status"] == "solved" for entry in first)
    _run_bench(microban, log)
    again = [json.loads(line) for line in log.read_text().splitlines()]
    assert {entry["level"] for entry in again} == {1, 2}
    # One run's entries only: each stage of each lane of each level at most once. (How many
    # there are varies: the lane that loses a race to the same solution may log or not.)
    stages = [(entry["level"], entry["lane"], entry["stage"]) for entry in again]
    assert len(stages) == len(set(stages)), stages
