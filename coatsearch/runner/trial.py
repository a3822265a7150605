"""Running one planned trial (train, score, describe) for any engine; outcomes as (state, RunRecord, value)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import torch

from coatsearch import scores
from coatsearch.budget.prepare import Prepared, prepare, stages_text, tokens
from coatsearch.errors import Pruned, TrialFailed, UserError
from coatsearch.runner.kept import Trained
from coatsearch.scores import Report, TrialInput, measure
from coatsearch.space import admission
from coatsearch.space.objects import Space
from coatsearch.storage import record as R
from coatsearch.storage.trials import PlanItem
from coatsearch.training.checkpoint_policy import Trial as Checkpoints
from coatsearch.training.history import NonFinite, check_finite
from coatsearch.training.listeners import Listener
from coatsearch.vocab.specs import model_label


def run_item(
    space: Space,
    item: PlanItem,
    params: Mapping[str, Any],
    device: torch.device,
    progress: bool = False,
    report: Report | None = None,
    matched: Mapping[str, Prepared] | None = None,
    admitted: Prepared | None = None,
    checkpoints: Checkpoints | None = None,
    trained: Trained | None = None,
    listener: Listener | None = None,
) -> tuple[float | list[float], R.RunRecord]:
    """Train and score one planned trial; return (objective value, its RunRecord). Raises TrialFailed.

    `matched` holds the study's matched candidates (store.matched); a candidate in it is not matched again.
    `admitted`: the point's model, already admitted at sampling (admission.admit); else it is admitted here, so a
    point no engine checked still never trains against a constraint or a missed budget. `checkpoints`: the trial's
    checkpointing (runner.resume.trial), passed to every training run; None: none. `trained`: where the trained
    models and the solved model are left (runner.kept keeps their weights); None: nowhere. `listener`: hears every
    training run's curve points (runner.tracking.listener; None: nobody).
    """
    start = time.perf_counter()
    try:
        cand = space.candidate(item.candidate)
        prep = admitted or ((matched or {}).get(cand.name) if not cand.dims else None)
        prep = prep or (admission.admit(space, cand, params) if cand.dims else prepare(cand, params))
        if not prep.ok:
            raise TrialFailed(f"budget not met: {prep.reason}")
        runs = len(space.study.seeds) * max(1, len(scores.enabled(cand.scores)))
        offset = getattr(cand.definition, "init_offset", None)  # a baseline's definition is its ModelSpec: none
        init = None if offset is None else item.seed + offset
        inp = TrialInput(prep.model, prep.optim, space.data, cand.scores, item.seed, runs, init_seed=init)
        kept = None if trained is None else trained.models  # the trained models, left there for runner.kept
        measured = measure(inp, device, progress=progress, report=report, checkpoints=checkpoints, models=kept,
                           listener=listener)  # fmt: skip
        check_finite(measured.metrics)
        if trained is not None:
            trained.model = prep.model
    except (TrialFailed, Pruned, UserError):
        raise
    except admission.Rejected as exc:
        raise TrialFailed(f"rejected before training: {exc.reason}") from exc
    except NonFinite as exc:
        raise TrialFailed(str(exc)) from exc
    except torch.OutOfMemoryError as exc:
        raise TrialFailed(f"out of memory on {device}") from exc
    except Exception as exc:  # noqa: BLE001 - any other crash is the trial's failure, not the study's
        raise TrialFailed(f"{type(exc).__name__}: {exc}") from exc
    ident = R.Identity(prep.name, item.seed, item.sample, item.key)
    label = getattr(cand.definition, "label", None)
    wall_s = round(time.perf_counter() - start, 3)
    metrics = measured.metrics
    images = R.images_of(metrics, space.data.test_draw, space.data.test_sampling)
    common = {"wall_s": wall_s, "environment": R.Environment(device=str(device)), "images": images}
    if space.study.objectives:  # multi-objective: one value per objective, no fallback
        missing = [k for k in space.study.objectives if not isinstance(metrics.get(k), int | float)]
        if missing:
            raise TrialFailed(f"objectives {missing} were not measured (scores: {sorted(measured.to_json())})")
        objs = tuple(R.selection_key(k, metrics) for k in space.study.objectives)  # validation images, never test
        values = [float(metrics[k]) for k in objs]
        run = R.completed(ident, _model_of(prep, label), measured, R.optimizer(prep.optim), **common,
                          objective=objs[0], objectives=objs)  # fmt: skip
        return values, run
    key = next((k for k in (space.study.objective, *scores.FALLBACK) if k in metrics), None)
    key = key and R.selection_key(key, metrics)  # the value the sampler and pruner see: validation images
    if key is None or not math.isfinite(metrics[key]):
        raise TrialFailed(
            f"objective '{space.study.objective}' was not measured (scores: {sorted(measured.to_json())})"
        )
    return float(metrics[key]), R.completed(ident, _model_of(prep, label), measured, R.optimizer(prep.optim),
                                            **common, objective=key)  # fmt: skip


def _model_of(prep: Prepared, label: str | None = None) -> R.Model:
    """What a trial records about its model: label (`label`, else model_label), layout, stages, tokens, params, MACs."""
    return R.Model(
        label=label or model_label(prep.model),
        arch=prep.model.arch,
        layout=prep.model.layout,
        stem=prep.model.stem.kind if prep.model.stages else "",
        stages=stages_text(prep.model),
        depths=tuple(s.depth for s in prep.model.stages),
        widths=tuple(s.width for s in prep.model.stages),
        tokens=tuple(tokens(prep.model)),
        params=prep.params,
        macs=prep.macs,
        budget_macs=prep.budget.macs if prep.budget else None,
        budget_error=prep.error,
        budget_params_error=prep.params_error,
        multiplier=prep.multiplier,
        structure=admission.structure(prep.model) if prep.model.stages else None,
    )


def attempt(
    space: Space,
    item: PlanItem,
    params: Mapping[str, Any],
    device: torch.device,
    env: R.Environment,
    progress: bool = False,
    report: Report | None = None,
    matched: Mapping[str, Prepared] | None = None,
    admitted: Prepared | None = None,
    checkpoints: Checkpoints | None = None,
    trained: Trained | None = None,
    listener: Listener | None = None,
) -> tuple[str, R.RunRecord | None, float | list[float] | None]:
    """Run one planned trial: (state name, its record, value); a failure or pruning is an outcome, not an exception.

    `env` is the worker's environment (runner.environment.probe); the record takes it with the trial's device;
    `checkpoints`, `trained` and `listener` as in `run_item`."""
    try:
        value, run = run_item(space, item, params, device, progress, report, matched, admitted, checkpoints, trained,
                              listener)  # fmt: skip
    except Pruned:
        return "PRUNED", None, None
    except (TrialFailed, UserError) as exc:
        ident = R.Identity(item.candidate, item.seed, item.sample, item.key)
        return "FAIL", R.failed(ident, str(exc), env), None
    env = replace(env, device=run.environment.device if run.environment else None)
    return "COMPLETE", replace(run, environment=env), value


def epoch_reporter(space: Space, sink: Callable[[int, float], None]) -> Report | None:
    """A `run_item` report callback sending the objective's per-epoch score to `sink` (None: no pruning).

    Which run phase the pruner sees is the objective's score's `signal` (per candidate: scores may differ).
    """
    if space.study.pruner == "none":
        return None
    phases = {c.name: scores.signal(space.study.objective, c.scores) for c in space.candidates}
    wanted = set(phases.values()) - {None}

    def report(name: str, epoch: int, value: float) -> None:
        if name in wanted and value is not None:
            sink(epoch, value)

    return report


@contextmanager
def progress_bar(done: int, total: int, enabled: bool) -> Iterator[Callable[[int], None]]:
    """A study-level progress bar (trials done of planned, ETA); yields a callback taking a trial number."""
    from tqdm.auto import tqdm  # type: ignore[import-untyped]

    off = None if enabled else True  # None: drawn only on a terminal, never into a redirected log
    bar = tqdm(total=total, initial=min(done, total), desc="study", unit="trial", disable=off)
    try:
        yield lambda number: bar.update(1)
    finally:
        bar.close()
