"""Figures of a report, rendered from the computed tables with matplotlib's object API on the Agg canvas."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from coatsearch.report.claims import BASELINES  # noqa: E402

DPI = 120
FIGURES = ("generalization.png", "curves.png", "acc_vs_macs.png", "edf.png", "length.png", "robustness.png")
MARKERS = "osD^v<>PX*hp"
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
        for c in tables[score]:
            style = {**_style(names.index(c["candidate"]), c["candidate"]), "ms": 3}
            ax_loss.plot(c["epoch"], c["train_loss"], label=c["candidate"], **style)
            ax_acc.plot(c["epoch"], c["eval_acc"], label=c["candidate"], **style)
        title = SCORE_TITLES.get(score, score)
        ax_loss.set(xlabel="epoch", ylabel="train loss (nats, running mean)", title=f"{title}: train loss")
        ax_acc.set(xlabel="epoch", ylabel="eval accuracy (%)", title=f"{title}: eval accuracy")
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
    """EDF of Δerror from each model's best run, one curve per candidate, one panel per optimizer."""
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
        ax.set(xlabel="Δ top-1 error from the model's best run (points)", ylabel="cumulative fraction of runs")
        ax.set(title=f"Hyperparameter EDF ({opt})", ylim=(0, 1.02))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path)


def length(rows: list[dict], path: Path) -> str | None:
    """Eval accuracy vs schedule length per candidate (training-length stability)."""
    if not rows:
        return None
    fig = Figure(figsize=(6, 4.5), layout="constrained")
    ax = fig.subplots()
    for i, r in enumerate(rows):
        ys = [a.mean for a in r["eval_acc"]]
        err = [a.sd or 0 for a in r["eval_acc"]]
        ax.errorbar(r["epochs"], ys, yerr=err, capsize=3, label=r["candidate"], **_style(i, r["candidate"]))
    ax.set(xlabel="schedule length (epochs)", ylabel="eval accuracy (%)", title="Training-length stability")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def robustness(rows: list[dict], path: Path) -> str | None:
    """Eval accuracy vs corruption severity per candidate (mean over corruptions; severity 0 is clean)."""
    if not rows:
        return None
    fig = Figure(figsize=(6, 4.5), layout="constrained")
    ax = fig.subplots()
    for i, r in enumerate(rows):
        ys, err = [a.mean for a in r["acc"]], [a.sd or 0 for a in r["acc"]]
        ax.errorbar(r["severity"], ys, yerr=err, capsize=3, label=r["candidate"], **_style(i, r["candidate"]))
    kinds = ", ".join(rows[0]["corruptions"])
    ax.set(xlabel=f"corruption severity (0 = clean; mean over {kinds})", ylabel="eval accuracy (%)")
    ax.set(title="Robustness to corruptions")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def render_all(summary: dict, folder: Path) -> dict[str, str]:
    """Write every figure the summary has data for; remove stale ones. Returns {figure: file name}."""
    folder.mkdir(parents=True, exist_ok=True)
    acc = summary["primary_acc"]
    made = {
        "generalization": generalization(summary["candidates"], folder / "generalization.png"),
        "curves": curves(summary["curves"], [r["candidate"] for r in summary["candidates"]], folder / "curves.png"),
        "acc_vs_macs": acc_vs_macs(summary["candidates"], acc, summary["primary_label"], folder / "acc_vs_macs.png"),
        "edf": edf(summary["edf"], summary["edf_k"], folder / "edf.png") if summary["search_dims"] else None,
        "length": length(summary["length"], folder / "length.png"),
        "robustness": robustness(summary.get("robustness") or [], folder / "robustness.png"),
    }
    for name in FIGURES:
        if name[:-4] not in made or made[name[:-4]] is None:
            (folder / name).unlink(missing_ok=True)
    return {k: v for k, v in made.items() if v}
