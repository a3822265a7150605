"""The verdict, optimizability and failure sections' Infos, computed from the report context."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coatsearch.analysis.measure_results import BestRun, Detectable, HyperSamples
from coatsearch.analysis.results import Estimate, Evidence
from coatsearch.analysis.table_rows import LengthStability
from coatsearch.analysis.tables import METRICS, Metric, Stat
from coatsearch.papers.claim_results import ClaimVerdict, StemPart
from coatsearch.papers.looks import Looks
from coatsearch.papers.rule_tables import AaState, CalibrationFigures
from coatsearch.report.section import ReportContext
from coatsearch.report.view_study import GUARD_FIELDS

Row = Mapping[str, Any]  # one row of a computed table, as the summary holds it


@dataclass(frozen=True)
class EvidenceInfo:
    """One measure's evidence for a claim as the report shows it: the typed evidence (verdicts.evidence: members,
    judged pairs, power, regime), its metric, and where each regime check fired."""

    evidence: Evidence
    metric: Metric
    fired: Mapping[str, tuple[str, ...]]  # guard field -> "model k/runs" where that regime check fired


def _evidence(e: Evidence) -> EvidenceInfo:
    fired = {f: tuple(f"{g['name']} {g[f]}/{g['runs']}" for g in e.guards if g[f]) for f in GUARD_FIELDS}
    return EvidenceInfo(e, METRICS[e.key], fired)


@dataclass(frozen=True)
class ClaimInfo:
    """One claim's verdict (verdicts.all_claims): the paper's chain, verdict and why, and its evidence and parts."""

    id: str
    title: str
    chain: str
    source: str
    verdict: str
    why: str
    notes: tuple[str, ...]
    scope: str | None
    scale: str | None
    status: str | None  # confirmatory / registered (no firm verdict possible) / exploratory
    status_why: str | None
    evidence: tuple[EvidenceInfo, ...]
    parts: tuple[StemPart, ...]
    reason: str = ""  # the verdict's one-line reason (papers.categories)
    estimate: Estimate | None = None  # the deciding estimate with its interval
    detectable: Detectable | None = None  # the smallest detectable difference beside the paper's effect
    decide: str = ""  # what would decide it


def claim_info(v: ClaimVerdict) -> ClaimInfo:
    """The claims section's Info of one judged claim (a row of verdicts.all_claims)."""
    return ClaimInfo(v.id, v.title, v.chain, v.source, v.verdict, v.why, v.notes, v.scope, v.scale, v.status,
                     v.status_why, tuple(_evidence(e) for e in v.evidence), v.parts or (), v.reason, v.estimate,
                     v.detectable, v.decide)  # fmt: skip


@dataclass(frozen=True)
class Calibrated:
    """One claim's calibration: null studies' firm share and bound, power, and the effect it was measured at."""

    claim: str
    null_firm: float
    null_n: int
    null_firm_upper95: float
    power: float | None
    power_n: int | None
    effect_sigma: float
    power_stressed: float | None = None  # the same power studies with 2% of runs failed, candidates missing or unfit


@dataclass(frozen=True)
class AaFamily:
    """One claim's A/A studies: how many judged it, the firm share with its exact 95% interval, out of regime."""

    n: int
    rate: float | None
    ci95: tuple[float, float] | None
    out_of_regime: int


@dataclass(frozen=True)
class Aa:
    """A/A studies through the real trainer (calibration.aa_figures): one architecture under every name."""

    studies: int
    seeds_per_study: int
    runs: int  # runs of the benchmark that made the table (each later one `--resume` on fresh seeds)
    date: str
    families: Mapping[str, AaFamily]


def aa_info(aa: AaState | None) -> Aa | None:
    """The A/A Info of rule_tables.aa_figures (None: not measured for this rule version)."""
    if not aa:
        return None
    fams = {c: AaFamily(f.n, f.rate, f.ci95, f.out_of_regime) for c, f in aa.families.items()}
    return Aa(aa.studies, aa.seeds_per_study, len(aa.commands or [aa.command]), aa.date, fams)


@dataclass(frozen=True)
class Verdicts:
    """The method, the verdict rule, its calibration (None: not measured) and every judged claim."""

    method: str
    rule: str
    rule_version: Any
    n_seeds: Any
    calibration: tuple[Calibrated, ...] | None
    claims: tuple[ClaimInfo, ...]
    aa: Aa | None = None  # None: not measured for this rule version


def verdicts(ctx: ReportContext) -> Verdicts | None:
    """The claim verdicts; None when the study covers no claim."""
    found, rules = ctx.summary.claims, ctx.summary.rules
    if not found:
        return None
    c: CalibrationFigures | None = rules.calibration
    t = c.table if c else None
    cal = tuple(Calibrated(k, v.null_firm, v.null_n, v.null_firm_upper95, v.power, v.power_n,
                           t.stem_effect_sigma if k == "f" else t.effect_sigma, v.power_stressed)
                for k, v in sorted(c.per_claim.items())) if c and t else None  # fmt: skip
    claims = tuple(claim_info(v) for v in found)
    return Verdicts(rules.method, rules.verdict, t and t.rule_version, t and t.n_seeds, cal, claims,
                    aa_info(rules.aa))  # fmt: skip


