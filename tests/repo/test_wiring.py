"""Wiring in the open: a run's collaborators are arguments, never found in a context variable or a global."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "coatsearch"
CONTEXT_VARIABLES = {"training/listeners.py"}  # a tracked trial's curve listener: still a context variable


def _imports_contextvars(path: Path) -> bool:
    """Whether the module imports `contextvars` (read with `ast`)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(a.name == "contextvars" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "contextvars":
            return True
    return False


def test_no_module_but_the_named_ones_keeps_state_in_a_context_variable():
    found = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if _imports_contextvars(p)}
    assert found <= CONTEXT_VARIABLES, f"a context variable carries wiring: {sorted(found - CONTEXT_VARIABLES)}"
    assert "training/checkpoint.py" not in found


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
