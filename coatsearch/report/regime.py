"""Each judged claim's regime and the study's proxy scale, computed once into the study's summary (report.tables):
the data a run saw, the best network of the claim against the linear floor and the small CNN, and the verdict's
regime check. The report's answer and regime sections only format them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from coatsearch.analysis import constants as CS
from coatsearch.analysis.table_rows import CandidateRow
from coatsearch.analysis.tables import METRICS, Records, shape
from coatsearch.papers import categories as K
from coatsearch.papers import verdicts as V
from coatsearch.papers.claim_results import ClaimVerdict
from coatsearch.report.summary import RegimeRow


def score_of(claim: ClaimVerdict, primary_acc: str | None) -> str | None:
    """The measure (metric key) a claim is decided on: its first evidence's, else the study's primary accuracy."""
    return claim.evidence[0].key if claim.evidence else primary_acc


def proxy_scale(space: Mapping[str, Any], done: Records, keys: Sequence[str]) -> str:
    """'<data set>, <training images>, <size>x<size>x<channels>, <seeds>' of the runs on the claims' scores."""
    size, channels, _ = shape(dict(space))
    dataset = (space.get("data") or {}).get("dataset")
    groups = {k.split(".")[0] for k in keys}
    images = sorted({v for r in done for g in groups if (v := r.run.value(f"{g}.images")) is not None})
    seeds = {r.seed for r in done if any(r.run.value(f"{g}.images") is not None for g in groups)}
    bits = [dataset or "", span(images, "training images"), f"{size}x{size}x{channels}" if size else "",
            f"{len(seeds)} seed(s)" if seeds else ""]  # fmt: skip
    return ", ".join(b for b in bits if b)


def span(values: Sequence[float], what: str, digits: int = 0) -> str:
    """'500 what' or '100–1,300 what' ('' for none)."""
    if not values:
        return ""
    lo, hi = min(values), max(values)
    return f"{lo:,.{digits}f} {what}" if lo == hi else f"{lo:,.{digits}f}–{hi:,.{digits}f} {what}"


def regime_rows(space: Mapping[str, Any], done: Records, rows: Sequence[CandidateRow],
                claims: Sequence[ClaimVerdict], primary_acc: str | None) -> tuple[RegimeRow, ...]:  # fmt: skip
    """The regime row of every judged claim that has a deciding measure, in claim order."""
    return tuple(r for c in claims if (r := _row(space, done, rows, c, primary_acc)) is not None)


def _row(space: Mapping[str, Any], done: Records, rows: Sequence[CandidateRow], claim: ClaimVerdict,
         primary_acc: str | None) -> RegimeRow | None:  # fmt: skip
    key = score_of(claim, primary_acc)
    if not key or key not in METRICS:
        return None
    metric, group = METRICS[key], key.split(".")[0]
    batch = ((space.get("scores") or {}).get(group) or {}).get("batch_size")
    images, processed, epochs = set(), set(), set()
    for r in done:
        n, steps = r.run.number(f"{group}.images"), r.run.number(f"{group}.steps")
        b = batch or (r.run.optimizer.settings.get("batch_size") if r.run.optimizer else None)
        seen = steps * b if steps and b else (ep * n if (ep := r.run.number(f"{group}.epochs")) and n else None)
        images |= {int(n)} if n else set()
        processed |= {int(seen)} if seen else set()
        epochs |= {round(seen / n, 1)} if seen and n else set()
    names = {m.candidate for e in claim.evidence for m in e.members}
    sign = 1.0 if metric.better == "higher" else -1.0
    mine = [r for r in rows if key in r.metrics and r.candidate not in CS.BASELINES
            and (not names or r.candidate in names)]  # fmt: skip
    best = max(mine, key=lambda r: sign * r.metrics[key].mean, default=None)
    cnn = next((r.metrics[key].mean for r in rows if r.candidate == CS.BASELINES[-1] and key in r.metrics), None)
    out = claim.verdict == K.OUT_OF_REGIME
    why = (claim.reason or claim.why) if out else ""
    return RegimeRow(f"({claim.id})", metric.label, metric.unit, metric.digits, tuple(sorted(images)),
                     tuple(sorted(processed)), tuple(sorted(epochs)), best.candidate if best else None,
                     best.metrics[key].mean if best else None, V.floor_of(key, rows), cnn, not out,
                     why)  # fmt: skip
