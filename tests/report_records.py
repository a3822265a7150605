"""Fabricated trial records and a small real Optuna study for the report tests (no training)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from coatsearch.scores.base import Measured
from coatsearch.storage import record as R
from coatsearch.storage.record import TrialRecord

LAYOUTS = ("ViT_REL", "C-C-C-C", "C-C-C-T", "C-C-T-T", "C-T-T-T")
STAGES = {"C-C-C-C": "C1x32/1 C3x64/2 C7x128/2 C1x256/1", "C-C-T-T": "C1x32/1 C3x64/2 T7x128/2 T1x256/1"}
DEPTHS = {"V1": [1, 1, 9, 1], "V2": [1, 4, 6, 1]}

# Per candidate: means that agree with papers.md §3 (fractions, losses in nats); `seeded` gives each candidate
# three seeds with a small, irregular spread (about 0.15 points), so the pooled noise is never exactly zero.
MEANS = {
    "generalization.matched_acc": {
        "C-C-C-C": 0.861,
        "C-C-C-T": 0.860,
        "C-C-T-T": 0.851,
        "C-T-T-T": 0.820,
        "ViT_REL": 0.707,
    },
    "generalization.gap": {"C-C-C-C": 0.051, "C-C-C-T": 0.052, "C-C-T-T": 0.061, "C-T-T-T": 0.092, "ViT_REL": 0.205},
    "generalization.eval_acc": {
        "C-C-C-C": 0.851,
        "C-C-C-T": 0.850,
        "C-C-T-T": 0.841,
        "C-T-T-T": 0.822,
        "ViT_REL": 0.705,
    },
    "capacity.train_loss": {"C-C-T-T": 0.101, "C-T-T-T": 0.102, "ViT_REL": 0.305, "C-C-C-T": 0.505, "C-C-C-C": 0.705},
    "capacity.eval_acc": {"C-C-T-T": 0.901, "C-T-T-T": 0.900, "ViT_REL": 0.871, "C-C-C-T": 0.851, "C-C-C-C": 0.831},
    "transfer.gain": {"C-C-T-T": 0.031, "C-T-T-T": 0.011},
    "transfer.finetune_acc": {"C-C-T-T": 0.921, "C-T-T-T": 0.901},
}
SEEDS = (0, 1, 2)
_JITTER = ((0.0, 0.002, -0.001), (0.001, -0.001, 0.0015), (-0.0015, 0.0005, 0.001), (0.0005, 0.0015, -0.002),
           (0.001, -0.002, 0.0))  # fmt: skip


def seeded(means: dict, scale: float = 1.0) -> dict:
    """Per key and candidate, one value per seed: the mean plus an irregular jitter (scale × about 0.15 points)."""
    return {k: {n: [m + scale * j for j in _JITTER[i % len(_JITTER)]] for i, (n, m) in enumerate(per.items())}
            for k, per in means.items()}  # fmt: skip


AGREE = seeded(MEANS)


def reverse(values: dict) -> dict:
    """The same numbers given to the candidates in reverse order: every claimed order flips."""
    out = {}
    for key, per in values.items():
        names = list(per)
        out[key] = {n: per[names[len(names) - 1 - i]] for i, n in enumerate(names)}
    return out


def noisy(values: dict, spread: float = 0.15) -> dict:
    """The paper's order, but seeds spread ±spread apart, differently per candidate: nothing is resolved."""
    return {k: {n: [v[0] - spread * (-1) ** i, v[1] + spread * (-1) ** i, v[2]] for i, (n, v) in enumerate(per.items())}
            for k, per in values.items()}  # fmt: skip


