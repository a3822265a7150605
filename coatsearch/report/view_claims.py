"""The verdict, optimizability and failure sections' Infos, computed from the report context."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coatsearch.analysis.claims import LENGTH_SCORE
from coatsearch.analysis.tables import METRICS, Metric, Stat
from coatsearch.report.section import Context
from coatsearch.report.view_study import GUARD_FIELDS

Row = Mapping[str, Any]  # one row of a computed table, as the summary holds it


@dataclass(frozen=True)
class Evidence:
    """One measure's evidence for a claim (verdicts.evidence) and the metric it reads."""

    table: Row
    metric: Metric
    fired: Mapping[str, tuple[str, ...]]  # guard field -> "model k/runs" where that regime check fired


def _evidence(e: Row) -> Evidence:
    fired = {f: tuple(f"{g['name']} {g[f]}/{g['runs']}" for g in e["guards"] if g[f]) for f in GUARD_FIELDS}
    return Evidence(e, METRICS[e["key"]], fired)


@dataclass(frozen=True)
class Claim:
    """One claim's verdict (verdicts.all_claims) and its evidence per measure."""

    verdict: Row
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class Calibrated:
    """One claim's calibration: null studies' firm share and bound, power, and the effect it was measured at."""

    claim: str
    figures: Row  # null_firm, null_n, null_firm_upper95, power, power_n
    effect_sigma: float


@dataclass(frozen=True)
class Verdicts:
    """The method, the verdict rule, its calibration (None: not measured) and every judged claim."""

    method: str
    rule: str
    rule_version: Any
    n_seeds: Any
    calibration: tuple[Calibrated, ...] | None
    claims: tuple[Claim, ...]
    aa: Row | None = None  # A/A studies through the real trainer (calibration.aa_figures); None: not measured


def verdicts(ctx: Context) -> Verdicts | None:
    """The claim verdicts; None when the study covers no claim."""
    found, rules = ctx.tables["claims"], ctx.tables["rules"]
    if not found:
        return None
    c = rules.get("calibration")
    cal = tuple(Calibrated(k, v, c["stem_effect_sigma"] if k == "f" else c["effect_sigma"])
                for k, v in sorted(c["per_claim"].items())) if c else None  # fmt: skip
    claims = tuple(Claim(v, tuple(_evidence(e) for e in v["evidence"])) for v in found)
    aa = rules.get("aa")
    return Verdicts(rules["method"], rules["verdict"], c and c["rule_version"], c and c["n_seeds"], cal, claims, aa)


@dataclass(frozen=True)
class Gap:
    """The optimizer gap: per model, its best AdamW and SGD runs and the gap (optim.optimizer_gap rows)."""

    rows: tuple[Row, ...]


@dataclass(frozen=True)
class Edf:
    """Hyperparameter stability: the sampled dimensions, K, and the share of runs within K of the best."""

    dims: tuple[str, ...]
    k: float
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class LengthRow:
    """One candidate's eval accuracy and Δ error at each schedule length (None where it has no run)."""

    candidate: str
    runs: int
    accs: tuple[Stat | None, ...]
    deltas: tuple[float | None, ...]


@dataclass(frozen=True)
class Length:
    """Training-length stability over the schedule lengths any candidate ran."""

    epochs: tuple[int, ...]
    rows: tuple[LengthRow, ...]


@dataclass(frozen=True)
class Optimizability:
    """The ViT_C paper measures the study has: each block None when it has no data."""

    acc: tuple[str, str] | None  # (label, key) of the accuracy used
    gap: Gap | None
    edf: Edf | None
    length: Length | None
    peak: tuple[Row, ...] | None
    samples: tuple[Row, ...] | None


def optimizability(ctx: Context) -> Optimizability | None:
    """The optimizability blocks; None when the study has none of them, or no ViT, search or length runs."""
    t = ctx.tables
    gaps, dims = t["optimizer_gap"], tuple(t["search_dims"])
    gap = Gap(tuple(gaps)) if gaps and any(g["n_sgd"] and g["n_adamw"] for g in gaps) else None
    edf = Edf(dims, t["edf_k"], tuple(t["edf"])) if t["edf"] and dims else None
    peak = tuple(t["peak"]) if t["peak"] and (t["has_vit"] or dims) else None
    info = Optimizability((t["primary_label"], t["primary_acc"]) if t["primary_acc"] else None, gap, edf,
                          _length(t[LENGTH_SCORE]), peak, tuple(t["samples"]) or None)  # fmt: skip
    shown = any(b is not None for b in (gap, edf, info.length, peak, info.samples))
    return info if shown and (t["has_vit"] or dims or t[LENGTH_SCORE]) else None


def _length(rows: list[dict]) -> Length | None:
    """Accuracy and Δ error per candidate at every schedule length any ran."""
    if not rows:
        return None
    epochs = tuple(sorted({e for r in rows for e in r["epochs"]}))
    out = []
    for r in rows:
        acc = dict(zip(r["epochs"], r["eval_acc"], strict=True))
        dlt = dict(zip(r["epochs"], r["delta_error"], strict=True))
        out.append(LengthRow(r["candidate"], r["runs"], tuple(acc.get(e) for e in epochs),
                             tuple(dlt.get(e) for e in epochs)))  # fmt: skip
    return Length(epochs, tuple(out))


@dataclass(frozen=True)
class Failures:
    """Failed, interrupted, pruned and unfinished trials: number, candidate, seed, state, reason each."""

    rows: tuple[Row, ...]


def failures(ctx: Context) -> Failures | None:
    """The failed trials; None when every trial completed."""
    return Failures(tuple(ctx.tables["failures"])) if ctx.tables["failures"] else None
