"""The package's import graph, read with `ast`: no circle, and each heavy library imported only where it belongs.

The graph is of run-time imports: an `if TYPE_CHECKING:` block (imports for annotations only) is not an edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "coatsearch"
SPEC_CODE = (  # every one must exist: a renamed module fails the test rather than dropping out
    "coatsearch.spec",
    "coatsearch.document",
    "coatsearch.dsl",
    "coatsearch.space",
    "coatsearch.kinds",
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(node: ast.AST) -> bool:
    """Whether `node` is an `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`) block."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _run_time_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of `tree` outside `if TYPE_CHECKING:` blocks (their `else:` branches run, so they are kept)."""
    out, todo = [], [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        kids = node.orelse if _type_checking(node) else list(ast.iter_child_nodes(node))
        todo.extend(kids)
    return out


def _imports_in(source: str, package: str, mods: set[str]) -> set[str]:
    """The modules `source` imports at run time (top level or inside functions), relative imports resolved."""
    out: set[str] = set()
    for node in _run_time_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            subs = {f"{base}.{a.name}" for a in node.names}
            out |= subs if subs <= mods else {base, *subs}
    return out


def _imports(path: Path, name: str, mods: set[str]) -> set[str]:
    """Every module `path` imports at run time.

    `from pkg import sub` counts as importing `pkg.sub` alone when `sub` is a module of the package.
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return _imports_in(path.read_text(encoding="utf-8"), package, mods)


def _graph() -> dict[str, set[str]]:
    """Module -> the coatsearch modules and third-party roots it imports."""
    mods = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in mods.items():
        raw = _imports(path, name, set(mods))
        internal = {m for m in raw if m in mods and m != name}
        external = {m.split(".")[0] for m in raw if not m.startswith("coatsearch")}
        graph[name] = internal | external
    return graph


GRAPH = _graph()


def _importers(lib: str) -> set[str]:
    return {m for m, deps in GRAPH.items() if lib in deps}


def _cycle() -> list[str] | None:
    """One import circle among coatsearch modules (package __init__ edges to submodules ignored), or None."""
    internal = {m: {d for d in deps if d.startswith("coatsearch.") and d in GRAPH} for m, deps in GRAPH.items()}
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> list[str] | None:
        state[m] = 1
        for d in internal[m]:
            if state.get(d) == 1:
                return [*path[path.index(d) :], d] if d in path else [m, d]
            if d not in state and (found := visit(d, [*path, d])):
                return found
        state[m] = 2
        return None

    for m in sorted(internal):
        if m not in state and (found := visit(m, [m])):
            return found
    return None


def test_the_graph_sees_the_package():
    assert {"coatsearch.store", "coatsearch.trial", "coatsearch.backends.optuna_backend"} <= set(GRAPH)
    assert "optuna" in GRAPH["coatsearch.store"] and "coatsearch.store" in GRAPH["coatsearch.report"]


def test_no_import_circle():
    cycle = _cycle()
    assert cycle is None, " -> ".join(cycle)


def test_report_and_dashboard_import_no_backend():
    readers = [m for m in GRAPH if m.startswith("coatsearch.report") or m == "coatsearch.dashboard"]
    assert readers
    for m in readers:
        assert not {d for d in GRAPH[m] if d.startswith("coatsearch.backends")}, m


def test_the_ray_backend_uses_the_store_not_the_optuna_backend():
    deps = GRAPH["coatsearch.backends.ray_backend"]
    assert "coatsearch.store" in deps and "coatsearch.backends.optuna_backend" not in deps


def test_only_store_backends_and_dashboard_import_optuna():
    backends = {m for m in GRAPH if m.startswith("coatsearch.backends")}
    # the search section's importance (optuna.importance) and replay (Optuna's samplers on a measured table)
    searchers = {"coatsearch.report.view_search", "coatsearch.replay"}
    assert _importers("optuna") <= {"coatsearch.store", "coatsearch.dashboard"} | backends | searchers
    assert _importers("optuna_dashboard") <= {"coatsearch.dashboard"}


def test_only_the_ray_backend_imports_ray():
    assert _importers("ray") == {"coatsearch.backends.ray_backend"}


def test_type_only_imports_are_not_edges_but_their_else_branch_is():
    source = (
        "from typing import TYPE_CHECKING\n"
        "import typing\n"
        "if TYPE_CHECKING:\n    import optuna\nelse:\n    import json\n"
        "if typing.TYPE_CHECKING:\n    import ray\n"
        "def f():\n    import torch\n"
        "if True:\n    import yaml\n"
    )
    found = _imports_in(source, "coatsearch", set())
    assert {"json", "torch", "yaml", "typing"} <= found and not {"optuna", "ray"} & found


@pytest.mark.parametrize("module", SPEC_CODE)
def test_spec_code_imports_no_torch(module):
    assert module in GRAPH, f"{module} is listed as spec code but is not a module of the package"
    assert not {"torch", "timm", "torchvision"} & GRAPH[module]
