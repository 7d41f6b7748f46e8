"""`robocell --help` lists every subcommand from a static table without importing its code,
and the table says what each module's register() really adds."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from robocell.cli import COMMANDS, main, resolve


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_table_entry_matches_what_its_module_registers(command) -> None:
    subparsers = argparse.ArgumentParser().add_subparsers()
    resolve(command)(subparsers)
    helps = {action.dest: action.help for action in subparsers._choices_actions}
    assert helps.get(command.name) == command.help


def test_help_imports_no_command_module() -> None:
    code = ("import sys\nfrom robocell.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('robocell.services', "
            "'robocell.sokoban', 'numba', 'zmq', 'cv2'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_a_subcommand_runs_through_its_own_module(capsys) -> None:
    assert main(["cube", "invert", "R U"]) == 0
    assert capsys.readouterr().out.strip() == "U' R'"


def test_json_piped_into_head_ends_quietly() -> None:
    """`robocell ... --json | head -1`: the reader leaves early; no BrokenPipeError traceback."""
    producer = subprocess.Popen([sys.executable, "-m", "robocell", "cube", "scramble",
                                 "--count", "20000", "--json"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    first = producer.stdout.readline()
    producer.stdout.close()  # what head does after its first line
    status = producer.wait(120)
    err = producer.stderr.read().decode()
    producer.stderr.close()
    assert first.startswith(b'{"size": 3')
    assert "Traceback" not in err and "BrokenPipeError" not in err
    assert status == 141  # as a shell reports a command stopped by SIGPIPE


def test_dev_with_an_unknown_command_exits_non_zero_with_its_usage() -> None:
    from support.bus import REPO

    done = subprocess.run([str(REPO / "dev"), "frob"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert "dev: unknown command 'frob'" in done.stderr
    assert "./dev test" in done.stderr
