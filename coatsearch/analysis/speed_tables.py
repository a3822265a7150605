"""The report's measured speed: a per-candidate speed table, its Pareto front and the >1.5x note.

Computed from the trial records alone: the keys the speed score declares by role (`Score.roles`, found through
`scores.role`), never by name. Rows are keyed by those keys; plots_speed.py draws the figure and
markdown_speed.py renders the Markdown. MACs are not speed: the note names the budget-matched candidates whose
measured throughput differs most when the spread passes SPREAD_NOTE.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from coatsearch.analysis.constants import BASELINES
from coatsearch.analysis.tables import METRICS, Records, complete, order, primary_acc
from coatsearch.scores import role
from coatsearch.scores.base import points
from coatsearch.storage.record import RunRecord

SPREAD_NOTE = 1.5  # fastest / slowest measured throughput among budget-matched candidates that earns a note
RATES = ("train_ips", "infer_ips", "latency_ms", "latency_iqr_ms")  # roles of the rates each row gives (mean, sd)
_SPREAD = ("train_ips", "infer_ips")  # roles of the throughputs whose spread earns the note
FACTS = ("device", "threads", "train_batch", "infer_batch", "compiled")  # roles: where and how, as listed


def pareto(points: Sequence[Sequence[float]], maximize: Sequence[bool]) -> list[bool]:
    """Whether each point is on the Pareto front: no other point is at least as good in every objective and better
    in one (`maximize[j]`: objective j is maximized, else minimized)."""
    signed = [[v if up else -v for v, up in zip(p, maximize, strict=True)] for p in points]

    def dominated(a: list[float]) -> bool:
        return any(all(x >= y for x, y in zip(b, a, strict=True)) and b != a for b in signed)

    return [not dominated(a) for a in signed]


def by_network(networks: Sequence[str], values: Sequence[float]) -> list[float]:
    """Each row's throughput for the Pareto front: pooled over the rows of the same network (model label, stages,
    MACs and params; e.g. one model under two optimizers), whose differences in speed are timing noise."""
    nets: dict[str, list[float]] = {}
    for net, v in zip(networks, values, strict=True):
        nets.setdefault(net, []).append(v)
    return [statistics.fmean(nets[net]) for net in networks]


MeanSd = tuple[float | None, float | None]  # mean and sd over runs (sd None with one run; both None: no run has it)


@dataclass(frozen=True)
class CandidateSpeed:
    """One candidate's measured speed over its `speed` runs, its accuracy, and where and how it was measured."""

    candidate: str
    n: int  # runs that measured speed
    rates: Mapping[str, MeanSd]  # the rates' keys (RATES), the measuring seconds', then macs and params, in order
    acc: tuple[float, float | None] | None  # the judged accuracy (%): mean, sd; None where no run has it
    cost_share: float | None  # mean share of a trial's wall time that measuring took
    matched: bool  # every run's model was matched to a MACs budget
    network: str  # model label, stages, MACs and params: rows of one network pool their throughput
    facts: Mapping[str, tuple[str, ...]]  # FACTS role -> the distinct values its runs recorded, sorted
    pareto: bool | None = None  # on the accuracy-vs-speed front; None: not placed (a baseline, or no accuracy)

    def to_json(self) -> dict[str, Any]:
        """The summary's form: candidate, n, each rate by its key, acc, cost_share, matched, network, each fact by
        its role, and pareto where placed."""
        facts = {k: list(v) for k, v in self.facts.items()}
        out = {"candidate": self.candidate, "n": self.n, **self.rates, "acc": self.acc, "cost_share": self.cost_share,
               "matched": self.matched, "network": self.network, **facts}  # fmt: skip
        return out if self.pareto is None else {**out, "pareto": self.pareto}


@dataclass(frozen=True)
class SpeedSpread:
    """For one throughput: the fastest and slowest budget-matched candidates and their ratio."""

    key: str  # the throughput's metric key
    fast: str
    slow: str
    ratio: float  # fast / slow


@dataclass(frozen=True)
class SpeedTable:
    """The speed rows with their Pareto flags, the accuracy they are judged by, and the spread per throughput."""

    rows: tuple[CandidateSpeed, ...]  # in candidate order
    acc_key: str | None
    acc_label: str  # '' without an accuracy
    spread: tuple[SpeedSpread, ...]


def _mean_sd(values: list[float]) -> tuple[float, float | None]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def _row(name: str, runs: list[RunRecord], acc: str | None) -> CandidateSpeed:
    """One candidate's speed row: mean and sd over its runs of each rate, and where and how it was measured."""
    seconds = role("seconds")
    rates: dict[str, MeanSd] = {}
    for key in (*map(role, RATES), seconds, "macs", "params"):
        vals = [v for a in runs if (v := a.number(key)) is not None]
        rates[key] = _mean_sd(vals) if vals else (None, None)
    accs = [points(a.value(acc)) for a in runs if a.value(acc) is not None] if acc else []
    shares = [a.value(seconds) / a.wall_s for a in runs if a.wall_s]
    m = runs[0].model
    return CandidateSpeed(
        name,
        len(runs),
        rates,
        _mean_sd(accs) if accs else None,
        statistics.fmean(shares) if shares else None,
        all(a.model is not None and a.model.budget_macs for a in runs),
        f"{m.label or name} {m.stages} {m.macs} {m.params}" if m is not None else name,
        {fact: tuple(sorted({str(a.value(role(fact))) for a in runs})) for fact in FACTS},
    )


def table(space: dict, records: Records, acc: str | None = None) -> SpeedTable | None:
    """The speed table (one row per candidate with `speed` runs), the Pareto front and the spread note; None if
    no trial measured speed."""
    runs: dict[str, list[RunRecord]] = {}
    for r in complete(records):
        if r.run.number(role(RATES[0])) is not None:
            runs.setdefault(r.candidate, []).append(r.run)
    if not runs:
        return None
    acc = acc or primary_acc(space, complete(records))
    rows = [_row(name, runs[name], acc) for name in order(space, records) if name in runs]
    front = [r for r in rows if r.acc is not None and r.candidate not in BASELINES]  # layouts only
    infer = role("infer_ips")
    speeds = by_network([r.network for r in front], [_mean(r, infer) for r in front])
    on = pareto([(_mean(r, None), x) for r, x in zip(front, speeds, strict=True)], (True, True))
    flags = {r.candidate: flag for r, flag in zip(front, on, strict=True)}
    rows = [replace(r, pareto=flags[r.candidate]) if r.candidate in flags else r for r in rows]
    label = METRICS[acc].label if acc else ""
    return SpeedTable(tuple(rows), acc, label, spread(rows))


def _mean(row: CandidateSpeed, key: str | None) -> float:
    """A front row's mean of a rate (its accuracy's for None): every run on the front has both."""
    mean = row.rates[key][0] if key is not None else row.acc[0] if row.acc else None
    assert mean is not None
    return mean


def spread(rows: Sequence[CandidateSpeed]) -> tuple[SpeedSpread, ...]:
    """Per rate: the fastest and slowest budget-matched candidates and their ratio (when 2 or more have it)."""
    out = []
    for key in map(role, _SPREAD):
        have = [(r, mean) for r in rows if r.matched and (mean := r.rates[key][0])]
        if len(have) < 2:
            continue
        (fast, top), (slow, low) = max(have, key=lambda h: h[1]), min(have, key=lambda h: h[1])
        out.append(SpeedSpread(key, fast.candidate, slow.candidate, top / low))
    return tuple(out)
