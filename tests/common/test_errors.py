"""robocell's exceptions share one base, so `except RobocellError` catches each of them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import robocell
from robocell.common.bus.wire import DecodeError
from robocell.common.config import ConfigError
from robocell.errors import CommandError, RobocellError

BUILTIN_BASES = {"Exception", "ValueError", "RuntimeError", "TypeError", "KeyError",
                 "LookupError", "OSError"}
PACKAGE = Path(robocell.__file__).parent


def test_every_exception_class_derives_from_the_robocell_base() -> None:
    strays = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
            if node.name == "RobocellError":
                continue
            if bases & BUILTIN_BASES and "RobocellError" not in bases:
                strays.append(f"{path.relative_to(PACKAGE.parent)}: {node.name}")
    assert strays == []


def test_errors_keep_their_builtin_kind() -> None:
    assert issubclass(ConfigError, ValueError) and issubclass(ConfigError, RobocellError)
    assert issubclass(DecodeError, ValueError) and issubclass(DecodeError, RobocellError)
    with pytest.raises(RobocellError):
        raise CommandError("shown on one line")
