"""The modules of monoprop import each other one way only: the import graph has no cycle.

Every ``import`` and ``from ... import`` statement in ``monoprop/*.py`` and ``optimize/*.py``
(``monoprop.optimize``) counts, wherever it stands: at the top, inside a function or method,
under ``try`` or ``if``. An import inside a function only delays a circle; it does not remove
it. ``from . import name`` points at the submodule ``name`` when there is one, else at the
package itself (whose ``__init__`` imports the rest), so a module that reads
``monoprop.__version__`` from the package is in a circle with it. The import of a package that
Python makes before any of its submodules is not an edge.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# source directory -> the package it is installed as
PACKAGES = {"monoprop": "monoprop", "optimize": "monoprop.optimize"}


def package_modules(repo: Path = REPO) -> dict[str, Path]:
    """``{module name: source file}`` for the package's modules (``.pyi`` for compiled ones)."""
    modules: dict[str, Path] = {}
    for folder, package in PACKAGES.items():
        for path in sorted((repo / folder).glob("*.py*")):
            if path.suffix not in (".py", ".pyi"):
                continue
            name = package if path.stem == "__init__" else f"{package}.{path.stem}"
            if path.suffix == ".py" or name not in modules:
                modules[name] = path
    return modules


def imports_of(name: str, source: str, known: Iterable[str]) -> set[str]:
    """The package modules that the module ``name`` with this source imports, anywhere in it."""
    known = set(known)
    is_package = any(name == package for package in PACKAGES.values()) and name in known
    package = name if is_package else name.rpartition(".")[0]

    def resolved(dotted: str) -> str | None:
        """``dotted`` or its longest prefix that is a module of ours (None if outside)."""
        while dotted:
            if dotted in known:
                return dotted
            dotted = dotted.rpartition(".")[0]
        return None

    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = resolved(alias.name)
                if target is not None:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                target = resolved(f"{origin}.{alias.name}")
                if target is None or not target.startswith(origin):
                    target = resolved(origin)
                if target is not None:
                    found.add(target)
    found.discard(name)
    return found


def import_graph(repo: Path = REPO) -> dict[str, set[str]]:
    """Module -> the package modules it imports. A compiled module (its ``.pyi`` stub) is a
    leaf: the stub's imports are its annotations' types, not imports the module makes."""
    modules = package_modules(repo)
    return {
        name: imports_of(name, path.read_text(encoding="utf-8"), modules)
        if path.suffix == ".py"
        else set()
        for name, path in modules.items()
    }


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or None when it has none."""
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle is not None:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start)
            if cycle is not None:
                return cycle
    return None


def test_the_import_graph_has_no_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_the_graph_is_read() -> None:
    """The parser sees the package: a few edges that must be there, top-level and in functions."""
    graph = import_graph()
    assert {"monoprop", "monoprop._core", "monoprop.optimize", "monoprop.optimize.study"} <= set(
        graph
    )
    assert "monoprop._saved_state" in graph["monoprop.monomial_propagator"]
    assert {"monoprop.pauli_propagator", "monoprop.majorana_propagator"} <= graph[
        "monoprop.persistence"
    ]
    assert "monoprop._qiskit_operators" in graph["monoprop._qiskit_gates"]
    assert "monoprop.noise" in graph["monoprop"]  # `from . import noise`: the submodule
    assert "monoprop.qiskit_conversion" in graph["monoprop"]  # imported inside __getattr__
    assert "monoprop.optimize.study" in graph["monoprop.optimize"]  # likewise
    assert "monoprop" in graph["monoprop.optimize.study"]  # `import monoprop`
    assert "monoprop._core" in graph["monoprop.monomial_propagator"]  # `from . import _core`


KNOWN = ["monoprop", "monoprop.a", "monoprop.b", "monoprop.optimize", "monoprop.optimize.c"]


@pytest.mark.parametrize(
    ("name", "source", "edges"),
    [
        ("monoprop.a", "from .b import f", {"monoprop.b"}),
        ("monoprop.a", "def f():\n    from . import b", {"monoprop.b"}),
        ("monoprop.a", "def f():\n    from . import __version__", {"monoprop"}),
        ("monoprop.a", "try:\n    import monoprop.b\nexcept ImportError:\n    b = None",
         {"monoprop.b"}),
        ("monoprop.a", "from monoprop import Circuit, b", {"monoprop", "monoprop.b"}),
        ("monoprop.a", "import numpy\nfrom typing import Any", set()),
        ("monoprop", "from .a import x\nfrom . import b", {"monoprop.a", "monoprop.b"}),
        ("monoprop.optimize", "from .c import g", {"monoprop.optimize.c"}),
        ("monoprop.optimize.c", "from .. import a\nfrom . import g",
         {"monoprop.a", "monoprop.optimize"}),
    ],
)  # fmt: skip
def test_imports_are_resolved(name: str, source: str, edges: set[str]) -> None:
    assert imports_of(name, source, KNOWN) == edges


def test_a_cycle_is_found() -> None:
    """The check can fail: a circle through a function-level import is reported."""
    graph = {
        name: imports_of(name, source, KNOWN)
        for name, source in {
            "monoprop": "from .a import x",
            "monoprop.a": "from .b import y",
            "monoprop.b": "def f():\n    from .a import x",
        }.items()
    }
    assert find_cycle(graph) == ["monoprop.a", "monoprop.b", "monoprop.a"]
    assert find_cycle({"x": {"y"}, "y": set()}) is None
