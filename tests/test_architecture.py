"""The shape of the code stays as designed (docs/architecture.md): layers that import only
downwards, process packages that never import one another, no import cycle between modules or
packages, modules and functions of a readable size with no waiver, few imports inside
functions, and every module importable on its own in a fresh interpreter.

Read from the source (every ``import`` statement, at the top of a module or inside a
function), so a cycle hidden in a function body counts as much as one at the top."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

PACKAGE = "robocell"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 120
MAX_FUNCTION_IMPORTS = 15
"""Imports inside functions in the whole package (each one says why it is not at the top)."""
ENTRY = ("robocell.cli", "robocell.__main__", "robocell.cube_cli")
LAYERS = (  # highest first: a module imports its own layer's package or lower layers only
    ("entry", ENTRY),
    ("processes", ("robocell.services",)),
    ("deployment", ("robocell.deploy",)),
    ("tools", ("robocell.tools",)),
    ("libraries", ("robocell.sokoban", "robocell.robot")),
    ("common", ("robocell.common", "robocell.errors", "robocell")),
)
"""The layers, and the packages each holds."""
PROCESS_PACKAGES = ("actuator", "broker", "cell", "firmware", "foxglove", "monitor", "solver",
                    "vision")


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def layer_of(name: str) -> int:
    """The rank of ``name``'s layer: 0 for the highest (the entry point)."""
    for rank, (_, packages) in enumerate(LAYERS):
        if any(within(name, p) for p in packages if p != "robocell"):
            return rank
    return len(LAYERS) - 1


def package_of(name: str) -> str:
    """The package a module belongs to for the rules: a process package
    (robocell.services.NAME), else robocell's subpackage (robocell.common.bus counts as
    robocell.common)."""
    parts = name.split(".")
    if len(parts) > 2 and parts[1] == "services":
        return ".".join(parts[:3])
    return ".".join(parts[:2])


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


def test_there_is_no_import_cycle_between_modules_or_packages() -> None:
    graph = import_graph()
    assert cycles(graph) == []
    packages: dict[str, set[str]] = {}
    for name, targets in graph.items():
        packages.setdefault(package_of(name), set()).update(
            package_of(t) for t in targets if package_of(t) != package_of(name))
    assert cycles(packages) == []


def test_layers_import_only_downwards() -> None:
    upward = [f"{name} -> {t}" for name, targets in import_graph().items() for t in targets
              if package_of(name) != package_of(t) and layer_of(t) < layer_of(name)]
    assert upward == []


def test_no_process_package_imports_another() -> None:
    crossing = [f"{name} -> {t}" for name, targets in import_graph().items() for t in targets
                if within(name, "robocell.services") and within(t, "robocell.services")
                and package_of(name) != package_of(t)]
    assert crossing == []


def test_the_libraries_stand_apart() -> None:
    """The Sokoban library and the robot layer share only what is below them."""
    crossing = [f"{name} -> {t}" for name, targets in import_graph().items() for t in targets
                if {package_of(name), package_of(t)} == {"robocell.sokoban", "robocell.robot"}]
    assert crossing == []


def test_only_the_entry_point_imports_the_command_line() -> None:
    importers = sorted(name for name, targets in import_graph().items()
                       if "robocell.cli" in targets and name != "robocell.__main__")
    assert importers == []


def test_each_process_package_is_its_core_one_service_and_one_cli() -> None:
    services = ROOT / "services"
    found = sorted(p.name for p in services.iterdir() if (p / "__init__.py").is_file())
    assert found == sorted(PROCESS_PACKAGES)
    missing = [f"{name}/{part}" for name in PROCESS_PACKAGES for part in ("service.py", "cli.py")
               if not (services / name / part).is_file()]
    assert missing == []


def function_imports() -> list[str]:
    found = []
    for name, path in source_modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += [f"{name}:{sub.lineno}" for sub in ast.walk(node)
                          if isinstance(sub, (ast.Import, ast.ImportFrom))]
    return sorted(set(found))


def test_few_imports_inside_functions() -> None:
    inside = function_imports()
    assert len(inside) <= MAX_FUNCTION_IMPORTS, inside


def long_functions(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            length = node.end_lineno - first + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name} "
                             f"({length} lines)")
    return found


def test_modules_and_functions_are_of_a_readable_size_with_no_waiver() -> None:
    too_long = []
    for path in source_modules().values():
        lines = path.read_text().splitlines()
        if len(lines) > MAX_MODULE_LINES:
            too_long.append(f"{path.relative_to(ROOT.parent)} ({len(lines)} lines)")
        too_long += long_functions(path)
    assert too_long == []


IMPORT_ALONE = "import importlib, sys; importlib.import_module(sys.argv[1])"


def _import_alone(name: str) -> str:
    """'' when ``name`` imports in a fresh interpreter of its own, else why not."""
    result = subprocess.run([sys.executable, "-c", IMPORT_ALONE, name], capture_output=True,
                            text=True, timeout=300)
    return "" if result.returncode == 0 else f"{name}: {result.stderr.strip()[-500:]}"


@pytest.mark.slow
def test_every_module_imports_alone_in_its_own_interpreter() -> None:
    """No module needs another one loaded first by someone else: each is imported as the only
    thing a fresh interpreter does."""
    names = sorted(name for name in source_modules() if not name.endswith("__main__"))
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        failed = [why for why in pool.map(_import_alone, names) if why]
    assert failed == []
