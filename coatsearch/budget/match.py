"""Match a candidate to a MACs budget by solving for a width (or depth) multiplier.

The maths. Let f(m) = MACs(scale(spec, m)) for a multiplier m > 0.

* Width mode: every stage width w_i, the conv stem width and the ViT_C stem channels become
  q * max(1, round(m * w / q)), with the stage kind's quantum q (kinds.STAGE_KINDS: 8 for C stages and
  stems, head_size for attention stages, so the head count stays an integer). A conv costs ~ c_in * c_out,
  attention ~ N * C^2 + N^2 * C, so f grows roughly like m^2 between roundings.
* Depth mode: the middle stages' depths d_i (all stages but the first and last when there are >= 3 stages,
  else every stage; CoAtNet scales depth only in S2 and S3) become max(1, round(m * d_i)); f is roughly
  affine in m.

Each rounded width/depth is a non-decreasing step function of m and MACs increase in every width and
depth, so f is a non-decreasing step function. Bisection on log m over [m_min, m_max] keeps
f(lo) <= target < f(hi) until hi / lo < 1 + 1e-4, which leaves lo and hi on the two steps adjacent to the
target; the one with the smaller |f - target| / target wins. If neither lies in the band
|f - target| <= tolerance * target (a step too coarse), the single-quantum neighbours off the
proportional path are tried too (one stage or stem one quantum wider than the lo configuration, or one
narrower than the hi one), then swaps (one place a quantum wider and another a quantum narrower than the
lo configuration), never making a stage narrower than the one before it; proportional scaling is kept
whenever it can meet the band. If the band
lies below f(m_min) or above f(m_max), or no configuration meets it, the result has ok=False and says why.

Joint budget (`budget.params` set). Width alone moves MACs and params together; what separates them is where
the width sits: a low-resolution stage costs few MACs per parameter, a high-resolution one many. So a second
knob k reshapes the model and m is solved for MACs at each k:

* multi-stage: growth, stage i's width becomes q * round(m * k^i * w_i / q) (k > 1 puts width in the late,
  low-resolution stages: more params at the same MACs); k spans K_GROWTH, kept only while stage widths do
  not shrink from one stage to the next when the spec's widths do not;
* one stage (ViT_REL): depth, d becomes max(1, round(k * d)), k from 1/d to K_DEPTH: a deeper, narrower
  attention stage spends more of its MACs on the N^2 * C token-mixing term, which has no parameters.

Params at matched MACs rise with k (growth) or fall with it (depth), up to rounding. The solve starts at k = 1
(the spec's own shape: width scaling alone) and, if params miss their band, scans K_STEPS log-spaced k values
from 1 towards the end of K_GROWTH / the depth range on the side that moves params towards the target,
stopping where they cross it and bisecting k there (K_BISECT steps). Of the configurations in both bands the
least reshaped (k nearest 1) wins. When none is, `params_range` gives the params that the configurations
within the MACs band reach (the far end of the other side is counted too): a layout whose params-to-MACs
ratio is fixed by its token count (ViT_REL) needs fewer or more tokens (patch size, strides).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from coatsearch.budget.count import count
from coatsearch.vocab import kinds
from coatsearch.vocab.kinds import CONV_QUANTUM
from coatsearch.vocab.specs import DEPTH_MAX, Budget, ModelSpec

M_RANGE = {"width": (0.05, 16.0), "depth": (0.01, 16.0)}  # multiplier search interval per mode
_REL_STEP = 1e-4  # bisection stops when hi / lo < 1 + _REL_STEP
K_GROWTH = (0.5, 2.0)  # joint budget, multi-stage: per-stage width growth factor k
K_DEPTH = 4.0  # joint budget, one stage: depth factor k up to this (from 1 / depth)
K_STEPS = 9  # log-spaced k values scanned before bisecting k
K_BISECT = 5  # bisection steps on k between the two scanned values where params cross the target


@dataclass(frozen=True)
class MatchResult:
    """A scaled spec and how close it lands to the budget: error = (macs - target) / target."""

    spec: ModelSpec
    macs: int
    params: int
    multiplier: float  # m of the proportional configuration (a fallback neighbour differs in one place)
    error: float
    ok: bool
    reason: str  # "" when ok
    params_error: float | None = None  # (params - budget.params) / budget.params; None without a params target
    knob: float | None = None  # joint budget: the second knob k (growth, or depth factor for one stage)
    params_range: tuple[int, int] | None = None  # joint miss: params reached within the MACs band (lo, hi)


def _round_to(x: float, q: int) -> int:
    """Nearest multiple of q to x (halves round up), at least q."""
    return max(q, q * math.floor(x / q + 0.5))


def _quantum(spec: ModelSpec, kind: str) -> int:
    """Width step of a stage of `kind` in `spec`."""
    return kinds.STAGE_KINDS.entry(kind).quantum(spec.block)


def scaled_depth(depth: int, factor: float) -> int:
    """A stage's depth times `factor`, rounded, within the documented 1..DEPTH_MAX blocks."""
    return min(DEPTH_MAX, max(1, round(depth * factor)))


