"""The per-seed paired differences behind every firm verdict, claim (f)'s gap contrast included."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402

from coatsearch import fsafe  # noqa: E402
from coatsearch.report.figstyle import DPI  # noqa: E402

FIRM = ("supported", "not supported")


def rows_of(claim: Any) -> list[dict]:
    """One row per relation (or claim (f) part) a firm verdict rests on: label, per-seed values, mean, CI, margin;
    from the claims section's `ClaimInfo` (view_claims)."""
    if claim.parts:
        return [{"label": p.short, "values": list((p.per_seed or {}).values()), "d": p.d, "ci": p.ci, "margin": None}
                for p in claim.parts if p.per_seed]  # fmt: skip
    pairs = claim.evidence[0].evidence.pairs if claim.evidence else ()
    return [{"label": f"{p.a} − {p.b} ({p.paper}, {p.status})", "values": [v for _, v in p.test.per_seed], "d": p.d,
             "ci": p.ci, "margin": None if p.key else p.margin} for p in pairs if p.test.per_seed]  # fmt: skip


def figure(claims: Sequence[Any]) -> Figure | None:
    """One panel per firm verdict: each relation's per-seed differences (dots), mean and 95% interval (bar),
    zero (solid) and the '≈'/'≥' margin (dotted); None without a firm verdict that has per-seed values."""
    panels = [(c, rows) for c in claims if c.verdict in FIRM and (rows := rows_of(c))]
    if not panels:
        return None
    fig = Figure(figsize=(8, 1.2 + sum(0.6 * len(r) + 0.9 for _, r in panels)), layout="constrained")
    axes = fig.subplots(len(panels), 1, squeeze=False, height_ratios=[len(r) + 1 for _, r in panels])[:, 0]
    for ax, (claim, rows) in zip(axes, panels, strict=True):
        for y, r in enumerate(rows):
            ax.plot(r["values"], [y] * len(r["values"]), "o", color="C0", alpha=0.6, ms=5)
            if r["ci"]:
                ax.errorbar(r["d"], y, xerr=[[r["d"] - r["ci"][0]], [r["ci"][1] - r["d"]]], fmt="D", color="k",
                            capsize=4, ms=5)  # fmt: skip
            if r["margin"]:
                ax.plot([-r["margin"], r["margin"]], [y, y], ls="none", marker="|", color="C3", ms=14)
        ax.axvline(0, color="grey", lw=1)
        ax.set_yticks(range(len(rows)), [r["label"] for r in rows], fontsize=8)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.set_title(f"({claim.id}) {claim.verdict}: per-seed paired differences (points)", fontsize=9)
        ax.grid(alpha=0.3, axis="x")
    axes[-1].set_xlabel("a − b, better direction: seeds (dots), mean and 95% interval (black), ± margin (red)")
    return fig


def draw(claims: Sequence[Any], path: Path) -> str | None:
    """Write `figure` to `path`; its file name, or None (nothing written) without a firm verdict."""
    fig = figure(claims)
    if fig is None:
        return None
    with fsafe.replacing(path) as tmp:
        fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
    return path.name
