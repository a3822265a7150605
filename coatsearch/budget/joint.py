"""The joint budget: solve a width multiplier and a second knob so MACs and params both land in their bands.

The maths is in match.py's docstring ("Joint budget"); this module only carries it out.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

from coatsearch.budget.count import count
from coatsearch.budget.match import (
    K_BISECT,
    K_DEPTH,
    K_GROWTH,
    K_STEPS,
    M_RANGE,
    MatchResult,
    _bisect,
    _fmt,
    _quantum,
    _round_to,
    _widening,
    match,
    scaled_depth,
)
from coatsearch.vocab import kinds
from coatsearch.vocab.kinds import CONV_QUANTUM
from coatsearch.vocab.specs import DEPTH_MAX, Budget, ModelSpec

_FEWER_TOKENS = {  # the field that changes a layout's token count, by stem kind
    "patch": "stem.patch_size or strides",
    "conv": "stem.stride or strides",
    "vitc": "stem.strides or strides",
}


def _knob_name(spec: ModelSpec) -> str:
    """What the second knob k is for `spec`: 'growth' (several stages) or 'depth' (one stage)."""
    return "depth" if len(spec.stages) == 1 else "growth"


def shaped(spec: ModelSpec, m: float, k: float) -> ModelSpec:
    """`spec` at width multiplier m and second knob k (stage i's width x k^i, or the one stage's depth x k)."""
    stem = kinds.STEM_KINDS.entry(spec.stem.kind).resize(spec.stem, lambda w: _round_to(w * m, CONV_QUANTUM))
    if len(spec.stages) == 1:
        s = spec.stages[0]
        one = replace(s, width=_round_to(s.width * m, _quantum(spec, s.kind)), depth=scaled_depth(s.depth, k))
        return replace(spec, stem=stem, stages=(one,))
    stages = tuple(
        replace(s, width=_round_to(s.width * m * k**i, _quantum(spec, s.kind))) for i, s in enumerate(spec.stages)
    )
    return replace(spec, stem=stem, stages=stages)


def _k_range(spec: ModelSpec) -> tuple[float, float]:
    """The interval the second knob is searched over."""
    if len(spec.stages) == 1:
        return 1.0 / spec.stages[0].depth, min(K_DEPTH, DEPTH_MAX / spec.stages[0].depth)
    return K_GROWTH


def _judge(spec: ModelSpec, m: float, k: float, budget: Budget) -> MatchResult:
    """Count `spec` and judge it against both bands."""
    assert budget.params is not None
    c = count(spec)
    err, p_err = (c.macs - budget.macs) / budget.macs, (c.params - budget.params) / budget.params
    ok = max(abs(err), abs(p_err)) <= budget.tolerance
    return MatchResult(spec, c.macs, c.params, m, err, ok, "", p_err, k)


def _bracket(spec: ModelSpec, target: int, k: float) -> tuple[float, float]:
    """An m interval around the MACs target at knob k, found from a few m <- m * sqrt(target / f(m)) steps.

    MACs grow about like m^2, so the steps land close and the bisection after them counts few distinct
    configurations (counting a new block is what costs). The interval is clamped to M_RANGE["width"].
    """
    m_min, m_max = M_RANGE["width"]
    m = 1.0
    for _ in range(3):
        m = min(m_max, max(m_min, m * math.sqrt(target / count(shaped(spec, m, k)).macs)))
    lo, hi = max(m_min, m / 1.05), min(m_max, m * 1.05)
    while lo > m_min and count(shaped(spec, lo, k)).macs > target:
        lo = max(m_min, lo / 1.25)
    while hi < m_max and count(shaped(spec, hi, k)).macs <= target:
        hi = min(m_max, hi * 1.25)
    return lo, hi


def _at_k(spec: ModelSpec, budget: Budget, k: float) -> list[MatchResult]:
    """The configurations just below and just above the MACs target at knob k (one at the width range's ends)."""
    lo, hi = _bracket(spec, budget.macs, k)
    if count(shaped(spec, lo, k)).macs > budget.macs:
        return [_judge(shaped(spec, lo, k), lo, k, budget)]
    if count(shaped(spec, hi, k)).macs <= budget.macs:
        return [_judge(shaped(spec, hi, k), hi, k, budget)]
    lo, hi = _bisect(lambda m: shaped(spec, m, k), budget.macs, lo, hi)
    return [_judge(shaped(spec, lo, k), lo, k, budget), _judge(shaped(spec, hi, k), hi, k, budget)]


def _nearest(results: list[MatchResult]) -> MatchResult:
    """The result closest to the MACs target."""
    return min(results, key=lambda r: abs(r.error))


def _refine(spec: ModelSpec, budget: Budget, k1: float, k2: float, below: bool) -> list[MatchResult]:
    """Bisect k in [k1, k2], where params at matched MACs cross the target; `below`: params < target at k1."""
    out: list[MatchResult] = []
    for _ in range(K_BISECT):
        mid = math.sqrt(k1 * k2)
        got = _at_k(spec, budget, mid)
        out += got
        if ((_nearest(got).params_error or 0.0) < 0) == below:
            k1 = mid
        else:
            k2 = mid
    return out


@functools.lru_cache(maxsize=1024)
def solve(spec: ModelSpec, budget: Budget) -> MatchResult:
    """Match `spec` to `budget`: MACs alone (match.match), or MACs and params together when it has a params target.

    Cached: loading a space checks the joint budget and then prepares the same candidates again.
    """
    if budget.params is None or budget.macs <= 0:
        return match(spec, replace(budget, params=None))
    return match_joint(spec, budget)


def match_joint(spec: ModelSpec, budget: Budget) -> MatchResult:
    """Solve width and the second knob so MACs and params both land within budget.tolerance; never raises."""
    results = _scan(spec, budget)
    shape = _widening(spec)
    kept = [r for r in results if _widening(r.spec) >= shape] or results
    met = [r for r in kept if r.ok]
    if met:  # of the configurations in both bands, the least reshaped (k nearest 1), then the closest
        return min(met, key=lambda r: (abs(math.log(r.knob or 1.0)), max(abs(r.error), abs(r.params_error or 0.0))))
    best = min(kept, key=lambda r: max(abs(r.error), abs(r.params_error or 0.0)))
    return _miss(spec, budget, best, kept)


def _scan(spec: ModelSpec, budget: Budget) -> list[MatchResult]:
    """Configurations from k = 1 outwards, on the side where params move towards the target, until they cross it
    (then bisected there); with no crossing, the far end of the other side too, for the reachable range."""
    k_lo, k_hi = _k_range(spec)
    results = _at_k(spec, budget, 1.0)
    prev_k, prev_e = 1.0, _nearest(results).params_error or 0.0
    if any(r.ok for r in results):
        return results
    up = (prev_e < 0) == (_knob_name(spec) == "growth")  # growth raises params at equal MACs, depth lowers them
    end = k_hi if up else k_lo
    for i in range(1, K_STEPS):
        k = end ** (i / (K_STEPS - 1))
        got = _at_k(spec, budget, k)
        results += got
        e = _nearest(got).params_error or 0.0
        if (e < 0) != (prev_e < 0) or any(r.ok for r in got):
            return results + _refine(spec, budget, prev_k, k, prev_e < 0)
        prev_k, prev_e = k, e
    return results + _at_k(spec, budget, k_lo if up else k_hi)


def _miss(spec: ModelSpec, budget: Budget, best: MatchResult, kept: list[MatchResult]) -> MatchResult:
    """`best` with the reason no configuration met both bands, and the params reachable in the MACs band."""
    assert budget.params is not None
    tol, target = budget.tolerance, budget.params
    macs_band = f"{_fmt(budget.macs)} MACs ± {tol:.0%}"
    in_band = [r for r in kept if abs(r.error) <= tol]
    if not in_band:
        return replace(best, reason=f"no width and {_knob_name(spec)} reach {macs_band}")
    best = min(in_band, key=lambda r: abs(r.params_error or 0.0))  # show the closest in params of the MACs-matched
    lo, hi = min(r.params for r in in_band), max(r.params for r in in_band)
    if lo * (1 - tol) <= target <= hi * (1 + tol):  # reachable in range, but the steps jump over the band
        reason = (
            f"steps too coarse: params {_fmt(target)} ± {tol:.0%} lies inside the reachable {_fmt(lo)} to "
            f"{_fmt(hi)} at {macs_band}, but no width and {_knob_name(spec)} lands in both bands"
        )
        return replace(best, reason=reason)
    k_lo, k_hi = _k_range(spec)
    knob = f"growth {k_lo:g} to {k_hi:g}"
    if len(spec.stages) == 1:
        knob = f"depth 1 to {round(k_hi * spec.stages[0].depth)}"
    reason = (
        f"params {_fmt(target)} ± {tol:.0%} is unreachable at {macs_band}: layout {spec.layout} reaches "
        f"{_fmt(lo)} to {_fmt(hi)} params there (width, {knob}); change "
        f"{_FEWER_TOKENS.get(spec.stem.kind, 'strides')} (fewer tokens give more params per MAC) or budget.params"
    )
    return replace(best, reason=reason, params_range=(lo, hi))