def record(number: int, candidate: str, seed: int, metrics: dict, **kw) -> TrialRecord:
    """One COMPLETE record as `run_item` builds it (record.completed: env, optim, sizes) with the given metrics."""
    label = kw.get("label", candidate if candidate in LAYOUTS else "C-C-T-T")
    layout = kw.get("layout", "T" if label.startswith("ViT") else label)
    optim = {"optimizer": kw.get("optimizer", "adamw"), "lr": kw.get("lr", 2e-3), "weight_decay": kw.get("wd", 0.05)}
    sample = kw.get("sample", 0)
    model = R.Model(
        label=label,
        arch="vit" if label in ("ViT_P", "ViT_C") else "coatnet",
        layout=layout,
        stem="conv",
        stages=STAGES.get(layout, "T8x128/1"),
        depths=tuple(DEPTHS.get(candidate, [1, 3, 7, 1])),
        widths=(32, 64, 128, 256),
        params=1_500_000 + 1000 * number,
        macs=12_000_000,
        budget_macs=12_000_000,
        budget_error=0.01,
    )
    env = R.Environment("cpu", "h", cpu="Test CPU", cpu_count=2, torch_threads=2,
                        versions={"coatsearch": "0.1.0", "torch": "2", "timm": "1", "optuna": "5"})  # fmt: skip
    ident = R.Identity(candidate, seed, sample, f"{candidate}/seed={seed}/sample={sample}")
    optimizer = R.optimizer({**optim, "batch_size": 128, "warmup_epochs": 1})
    run = R.completed(ident, model, Measured.from_json(metrics), optimizer, wall_s=10.0 + number, environment=env)
    params = {"candidate": candidate, "seed": seed, **kw.get("params", {})}
    value = metrics.get("generalization.eval_acc", metrics.get("accuracy.eval_acc", 0.5))
    start = f"2025-01-01T00:{number // 60:02d}:{number % 60:02d}"
    return TrialRecord(number, value, params, start, start, run)


def edit_runs(records: list[TrialRecord], fn) -> list[TrialRecord]:
    """Copies of the records where `fn(record, measured)` edited each COMPLETE run's flat metrics and curves."""
    out = []
    for r in records:
        if r.state == "COMPLETE":
            flat = R.measured(r.run)
            fn(r, flat)
            r = dataclasses.replace(r, run=R.with_measured(r.run, flat))
        out.append(r)
    return out


def with_state(r: TrialRecord, state: str) -> TrialRecord:
    """The record told another state."""
    return dataclasses.replace(r, run=dataclasses.replace(r.run, state=state))


def with_derived(metrics: dict) -> dict:
    """Fill train acc from eval acc + gap, train loss, images/epochs and a short curve, as `measure` does."""
    out = dict(metrics)
    for score in ("generalization", "capacity", "accuracy"):
        if f"{score}.eval_acc" in out:
            out.setdefault(f"{score}.gap", 0.05)
            out.setdefault(f"{score}.train_acc", out[f"{score}.eval_acc"] + out[f"{score}.gap"])
            out.setdefault(f"{score}.train_loss", 0.05)
            out.setdefault(f"{score}.val_loss", out[f"{score}.train_loss"] + 0.03)  # held out: no overfitting
            out[f"{score}.images"], out[f"{score}.epochs"] = 2000, 3
            acc = out[f"{score}.eval_acc"]
            out[f"curves.{score}"] = {"train_loss": [1.0, 0.5, 0.2, 0.1, 0.08, 0.07],
                                      "train_acc": [0.5, 0.7, 0.9, 0.95, 0.96, 0.97],
                                      "eval_loss": [1, 0.8, 0.7, 0.65, 0.64, 0.64],
                                      "eval_acc": [acc - 0.2, acc - 0.05, acc - 0.002, acc, acc - 0.001, acc],
                                      "seconds": [1] * 6}  # a plateau over the last third: converged  # fmt: skip
    if "transfer.finetune_acc" in out:  # the fine-tune's curve, converged too (claim (c) needs convergence)
        acc = out["transfer.finetune_acc"]
        out["curves.transfer"] = {"train_loss": [1.0, 0.5, 0.3, 0.2, 0.2, 0.2], "eval_acc": [acc - 0.1, acc - 0.02,
                                  acc, acc, acc - 0.001, acc], "seconds": [1] * 6}  # fmt: skip
    return out


