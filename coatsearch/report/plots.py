"""Figures of a report, rendered from the computed tables with matplotlib's object API on the Agg canvas.

`FIGURES` is the figure registry: a new figure is one draw function here plus one `FigureSpec` entry (with a
`compute` function when it draws a table nothing else in the report computes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

from coatsearch.report import info

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from coatsearch.report import plots_measures, plots_speed, speed  # noqa: E402
from coatsearch.report.claims import BASELINES  # noqa: E402
from coatsearch.report.figstyle import DPI, MARKERS  # noqa: E402

SCORE_TITLES = {
    "generalization": "Generalization (small subset)",
    "capacity": "Capacity (largest subset)",
    "accuracy": "Full recipe",
}


def _save(fig: Figure, path: Path) -> str:
    fig.savefig(path, dpi=DPI, metadata={"Software": None})
    return path.name


def _style(i: int, name: str = "") -> dict:
    """A candidate's marker and colour; regime baselines are grey crosses, so they read as a floor, not a layout."""
    if name in BASELINES:
        return {"marker": "x+"[BASELINES.index(name) % 2], "color": ("0.35", "0.6")[BASELINES.index(name) % 2]}
    return {"marker": MARKERS[i % len(MARKERS)], "color": f"C{i % 10}"}


def generalization(rows: list[dict], path: Path) -> str | None:
    """Final train loss (x) vs eval accuracy (y) per candidate, with error bars over runs (CoAtNet Fig. 1)."""
    scores = [s for s in ("generalization", "capacity") if _has(rows, f"{s}.train_loss", f"{s}.eval_acc")]
    if not scores:
        return None
    fig = Figure(figsize=(5.5 * len(scores), 4.5), layout="constrained")
    for ax, score in zip(fig.subplots(1, len(scores), squeeze=False)[0], scores, strict=True):
        lx, ly = f"{score}.train_loss", f"{score}.eval_acc"
        losses = []
        for i, r in enumerate(rows):
            if lx not in r["metrics"] or ly not in r["metrics"]:
                continue
            x, y = r["metrics"][lx], r["metrics"][ly]
            losses.append(x.mean)
            ax.errorbar(x.mean, y.mean, xerr=x.sd or 0, yerr=y.sd or 0, capsize=3, ls="none", ms=7,
                        label=r["candidate"], **_style(i, r["candidate"]))  # fmt: skip
        if losses and min(losses) > 0 and max(losses) / min(losses) > 20:
            ax.set_xscale("log")
        ax.set(xlabel="final train loss (nats, clean pass)", ylabel="eval accuracy (%)", title=SCORE_TITLES[score])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path)


def _has(rows: list[dict], *keys: str) -> bool:
    return any(all(k in r["metrics"] for k in keys) for r in rows)


def curves(tables: dict[str, list[dict]], names: list[str], path: Path) -> str | None:
    """Per-epoch train loss and eval accuracy per candidate, one row of panels per score."""
    scores = [s for s, t in tables.items() if t]
    if not scores:
        return None
    fig = Figure(figsize=(11, 3.8 * len(scores)), layout="constrained")
    axes = fig.subplots(len(scores), 2, squeeze=False)
    for (ax_loss, ax_acc), score in zip(axes, scores, strict=True):
        x = "step" if "step" in tables[score][0] else "epoch"  # step curves; per-epoch ones from older studies
        for c in tables[score]:
            style = {**_style(names.index(c["candidate"]), c["candidate"]), "ms": 3}
            ax_loss.plot(c[x], c["train_loss"], label=c["candidate"], **style)
            ax_acc.plot(c[x], c["eval_acc"], label=c["candidate"], **style)
        title = SCORE_TITLES.get(score, score)
        what = "clean, fixed probe" if x == "step" else "running mean"
        xlabel = "optimizer step" if x == "step" else "epoch"
        ax_loss.set(xlabel=xlabel, ylabel=f"train loss (nats, {what})", title=f"{title}: train loss")
        ax_acc.set(xlabel=xlabel, ylabel="eval accuracy (%)", title=f"{title}: eval accuracy")
        if x == "step":
            ax_loss.set_yscale("log")
        for ax in (ax_loss, ax_acc):
            ax.grid(alpha=0.3)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax_acc.legend(fontsize=8)
    return _save(fig, path)


