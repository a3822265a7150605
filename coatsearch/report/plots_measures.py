"""Figures of the paper measures: CoAtNet Fig. 1 (eval accuracy against training loss), censoring visible."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

from coatsearch import fsafe  # noqa: E402
from coatsearch.papers.measures import TINY_LOSS  # noqa: E402
from coatsearch.report.figstyle import DPI, MARKERS  # noqa: E402
from coatsearch.scores.base import points


def _ladder(matched: pd.DataFrame) -> pd.DataFrame:
    """Per level of one candidate: mean eval acc (%) of the runs that reached it, and how many did not."""
    g = matched.groupby("level")
    out = pd.DataFrame({"acc": points(g["eval_acc"].mean()), "censored": g["censored"].sum(), "runs": g.size()})
    out = out[out["acc"].notna()]  # every reading censored: nothing measured to show
    return out[out["censored"] < out["runs"]]  # levels no run reached have nothing to show


def _plain_ticks(ax: Any, losses: pd.Series) -> None:
    """Log-axis tick labels as plain numbers (0.5, 2); minor ticks labelled too when the range is under 1.5 decades."""
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.xaxis.set_major_formatter(plain)
    narrow = losses.max() / losses.min() < 10**1.5
    ax.xaxis.set_minor_formatter(plain if narrow else NullFormatter())


def matched_loss(curves: pd.DataFrame, matched: pd.DataFrame, path: Path, level: float | None = None) -> str | None:
    """Write `matched_loss_figure` to `path`; its file name, or None (nothing written) without curves."""
    if curves.empty:
        return None
    with fsafe.replacing(path) as tmp:  # no link followed; a failed write keeps the previous figure
        matched_loss_figure(curves, matched, level).savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
    return path.name


def matched_loss_figure(curves: pd.DataFrame, matched: pd.DataFrame, level: float | None = None) -> Figure:
    """Eval accuracy against clean train loss (log x, loss falling to the right), one trajectory per candidate.

    Faint lines are the runs' measured points after step 0 (the untrained model is never joined to them);
    markers are the candidate's mean at each ladder level over its uncensored readings, filled where every run
    has one and hollow where some are censored (never reached, or no measured pair brackets the level: never
    interpolated from step 0); × marks the last point of a run that never reached some level. The dashed line
    is the common level at which candidates are compared.
    """
    fig = Figure(figsize=(6.5, 4.8), layout="constrained")
    ax = fig.subplots()
    short = ~matched["reached"].astype(bool) if "reached" in matched else matched["censored"].astype(bool)
    censored_runs = set(matched.loc[short, "run"])
    for i, cand in enumerate(dict.fromkeys(curves["candidate"])):
        color, marker = f"C{i % 10}", MARKERS[i % len(MARKERS)]
        for run, c in curves[(curves["candidate"] == cand) & (curves["step"] > 0)].sort_values("step").groupby("run"):
            ax.plot(c["train_loss"].clip(lower=TINY_LOSS), points(c["eval_acc"]), color=color, alpha=0.25, lw=0.8)
            if run in censored_runs:
                last = c.iloc[-1]
                ax.plot(max(last["train_loss"], TINY_LOSS), points(last["eval_acc"]), "x", color=color, ms=7)
        lad = _ladder(matched[matched["candidate"] == cand])
        full, part = lad[lad["censored"] == 0], lad[lad["censored"] > 0]
        ax.plot(full.index, full["acc"], marker=marker, color=color, label=cand, ms=6)
        ax.plot(part.index, part["acc"], marker=marker, color=color, ls="none", mfc="none", ms=6)
    if level is not None:
        ax.axvline(level, color="grey", ls="--", lw=1)
    ax.set_xscale("log")
    _plain_ticks(ax, curves["train_loss"].clip(lower=TINY_LOSS))
    ax.invert_xaxis()
    ax.set(xlabel="clean train loss (nats, fixed probe) →", ylabel="eval accuracy (%)")
    ax.set_title("Generalization at matched training loss (CoAtNet Fig. 1)")
    ax.grid(alpha=0.3)
    keys = [
        Line2D([], [], color="grey", marker="o", mfc="none", ls="none", label="some runs censored"),
        Line2D([], [], color="grey", marker="x", ls="none", label="end of a run short of the ladder"),
    ]
    if level is not None:
        keys.append(Line2D([], [], color="grey", ls="--", label=f"claim (a) common level {level:.3g} nats"))
    ax.legend(handles=[*ax.get_legend_handles_labels()[0], *keys], fontsize=8)
    return fig


def draw(points: Any, path: Path) -> str | None:
    """`matched_loss` from the matched section's `MatchedPoints` (view_measures: every run's curve points, the
    ladder readings, the common level); its file name, or None without curves."""
    curves, at = pd.DataFrame(list(points.curves)), pd.DataFrame(list(points.readings))
    return matched_loss(curves, at, path, points.level)