def layout_records(values: dict = AGREE, extra: tuple[str, ...] = ()) -> list[dict]:
    """5 layouts (plus `extra` names) × 3 seeds, then one failed and one interrupted trial (seed 3)."""
    names = list(dict.fromkeys([*LAYOUTS, *extra, *(n for per in values.values() for n in per)]))
    recs = []
    for seed in range(max(len(v) for per in values.values() for v in per.values())):
        for name in names:
            metrics = {k: per[name][seed] for k, per in values.items() if name in per and seed < len(per[name])}
            recs.append(record(len(recs), name, seed, with_derived(metrics)))
    recs.append(failed(len(recs), "C-C-C-C", 3, "budget not met: too small"))
    recs.append(failed(len(recs), "C-T-T-T", 3, None))
    return recs


def failed(number: int, candidate: str, seed: int, reason: str | None) -> TrialRecord:
    """A FAIL record: with a reason, or none (the worker died)."""
    ident = R.Identity(candidate, seed, 0, f"{candidate}/seed={seed}/sample=0")
    return TrialRecord(number, None, {"candidate": candidate, "seed": seed}, None, None, R.failed(ident, reason))


SPACE = {
    "space": "fab",
    "source": "spaces/fab.yaml",
    "profile": "default",
    "description": "Fabricated layouts for tests.",
    "scale": "no scale at all: numbers made up",
    "input": [32, 1, 10],
    "data": {"dataset": "synthetic", "root": None, "eval_size": 200},
    "scores": {"generalization": {"per_class": 200, "epochs": 3, "classes": None, "dataset": None}},
    "study": {
        "seeds": [0, 1, 2],
        "samples": 1,
        "sampler": "random",
        "pruner": "none",
        "objective": "generalization.eval_acc",
        "direction": "maximize",
    },  # fmt: skip
    "candidates": list(LAYOUTS),
}


def vit_records(p_sgd_drop=0.10, c_sgd_drop=0.005, n=8, p_spread=0.08, c_spread=0.01) -> list[dict]:
    """ViT_P and ViT_C × AdamW/SGD × n sampled (lr, wd): ViT_P spreads wide and loses much with SGD."""
    recs = []
    for label, spread, drop in (("ViT_P", p_spread, p_sgd_drop), ("ViT_C", c_spread, c_sgd_drop)):
        for opt in ("adamw", "sgd"):
            for k in range(n):
                acc = 0.85 - (drop if opt == "sgd" else 0.0) - spread * k / (n - 1)
                lr = 1e-3 * (k + 1)
                metrics = with_derived({"accuracy.eval_acc": acc})  # the full recipe, as spaces/vit_stems.yaml
                metrics["length.epochs"], metrics["length.eval_acc"] = [2, 4, 8], [acc - 0.05, acc - 0.02, acc]
                metrics["length.eval_acc_longest"] = acc
                params = {"train.lr": lr, "train.weight_decay": 0.05}
                recs.append(record(len(recs), f"{label}-{opt}", 0, metrics, label=label, optimizer=opt, lr=lr,
                                   sample=k, params=params))  # fmt: skip
    return recs


def make_study(folder: Path, name: str, space: dict, records: list[TrialRecord], extra: dict | None = None):
    """A real JournalStorage study under folder/<name>/journal.log holding the records as Optuna trials.

    `extra`: trial number -> user attributes written beside its record (as a foreign script could)."""
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution
    from optuna.trial import TrialState

    from coatsearch.storage.store import open_storage, storage_file

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=name, storage=open_storage(storage_file(folder, name)), direction="maximize")
    study.set_user_attr("space", space)
    names = sorted({r.candidate for r in records})
    for r in records:
        dists = {"candidate": CategoricalDistribution(names), "seed": CategoricalDistribution([0, 1, 2, 3])}
        dists.update({k: FloatDistribution(1e-5, 1.0, log=True) for k in r.params if k.startswith("train.")})
        state = TrialState[r.state]
        attrs = {"key": r.run.identity.key, **({"run_id": "r"} if state == TrialState.FAIL else {})}
        if not r.interrupted:
            attrs[R.ATTR] = R.to_json(r.run)
            attrs.update({} if r.run.fail_reason is None else {"fail_reason": r.run.fail_reason})
        trial = optuna.trial.create_trial(
            state=state,
            value=r.value if state == TrialState.COMPLETE else None,
            params=dict(r.params),
            distributions=dists,
            user_attrs={**attrs, **(extra or {}).get(r.number, {})},
        )
        study.add_trial(trial)
    return study
