"""Paired statistics (analysis.stats): pooled two-way noise, paired t intervals, Holm, power and Spearman, checked
against scipy.stats."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from coatsearch.analysis import stats as S


def test_pooled_noise_is_the_two_way_residual():
    rng = np.random.default_rng(1)
    y = rng.normal(size=(5, 3)) + np.arange(3)  # 5 candidates × 3 seeds, a seed effect
    noise = S.noise({f"c{i}": {s: y[i, s] for s in range(3)} for i in range(5)})
    resid = y - y.mean(1, keepdims=True) - y.mean(0, keepdims=True) + y.mean()
    assert noise.df == 8 and noise.k == 5
    assert noise.sd_diff == pytest.approx(math.sqrt(2 * (resid**2).sum() / 8))


def test_paired_difference_uses_common_seeds_and_t_interval():
    noise = S.Noise(sd_diff=1.0, df=8, k=5)
    res = S.paired({0: 3.0, 1: 4.0, 2: 5.0}, {0: 1.0, 1: 2.5, 3: 0.0}, 1.0, noise, 0.05)
    assert res.n == 2 and res.d == pytest.approx(1.75) and res.sd == pytest.approx(math.sqrt(0.125))
    half = st.t.ppf(0.975, 8) / math.sqrt(2)
    assert res.ci == pytest.approx((1.75 - half, 1.75 + half))
    assert res.p == pytest.approx(2 * st.t.sf(1.75 * math.sqrt(2), 8))
    assert S.paired({0: 1.0}, {0: 0.0}, 1.0, noise, 0.05).p is None  # one paired seed: no test


def test_holm_step_down():
    assert S.holm([0.01, 0.04, 0.03, None]) == pytest.approx([0.03, 0.06, 0.06, None])
    assert S.holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])


def test_detectable_difference_and_seeds_needed():
    big = S.detectable(1.0, 1, 10_000, 0.05, 0.8)
    assert big == pytest.approx(st.norm.ppf(0.975) + st.norm.ppf(0.8), rel=1e-3)  # large df: the z formula
    assert S.detectable(1.0, 3, 2, 0.05, 0.8) > S.detectable(1.0, 3, 8, 0.05, 0.8)  # fewer df, less power
    n = S.seeds_needed(1.0, 0.5, 5, 0.05, 0.8)
    assert S.detectable(1.0, n, 4 * (n - 1), 0.05, 0.8) <= 0.5 < S.detectable(1.0, n - 1, 4 * (n - 2), 0.05, 0.8)


def test_spearman_with_exact_permutation_p():
    rho, p = S.spearman([0, 1, 2, 3, 4], [0.1, 1.3, 1.2, 3.0, 4.0])
    assert rho == pytest.approx(st.spearmanr([0, 1, 2, 3, 4], [0.1, 1.3, 1.2, 3.0, 4.0]).statistic)
    assert S.spearman([0, 1, 2, 3, 4], [0, 1, 2, 3, 4])[1] == pytest.approx(2 / 120)  # 2 of 5! orders as extreme
    assert S.spearman([0, 1], [1, 0]) == (-1.0, None) and S.spearman([0, 0], [1, 2]) == (None, None)


def test_one_sample_interval_and_p_use_the_samples_own_noise():
    d = [0.4, 1.1, 0.2, 0.9, 0.6]
    t = S.one_sample(d, 0.05)
    se = np.std(d, ddof=1) / math.sqrt(len(d))
    half = st.t.ppf(0.975, len(d) - 1) * se
    assert t.n == 5 and t.mean == pytest.approx(0.64)
    assert t.ci == pytest.approx((0.64 - half, 0.64 + half))
    assert t.p == pytest.approx(2 * st.t.sf(0.64 / se, 4))
    assert S.one_sample(d, 0.2).ci[0] > t.ci[0]  # a wider level gives a wider interval


def test_one_sample_gives_no_interval_without_spread_or_below_two_values():
    assert S.one_sample([0.5, 0.5, 0.5], 0.05).ci is None
    one = S.one_sample([0.5], 0.05)
    assert (one.n, one.mean, one.ci, one.p) == (1, 0.5, None, None)
    assert math.isnan(S.one_sample([], 0.05).mean)
