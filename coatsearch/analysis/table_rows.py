"""The study tables' typed rows (tables.py): per candidate or trial, computed from the trial records alone.

summary.json writes each row through `tables.jsonable`: its fields in order, tuples as lists (the dict tables.py
built before these types, so a report is byte-identical); SubsetUse, which the summary's reader reads back, has
`to_json`/`from_json`, and CandidateRow, whose summary form is its fields, `from_json` alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from coatsearch.analysis import json_form
from coatsearch.analysis.results import Stat
from coatsearch.storage.record import TrialRecord


@dataclass(frozen=True)
class CandidateRuns:
    """One candidate's complete trial records, in record order."""

    candidate: str
    runs: tuple[TrialRecord, ...]


class HasNames(Protocol):
    """What the verdict rules read of a row to resolve a paper's name (papers.verdicts.resolve): a candidate row, or
    a planned model (planner.power.ModelRow)."""

    @property
    def candidate(self) -> str: ...
    @property
    def model_label(self) -> str: ...
    @property
    def layout(self) -> str: ...


@dataclass(frozen=True)
class GuardCounts:
    """A candidate's runs of one score group and how many each regime guard flagged."""

    runs: int
    failed: int  # within CHANCE_POINTS of chance
    not_converged: int  # eval accuracy still rising over the last third of the curve
    unchecked: int  # convergence not checkable (curve too short or missing)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GuardCounts:
        """The counts summary.json holds."""
        return cls(*(int(data.get(f) or 0) for f in ("runs", "failed", "not_converged", "unchecked")))


@dataclass(frozen=True)
class CandidateRow:
    """One candidate: identity from its first run, a Stat and per-seed means of every metric (failed runs left out),
    and its regime guards per score group (tables.candidate_rows)."""

    candidate: str
    model_label: str
    layout: str
    stages: str
    depths: tuple[int, ...]
    budget_macs: int | None
    optimizers: tuple[str, ...]  # sorted
    n: int  # complete runs
    metrics: Mapping[str, Stat]  # metric key -> mean ± sd over runs, display units
    by_seed: Mapping[str, Mapping[int, float]]  # metric key -> seed -> mean over the seed's runs
    guards: Mapping[str, GuardCounts]  # score group -> its runs' guard counts

    def stat(self, key: str) -> Stat | None:
        """The metric's Stat (None: not measured)."""
        return self.metrics.get(key)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CandidateRow:
        """The row summary.json holds (its seeds written as strings); an older summary's missing keys as empty."""
        jf, budget = json_form, data.get("budget_macs")
        by_seed = {k: {int(s): jf.number(v) for s, v in jf.mapping(vals).items()}
                   for k, vals in jf.mapping(data.get("by_seed")).items()}  # fmt: skip
        return cls(
            str(data["candidate"]),
            str(data.get("model_label") or ""),
            str(data.get("layout") or ""),
            str(data.get("stages") or ""),
            tuple(int(d) for d in jf.items(data.get("depths"))),
            None if budget is None else int(budget),
            tuple(str(o) for o in jf.items(data.get("optimizers"))),
            int(data.get("n") or 0),
            {k: Stat.from_json(jf.mapping(s)) for k, s in jf.mapping(data.get("metrics")).items()},
            by_seed,
            {g: GuardCounts.from_json(jf.mapping(c)) for g, c in jf.mapping(data.get("guards")).items()},
        )


@dataclass(frozen=True)
class StoppedTrial:
    """A trial that did not complete (failed, interrupted, pruned or unfinished) and why."""

    number: int
    candidate: str
    seed: int | None
    key: str | None  # the run's identity key (a rerun of the same run shares it)
    state: str
    reason: str


@dataclass(frozen=True)
class SubsetUse:
    """One score's training subset as the space records it, and the image counts its runs actually used."""

    score: str
    per_class: int | None
    classes: tuple[Any, ...] | None  # the subset's own classes; None: all of the data set's
    epochs: Any  # as recorded: a number, or a list of schedule lengths (the length score)
    dataset: str | None  # a transfer target's data set; None: the study's
    images: tuple[Any, ...]  # the distinct image counts runs recorded, ascending

    def to_json(self) -> dict[str, Any]:
        """The summary's form: the space's values as recorded, the images as a list."""
        classes = None if self.classes is None else list(self.classes)
        return {"score": self.score, "per_class": self.per_class, "classes": classes, "epochs": self.epochs,
                "dataset": self.dataset, "images": list(self.images)}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SubsetUse:
        """The subset `to_json` wrote."""
        classes, per_class = data.get("classes"), data.get("per_class")
        return cls(str(data.get("score")), None if per_class is None else int(per_class),
                   None if classes is None else tuple(json_form.items(classes)), data.get("epochs"),
                   data.get("dataset"), tuple(json_form.items(data.get("images"))))  # fmt: skip


@dataclass(frozen=True)
class EpochCurve:
    """One candidate's mean per-epoch curve of a score over its runs (studies recorded before step curves)."""

    candidate: str
    epoch: tuple[int, ...]  # 1, 2, ...
    train_loss: tuple[float, ...]
    eval_acc: tuple[float, ...]  # %
    runs: int


@dataclass(frozen=True)
class LengthStability:
    """One candidate's eval accuracy (%) at each schedule length, and its Δ error against the longest."""

    candidate: str
    model_label: str
    epochs: tuple[int, ...]  # the schedule lengths, as its runs recorded them
    eval_acc: tuple[Stat, ...]  # per length
    delta_error: tuple[float, ...]  # per length: the longest's accuracy minus this one's (points)
    runs: int


@dataclass(frozen=True)
class SeverityCurve:
    """One candidate's eval accuracy (%) against corruption severity, mean over corruptions and runs."""

    candidate: str
    severity: tuple[int, ...]  # 0 is the clean eval set
    acc: tuple[Stat | None, ...]  # per severity
    corruptions: tuple[str, ...]
    runs: int
