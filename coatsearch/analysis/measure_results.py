"""The paper measures' typed results (papers.paper, papers.optim, papers.measures): the matched-loss reading, the
capacity ranking, transfer stops, paired data, untested claims, step curves, best runs, EDF rows, range warnings.

Frozen, like analysis.results. Each `to_json` gives the dict summary.json held before these types, key order kept,
so a report is byte-identical for the same records. They live here, below the papers stage, so that the report and
the answer page name them without importing the claims.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class MatchedReading:
    """One candidate read at claim (a)'s common train-loss level (papers.paper.matched): eval acc mean/sd (%) over
    its uncensored readings, runs, how low its runs got, the lr phase range there and its censored runs."""

    candidate: str
    eval_acc: float | None
    sd: float | None
    runs: int
    lowest_level: float | None  # the lowest level all its runs reached
    lowest_any: float | None  # the lowest level any of its runs reached
    lr_phase_min: float | None  # lr / peak lr at the readings
    lr_phase_max: float | None
    censored_runs: int | None  # None without a common level

    def to_json(self) -> dict[str, Any]:
        """The row as summary.json's matched table holds it."""
        return {"candidate": self.candidate, "eval_acc": self.eval_acc, "sd": self.sd, "runs": self.runs,
                "lowest_level": self.lowest_level, "lowest_any": self.lowest_any, "lr_phase_min": self.lr_phase_min,
                "lr_phase_max": self.lr_phase_max, "censored_runs": self.censored_runs}  # fmt: skip


@dataclass(frozen=True, eq=False)
class MatchedLoss:
    """Generalization at matched training loss (papers.paper.matched): the curves and ladder readings, the common
    level, the per-candidate table, and what claim (a) could not read."""

    curves: pd.DataFrame  # every run's step-level points (run_frames.curve_frame)
    readings: pd.DataFrame | None  # every run's reading at each ladder level (measures.at_levels; None: no curves)
    level: float | None  # the common level (None: none)
    table: tuple[MatchedReading, ...]  # the candidates that reached the ladder
    never: tuple[str, ...]  # candidates censored at every level
    levels: tuple[float, ...]  # the ladder, highest first
    key: tuple[str, ...]  # claim (a)'s key candidates
    out_of_regime: tuple[str, ...]  # why claim (a) is out of regime (empty: in regime)
    censored: tuple[str, ...] = ()  # runs whose reading at the level is censored, key candidates left unread

    def to_json(self) -> dict[str, Any]:
        """{level, levels, table, never, key, out_of_regime}: summary.json's `matched` (no curves, no notes)."""
        table, out = [r.to_json() for r in self.table], list(self.out_of_regime)
        return {"level": self.level, "levels": list(self.levels), "table": table, "never": list(self.never),
                "key": list(self.key), "out_of_regime": out}  # fmt: skip


@dataclass(frozen=True)
class MatchedPoints:
    """Every run's measured curve points, the ladder readings and the common level (papers.paper.matched_points):
    CoAtNet Fig. 1 as the matched-loss figure draws it."""

    curves: tuple[Mapping[str, Any], ...]  # run, candidate, seed, step, train_loss, ... (run_frames.CURVE_COLUMNS)
    readings: tuple[Mapping[str, Any], ...]  # run, candidate, level, eval_acc, reached, censored, ...
    level: float | None

    def to_json(self) -> dict[str, Any]:
        """{curves, matched, level}: summary.json's `matched_loss`."""
        return {"curves": [dict(r) for r in self.curves], "matched": [dict(r) for r in self.readings],
                "level": self.level}  # fmt: skip


@dataclass(frozen=True)
class CapacityReading:
    """The capacity ranking by final eval accuracy (papers.paper.capacity), whether it held over the last third of
    the steps, and the images and steps each candidate's runs used."""

    order: tuple[str, ...]  # best first
    stable: bool
    crossings: tuple[tuple[str, str, float], ...]  # (ahead at the end, behind at the end, last step reversed)
    note: str
    verdict: str  # 'ranking held over the last third of the steps' or 'provisional'
    facts: Mapping[str, Mapping[str, tuple[Any, ...]]]  # candidate -> images / steps -> the values its runs used

    def to_json(self) -> dict[str, Any]:
        """summary.json's capacity entry."""
        facts = {c: {k: list(v) for k, v in f.items()} for c, f in self.facts.items()}
        return {"order": list(self.order), "stable": self.stable, "crossings": [list(c) for c in self.crossings],
                "note": self.note, "verdict": self.verdict, "facts": facts}  # fmt: skip


@dataclass(frozen=True)
class TransferStops:
    """One candidate's pretraining stops (papers.paper.transfer): runs that hit the target, runs that hit the cap,
    and the fine-tune step budgets."""

    candidate: str
    target: int
    cap: int
    finetune_steps: tuple[Any, ...]

    def to_json(self) -> dict[str, Any]:
        """{candidate, target, cap, finetune_steps}."""
        return {"candidate": self.candidate, "target": self.target, "cap": self.cap,
                "finetune_steps": list(self.finetune_steps)}  # fmt: skip


@dataclass(frozen=True)
class Pairing:
    """One score's paired-data check (papers.paper.pairing): eval sets over all runs, the seeds, whether every
    candidate trained on the same subset per seed, and whether it read the same eval images per seed."""

    score: str
    eval_sets: int
    seeds: int
    paired: bool
    eval_paired: bool

    def to_json(self) -> dict[str, Any]:
        """{score, eval_sets, seeds, paired, eval_paired}."""
        return {"score": self.score, "eval_sets": self.eval_sets, "seeds": self.seeds, "paired": self.paired,
                "eval_paired": self.eval_paired}  # fmt: skip


