"""Figures of a report, drawn with matplotlib's object API on the Agg canvas from the Info of the section that shows
them, the one its Markdown renders. Figures compute nothing: every table is built once by `report.tables`, and
each Info once from them.

`FIGURES` is the figure registry: a new figure is one draw function here plus one `FigureSpec` entry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from coatsearch import fsafe  # noqa: E402
from coatsearch.analysis.constants import BASELINES, LENGTH_SCORE, ROBUSTNESS_SCORE, SPEED_SCORE  # noqa: E402
from coatsearch.analysis.tables import METRICS  # noqa: E402
from coatsearch.papers.claims import CAPACITY_SCORE, EDF_RUNS, GEN_SCORE  # noqa: E402
from coatsearch.report import plots_claims, plots_measures, plots_search, plots_speed
from coatsearch.report.figstyle import DPI, MARKERS  # noqa: E402
from coatsearch.scores import titles  # noqa: E402


def _save(fig: Figure, path: Path) -> str:
    with fsafe.replacing(path) as tmp:  # no link followed; a failed write keeps the previous figure
        fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
    return path.name


def _style(i: int, name: str = "") -> dict:
    """A candidate's marker and colour; regime baselines are grey crosses, so they read as a floor, not a layout."""
    if name in BASELINES:
        return {"marker": "x+"[BASELINES.index(name) % 2], "color": ("0.35", "0.6")[BASELINES.index(name) % 2]}
    return {"marker": MARKERS[i % len(MARKERS)], "color": f"C{i % 10}"}


def generalization(rows: Sequence[Any], path: Path) -> str | None:
    """Final train loss (x) vs eval accuracy (y) per candidate, with error bars over runs (CoAtNet Fig. 1), from
    the candidates section's rows."""
    scores = [s for s in (GEN_SCORE, CAPACITY_SCORE) if _has(rows, f"{s}.train_loss", f"{s}.eval_acc")]
    if not scores:
        return None
    fig = Figure(figsize=(5.5 * len(scores), 4.5), layout="constrained")
    for ax, score in zip(fig.subplots(1, len(scores), squeeze=False)[0], scores, strict=True):
        lx, ly = f"{score}.train_loss", f"{score}.eval_acc"
        losses = []
        for i, r in enumerate(rows):
            if lx not in r.metrics or ly not in r.metrics:
                continue
            x, y = r.metrics[lx], r.metrics[ly]
            losses.append(x.mean)
            ax.errorbar(x.mean, y.mean, xerr=x.sd or 0, yerr=y.sd or 0, capsize=3, ls="none", ms=7,
                        label=r.candidate, **_style(i, r.candidate))  # fmt: skip
        if losses and min(losses) > 0 and max(losses) / min(losses) > 20:
            ax.set_xscale("log")
        ax.set(
            xlabel="train loss where the run ended (nats; a stop target or the step cap)",
            ylabel="final eval accuracy (%)",
            title=titles()[score],
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path)


def _has(rows: Sequence[Any], *keys: str) -> bool:
    return any(all(k in r.metrics for k in keys) for r in rows)


def curves(sets: Sequence[Any], names: list[str], path: Path) -> str | None:
    """Train loss and eval accuracy per run, one row of panels per score (the candidates section's `CurveSet`s)."""
    if not sets:
        return None
    fig = Figure(figsize=(11, 3.8 * len(sets)), layout="constrained")
    axes = fig.subplots(len(sets), 2, squeeze=False)
    for (ax_loss, ax_acc), cs in zip(axes, sets, strict=True):
        seen: dict[str, int] = {}
        for c in cs.lines:
            k = seen[c.candidate] = seen.get(c.candidate, -1) + 1  # a candidate's k-th recipe: its own dashes
            style = {**_style(names.index(c.candidate), c.candidate), "ms": 3, "ls": ("-", "--", ":", "-.")[k % 4]}
            for j, run in enumerate(c.runs):  # each run its own line: never a mean over a shrinking set
                one = {**style, "label": c.label if j == 0 else None, "lw": 0.9, "alpha": 0.8, "ms": 2}
                ax_loss.plot(list(run.x), list(run.train_loss), **one)
                ax_acc.plot(list(run.x), list(run.eval_acc), **one)
        title = titles().get(cs.score, cs.score)
        what = "clean, fixed probe" if cs.axis == "step" else "running mean"
        xlabel = "optimizer step" if cs.axis == "step" else "epoch"
        ax_loss.set(xlabel=xlabel, ylabel=f"train loss (nats, {what})", title=f"{title}: train loss")
        ax_acc.set(xlabel=xlabel, ylabel="eval accuracy (%)", title=f"{title}: eval accuracy")
        if cs.axis == "step":
            ax_loss.set_yscale("log")
        for ax in (ax_loss, ax_acc):
            ax.grid(alpha=0.3)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax_acc.legend(fontsize=8)
    return _save(fig, path)


