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
