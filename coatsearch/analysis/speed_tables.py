"""The report's measured speed: a per-candidate speed table, its Pareto front and the >1.5x note.

Computed from the trial records alone: the keys the speed score declares by role (`Score.roles`, found through
`scores.role`), never by name. Rows are keyed by those keys; plots_speed.py draws the figure and
markdown_speed.py renders the Markdown. MACs are not speed: the note names the budget-matched candidates whose
measured throughput differs most when the spread passes SPREAD_NOTE.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

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


def _mean_sd(values: list[float]) -> tuple[float, float | None]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def _row(name: str, runs: list[RunRecord], acc: str | None) -> dict:
    """One candidate's speed row: mean and sd over its runs of each rate, and where and how it was measured."""
    row: dict = {"candidate": name, "n": len(runs)}
    seconds = role("seconds")
    for key in (*map(role, RATES), seconds, "macs", "params"):
        vals = [v for a in runs if (v := a.number(key)) is not None]
        row[key] = _mean_sd(vals) if vals else (None, None)
    accs = [points(a.value(acc)) for a in runs if a.value(acc) is not None] if acc else []
    row["acc"] = _mean_sd(accs) if accs else None
    shares = [a.value(seconds) / a.wall_s for a in runs if a.wall_s]
    row["cost_share"] = statistics.fmean(shares) if shares else None
    row["matched"] = all(a.model is not None and a.model.budget_macs for a in runs)
    m = runs[0].model
    row["network"] = f"{m.label or name} {m.stages} {m.macs} {m.params}" if m is not None else name
    for fact in FACTS:
        row[fact] = sorted({str(a.value(role(fact))) for a in runs})
    return row


def table(space: dict, records: Records, acc: str | None = None) -> dict | None:
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
    front = [r for r in rows if r["acc"] is not None and r["candidate"] not in BASELINES]  # layouts only
    infer = role("infer_ips")
    speeds = by_network([r["network"] for r in front], [r[infer][0] for r in front])
    on = pareto([(r["acc"][0], x) for r, x in zip(front, speeds, strict=True)], (True, True))
    for row, flag in zip(front, on, strict=True):
        row["pareto"] = flag
    label = METRICS[acc].label if acc else ""
    return {"rows": rows, "acc_key": acc, "acc_label": label, "spread": spread(rows)}


def spread(rows: list[dict]) -> list[dict]:
    """Per rate: the fastest and slowest budget-matched candidates and their ratio (when 2 or more have it)."""
    out = []
    for key in map(role, _SPREAD):
        have = [r for r in rows if r["matched"] and r[key][0]]
        if len(have) < 2:
            continue
        fast, slow = max(have, key=lambda r: r[key][0]), min(have, key=lambda r: r[key][0])
        ratio = fast[key][0] / slow[key][0]
        out.append({"key": key, "fast": fast["candidate"], "slow": slow["candidate"], "ratio": ratio})
    return out
