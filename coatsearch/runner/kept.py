"""Keep what was trained: the final weights of a study's K best trials (`run --keep-top K`, the space's `keep_top:`).

A trial that completes among the K best of the trials completed so far leaves its trained model's weights in
`<study>/weights/kept/trial-<number>.safetensors` (the `export --save-weights` format, coatsearch.runner.weights:
never a pickle), written through the study's path rule (`fsafe.owned`: no link on any component), before its
value is told. A file whose trial has fallen out of the K best is removed as soon as a worker sees it (only files of
finished trials: another worker's trial may still be on its way to the store), and `prune` at the end of the run
leaves exactly the K best. Keeping never fails a trial: a file that cannot be written is a note line.

`export --best K` (yaml `--save-weights`, or `--format timm`) reads a trial's kept file header first
(`weights.read`: bounded, checked against its spec before any tensor is read) and uses it when it holds that
trial's architecture, seed and solved model; otherwise (no file, another trial's, a damaged one) it prints a note
and retrains, as it does always with `--retrain`.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coatsearch import fsafe
from coatsearch.errors import UserError

FOLDER = ("weights", "kept")  # below the study folder (fsafe.OWNED's `weights`)
_NAME = re.compile(r"^trial-(\d{1,9})\.safetensors$")
_FINISHED = ("COMPLETE", "FAIL", "PRUNED")


@dataclass
class Trained:
    """What one trial leaves to keep: the scores' trained models (`scores.Context.models`) and its solved model."""

    models: dict[str, Any] = field(default_factory=dict)
    model: Any = None  # vocab.specs.ModelSpec of the trained network (runner.trial.run_item sets it)


def path(folder: Path, number: int) -> Path:
    """Where trial `number`'s kept weights go: `<study>/weights/kept/trial-<number>.safetensors`, every component
    checked (`fsafe.owned`)."""
    return fsafe.owned(folder, *FOLDER, f"trial-{number}.safetensors")


def keep(space: Any, study: Any, folder: Path, number: int, item: Any, outcome: tuple, trained: Trained) -> None:
    """Keep trial `number`'s weights when it completed among the space's `keep_top` best; drop those that fell out.

    Called by the worker after the trial ran and before its value is told; any failure is a note line."""
    from coatsearch.runner import weights
    from coatsearch.space import search

    state, run, value = outcome
    k = int(space.keep_top)
    if not k or state != "COMPLETE" or run is None or not isinstance(value, int | float) or trained.model is None:
        return
    key = space.study.keys[0]
    net = weights.trained(trained.models, key)
    try:
        values = {t.number: t.value for t in _finished(study) if t.state.name == "COMPLETE" and t.number != number}
        values[number] = float(value)
        best = _top(values, k, space.study.direction)
        if number in best and net is not None:
            content = weights.content(space, trained.model, net, study=study.study_name, trial=number,
                                      architecture=search.architecture(run) or item.candidate, seed=item.seed,
                                      objective=key, recorded=run.number(key), kept=True)  # fmt: skip
            weights.save(path(folder, number), content)
        _remove(folder, {n for n in values if n not in best})
    except UserError as exc:
        print(f"coatsearch: note: {exc}; trial {number}'s weights were not kept", file=sys.stderr)


def prune(study: Any, folder: Path, k: int, direction: str) -> list[int]:
    """Leave the kept weights of the `k` best completed trials only (ties: the earlier trial); their numbers."""
    finished = _finished(study)
    values = {t.number: t.value for t in finished if t.state.name == "COMPLETE" and t.value is not None}
    best = _top(values, k, direction)
    try:
        _remove(folder, {t.number for t in finished} - set(best))
    except UserError as exc:
        print(f"coatsearch: note: {exc}; kept weights were not pruned", file=sys.stderr)
    return [n for n in best if path(folder, n).exists()]


def _finished(study: Any) -> list[Any]:
    """The study's finished trials (optuna FrozenTrials, read without importing optuna: only the store and the
    backends do)."""
    return [t for t in study.get_trials(deepcopy=False) if t.state.name in _FINISHED]


def _top(values: dict[int, float], k: int, direction: str) -> list[int]:
    """The `k` best trial numbers by value, best first (ties: the earlier trial)."""
    sign = -1.0 if direction == "maximize" else 1.0
    return sorted(values, key=lambda n: (sign * values[n], n))[:k]


def _remove(folder: Path, numbers: set[int]) -> None:
    """Remove the kept weights of trials `numbers` (never through a link: fsafe.remove_owned)."""
    where = fsafe.owned(folder, *FOLDER)
    if not where.is_dir():
        return
    for f in sorted(where.iterdir()):
        m = _NAME.match(f.name)
        if m and int(m.group(1)) in numbers:
            fsafe.remove_owned(folder, *FOLDER, f.name)


def for_export(study: str, tm: Any, studies_dir: str | Path, device: str = "cpu", retrain: bool = False) -> dict:
    """A found architecture's weights (`weights.retrain`'s content): its trial's kept file when it matches the
    trial's architecture, seed and solved model, else (or with `retrain`) retrained, with a note saying why."""
    from coatsearch.runner import weights

    if not retrain:
        content = _matching(study, tm, studies_dir)
        if content is not None:
            return content
    return weights.retrain(study, tm, studies_dir, device)


def _matching(study: str, tm: Any, studies_dir: str | Path) -> dict | None:
    """Trial `tm`'s kept weights when they are its own (a note line and None when not; None when none were kept)."""
    from coatsearch.runner import weights
    from coatsearch.storage import store

    try:
        where = path(store.folder(Path(studies_dir), study), tm.number)
        if not where.exists():
            return None
        content = weights.read(where)  # header first: bounded and checked before any tensor is read
        why = _mismatch(content, tm, weights.spec(content))
        why = why and f"{where}: {why}"
    except UserError as exc:
        why = str(exc)
    if why is None:
        return content
    print(f"coatsearch: note: {why}; retraining trial {tm.number}", file=sys.stderr)
    return None


def _mismatch(content: dict, tm: Any, spec: Any) -> str | None:
    """Why a kept file is not trial `tm`'s weights (None: it is)."""
    own = tm.prepared.model
    for name, want in (("architecture", tm.architecture), ("seed", tm.seed), ("trial", tm.number)):
        if content.get(name) != want:
            return f"holds {name} {content.get(name)!r}, not {want!r}"
    if dataclasses.replace(spec, num_classes=own.num_classes) != own:
        return "holds another solved model than the trial's"
    return None


def origin(content: dict) -> str:
    """Where a weights file's content came from, for export's line: kept from the run, or retrained."""
    how = "kept from its run" if content.get("kept") and content.get("retrained") is None else "retrained"
    got = f"{content['retrained']} " if how == "retrained" else ""
    return f"{how} on seed {content['seed']}: {content['objective']} {got}(recorded {content['recorded']})"
