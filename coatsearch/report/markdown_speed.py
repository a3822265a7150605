"""Markdown of the report's measured speed and Pareto front: the Infos view_speed.py computed."""

from __future__ import annotations

from coatsearch.report.markdown import table as md_table
from coatsearch.report.view_speed import Pair, Pareto, Speed


def _cell(pair: Pair, digits: int) -> str:
    mean, sd = pair
    if mean is None:
        return "–"
    return f"{mean:.{digits}f}" + (f" ± {sd:.{digits}f}" if sd is not None else "")


def section(sp: Speed) -> str:
    """The report's '## Measured speed' section: table, where it was measured, the spread note."""
    head = ["candidate", "MACs (M)", "params (M)", "train img/s", "infer img/s", "batch-1 latency ms (IQR)"]
    head += [f"{sp.acc_label} (%)" if sp.acc_label else "acc", "Pareto", "n"]
    body = [
        [r.candidate, "–" if r.macs is None else f"{r.macs / 1e6:.2f}",
         "–" if r.params is None else f"{r.params / 1e6:.3f}",
         _cell(r.train_ips, 0), _cell(r.infer_ips, 0), f"{_cell(r.latency_ms, 2)} ({_cell(r.latency_iqr_ms, 2)})",
         "–" if r.acc is None else _cell(r.acc, 1), "yes" if r.pareto else "", r.n]
        for r in sp.rows
    ]  # fmt: skip
    return "\n".join(["## Measured speed", "", md_table(head, body), "", _where(sp), *_notes(sp)])


def _where(sp: Speed) -> str:
    """Where and how the speed was measured, and what measuring cost."""
    cost = f"; measuring took {100 * sp.max_share:.1f}% of a trial at most" if sp.max_share is not None else ""
    return (
        f"Measured per trial on {', '.join(sp.devices)} at "
        f"{', '.join(sp.threads)} thread(s): training images/s at batch {', '.join(sp.train_batch)}, "
        f"inference images/s at batch {', '.join(sp.infer_batch)}, batch-1 latency median (IQR); warm-up steps "
        f"untimed, then timed repeats, median step time; mean ± sd over runs{cost}. Pareto: not beaten in both "
        "accuracy and inference throughput by another candidate (regime baselines are not ranked)."
    )


def _notes(sp: Speed) -> list[str]:
    """The note when budget-matched candidates differ in measured throughput by more than SPREAD_NOTE."""
    out = []
    for s in sp.spread:
        if s.noted:
            note = (
                f"**Note.** Budget-matched candidates differ {s.ratio:.2f}x in measured {s.what} throughput: "
                f"{s.fast} is the fastest, {s.slow} the slowest. Equal MACs are not equal speed."
            )
            out += ["", note]
        else:
            out += ["", f"Budget-matched candidates are within {s.ratio:.2f}x of each other in {s.what} throughput."]
    return out


def pareto(pf: Pareto) -> str:
    """'## Pareto front': one row per candidate, its mean objectives in display units, on the front or not."""
    head = ["candidate", *pf.labels, "Pareto front", "n"]
    body = []
    for r in pf.rows:
        cells = [f"{v:.{d}f}" if d is not None else f"{v:.4g}" for v, d in zip(r.values, pf.digits, strict=True)]
        body.append([r.candidate, *cells, "yes" if r.pareto else "", r.n])
    goals = ", ".join(f"`{k}` ({d})" for k, d in pf.goals)
    text = (
        f"Multi-objective study: {goals}. Means over complete runs; on the front: {', '.join(pf.front)} (no other "
        "candidate is at least as good in every objective and better in one). The dashboard plots the trials' front."
    )
    return "\n".join(["## Pareto front", "", text, "", md_table(head, body)])
