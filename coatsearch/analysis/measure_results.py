"""The paper measures' typed results (papers.paper, papers.optim, papers.measures): the matched-loss reading, the
capacity ranking, transfer stops, paired data, untested claims, step curves, best runs, EDF rows, range warnings.

Frozen, like analysis.results. summary.json writes each through `tables.jsonable`: its fields in order, tuples as
lists (the dict summary.json held before these types, so a report is byte-identical for the same records); a type
has its own `to_json` only where the summary's form is not its fields (MatchedLoss, MatchedPoints; UntestedClaim
reads back). They live here, below the papers stage, so that the report and the answer page name them without
importing the claims.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

NOT_REACHED = "never reached"  # why a run has no reading at a level it never reached


@dataclass(frozen=True)
class Reading:
    """Where a run's train loss first reaches a level: step, eval acc and lr phase read between two measured
    points, or `why` not (censored: never reached, bracket from step 0, or a bracket wider than MAX_SPAN)."""

    step: float = math.nan
    eval_acc: float = math.nan
    lr_phase: float = math.nan
    reached: bool = False
    why: str = NOT_REACHED

    @property
    def censored(self) -> bool:
        """No reading: the run never got there, or no two measured points close in loss bracket it."""
        return bool(self.why)


@dataclass(frozen=True)
class LevelReading:
    """One run's Reading at one train-loss level of the ladder (papers.measures.at_levels)."""

    COLUMNS: ClassVar[tuple[str, ...]] = ("run", "candidate", "seed", "level", "step", "eval_acc", "lr_phase",
                                          "reached", "censored", "why")  # fmt: skip

    run: int  # the trial number
    candidate: str
    seed: int | None
    level: float  # nats
    reading: Reading

    def to_json(self) -> dict[str, Any]:
        """The reading as one row of COLUMNS (the matched-loss figure's and summary.json's form)."""
        r = self.reading
        return {"run": self.run, "candidate": self.candidate, "seed": self.seed, "level": self.level, "step": r.step,
                "eval_acc": r.eval_acc, "lr_phase": r.lr_phase, "reached": r.reached, "censored": r.censored,
                "why": r.why}  # fmt: skip


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


@dataclass(frozen=True, eq=False)
class MatchedLoss:
    """Generalization at matched training loss (papers.paper.matched): the ladder readings, the common level, the
    per-candidate table, and what claim (a) could not read."""

    readings: tuple[LevelReading, ...] | None  # every run's reading at each ladder level (None: no step curves)
    level: float | None  # the common level (None: none)
    table: tuple[MatchedReading, ...]  # the candidates that reached the ladder
    never: tuple[str, ...]  # candidates censored at every level
    levels: tuple[float, ...]  # the ladder, highest first
    key: tuple[str, ...]  # claim (a)'s key candidates
    out_of_regime: tuple[str, ...]  # why claim (a) is out of regime (empty: in regime)
    censored: tuple[str, ...] = ()  # runs whose reading at the level is censored, key candidates left unread

    def to_json(self) -> dict[str, Any]:
        """{level, levels, table, never, key, out_of_regime}: summary.json's `matched` (no curves, no notes)."""
        return {
            "level": self.level,
            "levels": self.levels,
            "table": self.table,
            "never": self.never,
            "key": self.key,
            "out_of_regime": self.out_of_regime,
        }  # tables.jsonable writes the rows and tuples


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


@dataclass(frozen=True)
class TransferStops:
    """One candidate's pretraining stops (papers.paper.transfer): runs that hit the target, runs that hit the cap,
    and the fine-tune step budgets."""

    candidate: str
    target: int
    cap: int
    finetune_steps: tuple[Any, ...]


@dataclass(frozen=True)
class Pairing:
    """One score's paired-data check (papers.paper.pairing): eval sets over all runs, the seeds, whether every
    candidate trained on the same subset per seed, and whether it read the same eval images per seed."""

    score: str
    eval_sets: int
    seeds: int
    paired: bool
    eval_paired: bool


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


@dataclass(frozen=True)
class RecipeCurves:
    """A candidate's runs of one recipe (papers.paper.mean_curves), kept apart; `label` names the recipe where the
    candidate's runs differ in optimizer, lr or wd."""

    candidate: str
    label: str
    runs: tuple[RunSteps, ...]


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


@dataclass(frozen=True)
class Detectable:
    """The smallest difference a study could detect (80% power) beside the paper's effect; None where unknown
    (papers.claim_results.ClaimVerdict.detectable)."""

    mdd: float | None
    effect: float | None
    unit: str
    n: int | None
