"""Paired comparisons by seed with scipy.stats: pooled noise, t intervals, Holm, power and Spearman.

Model. For one metric, every run's value is `candidate effect + seed effect + error`: a seed fixes the data
subset, the eval set and the initialisation, so its effect is shared by every candidate and cancels in a
difference paired by seed. The error variance is estimated once per metric from the residuals of that additive
(two-way, candidate + seed) fit over every candidate measured, so a difference of n paired seeds has the
standard error sqrt(2·s²/n) with the residual degrees of freedom (k − 1)(n − 1) for k candidates on n common
seeds. Pooling is what makes n = 3 seeds usable: one pair's own spread would have 2 degrees of freedom. It
assumes the candidates share one noise level, so a pair noisier than the rest would get too narrow an interval:
PAIR_NOISE_RULE (`paired`) never lets a pair's test read less noise than its own paired sd.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize
from scipy import stats as st

from coatsearch.analysis import json_form

MAX_SEEDS = 1000  # seeds_needed gives up beyond this
PAIR_NOISE_RULE = (
    "Each pair's t test uses the larger of two sds of a paired difference, each with its own degrees of freedom: "
    "the pooled sd with the residual df, or the pair's own paired sd with n − 1 df (never one's sd with the other's "
    "df). So no test reads less noise than the pair's own; the intervals and the p value come from the same choice."
)


@dataclass(frozen=True)
class Noise:
    """Residual noise of one metric: sd of a paired difference (√2 × residual sd) and its degrees of freedom."""

    sd_diff: float
    df: int
    k: int  # candidates the noise was pooled over


def noise(by_seed: Mapping[str, Mapping[Any, float]]) -> Noise | None:
    """Pooled noise from {candidate: {seed: value}}; None without residual degrees of freedom or spread."""
    cells = [(c, s, v) for c, vals in by_seed.items() for s, v in vals.items() if v is not None and math.isfinite(v)]
    if not cells:
        return None
    cand, seed = (pd.factorize(pd.Series([c[i] for c in cells], dtype=object))[0] for i in (0, 1))
    y = np.array([c[2] for c in cells], dtype=float)
    x = np.column_stack([np.ones(len(y)), np.eye(cand.max() + 1)[cand][:, 1:], np.eye(seed.max() + 1)[seed][:, 1:]])
    coef, _, rank, _ = np.linalg.lstsq(x, y, rcond=None)
    df = len(y) - rank
    if df < 1:
        return None
    resid = y - x @ coef
    ss = float(resid @ resid)
    return Noise(math.sqrt(2 * ss / df), int(df), int(cand.max() + 1)) if ss > 1e-18 else None


@dataclass(frozen=True)
class MeasureNoises:
    """Pooled paired noise per measure (papers.verdicts.noises), in the order the rows first name the measures."""

    measures: tuple[tuple[str, Noise | None], ...]  # (metric key, its noise; None: no residual df or spread)

    def of(self, key: str) -> Noise | None:
        """The noise of one measure; None when the rows do not measure it or it has none."""
        return next((n for k, n in self.measures if k == key), None)


@dataclass(frozen=True)
class PairTest:
    """a − b paired by seed in the better direction: paired seeds, mean, own sd, per-seed differences, and (with
    2+ seeds and a pooled noise) the pooled se, its df, the 95% and 90% t intervals and the two-sided p."""

    n: int
    d: float  # NaN without a common seed
    sd: float | None  # the pair's own sd (None below 2 seeds)
    per_seed: tuple[tuple[Any, float], ...]  # (seed, difference)
    se: float | None = None
    df: int | None = None
    ci: tuple[float, float] | None = None  # (1 − alpha) interval
    ci_equiv: tuple[float, float] | None = None  # (1 − 2 alpha) interval: the equivalence check's
    p: float | None = None
    own_noise: bool = False  # PAIR_NOISE_RULE took the pair's own sd (n − 1 df), not the pooled one

    def to_json(self) -> dict[str, Any]:
        """The test as summary.json holds it (the dict `paired` returned before it was typed), key order kept;
        `own_noise` only where it is true (summaries before PAIR_NOISE_RULE have none)."""
        return {"n": self.n, "d": self.d, "sd": self.sd, "per_seed": [[s, v] for s, v in self.per_seed],
                "se": self.se, "df": self.df, "ci": self.ci, "ci_equiv": self.ci_equiv, "p": self.p,
                **({"own_noise": True} if self.own_noise else {})}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PairTest:
        """The test `to_json` wrote (a null mean: NaN, no common seed)."""
        jf, df = json_form, data.get("df")
        per_seed = tuple((s, jf.number(v)) for s, v in jf.items(data.get("per_seed")))
        return cls(int(data.get("n") or 0), jf.number(data.get("d")), jf.maybe(data.get("sd")), per_seed,
                   jf.maybe(data.get("se")), None if df is None else int(df), jf.interval(data.get("ci")),
                   jf.interval(data.get("ci_equiv")), jf.maybe(data.get("p")),
                   data.get("own_noise") is True)  # fmt: skip


def paired(a: Mapping[Any, float], b: Mapping[Any, float], sign: float, pooled: Noise | None, alpha: float) -> PairTest:
    """a − b over the seeds both have, in the better direction (sign): mean, own sd, t interval and p-value, with the
    noise PAIR_NOISE_RULE picks (`pair_noise`)."""
    seeds = [s for s in a if s in b]
    d = np.array([sign * (a[s] - b[s]) for s in seeds], dtype=float)
    n = len(d)
    mean = float(d.mean()) if n else math.nan
    sd = float(d.std(ddof=1)) if n > 1 else None
    per_seed = tuple((s, float(v)) for s, v in zip(seeds, d, strict=True))
    if n < 2 or pooled is None:
        return PairTest(n, mean, sd, per_seed)
    sd_diff, df = pair_noise(pooled, sd, n)
    se = sd_diff / math.sqrt(n)
    q95, q90 = st.t.ppf([1 - alpha / 2, 1 - alpha], df) * se
    p = float(2 * st.t.sf(abs(mean) / se, df))
    own = df != pooled.df or sd_diff != pooled.sd_diff
    return PairTest(n, mean, sd, per_seed, se, df, (mean - q95, mean + q95), (mean - q90, mean + q90), p, own)


def pair_noise(pooled: Noise, own: float | None, n: int) -> tuple[float, int]:
    """PAIR_NOISE_RULE: (sd of a paired difference, df): the pair's own sd with n − 1 df where it exceeds the
    pooled sd, else the pooled sd with its residual df."""
    return (own, n - 1) if own is not None and n >= 2 and own > pooled.sd_diff else (pooled.sd_diff, pooled.df)


@dataclass(frozen=True)
class OneSample:
    """A sample's mean with its two-sided Student t interval and the p of "mean = 0" (n − 1 df, its own sd)."""

    n: int
    mean: float  # nan without values
    ci: tuple[float, float] | None  # None below 2 values or with no spread
    p: float | None


