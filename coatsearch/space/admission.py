"""Which sampled points are admissible (constraints, then the budget solve), a solved model's structure, and the
architectures a finite space holds (what `show` counts).

A point is admitted before any training: a constraint is checked on the resolved layout (no solve needed), then
the budget solve runs; either failing raises `Rejected`, which the engines record as a rejected point (no trial
trained, never a failure). One rule, used at sampling and again before training, so no point escapes it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from coatsearch.space.search import POINTS_MAX, arch_name, identity, points, size
from coatsearch.vocab import kinds, specs

if TYPE_CHECKING:
    from coatsearch.budget.prepare import Prepared
    from coatsearch.space.objects import Baseline, Candidate, Space

SURVEY_S = 60.0  # seconds `show` spends solving the points of one searched candidate at most
REJECT_MAX = 50  # rejected samples in a row for one planned trial before it is recorded as failed


class Rejected(Exception):
    """A sampled point the constraints or the budget solve refuse (it costs no training)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def admit(space: Space, cand: Candidate | Baseline, params: Mapping[str, Any]) -> Prepared:
    """The matched model of `cand` at `params`, or Rejected: a constraint first (cheap), then the budget solve."""
    from coatsearch.budget.prepare import prepare

    try:
        model, _, _ = cand.resolve(params)
    except ValueError as exc:
        raise Rejected(f"invalid point: {exc}") from None
    if why := kinds.constraint_problem(space.conv_before_attention, model.layout):
        raise Rejected(f"constraint: {why}")
    prep = prepare(cand, params)
    if not prep.ok:
        raise Rejected(f"budget not met: {prep.reason}")
    return prep


def _block_text(block: specs.BlockSpec) -> str:
    """The block options that differ from the defaults, e.g. 'head_size=8 downsample=dw rel_pos=False'."""
    base = specs.BlockSpec()
    return " ".join(
        f"{f.name}={getattr(block, f.name)}" for f in fields(block) if getattr(block, f.name) != getattr(base, f.name)
    )


def structure(model: specs.ModelSpec) -> str:
    """A solved model's structural identity: arch, stem, per-stage kind/depth/width/stride, and the block options
    some block of it reads (`identity`)."""
    from coatsearch.budget.prepare import stages_text, stem_text

    return identity(f"{model.arch} {stem_text(model)} | {stages_text(model)} | {_block_text(model.block)}")


@dataclass(frozen=True)
class Survey:
    """What a finite (or sampled) space holds after the constraints and the budget solve."""

    points: int  # points looked at
    total: int | None  # points the space holds (None: continuous)
    rejected: Mapping[str, int]  # why -> count
    architectures: Mapping[str, tuple[dict, Prepared]] = field(default_factory=dict)  # name -> (first point, prep)
    stopped: str = ""  # why it looked at fewer than `total` points ("": it looked at all)


def survey(space: Space, cand: Candidate, limit: int | None = None, seconds: float = SURVEY_S) -> Survey:
    """Admit every point (or the first `limit`, at most POINTS_MAX, for at most `seconds`), counting rejections by
    kind and distinct architectures; `stopped` says why it looked at fewer points than the space holds."""
    import time

    rejected: Counter[str] = Counter()
    archs: dict[str, tuple[dict, Prepared]] = {}
    seen, cap, began, stopped = 0, min(limit if limit is not None else POINTS_MAX, POINTS_MAX), time.monotonic(), ""
    for point in points(cand):
        if seen >= cap:
            stopped = f"at the first {cap:,} points (POINTS_MAX)" if cap == POINTS_MAX else f"at the first {cap:,}"
            break
        if time.monotonic() - began > seconds:
            stopped = f"after {seconds:g} s"
            break
        seen += 1
        try:
            prep = admit(space, cand, point)
        except Rejected as exc:
            rejected[exc.reason.split(":", 1)[0]] += 1
            continue
        archs.setdefault(arch_name(prep.model.layout, structure(prep.model)), (point, prep))
    return Survey(seen, size(cand), dict(rejected), archs, stopped)