def acc_vs_macs(rows: list[dict], acc_key: str | None, acc_label: str, path: Path) -> str | None:
    """Eval accuracy (mean ± sd over runs) against MACs per candidate."""
    if not any(acc_key and acc_key in r["metrics"] and "macs" in r["metrics"] for r in rows):
        return None
    fig = Figure(figsize=(6, 4.5), layout="constrained")
    ax = fig.subplots()
    for i, r in enumerate(rows):
        if acc_key not in r["metrics"] or "macs" not in r["metrics"]:
            continue
        x, y = r["metrics"]["macs"], r["metrics"][acc_key]
        ax.errorbar(
            x.mean,
            y.mean,
            yerr=y.sd or 0,
            capsize=3,
            ls="none",
            ms=7,
            label=r["candidate"],
            **_style(i, r["candidate"]),
        )
    ax.set(xlabel="MACs per image (millions of multiply-adds)", ylabel=f"{acc_label} (%)", title="Accuracy vs MACs")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def edf(rows: list[dict], k: float, path: Path) -> str | None:
    """EDF of Δerror from the best run of the same model and optimizer, one panel per optimizer."""
    if not rows:
        return None
    opts = sorted({r["optimizer"] for r in rows})
    fig = Figure(figsize=(5.5 * len(opts), 4.5), layout="constrained")
    for ax, opt in zip(fig.subplots(1, len(opts), squeeze=False)[0], opts, strict=True):
        for i, r in enumerate(rows):
            if r["optimizer"] != opt:
                continue
            xs, ys = [0.0, *r["delta"]], [0.0, *r["fraction"]]
            ax.step(xs, ys, where="post", color=f"C{i % 10}", label=f"{r['label']} (n={r['n']})")
        ax.axvline(k, color="grey", ls=":", lw=1, label=f"{k:g} points")
        ax.set(xlabel="Δ top-1 error from the best run, same model and optimizer (points)")
        ax.set(ylabel="cumulative fraction of runs")
        ax.set(title=f"Hyperparameter EDF ({opt})", ylim=(0, 1.02))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path)


def length(rows: list[dict], path: Path) -> str | None:
    """Eval accuracy vs schedule length per candidate (training-length stability)."""
    if not rows:
        return None
    fig, ax = _accuracy_lines(rows, "epochs", "eval_acc")
    ax.set(xlabel="schedule length (epochs)", title="Training-length stability")
    return _save(fig, path)


def robustness(rows: list[dict], path: Path) -> str | None:
    """Eval accuracy vs corruption severity per candidate (mean over corruptions; severity 0 is clean)."""
    if not rows:
        return None
    fig, ax = _accuracy_lines(rows, "severity", "acc")
    kinds = ", ".join(rows[0]["corruptions"])
    ax.set(xlabel=f"corruption severity (0 = clean; mean over {kinds})", title="Robustness to corruptions")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return _save(fig, path)