def acc_vs_params(rows: Sequence[Any], keys: Sequence[str], path: Path) -> str | None:
    """Each claim's measure (mean ± sd over runs) against params, one panel per measure: the matched candidates
    as points, the regime baselines as horizontal lines (their params are far off the budget)."""
    keys = [k for k in keys if any(k in r.metrics and "params" in r.metrics for r in rows)]
    if not keys:
        return None
    fig = Figure(figsize=(5.5 * len(keys), 4.5), layout="constrained")
    for ax, key in zip(fig.subplots(1, len(keys), squeeze=False)[0], keys, strict=True):
        for i, r in enumerate(rows):
            if key not in r.metrics or "params" not in r.metrics:
                continue
            y = r.metrics[key]
            if r.candidate in BASELINES:
                color = _style(i, r.candidate)["color"]
                ax.axhline(y.mean, label=f"{r.candidate} ({y.mean:.1f}%)", lw=1, ls=":", color=color)
                continue
            ax.errorbar(r.metrics["params"].mean, y.mean, yerr=y.sd or 0, capsize=3, ls="none", ms=7,
                        label=r.candidate, **_style(i, r.candidate))  # fmt: skip
        ax.set(
            xlabel="parameters (millions)",
            ylabel=f"{METRICS[key].label} (%)",
            title=f"{METRICS[key].label} vs parameters",
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, path)


def edf(rows: Sequence[Any], k: float, path: Path) -> str | None:
    """EDF of Δerror from the best run of the same model and optimizer, one panel per optimizer, from the
    optimizability section's `EdfCurve`s (view_claims).

    A curve with fewer than EDF_RUNS runs is drawn as its runs (dots, the best one ringed), not as a step EDF.
    """
    if not rows:
        return None
    opts = sorted({r.optimizer for r in rows})
    fig = Figure(figsize=(5.5 * len(opts), 4.5), layout="constrained")
    for ax, opt in zip(fig.subplots(1, len(opts), squeeze=False)[0], opts, strict=True):
        mine = [(i, r) for i, r in enumerate(rows) if r.optimizer == opt]
        for j, (i, r) in enumerate(mine):
            label = f"{r.label} (n={r.n})"
            if r.n >= EDF_RUNS:
                ax.step([0.0, *r.delta], [0.0, *r.fraction], where="post", color=f"C{i % 10}", label=label)
                continue
            y = [(j + 1) / (len(mine) + 1)] * r.n  # one row of dots per curve
            ax.plot(r.delta, y, "o", color=f"C{i % 10}", label=label + ": runs, best ringed")
            ax.plot([min(r.delta)], y[:1], "o", ms=12, mfc="none", color=f"C{i % 10}")
        ax.axvline(k, color="grey", ls=":", lw=1, label=f"{k:g} points")
        few = any(r.n < EDF_RUNS for _, r in mine)
        ax.set(xlabel="Δ top-1 error from the best run, same model and optimizer (points)")
        ax.set(ylabel=f"runs (curves with < {EDF_RUNS} runs)" if few else "cumulative fraction of runs")
        ax.set(title=f"Hyperparameter EDF ({opt})", ylim=(0, 1.02))
        if few:
            ax.set_yticks([])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path)


def length(length: Any, path: Path) -> str | None:
    """Eval accuracy vs schedule length per candidate (training-length stability), from the optimizability
    section's `Length` (view_claims): each candidate at the lengths it ran."""
    if length is None:
        return None
    lines = [(r.candidate, [e for e, a in zip(length.epochs, r.accs, strict=True) if a], [a for a in r.accs if a])
             for r in length.rows]  # fmt: skip
    fig, ax = _accuracy_lines(lines)
    ax.set(xlabel="schedule length (epochs)", title="Training-length stability")
    return _save(fig, path)


def robustness(rows: Sequence[Any], path: Path) -> str | None:
    """Eval accuracy vs corruption severity per candidate (mean over corruptions; severity 0 is clean), from the
    candidates section's `RobustnessRow`s."""
    if not rows:
        return None
    fig, ax = _accuracy_lines([(r.candidate, list(r.severity), r.accs) for r in rows])
    kinds = ", ".join(rows[0].corruptions)
    ax.set(xlabel=f"corruption severity (0 = clean; mean over {kinds})", title="Robustness to corruptions")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return _save(fig, path)


