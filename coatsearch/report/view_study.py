"""The study sections' Infos, computed from the report context: header, setup, candidates, rankings, depth splits.

The candidates Info also carries what its figures draw (each run's curves, the robustness lines, the claims'
measures), so that report.md and those figures read one Info."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coatsearch.analysis.constants import BASELINES
from coatsearch.analysis.measure_results import RecipeCurves
from coatsearch.analysis.results import MeasureRanking
from coatsearch.analysis.spread import Sizes
from coatsearch.analysis.table_rows import CandidateRow, EpochCurve
from coatsearch.analysis.tables import METRICS, Counts, Hardware, Metric, Stat
from coatsearch.papers.claim_results import Purposes
from coatsearch.report.plots import FIGURES
from coatsearch.report.section import ReportContext
from coatsearch.report.summary import StudySummary
from coatsearch.scores import table_keys, v_accs

SIZE_KEYS = ("params", "macs")  # the model-size metrics every size column shows
GUARD_FIELDS = ("failed", "not_converged", "unchecked")  # the regime-guard counts a candidate row holds


@dataclass(frozen=True)
class Header:
    """Title, description, proxy scale and where the space came from."""

    study: str
    description: str | None
    scale: str | None
    space: str | None
    profile: str | None
    source: str | None


def header(ctx: ReportContext) -> Header:
    """The header from the space record."""
    sp = ctx.summary.space
    text = {k: sp[k].strip() if sp.get(k) else None for k in ("description", "scale")}
    return Header(ctx.study, text["description"], text["scale"], sp.get("space") or None, sp.get("profile"),
                  sp.get("source"))  # fmt: skip


def about(ctx: ReportContext) -> Header | None:
    """The header's description, scale and space for the 'about' section; None when the record has none."""
    h = header(ctx)
    return h if any(x is not None for x in (h.description, h.scale, h.space)) else None


@dataclass(frozen=True)
class Subset:
    """One score's training subset: images per class, classes (None: all), images used, epochs, data set."""

    score: str
    per_class: Any
    classes: tuple[int, ...] | None
    images: tuple[int, ...]
    epochs: tuple[int, ...]
    dataset: str | None


@dataclass(frozen=True)
class ImageRun:
    """One score's recorded images: validation and test counts with their fingerprints (judging.purposes)."""

    run: str
    validation: tuple[Any, ...]
    validation_fp: tuple[Any, ...]
    test: tuple[Any, ...]
    test_fp: tuple[Any, ...]


@dataclass(frozen=True)
class Images:
    """Which images served which purpose: the state, its line, the test draws, the sampling, per score."""

    state: str  # confirmatory | exploratory
    line: str
    draws: tuple[Any, ...]
    sampling: str | None
    runs: tuple[ImageRun, ...]


@dataclass(frozen=True)
class Setup:
    """Data, input shape, seeds, objectives, trial counts, wall time, hardware, versions, subsets."""

    data: Mapping[str, Any]  # dataset, root, eval_size ({} when the space names none)
    image_size: int | None
    channels: int | None
    classes: int | None
    seeds: tuple[int, ...]
    study: Mapping[str, Any]  # the space's study block ({} when none)
    objectives: tuple[tuple[str, str], ...]  # (objective, direction) pairs
    counts: Counts
    wall_total_s: float
    wall_per_trial: Stat | None
    elapsed_s: float | None
    hardware: tuple[Hardware, ...]
    versions: tuple[Mapping[str, Any], ...]
    subsets: tuple[Subset, ...]
    space_file: tuple[str | None, str | None, str | None] = (None, None, None)  # source, profile, sha256 as run
    images: Images | None = None  # which images served which purpose
    registration: str | None = None  # the study against its registered analysis: confirmatory or exploratory


def setup(ctx: ReportContext) -> Setup:
    """The setup from the environment table (tables.StudyEnvironment)."""
    e, sp = ctx.summary.environment, ctx.summary.space
    study = e.study
    goals = tuple(zip(study.get("objectives") or (), study.get("directions") or (), strict=False))
    goals = goals or ((study.get("objective"), study.get("direction")),)
    subsets = tuple(
        Subset(r.score, r.per_class, r.classes, r.images,
               tuple(r.epochs) if isinstance(r.epochs, list | tuple) else (r.epochs,), r.dataset)
        for r in e.subsets
    )  # fmt: skip
    return Setup(e.data, e.image_size, e.channels, e.classes, e.seeds, study, goals, e.counts, e.wall_total_s,
                 e.wall_per_trial, e.elapsed_s, e.hardware, e.versions, subsets,
                 (sp.get("source"), sp.get("profile"), sp.get("sha256")),
                 _images(ctx.summary.images), ctx.summary.registration)  # fmt: skip


