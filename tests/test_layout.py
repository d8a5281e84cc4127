"""The package's rooms, read from its imports: a module imports only public names of
another package (``_native``, the compiled core, excepted), and neither modules nor
packages import each other in a loop. Imports inside functions count (they are where a
loop hides); those under ``if TYPE_CHECKING`` do not."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "python" / "merge_core"
NATIVE = "merge_core._native"


def module_name(path: Path) -> str:
    parts = ("merge_core", *path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
KNOWN = {*MODULES, NATIVE}


def is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and is_type_checking(node):
            yield from (n for child in node.orelse for n in import_nodes(ast.Module([child], [])))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        else:
            yield from import_nodes(node)


def imports(module: str) -> Iterator[tuple[str, str | None]]:
    """(module imported, name taken from it or None) for each merge-core import."""
    path = MODULES[module]
    package = package_of(module, path)
    for node in import_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from ((a.name, None) for a in node.names if a.name.startswith("merge_core"))
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - node.level + 1]
            target = ".".join([*base, *([node.module] if node.module else [])])
        elif (node.module or "").startswith("merge_core"):
            target = node.module
        else:
            continue
        for alias in node.names:
            submodule = f"{target}.{alias.name}"
            yield (submodule, None) if submodule in KNOWN else (target, alias.name)


def test_the_walk_finds_the_packages_and_their_imports():
    """The walk itself works: it sees the packages and a known cross-package import."""
    assert {"merge_core.paimon", "merge_core.spark", "merge_core.cli", "merge_core.bench"} <= set(MODULES)
    assert ("merge_core.inputs", "batches_of") in set(imports("merge_core.paimon._write"))
    assert ("merge_core._native", None) in set(imports("merge_core.paimon._write"))


def private_imports_across_packages() -> list[str]:
    found = []
    for module, path in MODULES.items():
        package = package_of(module, path)
        for target, name in imports(module):
            is_package = target in MODULES and MODULES[target].name == "__init__.py"
            target_package = target if is_package else target.rpartition(".")[0]
            if target == NATIVE or target_package == package:
                continue
            private = [p for p in target.split(".")[1:] if p.startswith("_")]
            if private or (name or "").startswith("_"):
                found.append(f"{module} imports {target}{'.' + name if name else ''}")
    return found


def test_no_module_imports_another_packages_private_names():
    assert private_imports_across_packages() == []


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One loop of the graph, if it has any (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_a_loop():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


@functools.cache
def module_edges() -> dict[str, set[str]]:
    """Which module imports which (a package's ``__init__`` is the package's module)."""
    return {m: {t for t, _ in imports(m) if t in MODULES and t != m} for m in MODULES}


def test_no_two_modules_import_each_other_in_a_loop():
    # (The root's __init__ loads its public names lazily, by importlib: no edge.)
    assert cycle(module_edges()) is None


@pytest.mark.parametrize("subpackage", ["paimon", "spark", "cli", "bench", "contest"])
def test_no_loop_between_packages(subpackage):
    packages: dict[str, set[str]] = {}
    edges = module_edges()
    for module, path in MODULES.items():
        mine = package_of(module, path)
        for target in edges[module]:
            theirs = package_of(target, MODULES[target])
            if theirs != mine:
                packages.setdefault(mine, set()).add(theirs)
    assert cycle(packages) is None, packages
    assert f"merge_core.{subpackage}" in packages  # each subpackage builds on the root
