"""The paper-measure sections' Infos: matched loss, capacity, transfer, untested claims, paired data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from coatsearch.analysis.measure_results import MatchedLoss, MatchedPoints, Pairing
from coatsearch.analysis.tables import METRICS, Metric, Stat
from coatsearch.papers.claims import CAPACITY_SCORE, FIT_LOSS, TRANSFER_SCORE
from coatsearch.papers.paper import fit_of
from coatsearch.report.section import ReportContext
from coatsearch.report.view_study import SIZE_KEYS
from coatsearch.scores import SCORES


@dataclass(frozen=True)
class Sized:
    """A candidate and its size (params, MACs: mean over runs, None when not measured)."""

    candidate: str
    size: tuple[Stat | None, ...]


def _scores(ctx: ReportContext, name: str, keys: tuple[str, ...]) -> tuple[Stat | None, ...]:
    """A candidate's mean ± sd of each key (None where not measured, or where the candidate has no row)."""
    m: Mapping[str, Stat] = next((r.metrics for r in ctx.summary.candidates if r.candidate == name), {})
    return tuple(m.get(k) for k in keys)


def _sized(ctx: ReportContext, name: str) -> Sized:
    return Sized(name, _scores(ctx, name, SIZE_KEYS))


@dataclass(frozen=True)
class MatchedRow:
    """One candidate read at the common level: runs, eval acc (mean, sd), censored runs, how low its runs got."""

    at: Sized
    runs: int
    eval_acc: float | None
    sd: float | None
    censored_runs: int | None
    lowest_level: float | None
    lowest_any: float | None
    lr_phase: tuple[float | None, float | None] = (None, None)  # (min, max) lr / peak lr at the readings


@dataclass(frozen=True)
class Matched:
    """Generalization at matched training loss: the ladder, the common level, the table, key and never-fitting."""

    size_metrics: tuple[Metric, ...]
    levels: tuple[float, ...]
    level: float | None
    reached: bool  # whether any candidate reached the ladder
    rows: tuple[MatchedRow, ...]
    never: tuple[Sized, ...]  # censored at every level
    key: tuple[str, ...]
    out_of_regime: tuple[str, ...]
    censored: tuple[str, ...] = ()  # runs that reached the common level but whose reading there is censored
    points: MatchedPoints | None = None  # what matched_loss.png draws (None without step curves)
    fit: float = FIT_LOSS  # claim (a)'s fit level (nats): the profile's fit_loss, else the default


def matched(ctx: ReportContext) -> Matched | None:
    """The matched-loss reading; None when no candidate has step curves."""
    g: MatchedLoss = ctx.summary.matched
    if not g.table and not g.never:
        return None
    rows = tuple(MatchedRow(_sized(ctx, r.candidate), r.runs, r.eval_acc, r.sd, r.censored_runs, r.lowest_level,
                            r.lowest_any, (r.lr_phase_min, r.lr_phase_max)) for r in g.table)  # fmt: skip
    # g.censored is left out, as report.md has always shown it (the summary's `matched` never held the notes)
    return Matched(tuple(METRICS[k] for k in SIZE_KEYS), g.levels, g.level, bool(g.table), rows,
                   tuple(_sized(ctx, c) for c in g.never), g.key, g.out_of_regime, (), ctx.summary.matched_loss,
                   fit_of(ctx.space))  # fmt: skip


@dataclass(frozen=True)
class CapacityRow:
    """One candidate on abundant data: size, images and steps its runs used, final train loss and eval acc."""

    at: Sized
    images: tuple[int, ...]
    steps: tuple[int, ...]
    scores: tuple[Stat | None, ...]


@dataclass(frozen=True)
class Capacity:
    """The capacity table in ranking order, whether the ranking held, and where the curves crossed."""

    size_metrics: tuple[Metric, ...]
    columns: tuple[Metric, ...]
    rows: tuple[CapacityRow, ...]
    order: tuple[str, ...]
    stable: bool
    note: str
    crossings: tuple[tuple[str, str, float], ...]


def capacity(ctx: ReportContext) -> Capacity | None:
    """The capacity section; None without capacity curves."""
    cap = ctx.summary.capacity
    if not cap:
        return None
    keys = tuple(m.key for m in SCORES[CAPACITY_SCORE].metrics)  # final train loss, eval acc
    facts = {n: cap.facts.get(n, {}) for n in cap.order}
    rows = tuple(CapacityRow(_sized(ctx, n), tuple(facts[n].get("images", ())), tuple(facts[n].get("steps", ())),
                             _scores(ctx, n, keys)) for n in cap.order)  # fmt: skip
    return Capacity(tuple(METRICS[k] for k in SIZE_KEYS), tuple(METRICS[k] for k in keys), rows, cap.order,
                    cap.stable, cap.note, cap.crossings)  # fmt: skip


@dataclass(frozen=True)
class TransferRow:
    """One candidate's transfer: size, the transfer score's metrics, how pretraining stopped, fine-tune steps."""

    at: Sized
    scores: tuple[Stat | None, ...]
    target: int
    cap: int
    finetune_steps: tuple[int, ...]


@dataclass(frozen=True)
class Transfer:
    """The transfer table: the transfer score's metrics per candidate."""

    size_metrics: tuple[Metric, ...]
    columns: tuple[Metric, ...]
    rows: tuple[TransferRow, ...]


def transfer(ctx: ReportContext) -> Transfer | None:
    """The transfer section; None when no candidate measured transfer."""
    if not ctx.summary.transfer:
        return None
    keys = tuple(m.key for m in SCORES[TRANSFER_SCORE].metrics)
    rows = tuple(TransferRow(_sized(ctx, t.candidate), _scores(ctx, t.candidate, keys), t.target, t.cap,
                             t.finetune_steps) for t in ctx.summary.transfer)  # fmt: skip
    return Transfer(tuple(METRICS[k] for k in SIZE_KEYS), tuple(METRICS[k] for k in keys), rows)


@dataclass(frozen=True)
class Untested:
    """Claims the space marks untestable at its scale: (claim id, title, verdict, reason) each."""

    rows: tuple[tuple[str, str, str, str], ...]


def untested(ctx: ReportContext) -> Untested | None:
    """The untested claims; None when the space marks none."""
    found = ctx.summary.untested
    return Untested(tuple((u.id, u.title, u.verdict, u.reason) for u in found)) if found else None


@dataclass(frozen=True)
class Edges:
    """The paired-data check per score and the hyperparameter range warnings."""

    pairing: tuple[Pairing, ...]
    warnings: tuple[str, ...]


def edges(ctx: ReportContext) -> Edges | None:
    """Paired data and range warnings; None when there is neither."""
    pairing, warn = ctx.summary.pairing, ctx.summary.edge_warnings
    return Edges(tuple(pairing), tuple(w.message for w in warn)) if pairing or warn else None
