"""Wiring in the open: a run's collaborators are arguments, never found in a context variable or a global."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "coatsearch"


def _imports_contextvars(path: Path) -> bool:
    """Whether the module imports `contextvars` (read with `ast`)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(a.name == "contextvars" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "contextvars":
            return True
    return False


def test_no_module_keeps_state_in_a_context_variable():
    found = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if _imports_contextvars(p)}
    assert not found, f"a context variable carries wiring: {sorted(found)}"
    assert not any("ContextVar" in p.read_text() for p in PACKAGE.rglob("*.py"))


def test_a_trials_curve_listener_is_an_argument_from_the_runner_down():
    from coatsearch import scores
    from coatsearch.runner import trial
    from coatsearch.scores import base
    from coatsearch.training import listeners

    for fn in (scores.measure, trial.run_item, trial.attempt):
        assert inspect.signature(fn).parameters["listener"].default is None, fn.__qualname__
    assert "listener" in base.Context.__dataclass_fields__
    assert not hasattr(listeners, "listening") and not hasattr(listeners, "on_point")  # no ambient listener


def test_fit_takes_its_checkpointing_as_an_argument_from_the_runner_down():
    from coatsearch import scores
    from coatsearch.runner import trial
    from coatsearch.scores import base
    from coatsearch.training import checkpoint, fit

    for fn in (fit.fit, scores.measure, trial.run_item, trial.attempt):
        assert inspect.signature(fn).parameters["checkpoints"].default is None, fn.__qualname__
    assert "checkpoints" in base.Context.__dataclass_fields__
    assert not hasattr(checkpoint, "for_fit") and not hasattr(checkpoint, "trial")  # no ambient trial to find


def _read_of(path: Path, name: str) -> set[str]:
    """The attributes the module reads or writes on a variable called `name`."""
    tree = ast.parse(path.read_text())
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == name}  # fmt: skip


def test_what_a_checkpoint_reads_of_a_run_is_its_typed_protocol():
    from coatsearch.training.checkpoint_check import RunState

    surface = {k for k in vars(RunState) if not k.startswith("_")}
    for module in ("training/checkpoint.py", "training/checkpoint_check.py"):
        path = PACKAGE / module
        assert _read_of(path, "run") <= surface, f"{module} reads {sorted(_read_of(path, 'run') - surface)}"
        text = path.read_text()
        assert "run: Any" not in text and "_Run" not in text, module


def _dotted(node: ast.AST) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None for anything but names and attributes."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else [*head, node.attr]
    return None


def test_what_the_benchmarks_patch_in_the_package_exists():
    """A benchmark that times a step by replacing a function of the package (`fit._Run.step = wrap(...)`) names one
    that exists: bench_study patched a `fit._Run._first_compiled` that had gone, and failed only when run."""
    import importlib

    found: list[str] = []
    for path in sorted((PACKAGE.parent / "benchmarks").glob("*.py")):
        tree = ast.parse(path.read_text())
        names = {a.asname or a.name: f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                 and (n.module or "").startswith("coatsearch") for a in n.names}  # fmt: skip
        for node in ast.walk(tree):
            for target in node.targets if isinstance(node, ast.Assign) else ():
                chain = _dotted(target)
                if not chain or len(chain) < 2 or chain[0] not in names:
                    continue
                module, _, attr = names[chain[0]].rpartition(".")
                try:
                    obj = importlib.import_module(f"{module}.{attr}")
                except ImportError:
                    obj = getattr(importlib.import_module(module), attr)
                for part in chain[1:]:
                    assert hasattr(obj, part), f"{path.name}:{node.lineno}: {'.'.join(chain)} does not exist"
                    obj = getattr(obj, part)
                found.append(f"{path.name}: {'.'.join(chain)}")
    assert "bench_study.py: fit._Run._compiled_loss" in found and "bench_trial.py: fit._Run.step" in found