def _images(i: Purposes | None) -> Images | None:
    if not i:
        return None
    runs = tuple(ImageRun(r["run"], tuple(r["validation"]), tuple(r["validation_fp"]), tuple(r["test"]),
                          tuple(r["test_fp"])) for r in i.runs)  # fmt: skip
    return Images(i.state, i.line, i.draws, i.sampling, runs)


@dataclass(frozen=True)
class CandidateEntry:
    """One candidate's line of the candidates table: identity, size (params, MACs, budget error) and each table
    score as mean ± sd over runs."""

    candidate: str
    layout: str  # its layout, with the model's label where that differs
    stages: str
    size: tuple[Stat | None, ...]  # params, MACs, budget error
    n: int
    scores: tuple[Stat | None, ...]  # one per column
    metrics: Mapping[str, Stat]  # every metric it measured (mean ± sd over runs): what its figures plot


@dataclass(frozen=True)
class CurveRun:
    """One run's measured curve: x (steps, or epochs for studies recorded before step curves), clean train loss
    (nats) and eval accuracy (%) at each point."""

    x: tuple[float, ...]
    train_loss: tuple[float, ...]
    eval_acc: tuple[float, ...]


@dataclass(frozen=True)
class CurveLine:
    """A candidate's runs of one recipe (`label` names the recipe where its runs differ in lr/wd)."""

    candidate: str
    label: str
    runs: tuple[CurveRun, ...]


@dataclass(frozen=True)
class CurveSet:
    """One score's training curves: the x axis ("step" or "epoch") and a line per candidate and recipe."""

    score: str
    axis: str
    lines: tuple[CurveLine, ...]


@dataclass(frozen=True)
class RobustnessRow:
    """A candidate's eval accuracy (%) at each corruption severity (0: clean), mean over corruptions and runs."""

    candidate: str
    severity: tuple[int, ...]
    accs: tuple[Stat | None, ...]  # None where no run had a finite accuracy
    corruptions: tuple[str, ...]


@dataclass(frozen=True)
class Candidates:
    """The candidates table, the sampled dimensions, regime baselines, the size spread and fired guards."""

    size_metrics: tuple[Metric, ...]  # params, MACs, budget error
    columns: tuple[Metric, ...]  # the table scores any candidate measured, in registry order
    rows: tuple[CandidateEntry, ...]
    search_dims: tuple[str, ...]
    baselines: tuple[str, ...]  # the regime baselines among the rows
    sizes: Sizes | None
    params_ratio: float | None  # largest / smallest params of the budget-matched candidates
    fired: Mapping[str, tuple[str, ...]]  # guard field -> "candidate group k/runs" where it fired
    measures: tuple[str, ...] = ()  # the accuracy measures (%) the judged claims decide on (acc_vs_params.png)
    curves: tuple[CurveSet, ...] = ()  # the scores' training curves, each run its own line (curves.png)
    robustness: tuple[RobustnessRow, ...] = ()  # accuracy against corruption severity (robustness.png)


def candidates(ctx: ReportContext) -> Candidates:
    """The candidates table and its notes from the candidate rows, with what the section's figures draw."""
    rows = ctx.summary.candidates
    keys = [k for k in table_keys() if any(k in r.metrics for r in rows)]  # the registry as it is now
    z = ctx.summary.size
    return Candidates(
        tuple(METRICS[k] for k in (*SIZE_KEYS, "budget_error")), tuple(METRICS[k] for k in keys),
        tuple(_candidate(r, keys) for r in rows),
        tuple(ctx.summary.search_dims), tuple(r.candidate for r in rows if r.candidate in BASELINES), z,
        z.big[1] / z.small[1] if z else None, _fired(rows), _claim_measures(ctx.summary),
        tuple(_curve_set(score, c) for score, c in ctx.summary.curves.items() if c),
        tuple(RobustnessRow(r.candidate, r.severity, r.acc, r.corruptions) for r in ctx.summary.robustness),
    )  # fmt: skip