def _depth_stages(n: int) -> range:
    """Indices of the stages that depth scaling changes."""
    return range(1, n - 1) if n >= 3 else range(n)


def scale(spec: ModelSpec, multiplier: float, mode: str) -> ModelSpec:
    """`spec` with widths ("width") or middle-stage depths ("depth") multiplied and rounded; "none": as is."""
    m = multiplier
    if mode == "none":
        return spec
    if mode == "width":
        stages = tuple(replace(s, width=_round_to(s.width * m, _quantum(spec, s.kind))) for s in spec.stages)
        stem = kinds.STEM_KINDS.entry(spec.stem.kind).resize(spec.stem, lambda w: _round_to(w * m, CONV_QUANTUM))
        return replace(spec, stem=stem, stages=stages)
    if mode == "depth":
        idx = set(_depth_stages(len(spec.stages)))
        stages = tuple(replace(s, depth=scaled_depth(s.depth, m)) if i in idx else s for i, s in enumerate(spec.stages))
        return replace(spec, stages=stages)
    raise ValueError(f"unknown scale mode {mode!r}; known: width, depth, none")


def _fmt(n: float) -> str:
    """MACs with a unit: 41.2M, 4.2G."""
    for unit, div in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= div:
            return f"{n / div:.3g}{unit}"
    return f"{n:.3g}"


def _result(spec: ModelSpec, m: float, budget: Budget, reason: str = "") -> MatchResult:
    """Count `spec` and judge it against the budget band; `reason` is used if it misses."""
    c = count(spec)
    err = (c.macs - budget.macs) / budget.macs
    ok = abs(err) <= budget.tolerance
    if not ok and not reason:
        reason = f"{_fmt(c.macs)} MACs is outside budget {_fmt(budget.macs)} ± {budget.tolerance:.0%}"
    return MatchResult(spec, c.macs, c.params, m, err, ok, "" if ok else reason)


def _neighbours(spec: ModelSpec, mode: str, sign: int) -> Iterator[ModelSpec]:
    """Configurations one quantum (sign=+1 wider/deeper, -1 narrower/shallower) off `spec` in one place."""
    stages = spec.stages
    if mode == "depth":
        for i in _depth_stages(len(stages)):
            if 1 <= stages[i].depth + sign <= DEPTH_MAX:
                new = replace(stages[i], depth=stages[i].depth + sign)
                yield replace(spec, stages=stages[:i] + (new,) + stages[i + 1 :])
        return
    for i, s in enumerate(stages):
        q = _quantum(spec, s.kind)
        if s.width + sign * q >= q:
            yield replace(spec, stages=stages[:i] + (replace(s, width=s.width + sign * q),) + stages[i + 1 :])
    stem = kinds.STEM_KINDS.entry(spec.stem.kind).resize(
        spec.stem, lambda w: max(CONV_QUANTUM, w + sign * CONV_QUANTUM)
    )
    if stem != spec.stem:
        yield replace(spec, stem=stem)


