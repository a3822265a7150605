"""Running one planned trial (train, score, describe) for any engine; outcomes as plain (state, attrs, value)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

import torch

from coatsearch import scores
from coatsearch.candidates import Prepared, prepare, stages_text, tokens
from coatsearch.errors import Pruned, TrialFailed, UserError
from coatsearch.scores import Report, TrialInput, measure
from coatsearch.space import Space
from coatsearch.train import NonFinite, check_finite
from coatsearch.trials_plan import PlanItem


def run_item(
    space: Space,
    item: PlanItem,
    params: Mapping[str, Any],
    device: torch.device,
    progress: bool = False,
    report: Report | None = None,
    matched: Mapping[str, Prepared] | None = None,
) -> tuple[float | list[float], dict]:
    """Train and score one planned trial; return (objective value, attributes). Raises TrialFailed.

    `matched` holds the study's matched candidates (store.matched); a candidate in it is not matched again.
    """
    start = time.perf_counter()
    try:
        cand = space.candidate(item.candidate)
        prep = (matched or {}).get(cand.name) if not cand.dims else None
        prep = prep or prepare(cand, params)
        if not prep.ok:
            raise TrialFailed(f"budget not met: {prep.reason}")
        runs = len(space.study.seeds) * max(1, len(scores.enabled(cand.scores)))
        inp = TrialInput(prep.model, prep.optim, space.data, cand.scores, item.seed, runs)
        metrics = measure(inp, device, progress=progress, report=report)
        check_finite(metrics)
    except (TrialFailed, Pruned, UserError):
        raise
    except NonFinite as exc:
        raise TrialFailed(str(exc)) from exc
    except torch.OutOfMemoryError as exc:
        raise TrialFailed(f"out of memory on {device}") from exc
    except Exception as exc:  # noqa: BLE001 - any other crash is the trial's failure, not the study's
        raise TrialFailed(f"{type(exc).__name__}: {exc}") from exc
    attrs = {
        **candidate_attrs(prep),
        **metrics,
        "seed": item.seed,
        "sample": item.sample,
        "key": item.key,
        "wall_s": round(time.perf_counter() - start, 3),
        "device": str(device),
    }
    if space.study.objectives:  # multi-objective: one value per objective, no fallback
        missing = [k for k in space.study.objectives if not isinstance(metrics.get(k), int | float)]
        if missing:
            raise TrialFailed(f"objectives {missing} were not measured (scores: {sorted(metrics)})")
        values = [float(metrics[k]) for k in space.study.objectives]
        return values, {**attrs, "objective": space.study.objectives[0], "objectives": list(space.study.objectives)}
    key = next((k for k in (space.study.objective, *scores.FALLBACK) if k in metrics), None)
    if key is None or not math.isfinite(metrics[key]):
        raise TrialFailed(f"objective '{space.study.objective}' was not measured (scores: {sorted(metrics)})")
    return float(metrics[key]), {**attrs, "objective": key}


def candidate_attrs(prep) -> dict:
    """What a trial records about its model: layout, stages, tokens, params, MACs and budget error."""
    return {
        "candidate": prep.name,
        "model_label": model_label(prep.model),
        "arch": prep.model.arch,
        "layout": prep.model.layout,
        "stem": prep.model.stem.kind if prep.model.stages else "",
        "stages": stages_text(prep.model),
        "depths": [s.depth for s in prep.model.stages],
        "widths": [s.width for s in prep.model.stages],
        "tokens": tokens(prep.model),
        "params": prep.params,
        "macs": prep.macs,
        "budget_macs": prep.budget.macs if prep.budget else None,
        "budget_error": prep.error,
        **({} if prep.params_error is None else {"budget_params_error": prep.params_error}),
        "multiplier": prep.multiplier,
        "optim": asdict(prep.optim),
    }


def model_label(model) -> str:
    """What the papers call the model: ViT_P, ViT_C, ViT_REL, or the stage layout."""
    if not model.stages:
        return f"{model.arch} baseline"
    if model.arch == "vit":
        return "ViT_C" if model.stem.kind == "vitc" else "ViT_P"
    return "ViT_REL" if model.stem.kind == "patch" else model.layout


def attempt(
    space, item, params, device, env, progress=False, report=None, matched=None
) -> tuple[str, dict, float | list[float] | None]:
    """Run one planned trial: (state name, user attrs, value); a failure or pruning is an outcome, not an exception."""
    try:
        value, attrs = run_item(space, item, params, device, progress=progress, report=report, matched=matched)
    except Pruned:
        return "PRUNED", {}, None
    except (TrialFailed, UserError) as exc:
        return "FAIL", {"fail_reason": str(exc), "env": env}, None
    return "COMPLETE", {**attrs, "env": env}, value


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
def progress_bar(done: int, total: int, enabled: bool):
    """A study-level progress bar (trials done of planned, ETA); yields a callback taking a trial number."""
    from tqdm.auto import tqdm

    bar = tqdm(total=total, initial=min(done, total), desc="study", unit="trial", disable=not enabled)
    try:
        yield lambda number: bar.update(1)
    finally:
        bar.close()