def _accuracy_lines(rows: list[dict], x: str, y: str) -> tuple[Figure, Any]:
    """One eval-accuracy line (mean ± sd per point) per candidate row, over the row's `x` values."""
    fig = Figure(figsize=(6, 4.5), layout="constrained")
    ax = fig.subplots()
    for i, r in enumerate(rows):
        ys, err = [a.mean for a in r[y]], [a.sd or 0 for a in r[y]]
        ax.errorbar(r[x], ys, yerr=err, capsize=3, label=r["candidate"], **_style(i, r["candidate"]))
    ax.set(ylabel="eval accuracy (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig, ax


@dataclass(frozen=True)
class FigureSpec:
    """One report figure: its file `<name>.png`, the summary table it draws, its draw function and caption."""

    name: str
    table: str  # key of the summary table it draws
    draw: Callable[[Any, dict, Path], str | None]  # (that table, whole summary, path) -> file name; None: no data
    caption: str  # the text under it in report.md
    compute: Callable[[dict, list[dict]], Any] | None = None  # (space record, trials) -> its table, if only it uses it


FIGURES: dict[str, FigureSpec] = {
    f.name: f
    for f in (
        FigureSpec(
            "generalization",
            "candidates",
            lambda rows, s, path: generalization(rows, path),
            "Final train loss (x, clean pass over the training subset) vs eval accuracy (y), mean ± sd over runs "
            "per candidate, as CoAtNet Fig. 1.",
        ),
        FigureSpec(
            "curves",
            "curves",
            lambda tables, s, path: curves(tables, [r["candidate"] for r in s["candidates"]], path),
            "Training curves per candidate (mean over runs): clean train loss on the fixed probe and eval accuracy "
            "on the fixed eval set at each curve step (per epoch for studies recorded before step curves).",
        ),
        FigureSpec(
            "acc_vs_macs",
            "candidates",
            lambda rows, s, path: acc_vs_macs(rows, s["primary_acc"], s["primary_label"], path),
            "Eval accuracy (mean ± sd) against MACs per image.",
        ),
        FigureSpec(
            "edf",
            "edf",
            lambda rows, s, path: edf(rows, s["edf_k"], path) if s["search_dims"] else None,
            "Hyperparameter EDF: cumulative fraction of runs within Δ points of top-1 error of the best run of "
            "the same model and optimizer (ViT_C paper Fig. 5); steeper = more stable. The AdamW − SGD offset is "
            "the optimizer gap, shown separately.",
        ),
        FigureSpec(
            "matched_loss",
            "matched_loss",
            lambda frames, s, path: plots_measures.draw(frames, path),
            "Eval accuracy against clean train loss (log scale, falling to the right), one trajectory per candidate "
            "(CoAtNet Fig. 1): faint lines are runs, markers the mean at each ladder level (hollow where some runs "
            "are censored), × the end of a censored run, the dashed line the common level of the comparison.",
            compute=lambda space, records: plots_measures.frames(space, records),
        ),
        FigureSpec(
            "length",
            "length",
            lambda rows, s, path: length(rows, path),
            "Eval accuracy vs schedule length (training-length stability).",
        ),
        FigureSpec(
            "robustness",
            "robustness",
            lambda rows, s, path: robustness(rows, path),
            "Eval accuracy vs corruption severity (mean over Gaussian noise, blur, contrast, shift and rotation; "
            "severity 0 is the clean eval set), using the model of the score named by `robustness.source`.",
            compute=info.robustness_rows,
        ),
        FigureSpec(
            "acc_vs_speed",
            "speed",
            lambda table, s, path: plots_speed.draw(table, path),
            "Eval accuracy (mean ± sd) against measured throughput on the study's device (log scale; left: "
            "inference, right: training), the Pareto front dashed and circled (regime baselines left out): "
            "MACs-matched is not speed-matched.",
            compute=speed.table,
        ),
    )
}
CAPTIONS = {name: f.caption for name, f in FIGURES.items()}


def tables(space: dict, records: list[dict]) -> dict[str, Any]:
    """The summary tables only figures draw, computed by their registry entries."""
    return {f.table: f.compute(space, records) for f in FIGURES.values() if f.compute is not None}


def render_all(summary: dict, folder: Path) -> dict[str, str]:
    """Write every registered figure the summary has data for; remove stale ones. Returns {figure: file name}."""
    folder.mkdir(parents=True, exist_ok=True)
    made = {}
    for name, fig in FIGURES.items():
        path = folder / f"{name}.png"
        table = summary.get(fig.table)
        file = fig.draw(table, summary, path) if table else None
        if file:
            made[name] = file
        else:
            path.unlink(missing_ok=True)
    return made
