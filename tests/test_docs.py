"""Docs that cannot drift: every command in the shell blocks of the README and docs/ names a
command and options `robocell` has (its --help is run and must list each option used), the
commands shown with their output give that output, the scripts named exist, and every
documented variable and default port is the one the code reads.

A line that needs hardware or a long build says so in its comment (``(needs: hardware)``,
``(needs: a long build, ...)``); like every other line it is checked by its --help, and the
cube model's lines with their output shown also run for real.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from robocell import cli
from robocell.common import config
from robocell.common.cube import random_facelets
from robocell.common.notation import parse_moves

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", ROOT / "firmware" / "README.md",
             *sorted((ROOT / "docs").glob("*.md"))]
SHELL_BLOCK = re.compile(r"```sh\n(.*?)```", re.S)
CODE_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")
COMMENT = re.compile(r"\s+#\s.*$")


def shell_lines() -> list[tuple[str, str]]:
    """(where, line) for every command line of every shell block, continuations joined: a
    line ending in a backslash, and a synopsis line wrapped onto indented lines."""
    found = []
    for path in DOC_FILES:
        for block in SHELL_BLOCK.findall(path.read_text()):
            lines: list[str] = []
            for line in block.replace("\\\n", " ").splitlines():
                if lines and line.startswith(" ") and line.strip():
                    lines[-1] = f"{COMMENT.sub('', lines[-1])} {line.strip()}"
                else:
                    lines.append(line)
            for line in lines:
                if line.strip() and not line.lstrip().startswith("#"):
                    found.append((f"{path.relative_to(ROOT)}: {line.strip()[:60]}", line))
    return found


def test_every_block_of_commands_is_a_shell_block():
    """A command shown in a block without ``sh`` would escape every check below."""
    unchecked = []
    for path in DOC_FILES:
        for language, block in CODE_BLOCK.findall(path.read_text()):
            if language != "sh" and re.search(r"^\s*(robocell|python|\./dev) ", block, re.M):
                unchecked.append(f"{path.relative_to(ROOT)}: ```{language} {block[:50]!r}")
    assert not unchecked, unchecked


def words_of(line: str) -> list[str]:
    """The words of a command line without its comment, variables and a trailing ``&``."""
    text = COMMENT.sub("", line).strip().rstrip("&").strip()
    text = text.split(" && ")[0]
    words = shlex.split(text)
    while words and ASSIGNMENT.match(words[0]):
        words.pop(0)
    return words


def robocell_lines() -> list[tuple[str, list[str]]]:
    return [(where, words) for where, line in shell_lines()
            if (words := words_of(line)) and words[0] == "robocell"]


def help_of(path: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        cli.main([*path, "--help"])
    assert done.value.code == 0, path
    return out.getvalue()


def subcommands(help_text: str) -> set[str]:
    """The subcommands a --help lists (the names under its positional arguments)."""
    section = help_text.split("positional arguments:")[-1].split("options:")[0]
    return set(re.findall(r"^    ([a-z][\w-]*)", section, re.M))


def command_path(words: list[str]) -> list[str]:
    """The subcommands a documented line names (``bus list``, ``tables build``)."""
    path = [words[1]]
    for word in words[2:]:
        if word not in subcommands(help_of(path)):
            break
        path.append(word)
    return path


@pytest.mark.parametrize(("where", "words"), robocell_lines(), ids=lambda v: v if isinstance(
    v, str) else "")
def test_every_documented_command_and_option_exists(where, words):
    assert words[1] in {c.name for c in cli.COMMANDS}, where
    path = command_path(words)
    help_text = help_of(path)
    for word in words[len(path) + 1:]:
        option = re.match(r"[\[(]?(--[\w-]+)", word)
        if option:
            assert option.group(1) in help_text, f"{where}: {option.group(1)} is not an " \
                                                 f"option of {path}"


def test_documented_scripts_exist():
    for where, line in shell_lines():
        words = words_of(line)
        if words and words[0] in ("./dev", "python") and len(words) > 1 and words[1] != "-m":
            target = words[0] if words[0] == "./dev" else words[1]
            assert (ROOT / target).exists(), where


@pytest.mark.parametrize(("line", "expected"), [
    ('robocell cube invert "R U2\' F\'"', "F U2 R'"),
    ('robocell cube simplify "R L R\' U U"', "L U2"),
])
def test_the_readme_cube_examples_print_what_it_says(line, expected, capsys):
    assert line in (ROOT / "README.md").read_text()
    assert cli.main(shlex.split(line)[1:]) == 0
    assert capsys.readouterr().out.strip() == expected


def test_every_documented_variable_is_read_by_the_code():
    sources = "\n".join(p.read_text() for p in (ROOT / "robocell").rglob("*.py"))
    sources += (ROOT / "robocell" / "deploy" / "docker-compose.yml").read_text()
    documented = {name for path in DOC_FILES
                  for name in re.findall(r"\bROBOCELL_[A-Z_]+[A-Z]\b", path.read_text())}
    assert documented
    missing = sorted(name for name in documented if name not in sources)
    assert not missing, missing


def test_the_configuration_table_gives_the_code_defaults():
    readme = (ROOT / "README.md").read_text()
    for variable, default in ((config.BUS_PORT_ENV, config.DEFAULT_BUS_PORT),
                              (config.SIM_PORT_ENV, config.DEFAULT_SIM_PORT),
                              (config.MONITOR_PORT_ENV, config.DEFAULT_MONITOR_PORT),
                              (config.FOXGLOVE_PORT_ENV, config.DEFAULT_FOXGLOVE_PORT)):
        row = re.search(rf"^\| `{variable}` \| (\d+) \|", readme, re.M)
        assert row and int(row.group(1)) == default, variable


HARDWARE = re.compile(r"/dev/tty|--camera 0|firmware flash|firmware build|--avr"
                      r"|^robocell up\s*(#|$)")


def test_a_command_that_needs_hardware_or_a_long_build_is_marked_so():
    unmarked = [where for where, line in shell_lines()
                if HARDWARE.search(line.strip()) and "(needs:" not in line
                and "--dry-run" not in line]
    assert not unmarked, unmarked


def test_the_readme_says_how_upper_case_rotations_are_read():
    assert "`X Y Z` are read as `x y z`" in " ".join((ROOT / "README.md").read_text().split())
    assert parse_moves("X2 Y' Z") == parse_moves("x2 y' z")


URL_PORT = re.compile(r"\b(socket|http|ws)://(?:127\.0\.0\.1|localhost):(\d+)")


def test_every_local_address_in_the_docs_has_the_port_the_code_uses():
    """The simulator's serial URL, the dashboard's and Foxglove's addresses give the code's
    default ports (remote bus endpoints: tests/integration/test_documented_recipes.py)."""
    expected = {"socket": config.DEFAULT_SIM_PORT, "http": config.DEFAULT_MONITOR_PORT,
                "ws": config.DEFAULT_FOXGLOVE_PORT}
    wrong = [f"{path.relative_to(ROOT)}: {scheme}://...:{port}, the code uses "
             f"{expected[scheme]}"
             for path in DOC_FILES for scheme, port in URL_PORT.findall(path.read_text())
             if int(port) != expected[scheme]]
    assert not wrong, wrong


# --- the documented commands that need no cell run for real --------------------------------

RUN_HERE = {("cube",), ("keys",), ("sokoban", "parse"), ("sokoban", "verify"),
            ("sokoban", "graph"), ("sokoban", "generate"), ("sokoban", "solve")}
"""Commands that need no bus, no hardware and no tables: each documented line of them runs."""
LEVEL = "######\n#    #\n# $$ #\n#.@ .#\n######\n"
LEVEL_LURD = "luurDRurDldL"
PLACEHOLDERS = {"FACELETS": random_facelets(3, 48), "FILE": "level.xsb", "N": "1",
                "LURD": LEVEL_LURD, "K": "1", "S": "5"}


def runnable(words: list[str]) -> list[str]:
    """A documented line as a command: optional parts ``[...]`` left out, the first of
    alternatives ``a|b`` taken, placeholders filled in."""
    out, depth = [], 0
    for word in words:
        opens, closes = word.count("["), word.count("]")
        if depth == 0 and not opens:
            first = word.split("|")[0] if "|" in word and not word.startswith("{") else word
            out.append(PLACEHOLDERS.get(first, first))
        depth += opens - closes
    return out


def run_here_lines() -> list[tuple[str, list[str]]]:
    return [(where, words) for where, words in robocell_lines()
            if tuple(words[1:3]) in RUN_HERE or tuple(words[1:2]) in RUN_HERE]


@pytest.mark.slow
@pytest.mark.parametrize(("where", "words"), run_here_lines(), ids=lambda v: v if isinstance(
    v, str) else "")
def test_every_documented_command_that_needs_no_cell_runs(where, words, tmp_path, monkeypatch,
                                                          capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "level.xsb").write_text(LEVEL)
    args = runnable(words)[1:]
    if "--broker-pub" in args:  # the broker's key comes first, where the line reads it
        pub = Path(args[args.index("--broker-pub") + 1])
        assert cli.main(["keys", "generate", pub.stem, "--dir", str(pub.parent)]) == 0
    assert cli.main(args) == 0, f"{where}: robocell {shlex.join(args)}: " \
                                f"{capsys.readouterr()}"
