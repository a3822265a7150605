"""The study tables' typed rows (tables.py): per candidate or trial, computed from the trial records alone.

summary.json writes each row through `tables.jsonable`: its fields in order, tuples as lists (the dict tables.py
built before these types, so a report is byte-identical); SubsetUse, which the summary's reader reads back, has
`to_json`/`from_json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coatsearch.analysis import json_form
from coatsearch.analysis.results import Stat
from coatsearch.storage.record import TrialRecord


@dataclass(frozen=True)
class CandidateRuns:
    """One candidate's complete trial records, in record order."""

    candidate: str
    runs: tuple[TrialRecord, ...]


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