def one_sample(values: Any, alpha: float) -> OneSample:
    """`values` tested against 0 with their own noise (scipy's one-sample t test): mean, (1 − alpha) interval, p."""
    d = np.asarray(values, dtype=float)
    mean = float(d.mean()) if len(d) else math.nan
    if len(d) < 2 or float(d.std(ddof=1)) == 0.0:
        return OneSample(len(d), mean, None, None)
    res = st.ttest_1samp(d, 0.0)
    ci = res.confidence_interval(1 - alpha)
    return OneSample(len(d), mean, (float(ci.low), float(ci.high)), float(res.pvalue))


@dataclass(frozen=True)
class AboveFloor:
    """A model against its floor, paired by seed: mean difference (points), one-sided lower bound, p, n."""

    n: int
    d: float
    low: float | None  # one-sided (1 − alpha) lower bound of the mean difference; None below 2 seeds or no spread
    p: float | None  # one-sided p of "not above the floor"

    @property
    def above(self) -> bool:
        """Whether the model is shown to beat the floor: the lower bound lies above 0."""
        return self.low is not None and self.low > 0

    @property
    def bound(self) -> str:
        """The lower bound as a regime reason states it (or why there is none)."""
        return "no interval (fewer than 2 paired seeds)" if self.low is None else f"lower bound {self.low:+.1f}"


