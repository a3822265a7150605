"""Optimizability tables (ViT_C paper §4): optimizer gap, peak, samples (the EDF is papers.measures.edf)."""

from __future__ import annotations

import pandas as pd

from coatsearch.analysis.measure_results import BestRun, HyperSamples, OptimizerGap
from coatsearch.analysis.tables import Records, complete
from coatsearch.vocab.specs import VIT_LABELS

SEARCH_PREFIXES = ("train.",)  # sampled hyperparameters; `model.*` samples are architectures (the search section)


def search_dims(records: Records) -> list[str]:
    """Sampled hyperparameters (params with a train. path) found in the records; a sampled `model.*` field picks an
    architecture, which the search section reports, not a hyperparameter whose stability the EDF measures."""
    return sorted({k for r in records for k in r.params if k.startswith(SEARCH_PREFIXES)})


def has_vit(done: Records) -> bool:
    """Whether the study's complete runs include ViT_P or ViT_C models."""
    return any(r.run.model is not None and r.run.model.label in VIT_LABELS for r in done)


def _runs(table: pd.DataFrame) -> list[BestRun]:
    """The runs table (analysis.run_frames.runs_frame), a BestRun per row."""
    return [BestRun(**r) for r in table.to_dict("records")]


def _best(group: list[BestRun]) -> BestRun | None:
    """The best run of a group: chosen on the validation images (`sel`, run_frames.runs_frame), its `acc` on test."""
    return max(group, key=lambda r: r.sel) if group else None


def optimizer_gap(table: pd.DataFrame) -> tuple[OptimizerGap, ...]:
    """Per model label: best AdamW and best SGD accuracy (%), their lr/wd, and the gap AdamW − SGD (points)."""
    runs = _runs(table)
    rows = []
    for label in dict.fromkeys(r.model_label for r in runs):
        mine = [r for r in runs if r.model_label == label]
        adamw = _best([r for r in mine if r.optimizer == "adamw"])
        sgd = _best([r for r in mine if r.optimizer == "sgd"])
        if adamw is None and sgd is None:
            continue
        n_adamw, n_sgd = sum(r.optimizer == "adamw" for r in mine), sum(r.optimizer == "sgd" for r in mine)
        rows.append(OptimizerGap(label, adamw, sgd, n_adamw, n_sgd, adamw.acc - sgd.acc if adamw and sgd else None))
    return tuple(rows)


def peak(table: pd.DataFrame) -> tuple[BestRun | None, ...]:
    """Best run per model label: accuracy (%), candidate, optimizer, lr, wd and trial number."""
    runs = _runs(table)
    labels = dict.fromkeys(r.model_label for r in runs)
    return tuple(_best([r for r in runs if r.model_label == label]) for label in labels)


def samples(records: Records) -> tuple[HyperSamples, ...]:
    """Hyperparameter samples per candidate and optimizer: runs complete, and trials that did not complete."""
    out = []
    done = complete(records)
    for cand in dict.fromkeys(r.candidate for r in records):
        mine = [r for r in done if r.candidate == cand]
        failed = sum(r.candidate == cand and r.state != "COMPLETE" for r in records)
        for i, opt in enumerate(sorted({r.run.optimizer_name for r in mine}) or ["?"]):
            label, ran = mine[0].run.label if mine else cand, sum(r.run.optimizer_name == opt for r in mine)
            not_complete = failed if i == 0 else 0  # per candidate: on its first row
            out.append(HyperSamples(cand, label, opt, ran, not_complete, tuple(search_dims(mine))))
    return tuple(out)