@dataclass(frozen=True)
class UntestedClaim:
    """A claim the study's profile marks untestable (papers.paper.untestable; summary.json `untested`): its id,
    title, why, and its verdict (categories.NOT_TESTED)."""

    id: str
    title: str
    reason: str
    verdict: str

    def to_json(self) -> dict[str, Any]:
        """{id, title, reason, verdict}."""
        return {"id": self.id, "title": self.title, "reason": self.reason, "verdict": self.verdict}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> UntestedClaim:
        """The entry the report wrote."""
        return cls(str(data["id"]), str(data.get("title") or ""), str(data.get("reason") or ""),
                   str(data.get("verdict") or ""))  # fmt: skip


@dataclass(frozen=True)
class RunSteps:
    """One run's step-level curve (papers.paper.mean_curves): steps, clean train loss (nats), eval accuracy (%)."""

    run: int
    step: tuple[Any, ...]
    train_loss: tuple[float, ...]
    eval_acc: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        """{run, step, train_loss, eval_acc}."""
        return {"run": self.run, "step": list(self.step), "train_loss": list(self.train_loss),
                "eval_acc": list(self.eval_acc)}  # fmt: skip


@dataclass(frozen=True)
class RecipeCurves:
    """A candidate's runs of one recipe (papers.paper.mean_curves), kept apart; `label` names the recipe where the
    candidate's runs differ in optimizer, lr or wd."""

    candidate: str
    label: str
    runs: tuple[RunSteps, ...]

    def to_json(self) -> dict[str, Any]:
        """{candidate, label, runs}."""
        return {"candidate": self.candidate, "label": self.label, "runs": [r.to_json() for r in self.runs]}


@dataclass(frozen=True)
class BestRun:
    """A run of the runs table (run_frames.runs_frame): the best of a group in papers.optim."""

    candidate: str
    model_label: str
    optimizer: str
    seed: Any
    acc: float  # on the test images (%)
    lr: float | None
    weight_decay: float | None
    number: int
    sel: float  # what the choice read: the validation images' accuracy (%), else `acc`

    def to_json(self) -> dict[str, Any]:
        """The run as the runs table's row."""
        return {"candidate": self.candidate, "model_label": self.model_label, "optimizer": self.optimizer,
                "seed": self.seed, "acc": self.acc, "lr": self.lr, "weight_decay": self.weight_decay,
                "number": self.number, "sel": self.sel}  # fmt: skip


@dataclass(frozen=True)
class OptimizerGap:
    """One model's best AdamW and best SGD run (None: none complete), their counts and the gap AdamW − SGD
    (points; None without both) (papers.optim.optimizer_gap)."""

    model_label: str
    adamw: BestRun | None
    sgd: BestRun | None
    n_adamw: int
    n_sgd: int
    gap: float | None

    def to_json(self) -> dict[str, Any]:
        """{model_label, adamw, sgd, n_adamw, n_sgd, gap}."""
        return {"model_label": self.model_label, "adamw": None if self.adamw is None else self.adamw.to_json(),
                "sgd": None if self.sgd is None else self.sgd.to_json(), "n_adamw": self.n_adamw,
                "n_sgd": self.n_sgd, "gap": self.gap}  # fmt: skip


@dataclass(frozen=True)
class HyperSamples:
    """One candidate and optimizer's hyperparameter samples (papers.optim.samples): complete runs, trials that did
    not complete (on the candidate's first row), the sampled dimensions."""

    candidate: str
    model_label: str
    optimizer: str
    complete: int
    not_complete: int
    dims: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """{candidate, model_label, optimizer, complete, not_complete, dims}."""
        return {"candidate": self.candidate, "model_label": self.model_label, "optimizer": self.optimizer,
                "complete": self.complete, "not_complete": self.not_complete, "dims": list(self.dims)}  # fmt: skip


@dataclass(frozen=True)
class EdfRow:
    """One candidate and optimizer's EDF (papers.measures.edf): sorted Δ error (points) from the best run of the
    same model and optimizer, the cumulative fraction, and the share within k points."""

    label: str
    candidate: str
    model_label: str
    optimizer: str
    best: float  # the best run's accuracy (%)
    delta: tuple[float, ...]
    fraction: tuple[float, ...]
    n: int
    k: float
    within_k: float

    def to_json(self) -> dict[str, Any]:
        """The row as summary.json's `edf` holds it."""
        return {"label": self.label, "candidate": self.candidate, "model_label": self.model_label,
                "optimizer": self.optimizer, "best": self.best, "delta": list(self.delta),
                "fraction": list(self.fraction), "n": self.n, "k": self.k, "within_k": self.within_k}  # fmt: skip


@dataclass(frozen=True)
class EdgeWarning:
    """A best run whose lr or wd is the lowest or highest value sampled (papers.measures.edge_warnings)."""

    model_label: str
    optimizer: str
    dim: str
    value: float
    edge: str  # 'low' or 'high'
    low: float
    high: float
    message: str

    def to_json(self) -> dict[str, Any]:
        """{model_label, optimizer, dim, value, edge, low, high, message}."""
        return {"model_label": self.model_label, "optimizer": self.optimizer, "dim": self.dim, "value": self.value,
                "edge": self.edge, "low": self.low, "high": self.high, "message": self.message}  # fmt: skip


@dataclass(frozen=True)
class Detectable:
    """The smallest difference a study could detect (80% power) beside the paper's effect; None where unknown
    (papers.claim_results.ClaimVerdict.detectable)."""

    mdd: float | None
    effect: float | None
    unit: str
    n: int | None
