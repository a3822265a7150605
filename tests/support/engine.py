"""Running a space file through the Optuna engine and reading back its trials, as the engine tests do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna

from coatsearch import store
from coatsearch.backends import optuna_backend as engine
from coatsearch.space import load_space


def run(space_path: Path, studies: Path, name: str = "s", **kw: Any) -> Any:
    """`optuna_backend.run` on the space file, quietly; its summary."""
    return engine.run(load_space(space_path), studies, name, progress=False, **kw)


def trials(studies: Path, name: str = "s") -> list[optuna.trial.FrozenTrial]:
    """Every trial of study `name` under `studies`."""
    return store.load_study(studies, name).get_trials()
