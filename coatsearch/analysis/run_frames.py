"""A study's complete runs read into tidy pandas tables, generic to any claims: every step-level curve of one score
(curve_frame), every step curve of every phase (step_curves, the API's curves table) and the runs table of one
accuracy (runs_frame) that optimizability and the peak read."""

from __future__ import annotations

import math

import pandas as pd

from coatsearch.analysis.tables import Records, complete
from coatsearch.scores.base import points
from coatsearch.storage.record import twin

CURVE_COLUMNS = ("run", "candidate", "seed", "step", "train_loss", "train_acc", "eval_loss", "eval_acc", "lr_phase")


def curve_frame(records: Records, score: str) -> pd.DataFrame:
    """Step-level curve points of `score` from complete trial records, one row per point (CURVE_COLUMNS).

    Reads the run's step curve of `score` (RunRecord.curve); older per-epoch curves without steps are skipped, older
    curves without an lr phase get NaN. Accuracies stay fractions, losses nats.
    """
    rows = []
    for r in complete(records):
        if (c := r.run.curve(score)) is None or not c.step:
            continue
        meta = {"run": r.number, "candidate": r.candidate, "seed": r.seed}
        phase = c.lr_phase or (math.nan,) * len(c.step)
        for i, step in enumerate(c.step):
            values = {k: getattr(c, k)[i] for k in CURVE_COLUMNS[4:8]}
            rows.append({**meta, "step": step, **values, "lr_phase": phase[i]})
    out = pd.DataFrame(rows, columns=list(CURVE_COLUMNS))
    return out.astype({k: float for k in CURVE_COLUMNS[4:]})


STEP_COLUMNS = ("study", "trial", "candidate", "seed", "phase", "step")  # a step curve's keys, then its metrics
STEP_METRICS = ("train_loss", "train_acc", "eval_loss", "eval_acc", "val_loss", "val_acc", "lr_phase")


def step_curves(records: Records, study: str) -> pd.DataFrame:
    """Every step-level curve of the complete trials, tidy: one row per measured point (STEP_COLUMNS, then
    STEP_METRICS), `phase` the curve's name (`generalization`, a transfer run's, `length<epochs>`).

    Only step curves are read (RunRecord.curve; a robustness curve is per severity, older per-epoch curves have no
    steps); a metric a curve lacks, or records shorter than its steps, is NaN. Eval
    columns are the test images', val columns the validation images'; accuracies are fractions, losses nats,
    lr_phase the fraction of the lr schedule done.
    """
    rows = []
    for r in complete(records):
        for phase in sorted(r.run.curves):
            if (c := r.run.curve(phase)) is None or not c.step:
                continue
            steps = c.step
            cols = {k: v if len(v := getattr(c, k)) == len(steps) else None for k in STEP_METRICS}
            for i, step in enumerate(steps):
                row = {"study": study, "trial": r.number, "candidate": r.candidate, "seed": r.seed, "phase": phase}
                rows.append({**row, "step": step, **{k: math.nan if v is None else v[i] for k, v in cols.items()}})
    out = pd.DataFrame(rows, columns=[*STEP_COLUMNS, *STEP_METRICS])
    return out.astype({"trial": int, "step": int, **{k: float for k in STEP_METRICS}})


def runs_frame(records: Records, acc_key: str) -> pd.DataFrame:
    """Complete runs with `acc_key` measured: candidate, model label, optimizer, seed, acc (%), lr, wd, number, and
    `sel` (%): the accuracy a choice among runs reads, on the validation images (record.twin; `acc` without them)."""
    rows = []
    for r in complete(records):
        acc = r.run.number(acc_key)
        if acc is None:
            continue
        sel = r.run.number(twin(acc_key))
        optim = r.run.optimizer
        rows.append(
            {
                "candidate": r.candidate,
                "model_label": r.run.label,
                "optimizer": r.run.optimizer_name,
                "seed": r.seed,
                "acc": points(acc),
                "lr": optim.lr if optim else None,
                "weight_decay": optim.weight_decay if optim else None,
                "number": r.number,
                "sel": points(acc if sel is None else sel),
            }
        )
    cols = ["candidate", "model_label", "optimizer", "seed", "acc", "lr", "weight_decay", "number", "sel"]
    return pd.DataFrame(rows, columns=cols)
