"""The shape of the code stays as designed: no import cycle, lower layers never import higher
ones, modules and functions of a readable size, and every module importable on its own.

Read from the source (every ``import`` statement, at the top of a module or inside a
function), so a cycle hidden in a function body counts as much as one at the top."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = "robocell"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 120
LONG_MODULE_MARK = "# long-module:"
"""A comment in a module's first 40 lines that says why it stays over MAX_MODULE_LINES."""
LONG_FUNCTION_MARK = "# long-function:"
"""A comment on a function's ``def`` line or the three lines above it that says why it
stays over MAX_FUNCTION_LINES."""
LOWER_LAYERS = {"robocell.common": ("robocell.services", "robocell.sokoban", "robocell.cli")}
"""package -> what its modules never import."""


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The robocell modules ``name`` imports (a ``from package import submodule`` counts as
    the submodule)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = source_modules()
    known = set(modules)
    return {name: imported_modules(name, path, known) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_there_is_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_lower_layers_never_import_higher_ones() -> None:
    upward = []
    for name, targets in import_graph().items():
        for layer, forbidden in LOWER_LAYERS.items():
            if name == layer or name.startswith(layer + "."):
                upward += [f"{name} -> {t}" for t in targets
                           if any(t == f or t.startswith(f + ".") for f in forbidden)]
    assert upward == []


def test_only_the_entry_point_imports_the_command_line() -> None:
    importers = sorted(name for name, targets in import_graph().items()
                       if "robocell.cli" in targets and name != "robocell.__main__")
    assert importers == []


def long_functions(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    tree = ast.parse("\n".join(lines))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            length = node.end_lineno - first + 1
            marked = any(LONG_FUNCTION_MARK in lines[i]
                         for i in range(max(0, first - 4), node.lineno))
            if length > MAX_FUNCTION_LINES and not marked:
                found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name} "
                             f"({length} lines)")
    return found


def test_modules_and_functions_are_of_a_readable_size() -> None:
    too_long = []
    for path in source_modules().values():
        lines = path.read_text().splitlines()
        if len(lines) > MAX_MODULE_LINES and not any(LONG_MODULE_MARK in line
                                                     for line in lines[:40]):
            too_long.append(f"{path.relative_to(ROOT.parent)} ({len(lines)} lines)")
        too_long += long_functions(path)
    assert too_long == []


def test_every_module_imports_in_a_fresh_interpreter() -> None:
    """Every module imports in a fresh interpreter (no module needs another one loaded
    first by someone else)."""
    names = sorted(name for name in source_modules() if not name.endswith("__main__"))
    script = ("import importlib, sys\nfailed = []\nfor name in sys.argv[1:]:\n"
              "    try:\n        importlib.import_module(name)\n"
              "    except Exception as exc:\n"
              "        failed.append(f'{name}: {type(exc).__name__}: {exc}')\n"
              "print('\\n'.join(failed))\n")
    result = subprocess.run([sys.executable, "-c", script, *names], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == ""