def _candidate(r: CandidateRow, keys: list[str]) -> CandidateEntry:
    """One candidate's line: its layout named with the model's label where that differs, size and scores."""
    label = r.layout + (f" ({r.model_label})" if r.model_label != r.layout else "")
    return CandidateEntry(r.candidate, label, r.stages, tuple(r.stat(k) for k in (*SIZE_KEYS, "budget_error")), r.n,
                          tuple(r.stat(k) for k in keys), r.metrics)  # fmt: skip


def _claim_measures(summary: StudySummary) -> tuple[str, ...]:
    """The accuracy measures (%) the judged claims decide on, in claim order; the primary accuracy without any."""
    keys = [c.evidence[0].key for c in summary.claims if c.evidence]
    keys = [k for k in dict.fromkeys(keys) if METRICS[k].unit == "%"]
    return tuple(keys) or ((summary.primary_acc,) if summary.primary_acc else ())


def _curve_set(score: str, entries: Sequence[RecipeCurves] | Sequence[EpochCurve]) -> CurveSet:
    """A score's curves table (papers.paper.mean_curves: runs kept apart; older studies: one per-epoch mean per
    candidate, tables.curves) as typed lines."""
    if isinstance(entries[0], RecipeCurves):
        lines = tuple(CurveLine(e.candidate, e.label, tuple(CurveRun(r.step, r.train_loss, r.eval_acc) for r in e.runs))
                      for e in entries if isinstance(e, RecipeCurves))  # fmt: skip
        return CurveSet(score, "step", lines)
    lines = tuple(CurveLine(e.candidate, e.candidate, (CurveRun(e.epoch, e.train_loss, e.eval_acc),))
                  for e in entries if isinstance(e, EpochCurve))  # fmt: skip
    return CurveSet(score, "epoch", lines)


def _fired(rows: Sequence[CandidateRow]) -> dict[str, tuple[str, ...]]:
    """Every regime guard that fired, per guard field: 'candidate group k/runs'."""
    return {
        field: tuple(f"{r.candidate} {group} {getattr(g, field)}/{g.runs}" for r in rows
                     for group, g in r.guards.items() if getattr(g, field))
        for field in GUARD_FIELDS
    }  # fmt: skip


@dataclass(frozen=True)
class Figures:
    """The figures written beside the report: (figure name, file, caption) each."""

    links: tuple[tuple[str, str, str], ...]


def figures(written: Mapping[str, str]) -> Figures | None:
    """The written figures with their registry captions; None when none was written."""
    return Figures(tuple((n, f, FIGURES[n].caption) for n, f in written.items())) if written else None


@dataclass(frozen=True)
class Rankings:
    """The relation rule and one ranking per ranked measure the study has (verdicts.ranking: its measure, unit,
    which way is better and the ranked text)."""

    rule: str
    lines: tuple[MeasureRanking, ...]


def rankings(ctx: ReportContext) -> Rankings | None:
    """The rankings; None when the study ranks nothing."""
    found = ctx.summary.rankings
    if not found:
        return None
    return Rankings(ctx.summary.rules.relation, tuple(found))


@dataclass(frozen=True)
class Split:
    """One CoAtNet Table 7 depth split: variant, candidate, depths, size, accuracies and the paper's row."""

    variant: str
    candidate: str
    depths: str  # as the table shows them: [S1, ..., S4]
    size: tuple[Stat | None, ...]
    scores: tuple[Stat | None, ...]
    paper_blocks: Sequence[int]
    paper_top1: float


@dataclass(frozen=True)
class Splits:
    """The depth splits V0/V1/V2 with the accuracies any of them measured."""

    size_metrics: tuple[Metric, ...]
    columns: tuple[Metric, ...]
    rows: tuple[Split, ...]
    notes: tuple[str, ...]  # the rows' notes (how V0 was resolved), where given


def v_table(ctx: ReportContext) -> Splits | None:
    """The depth splits; None without V1/V2."""
    table = ctx.summary.v_table
    if not table:
        return None
    accs = [k for k in v_accs() if any(v.score(k) is not None for v in table)]
    rows = tuple(Split(v.variant, v.candidate, str(list(v.depths)), tuple(v.score(k) for k in SIZE_KEYS),
                       tuple(v.score(k) for k in accs), v.paper_blocks, v.paper_top1)
                 for v in table)  # fmt: skip
    notes = tuple(v.note for v in table if v.note)
    return Splits(tuple(METRICS[k] for k in SIZE_KEYS), tuple(METRICS[k] for k in accs), rows, notes)
