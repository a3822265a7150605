"""Rules of the test suite itself, read with `ast`: no test module imports another; shared code lives in support."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _imported(path: Path) -> set[str]:
    """The modules `path` imports anywhere in its body (absolute names as written)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return out


def _test_module(name: str) -> bool:
    return name.rpartition(".")[2].startswith("test_")


def test_no_test_module_imports_another():
    found = {
        p.name: sorted(m for m in _imported(p) if m.startswith("tests.") and _test_module(m))
        for p in sorted(TESTS.rglob("*.py"))
    }
    assert {name: mods for name, mods in found.items() if mods} == {}


def test_the_rule_sees_a_test_module_import(tmp_path):
    probe = tmp_path / "test_probe.py"
    probe.write_text("from tests.test_train import tiny_net\nimport tests.support.training\n")
    assert {m for m in _imported(probe) if m.startswith("tests.") and _test_module(m)} == {"tests.test_train"}