def above_floor(model: Mapping, floor: Mapping, alpha: float) -> AboveFloor:
    """Whether `model` ({seed: value}) beats `floor` ({seed: value}) over the seeds both have: a one-sided Student t
    interval of the paired differences (n − 1 df), so two point estimates never decide a regime."""
    d = np.array([model[s] - floor[s] for s in model if s in floor], dtype=float)
    n = len(d)
    mean = float(d.mean()) if n else math.nan
    if n < 2 or float(d.std(ddof=1)) == 0.0:
        exact = n >= 2 and mean > 0  # no spread: every seed beats the floor by the same margin
        return AboveFloor(n, mean, mean if exact else None, 0.0 if exact else None)
    res = st.ttest_1samp(d, 0.0, alternative="greater")
    low = float(res.confidence_interval(1 - alpha).low)
    return AboveFloor(n, mean, low, float(res.pvalue))


def holm(pvalues: list[float | None]) -> list[float | None]:
    """Holm step-down adjusted p-values over the tested (non-None) ones; None stays None."""
    given = {i: p for i, p in enumerate(pvalues) if p is not None}
    tested = sorted(given, key=given.__getitem__)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - rank) * given[i]))
        out[i] = running
    return out


def detectable(sd_diff: float, n: int, df: int, alpha: float, power: float) -> float:
    """Smallest true paired difference a two-sided t test at alpha finds with the given power (noncentral t)."""
    crit = st.t.ppf(1 - alpha / 2, df)

    def miss(nc: float) -> float:
        return st.nct.sf(crit, df, nc) + np.nan_to_num(st.nct.cdf(-crit, df, nc)) - power  # lower tail: ~0

    if not miss(1e4) > 0:
        return math.inf
    return optimize.brentq(miss, 0.0, 1e4, xtol=1e-6) * sd_diff / math.sqrt(n)


def seeds_needed(sd_diff: float, effect: float, k: int, alpha: float, power: float) -> int | None:
    """Fewest seeds at which `effect` is detectable among k candidates (df = (k − 1)(n − 1)); None past MAX_SEEDS."""
    if effect <= 0:
        return None
    lo, hi = 2, MAX_SEEDS
    if detectable(sd_diff, hi, (k - 1) * (hi - 1), alpha, power) > effect:
        return None
    while lo < hi:  # detectable() falls with n: bisect
        mid = (lo + hi) // 2
        if detectable(sd_diff, mid, (k - 1) * (mid - 1), alpha, power) <= effect:
            hi = mid
        else:
            lo = mid + 1
    return lo


def spearman(paper: list[float], measured: list[float]) -> tuple[float | None, float | None]:
    """Spearman rho of the measured against the paper's order, with an exact permutation p-value (≤ 8 items)."""
    x, y = np.asarray(paper, dtype=float), np.asarray(measured, dtype=float)
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, None
    if len(x) == 2:  # ±1 by construction: no test
        return float(np.sign((x[1] - x[0]) * (y[1] - y[0]))), None
    rx = st.rankdata(x)

    def rho(v: np.ndarray, axis: int = -1) -> np.ndarray:
        return st.pearsonr(np.broadcast_to(rx, v.shape), st.rankdata(v, axis=axis), axis=axis).statistic

    res = st.permutation_test((y,), rho, permutation_type="pairings", vectorized=True, n_resamples=9999)
    return float(res.statistic), float(res.pvalue)
