"""Running a space file through the Optuna engine and reading back its trials, as the engine tests do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna

from coatsearch.runner import optuna_backend as engine
from coatsearch.space.objects import load_space
from coatsearch.storage import store


def run(space_path: Path, studies: Path, name: str = "s", **kw: Any) -> Any:
    """`optuna_backend.run` on the space file, quietly; its summary."""
    return engine.run(load_space(space_path), studies, name, progress=False, **kw)


def trials(studies: Path, name: str = "s") -> list[optuna.trial.FrozenTrial]:
    """Every trial of study `name` under `studies`."""
    return store.load_study(studies, name).get_trials()