def _widening(spec: ModelSpec) -> bool:
    """Whether stage widths never shrink from one stage to the next (fallbacks keep this if the spec has it)."""
    widths = [s.width for s in spec.stages]
    return all(a <= b for a, b in zip(widths, widths[1:], strict=False))


def _bisect(make: Callable[[float], ModelSpec], target: int, lo: float, hi: float) -> tuple[float, float]:
    """Shrink [lo, hi] in log space keeping f(lo) <= target < f(hi), until hi / lo < 1 + _REL_STEP."""
    while hi / lo > 1 + _REL_STEP:
        mid = math.sqrt(lo * hi)
        if count(make(mid)).macs <= target:
            lo = mid
        else:
            hi = mid
    return lo, hi


def match(spec: ModelSpec, budget: Budget) -> MatchResult:
    """Scale `spec` (budget.scale) so its MACs land within the budget band; never raises for a MACs budget.

    A budget with a params target is budget.joint.solve's (which builds on this module): ValueError here.
    """
    if budget.params is not None:
        raise ValueError("a budget with params is solved by coatsearch.budget.joint.solve, not match")
    mode, target, tol = budget.scale, budget.macs, budget.tolerance
    if target <= 0:
        return MatchResult(spec, 0, 0, 1.0, math.inf, False, f"budget must be positive, got {target} MACs")
    if mode == "none":
        return _result(spec, 1.0, budget)
    if mode not in M_RANGE:
        raise ValueError(f"unknown scale mode {mode!r}; known: width, depth, none")
    lo, hi = M_RANGE[mode]
    if mode == "depth":  # no deeper than DEPTH_MAX blocks: the largest model is reached, not passed
        hi = min(
            hi, max(DEPTH_MAX / s.depth for i, s in enumerate(spec.stages) if i in _depth_stages(len(spec.stages)))
        )
    smallest, largest = scale(spec, lo, mode), scale(spec, hi, mode)
    f_lo, f_hi = count(smallest).macs, count(largest).macs
    band = f"budget {_fmt(target)} ± {tol:.0%}"
    if f_lo > target * (1 + tol):
        return _result(smallest, lo, budget, f"smallest {mode} (m={lo:g}) gives {_fmt(f_lo)} MACs > {band}")
    if f_hi < target * (1 - tol):
        return _result(largest, hi, budget, f"largest {mode} (m={hi:g}) gives {_fmt(f_hi)} MACs < {band}")
    if f_lo > target:
        return _result(smallest, lo, budget)
    if f_hi <= target:
        return _result(largest, hi, budget)
    lo, hi = _bisect(lambda m: scale(spec, m, mode), target, lo, hi)
    below, above = _result(scale(spec, lo, mode), lo, budget), _result(scale(spec, hi, mode), hi, budget)
    best = min(below, above, key=lambda r: abs(r.error))
    if best.ok:
        return best
    shape = _widening(spec)
    ups = [s for s in _neighbours(below.spec, mode, +1) if _widening(s) >= shape]
    downs = [s for s in _neighbours(above.spec, mode, -1) if _widening(s) >= shape]
    near = [_result(s, lo, budget) for s in ups] + [_result(s, hi, budget) for s in downs]
    best = min([best, *near], key=lambda r: abs(r.error))
    if best.ok:
        return best
    swaps = [
        _result(t, lo, budget)
        for s in ups
        for t in _neighbours(s, mode, -1)
        if t != below.spec and _widening(t) >= shape
    ]
    best = min([best, *swaps], key=lambda r: abs(r.error))
    if best.ok:
        return best
    reason = (
        f"{mode} step too coarse: nearest configurations give {_fmt(below.macs)} (m={lo:.4g}) and "
        f"{_fmt(above.macs)} (m={hi:.4g}) MACs, none within {band}"
    )
    return replace(best, reason=reason)