def _accuracy_lines(lines: Sequence[tuple[str, Sequence[Any], Sequence[Any]]]) -> tuple[Figure, Any]:
    """One eval-accuracy line (mean ± sd per point) per (candidate, x values, Stats at them)."""
    fig = Figure(figsize=(6, 4.5), layout="constrained")
    ax = fig.subplots()
    for i, (name, xs, accs) in enumerate(lines):
        ys, err = [a.mean for a in accs], [a.sd or 0 for a in accs]
        ax.errorbar(xs, ys, yerr=err, capsize=3, label=name, **_style(i, name))
    ax.set(ylabel="eval accuracy (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig, ax


@dataclass(frozen=True)
class FigureSpec:
    """One report figure: its file `<name>.png`, the report section that shows it, its draw function, caption."""

    name: str
    section: str  # the report.SECTIONS entry whose Info it draws; no Info there (no data): no figure
    draw: Callable[[Any, Path], str | None]  # (that Info, path) -> file name; None: no data
    caption: str  # the text under it in report.md


FIGURES: dict[str, FigureSpec] = {
    f.name: f
    for f in (
        FigureSpec(
            GEN_SCORE,
            "candidates",
            lambda info, path: generalization(info.rows, path),
            "End of each run: the clean train loss where it ended (x) vs its final eval accuracy (y), mean ± sd "
            "over runs per candidate. A run stopped at a loss target ends just below it, so x is mostly the target "
            "and its spread is noise: this is not CoAtNet Fig. 1 (which compares at matched training loss; see "
            "matched_loss.png).",
        ),
        FigureSpec(
            "curves",
            "candidates",
            lambda info, path: curves(info.curves, [row.candidate for row in info.rows], path),
            "Training curves, one line per run (never a mean over runs that stop or are measured at different "
            "steps), one style per candidate and recipe: clean train loss on the fixed probe and eval accuracy "
            "on the fixed eval set at each curve step (per epoch for studies recorded before step curves).",
        ),
        FigureSpec(
            "acc_vs_params",
            "candidates",
            lambda info, path: acc_vs_params(info.rows, info.measures, path),
            "Each judged claim's own measure (mean ± sd over runs; one panel per measure) against parameters: "
            "candidates matched to one MACs budget differ in params (the Size note under Candidates says whether the "
            "MACs are matched); the regime baselines are the dotted lines (the floor a claim's key candidates must "
            "beat).",
        ),
        FigureSpec(
            "edf",
            "optimizability",
            lambda o, path: edf(o.edf.rows, o.edf.k, path) if o.edf else None,
            "Hyperparameter EDF: cumulative fraction of runs within Δ points of top-1 error of the best run of "
            "the same model and optimizer (ViT_C paper Fig. 5); steeper = more stable. A curve with fewer than "
            f"{EDF_RUNS} runs is drawn as its runs (dots, the best ringed): too few for an EDF. The AdamW − SGD "
            "offset is the optimizer gap, shown separately.",
        ),
        FigureSpec(
            "matched_loss",
            "matched",
            lambda m, path: plots_measures.draw(m.points, path) if m.points else None,
            "Eval accuracy against clean train loss (log scale, falling to the right), one trajectory per candidate "
            "(CoAtNet Fig. 1): faint lines are runs' measured points after step 0, markers the mean of the "
            "uncensored readings at each ladder level (hollow where some runs are censored: never reached, or no "
            "two measured points close in loss bracket the level; nothing is interpolated from step 0), × the end "
            "of a run short of the ladder, the dashed line claim (a)'s common level (the lowest level at or below "
            "0.1 nats every run of its key candidates reached).",
        ),
        FigureSpec(
            "paired_diffs",
            "claims",
            lambda v, path: plots_claims.draw(v.claims, path),
            "The per-seed paired differences behind every firm verdict: for each relation (claim (f): its gap "
            "contrast) the seeds' differences a − b in the better direction (dots), their mean with the verdict's "
            "95% interval (black), zero (grey) and, for '≈'/'≥' relations, ± the margin (red).",
        ),
        FigureSpec(
            LENGTH_SCORE,
            "optimizability",
            lambda o, path: length(o.length, path),
            "Eval accuracy vs schedule length (training-length stability).",
        ),
        FigureSpec(
            ROBUSTNESS_SCORE,
            "candidates",
            lambda info, path: robustness(info.robustness, path),
            "Eval accuracy vs corruption severity (mean over Gaussian noise, blur, contrast, shift and rotation; "
            "severity 0 is the clean eval set), using the model of the score named by `robustness.source`.",
        ),
        FigureSpec(
            "search_history",
            "search",
            lambda found, path: plots_search.history(found, path),
            "Search progress per searched candidate: each trial's objective (dots) and the best so far (steps), "
            "against the trial number (left) and the wall time since the search's first trial started (right).",
        ),
        FigureSpec(
            "search_slices",
            "search",
            lambda found, path: plots_search.slices(found, path),
            "Slice plot: every complete trial's objective against each sampled dimension of the search.",
        ),
        FigureSpec(
            "search_pareto",
            "search",
            lambda found, path: plots_search.front(found, path),
            "Multi-objective search: every measured architecture at its mean of the first objective (up) against "
            "the second (across); the Pareto front circled and joined.",
        ),
        FigureSpec(
            "acc_vs_speed",
            SPEED_SCORE,
            lambda speed, path: plots_speed.draw(speed, path),
            "Eval accuracy (mean ± sd) against measured throughput on the study's device (log scale; left: "
            "inference, right: training), the Pareto front dashed and circled (regime baselines left out): "
            "MACs-matched is not speed-matched.",
        ),
    )
}


def render_all(report: Any, folder: Path) -> dict[str, str]:
    """Write every registered figure whose section has an Info (report.Report.infos) and data, drawn from that
    Info alone; remove stale ones. Returns {figure: file name}."""
    folder.mkdir(parents=True, exist_ok=True)
    made = {}
    for name, fig in FIGURES.items():
        path = folder / f"{name}.png"
        info = report.infos.get(fig.section)
        file = fig.draw(info, path) if info is not None else None
        if file:
            made[name] = file
        else:
            path.unlink(missing_ok=True)
    return made