@dataclass(frozen=True)
class Run:
    """One run as a block cites it: its model, candidate, optimizer, accuracy (%), lr, weight decay, trial."""

    model_label: str
    candidate: str
    optimizer: str
    acc: float
    lr: float | None
    weight_decay: float | None
    number: int


def _run(r: BestRun | None) -> Run | None:
    return None if r is None else Run(r.model_label, r.candidate, r.optimizer, r.acc, r.lr, r.weight_decay, r.number)


@dataclass(frozen=True)
class GapRow:
    """One model's best AdamW and SGD runs (None: none complete), the gap AdamW − SGD and the runs of each."""

    model_label: str
    adamw: Run | None
    sgd: Run | None
    gap: float | None
    n_adamw: int
    n_sgd: int


@dataclass(frozen=True)
class Gap:
    """The optimizer gap: per model, its best AdamW and SGD runs and the gap (optim.optimizer_gap rows)."""

    rows: tuple[GapRow, ...]


@dataclass(frozen=True)
class EdfCurve:
    """One model and optimizer's runs: Δ error from its best run (sorted) with the cumulative fraction, and the
    share within K."""

    label: str
    model_label: str
    optimizer: str
    n: int
    within_k: float
    delta: tuple[float, ...]
    fraction: tuple[float, ...]


@dataclass(frozen=True)
class Edf:
    """Hyperparameter stability: the sampled dimensions, K, and the share of runs within K of the best."""

    dims: tuple[str, ...]
    k: float
    rows: tuple[EdfCurve, ...]


@dataclass(frozen=True)
class LengthRow:
    """One candidate's eval accuracy and Δ error at each schedule length (None where it has no run)."""

    candidate: str
    runs: int
    accs: tuple[Stat | None, ...]
    deltas: tuple[float | None, ...]


@dataclass(frozen=True)
class Length:
    """Training-length stability over the schedule lengths any candidate ran."""

    epochs: tuple[int, ...]
    rows: tuple[LengthRow, ...]


@dataclass(frozen=True)
class Optimizability:
    """The ViT_C paper measures the study has: each block None when it has no data."""

    acc: tuple[str, str] | None  # (label, key) of the accuracy used
    gap: Gap | None
    edf: Edf | None
    length: Length | None
    peak: tuple[Run, ...] | None
    samples: tuple[HyperSamples, ...] | None


def optimizability(ctx: ReportContext) -> Optimizability | None:
    """The optimizability blocks; None when the study has none of them, or no ViT, search or length runs."""
    t = ctx.summary
    gaps, dims = t.optimizer_gap, t.search_dims
    rows = tuple(GapRow(g.model_label, _run(g.adamw), _run(g.sgd), g.gap, g.n_adamw, g.n_sgd) for g in gaps)
    gap = Gap(rows) if any(g.n_sgd and g.n_adamw for g in rows) else None
    curves = tuple(EdfCurve(e.label, e.model_label, e.optimizer, e.n, e.within_k, e.delta, e.fraction)
                   for e in t.edf)  # fmt: skip
    edf = Edf(dims, t.edf_k, curves) if curves and dims else None
    peak = tuple(r for p in t.peak if (r := _run(p))) if t.peak and (t.has_vit or dims) else None
    samples = t.samples
    info = Optimizability((t.primary_label, t.primary_acc) if t.primary_acc else None, gap, edf,
                          _length(t.length), peak, samples or None)  # fmt: skip
    shown = any(b is not None for b in (gap, edf, info.length, peak, info.samples))
    return info if shown and (t.has_vit or dims or t.length) else None


def _length(rows: Sequence[LengthStability]) -> Length | None:
    """Accuracy and Δ error per candidate at every schedule length any ran."""
    if not rows:
        return None
    epochs = tuple(sorted({e for r in rows for e in r.epochs}))
    out = []
    for r in rows:
        acc = dict(zip(r.epochs, r.eval_acc, strict=True))
        dlt = dict(zip(r.epochs, r.delta_error, strict=True))
        out.append(LengthRow(r.candidate, r.runs, tuple(acc.get(e) for e in epochs),
                             tuple(dlt.get(e) for e in epochs)))  # fmt: skip
    return Length(epochs, tuple(out))


@dataclass(frozen=True)
class Failure:
    """A trial that did not complete: its number, candidate, seed, state and why."""

    number: int
    candidate: str
    seed: Any
    state: str
    reason: str


@dataclass(frozen=True)
class Failures:
    """Failed, interrupted, pruned and unfinished trials."""

    rows: tuple[Failure, ...]


def failures(ctx: ReportContext) -> Failures | None:
    """The failed trials; None when every trial completed."""
    rows = tuple(Failure(r.number, r.candidate, r.seed, r.state, r.reason) for r in ctx.summary.failures)
    return Failures(rows) if rows else None


def looks(ctx: ReportContext) -> Looks | None:
    """The earlier-looks section's Info (papers.looks.table, built once with the summary); None when no claim
    was judged."""
    t = ctx.summary.looks
    return t if t is not None and t.claims else None
