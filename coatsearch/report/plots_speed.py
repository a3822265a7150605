"""The accuracy-vs-measured-throughput figure: one panel per rate, the Pareto front marked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402

from coatsearch import fsafe  # noqa: E402
from coatsearch.analysis.speed_tables import by_network, pareto  # noqa: E402
from coatsearch.report.figstyle import DPI, MARKERS  # noqa: E402

# One panel per throughput: the SpeedRow field it reads, what it times and the Speed field that gives its batch.
_PANELS = (("infer_ips", "inference", "infer_batch"), ("train_ips", "training", "train_batch"))


def draw(speed: Any, path: Path) -> str | None:
    """Accuracy (mean ± sd) against measured images/s per candidate, the Pareto front as a dashed step line, from the
    speed section's `Speed` (view_speed)."""
    rows = [r for r in speed.rows if r.ranked]  # the layouts with an accuracy (regime baselines left out)
    if not rows:
        return None
    fig = Figure(figsize=(11, 4.5), layout="constrained")
    for ax, (rate, what, batch_of) in zip(fig.subplots(1, 2), _PANELS, strict=True):
        have = [r for r in rows if getattr(r, rate)[0]]
        pooled = by_network([r.network for r in have], [getattr(r, rate)[0] for r in have])  # timing noise pooled
        for i, (r, x) in enumerate(zip(have, pooled, strict=True)):
            (_, xsd), (y, ysd) = getattr(r, rate), r.acc
            ax.errorbar(x, y, xerr=xsd or 0, yerr=ysd or 0, capsize=3, ls="none", ms=7, label=r.candidate,
                        marker=MARKERS[i % len(MARKERS)], color=f"C{i % 10}")  # fmt: skip
        on = pareto([(r.acc[0], x) for r, x in zip(have, pooled, strict=True)], (True, True))
        front = sorted((x, r.acc[0]) for r, x, f in zip(have, pooled, on, strict=True) if f)
        if front:
            xs, ys = zip(*front, strict=True)
            ax.step(xs, ys, where="post", color="k", ls="--", lw=1, label="Pareto front")
            ax.scatter(xs, ys, s=160, facecolors="none", edgecolors="k", lw=1)
        ax.set_xscale("log")
        batch = "batch " + ", ".join(getattr(speed, batch_of))
        ax.set(xlabel=f"measured {what} throughput (images/s, {batch}, log scale)")
        ylabel = f"{speed.acc_label} (%)" if speed.acc_label else "accuracy (%)"
        ax.set(ylabel=ylabel, title=f"Accuracy vs {what} speed")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    with fsafe.replacing(path) as tmp:  # no link followed; a failed write keeps the previous figure
        fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
    return path.name
