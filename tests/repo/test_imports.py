"""The package's import graph (benchmarks/import_graph.py, read with `ast`): no circle, no import of a later stage,
and each heavy library imported only where it belongs.

Circles and stages are over every import, type hints included; where a library loads is over run-time imports
(an `if TYPE_CHECKING:` block is not an edge there).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import import_graph as IG  # noqa: E402  (the one reading of the import graph: benchmarks/import_graph.py)

SPEC_CODE = (  # every one must exist: a renamed module fails the test rather than dropping out
    "coatsearch.vocab.specs",
    "coatsearch.space.schema",
    "coatsearch.space.load",
    "coatsearch.space.objects",
    "coatsearch.vocab.kinds",
    "coatsearch.training.schedule",
)


GRAPH = IG.graph(runtime_only=True)  # run-time imports: where heavy libraries load
FULL = IG.graph(runtime_only=False)  # with type-hint imports: the dependency structure


def _importers(lib: str) -> set[str]:
    return {m for m, deps in GRAPH.items() if lib in deps}


def test_the_graph_sees_the_package():
    assert {"coatsearch.storage.store", "coatsearch.runner.trial", "coatsearch.runner.optuna_backend"} <= set(GRAPH)
    assert "optuna" in GRAPH["coatsearch.storage.store"] and "coatsearch.storage.store" in GRAPH["coatsearch.report"]


def test_no_import_circle_not_even_through_type_hints():
    assert IG.circles(FULL) == []
    assert IG.circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]  # the finder finds one


def test_no_module_imports_a_later_stage():
    assert IG.up_a_stage(FULL) == []
    assert {IG.stage_of(m) for m in FULL} <= set(IG.STAGES)  # every module sits in a named stage
    assert IG.up_a_stage({"coatsearch.space.load": {"coatsearch.storage.store"}, "coatsearch.storage.store": set()})


def test_analysis_papers_and_planner_load_neither_torch_nor_matplotlib():
    code = (
        "import importlib, pkgutil, sys\n"
        "import coatsearch.analysis, coatsearch.papers, coatsearch.planner\n"
        "for pkg in (coatsearch.analysis, coatsearch.papers, coatsearch.planner):\n"
        "    for m in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + '.'):\n"
        "        importlib.import_module(m.name)\n"
        "print(sorted(m for m in ('torch', 'matplotlib', 'timm', 'ray') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.strip() == "[]"


LAB = ("lab.simulate", "lab.calibration")  # the rule authors' lab: never on the path


def _reachable(start: str) -> set[str]:
    """Every module `start` may import, lazy imports included (the whole graph's edges)."""
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += [d for d in FULL.get(m, ()) if d in FULL]
    return seen


def test_importing_the_report_loads_no_simulator():
    code = f"import coatsearch.report, sys; print(sorted(m for m in {LAB!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.strip() == "[]"


def test_no_module_of_the_package_imports_the_lab():
    """The lab (lab/, beside benchmarks/) imports the package, never the reverse: the report, the API and the CLI
    read the committed tables (papers.rule_tables); the simulator and its generator run only as
    `python -m lab.calibration`, tests and benchmarks."""
    importers = {m for m, deps in FULL.items() if {d for d in deps if d == "lab" or d.startswith("lab.")}}
    assert importers == set()
    assert "coatsearch.papers.rule_tables" in _reachable("coatsearch.report")
    lab_imports = IG.imports_in((Path(IG.PACKAGE).parent / "lab" / "calibration.py").read_text(), "lab", set())
    assert "lab.simulate" in lab_imports  # the rule sees an import of the lab (the generator imports it)


def test_report_and_dashboard_import_no_backend():
    readers = [m for m in GRAPH if m.startswith("coatsearch.report") or m == "coatsearch.dashboard"]
    assert readers
    for m in readers:
        assert not {d for d in GRAPH[m] if d.endswith("_backend")}, m


def test_the_ray_backend_uses_the_store_not_the_optuna_backend():
    deps = GRAPH["coatsearch.runner.ray_backend"]
    assert "coatsearch.storage.store" in deps and "coatsearch.runner.optuna_backend" not in deps


def test_only_store_backends_and_dashboard_import_optuna():
    backends = {"coatsearch.runner.optuna_backend", "coatsearch.runner.ray_backend", "coatsearch.runner.environment"}
    # the search section's importance (optuna.importance), replay (Optuna's samplers on a measured table) and its
    # multi-fidelity replay (Optuna's pruners on recorded curves)
    searchers = {"coatsearch.analysis.search_results", "coatsearch.analysis.replay", "coatsearch.analysis.fidelity"}
    store = {"coatsearch.storage.store", "coatsearch.storage.sampling"}  # the study, and how it samples
    assert _importers("optuna") <= store | {"coatsearch.dashboard"} | backends | searchers
    assert _importers("optuna_dashboard") <= {"coatsearch.dashboard"}


def test_only_the_ray_backend_imports_ray():
    assert _importers("ray") == {"coatsearch.runner.ray_backend"}


def test_type_only_imports_are_not_edges_but_their_else_branch_is():
    source = (
        "from typing import TYPE_CHECKING\n"
        "import typing\n"
        "if TYPE_CHECKING:\n    import optuna\nelse:\n    import json\n"
        "if typing.TYPE_CHECKING:\n    import ray\n"
        "def f():\n    import torch\n"
        "if True:\n    import yaml\n"
    )
    found = IG.imports_in(source, "coatsearch", set())
    assert {"json", "torch", "yaml", "typing"} <= found and not {"optuna", "ray"} & found


@pytest.mark.parametrize("module", SPEC_CODE)
def test_spec_code_imports_no_torch(module):
    assert module in GRAPH, f"{module} is listed as spec code but is not a module of the package"
    assert not {"torch", "timm", "torchvision"} & GRAPH[module]


def _class_names(root: Path) -> dict[str, list[str]]:
    """Class name -> the modules under `root` that define a class of that name."""
    import ast

    out: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                out.setdefault(node.name, []).append(str(path.relative_to(root)))
    return out


def test_no_class_name_means_two_things(tmp_path):
    package = Path(__file__).resolve().parents[2] / "coatsearch"
    found = _class_names(package)
    assert len(found) > 100 and {k: v for k, v in found.items() if len(v) > 1} == {}
    (tmp_path / "a.py").write_text("class Table:\n    pass\n")
    (tmp_path / "b.py").write_text("def f():\n    class Table:\n        pass\n")
    assert _class_names(tmp_path) == {"Table": ["a.py", "b.py"]}  # the rule sees a nested one too


def _imported_callables(path: Path, modules: set[str]) -> set[str]:
    """`module.name` for each function (or whole module) `path` imports from one of `modules`; classes and
    constants (the Info types and words a renderer shows) are not counted."""
    import ast
    import importlib
    import inspect

    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if full in modules:
                    out.add(full)  # the module itself
                elif node.module in modules:
                    obj = getattr(importlib.import_module(node.module), a.name)
                    if callable(obj) and not inspect.isclass(obj):
                        out.add(full)
    return out


def test_no_view_judges_a_study():
    """Views and renderers format what the claims plug-in judged once: none imports a judging or statistics function
    (a replicate is judged in papers.replicate, each claim's regime in report.regime, a search's seeds to resolve a
    point in analysis.search_results, the answer page's claims, relation rows and regime rows in answer.space_claims,
    space_rows and space_regime)."""
    judging = {"coatsearch.papers.judging", "coatsearch.papers.replicate", "coatsearch.papers.verdicts",
               "coatsearch.analysis.stats", "coatsearch.analysis.search_stats"}  # fmt: skip
    views = [p for pkg in ("report", "answer") for p in sorted((IG.PACKAGE / pkg).glob("*.py"))
             if p.name.startswith(("view_", "markdown"))]  # fmt: skip
    assert len(views) > 10
    found = {p.name: _imported_callables(p, judging) for p in views}
    assert {n: f for n, f in found.items() if f} == {}
    assert _imported_callables(IG.PACKAGE / "report" / "__init__.py", judging)  # the rule sees a judging import


def test_the_longest_import_chain_is_at_most_22_modules():
    """Type hints included: a module that needs a type names it from a light module, not through a tall one."""
    chain = IG.longest_chain(FULL)
    assert 10 < len(chain) <= 22, " -> ".join(chain)
    assert len(IG.longest_chain({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"c"}})) == 3  # the rule counts modules


def test_no_stage_holds_more_than_15_percent_of_the_package():
    """One family per room: the generic study reading, the papers' claims, the report and the answer page are
    separate stages, none over 15% of the package's lines."""
    sizes = IG.sizes()
    total = sum(lines for _, lines in sizes.values())
    biggest = max(sizes, key=lambda s: sizes[s][1])
    assert sizes[biggest][1] <= 0.15 * total, (biggest, sizes[biggest][1] / total)
    assert {"analysis", "papers", "report", "answer"} <= set(sizes)
