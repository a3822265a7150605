"""A space answer page's regime rows: per claim and study used, the best network against the floors, from summary.json.

Computed here (answer.space_claims picks the studies, answer.markdown_space formats the rows). The study report's
regime rows (report.regime) are computed from the run records; this reads only what the summary holds: the claim's
deciding measure and members, the candidate rows (the linear floor through verdicts.floor_of, the small CNN) and the
environment's training subsets. Images processed and epochs stay in each study's own report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from coatsearch.analysis import constants as CS
from coatsearch.analysis.table_rows import CandidateRow
from coatsearch.analysis.tables import METRICS
from coatsearch.papers import categories as K
from coatsearch.papers import verdicts as V
from coatsearch.papers.claim_results import ClaimVerdict
from coatsearch.papers.summary_file import Summary


@dataclass(frozen=True)
class StudyRegime:
    """One claim's regime in one study: data, the best network, the floors, the room above them, in regime or why."""

    claim: str
    study: str
    measure: str  # the deciding measure's label ('' when the claim has no measured evidence)
    unit: str
    digits: int
    images: tuple[int, ...]  # training images of a run on the measure's score
    best: str | None  # the best measured model of the claim on the measure
    best_value: float | None
    floor: float | None  # the fair linear floor on the measure (verdicts.floor_of)
    cnn: float | None  # the small CNN baseline's mean on the measure
    room_floor: float | None  # best − floor (accuracy measures)
    room_cnn: float | None  # best − small CNN (accuracy measures)
    in_regime: bool
    why: str  # the out-of-regime reason ('' in regime)


def regime_row(claim: ClaimVerdict, summary: Summary) -> StudyRegime | None:
    """The regime row of a judged claim in the study `summary` is from (None: a claim with nothing measured and in
    regime, which has nothing to show)."""
    out = claim.verdict == K.OUT_OF_REGIME
    why = (claim.reason or claim.why) if out else ""
    if not claim.evidence:
        return StudyRegime(claim.id, summary.study, "", "", 1, (), None, None, None, None, None, None, not out, why) \
            if out else None  # fmt: skip
    e = claim.evidence[0]
    metric = METRICS.get(e.key)
    better = metric.better if metric else "higher"
    digits = metric.digits if metric else 2
    sign = -1.0 if better == "lower" else 1.0
    best = max(e.members, key=lambda m: sign * m.stat.mean, default=None)
    floor = V.floor_of(e.key, summary.candidates) if metric else None
    cnn = _baseline_mean(summary.candidates, CS.BASELINES[-1], e.key)
    value = best.stat.mean if best else None
    accuracy = e.unit == "%"
    room_floor = value - floor if accuracy and value is not None and floor is not None else None
    room_cnn = value - cnn if accuracy and value is not None and cnn is not None else None
    return StudyRegime(claim.id, summary.study, e.label, e.unit, digits, _images(summary, e.key),
                     best.name if best else None, value, floor, cnn, room_floor, room_cnn, not out, why)  # fmt: skip


def _baseline_mean(rows: Sequence[CandidateRow], name: str, key: str) -> float | None:
    """A baseline's mean on a measure in the summary's candidate rows (None where it has none, or a null one)."""
    stat = next((r.stat(key) for r in rows if r.candidate == name), None)
    return None if stat is None or math.isnan(stat.mean) else stat.mean


def _images(summary: Summary, key: str) -> tuple[int, ...]:
    """The training images of a run on the measure's score (the environment's subsets)."""
    score = key.split(".")[0]
    got = {int(n) for s in summary.environment.subsets if s.score == score for n in s.images}
    return tuple(sorted(got))
