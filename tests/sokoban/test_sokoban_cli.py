"""`robocell sokoban` subcommands end to end through the real CLI entry point."""

from __future__ import annotations

import json

import pytest

from robocell.cli import main


def _solve_json(capsys, args: list[str]) -> dict:
    """``robocell sokoban solve ARGS --json``: it must succeed; its printed result."""
    assert main(["sokoban", "solve", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_parse_lists_every_level(microban, capsys):
    assert main(["sokoban", "parse", str(microban)]) == 0
    assert "155 of 155 levels valid" in capsys.readouterr().out


def test_parse_reports_an_invalid_level(tmp_path, capsys):
    bad = tmp_path / "bad.xsb"
    bad.write_text("#####\n#@$.#\n#####\n\n#####\n#@$ #\n#####\n")
    assert main(["sokoban", "parse", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "level 2" in out and "1 boxes but 0 goals" in out


def test_solve_moves_prints_lurd_and_counts(microban, capsys):
    result = _solve_json(capsys, [str(microban), "--level", "1", "--metric", "moves"])
    assert (result["moves"], result["pushes"], result["optimal"]) == (33, 8, True)


def test_verify_exit_codes(microban, capsys):
    assert main(["sokoban", "verify", str(microban), "--level", "1",
                 "dlUrrrdLullddrUluRuulDrddrruLdlUU"]) == 0
    assert main(["sokoban", "verify", str(microban), "--level", "1", "dlUrrrd"]) == 1
    assert "not solved" in capsys.readouterr().out


def test_graph_summary_and_export(microban, tmp_path, capsys):
    out_file = tmp_path / "g.graphml"
    assert main(["sokoban", "graph", str(microban), "--level", "2", "--json",
                 "--export", str(out_file)]) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[0])
    assert summary["solution_pushes"] == 3 and summary["dead_states"] > 0
    assert out_file.read_text().count("<node ") == summary["live_states"]


def test_graph_too_large_is_a_clear_error(microban, capsys):
    assert main(["sokoban", "graph", str(microban), "--level", "36", "--max-states",
                 "1000"]) == 2
    assert "raise --max-states" in capsys.readouterr().err


def test_generate_writes_levels_with_lengths(microban, tmp_path):
    out_file = tmp_path / "gen.xsb"
    assert main(["sokoban", "generate", str(microban), "--level", "3", "--count", "2",
                 "--output", str(out_file)]) == 0
    text = out_file.read_text()
    assert text.count("pushes (push-optimal)") == 2


def test_missing_level_is_a_user_error(microban, capsys):
    assert main(["sokoban", "solve", str(microban), "--level", "999"]) == 2
    assert "has levels 1..155" in capsys.readouterr().err


@pytest.mark.parametrize("level, flags, refused, says", [
    ("7", ["--weight", "100", "--packing"], ["--packing"], "--packing needs a fast mode"),
    ("7", ["--features"], ["--features", "--metric", "moves"], "push metric"),
    # XSokoban 58: a few hundred expansions with box moves, none of the single-push modes.
    ("58", ["--box-moves", "--features", "--packing"], ["--box-moves", "--weight", "1"],
     "--box-moves is a fast mode"),
])
def test_fast_mode_options_solve_and_are_refused_where_they_do_not_apply(
        xsokoban, capsys, level, flags, refused, says):
    result = _solve_json(capsys, [str(xsokoban), "--level", level, *flags])
    assert result["status"] == "solved" and not result["optimal"] and result["pushes"] > 0
    assert main(["sokoban", "solve", str(xsokoban), "--level", level, *refused]) == 2
    assert says in capsys.readouterr().err


@pytest.mark.slow
def test_solve_fast_runs_the_default_schedule_and_a_given_one(xsokoban, capsys):
    result = _solve_json(capsys, [str(xsokoban), "--level", "60", "--fast", "--timeout", "60"])
    assert result["status"] == "solved" and not result["optimal"] and result["seconds"] > 0
    assert _solve_json(capsys, [str(xsokoban), "--level", "1", "--schedule", "1:30,2fo:5"])[
        "optimal"]
    assert main(["sokoban", "solve", str(xsokoban), "--level", "1", "--schedule",
                 "1f:5"]) == 2
    assert "need a weight above 1" in capsys.readouterr().err
    assert main(["sokoban", "solve", str(xsokoban), "--level", "1", "--schedule", "1:5",
                 "--weight", "3"]) == 2
    assert "leave out --fast" in capsys.readouterr().err


def test_solve_fast_in_lanes_names_the_stage_and_refuses_lanes_it_cannot_use(microban, capsys):
    # Microban 2: both lanes of the default schedule solve it at once; the stage is named
    for lanes in ("1", "2"):
        result = _solve_json(capsys, [str(microban), "--level", "2", "--fast", "--timeout",
                                      "10", "--lanes", lanes])
        assert result["status"] == "solved" and result["stage"]
    for args, says in ((["--fast", "--lanes", "0"], "--lanes 0"),
                       (["--schedule", "1:5|2fo:5", "--lanes", "2"], "leave out --lanes"),
                       (["--schedule", "1:5|x:5"], "lane 2"),
                       (["--weight", "2", "--lanes", "2"], "give --fast")):
        assert main(["sokoban", "solve", str(microban), "--level", "2", *args]) == 2
        assert says in capsys.readouterr().err
