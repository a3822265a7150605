"""The search section's figures: best-so-far against trials and wall time, a slice plot per dimension, and the
Pareto front of a multi-objective search. Each draws the search section's Info (view_search.SearchInfo: typed
`Any` here, as the other figure modules take theirs, so the figures import no analysis)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from coatsearch.report.figstyle import DPI


def _save(fig: Figure, path: Path) -> str:
    from coatsearch import fsafe

    with fsafe.replacing(path) as tmp:  # no link followed; a failed write keeps the previous figure
        fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
    return path.name


def history(view: Any, path: Path) -> str | None:
    """Each trial's objective (dots) and the best so far (steps), against trial number and wall time."""
    info = view.results
    runs = [s for s in info.searched if s.history]
    if not runs:
        return None
    fig = Figure(figsize=(11, 4), layout="constrained")
    axes = fig.subplots(1, 2)
    for i, s in enumerate(runs):
        n, t, v, best = zip(*s.history, strict=True)
        for ax, x in zip(axes, (n, t), strict=True):
            if any(math.isnan(e) for e in x):
                continue
            ax.plot(x, v, "o", ms=4, alpha=0.5, color=f"C{i}")
            ax.step(x, best, where="post", color=f"C{i}", label=f"{s.candidate}: best so far")
    axes[0].set(xlabel="trial number", ylabel=f"{info.label} ({info.unit})")
    axes[1].set(xlabel="wall time since the search started (s)", ylabel=f"{info.label} ({info.unit})")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path)


def slices(view: Any, path: Path) -> str | None:
    """The objective of every complete trial against each sampled dimension (Optuna's slice plot, in matplotlib)."""
    info = view.results
    panels = [(s.candidate, p, pts) for s in info.searched for p, pts in s.slices if pts]
    if not panels:
        return None
    cols = min(4, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig = Figure(figsize=(3.2 * cols, 2.8 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, (cand, dim, pts) in zip(axes, panels, strict=False):
        xs = [x for x, _ in pts]
        if all(isinstance(x, int | float) and not isinstance(x, bool) for x in xs):
            ax.plot(xs, [y for _, y in pts], "o", ms=4, alpha=0.7)
        else:
            labels = sorted({str(x) for x in xs})
            ax.plot([labels.index(str(x)) for x in xs], [y for _, y in pts], "o", ms=4, alpha=0.7)
            ax.set_xticks(range(len(labels)), labels, fontsize=7, rotation=20)
        ax.set_title(f"{cand}: {dim}", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    axes[0].set_ylabel(f"{info.label} ({info.unit})")
    return _save(fig, path)


def front(view: Any, path: Path) -> str | None:
    """Every measured architecture at its mean objectives (the first two), the Pareto front circled and joined."""
    info = view.results
    runs = [s for s in info.searched if s.front]
    if not runs or len(info.objectives) < 2:
        return None
    (_, ylab, yunit, _), (_, xlab, xunit, _) = info.objectives[0], info.objectives[1]
    fig = Figure(figsize=(6.5, 4.5), layout="constrained")
    ax = fig.subplots()
    for i, s in enumerate(runs):
        xs, ys = [p.means[1] for p in s.front], [p.means[0] for p in s.front]
        ax.plot(xs, ys, "o", ms=5, alpha=0.5, color=f"C{i}", label=f"{s.candidate}: architectures")
        on = sorted((p for p in s.front if p.pareto), key=lambda p: p.means[1])
        ax.plot([p.means[1] for p in on], [p.means[0] for p in on], "o--", ms=9, mfc="none", color=f"C{i}",
                label=f"{s.candidate}: Pareto front ({len(on)})")  # fmt: skip
        for p in on:
            ax.annotate(p.name, (p.means[1], p.means[0]), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set(xlabel=f"{xlab} ({xunit})" if xunit else xlab, ylabel=f"{ylab} ({yunit})" if yunit else ylab)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)
