"""A study's summary: the one typed value its records become (report.tables), which every report section reads and
summary.json writes.

Its fields are summary.json's keys in the file's order; `tables.jsonable` writes it (each part through its own
`to_json`, or its fields in order; tuples as lists), so the file is what the dict before this type wrote. The parts
other commands read back (the planner, the earlier looks, a space's answer page) are read typed by
papers.summary_file. The types it names sit in modules of their own (analysis.search_types,
papers.claim_results), not beside the code that computes them, so that every section can read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coatsearch.analysis.measure_results import (
    BestRun,
    CapacityReading,
    EdfRow,
    EdgeWarning,
    HyperSamples,
    MatchedLoss,
    MatchedPoints,
    OptimizerGap,
    Pairing,
    RecipeCurves,
    TransferStops,
    UntestedClaim,
)
from coatsearch.analysis.pareto import ParetoFront
from coatsearch.analysis.results import MeasureRanking
from coatsearch.analysis.search_types import SearchResults
from coatsearch.analysis.speed_tables import SpeedTable
from coatsearch.analysis.spread import Sizes
from coatsearch.analysis.table_rows import CandidateRow, EpochCurve, LengthStability, SeverityCurve, StoppedTrial
from coatsearch.analysis.tables import StudyEnvironment
from coatsearch.papers.claim_results import ClaimVerdict, DepthSplit, Purposes, Replication
from coatsearch.papers.looks import Looks
from coatsearch.papers.rule_tables import AaState, CalibrationFigures
from coatsearch.scores.base import Metric


@dataclass(frozen=True)
class RegimeRow:
    """One claim's regime at its deciding measure: data seen, the best network, the floors and the verdict's check."""

    claim: str
    measure: str  # the measure's label
    unit: str
    digits: int  # the measure's decimals
    images: tuple[int, ...]  # training images of a run
    processed: tuple[int, ...]  # images processed by a run: steps × batch
    epochs: tuple[float, ...]  # processed / training images
    best: str | None  # the best network of the claim on the measure
    best_value: float | None
    floor: float | None  # the linear floor on the measure (verdicts.floor_of)
    cnn: float | None  # the small CNN baseline's mean on the measure
    in_regime: bool
    why: str  # the first out-of-regime reason ('' in regime)


@dataclass(frozen=True)
class Rules:
    """The rules a report was judged under: the verdict rule's version, its texts, α, and the committed tables it
    cites (None without candidates, or when a table is stale or missing)."""

    rule_version: str
    relation: str
    verdict: str
    method: str
    alpha: float
    verdict_alpha: float
    calibration: CalibrationFigures | None
    aa: AaState | None


@dataclass(frozen=True)
class StudySummary:
    """Everything a study's report shows, computed once from its space record and trial records (and, for the last
    four, from the studies beside it and its stored plan)."""

    version: int  # summary.json's format (papers.summary_file.SUMMARY_VERSION)
    study: str
    space: Mapping[str, Any]  # source, profile, description, scale, input, its hashes (report._space_ids)
    environment: StudyEnvironment
    images: Purposes  # which images served which purpose (judging.purposes)
    registration: str  # the study against its registered analysis (judging.with_status)
    metrics: Mapping[str, Metric]  # every metric's declaration (analysis.tables.METRICS)
    candidates: tuple[CandidateRow, ...]  # analysis.tables.candidate_rows
    size: Sizes | None
    primary_acc: str | None  # the accuracy the study is judged by
    primary_label: str
    rankings: tuple[MeasureRanking, ...]
    v_table: tuple[DepthSplit, ...]
    claims: tuple[ClaimVerdict, ...]  # after the looks correction (looks.counted)
    untested: tuple[UntestedClaim, ...]
    scale: str  # the claims' proxy scale: data set, training images, input, seeds (report.regime.proxy_scale)
    regime: tuple[RegimeRow, ...]  # each judged claim's regime at its deciding measure (report.regime)
    matched: MatchedLoss  # the matched-loss reading
    capacity: CapacityReading | None
    transfer: tuple[TransferStops, ...]
    pairing: tuple[Pairing, ...]
    edge_warnings: tuple[EdgeWarning, ...]
    curves: Mapping[str, tuple[RecipeCurves, ...] | tuple[EpochCurve, ...]]  # score -> mean curves
    search_dims: tuple[str, ...]
    edf: tuple[EdfRow, ...]
    edf_k: float  # EDF steepness (papers.claims.EDF_K)
    optimizer_gap: tuple[OptimizerGap, ...]
    peak: tuple[BestRun | None, ...]
    samples: tuple[HyperSamples, ...]
    length: tuple[LengthStability, ...]
    has_vit: bool
    failures: tuple[StoppedTrial, ...]
    pareto: ParetoFront | None
    rules: Rules
    robustness: tuple[SeverityCurve, ...]
    speed: SpeedTable | None
    matched_loss: MatchedPoints | None  # curve points and ladder readings: the Fig. 1 figure
    search: SearchResults | None = None  # a search study's own answer (analysis.search_results)
    looks: Looks | None = None  # the earlier looks it counted (papers.looks.table)
    replication: Replication | None = None  # a replicate against its original (papers.replicate)
    plan_check: Mapping[str, Any] | None = None  # the stored plan against the measured wall time (storage.planfile)
