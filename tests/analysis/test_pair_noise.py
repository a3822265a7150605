"""Each pair's own noise (stats.PAIR_NOISE_RULE): no interval is narrower than the pair's own paired noise gives."""

from __future__ import annotations

import math

import pytest
from scipy import stats as st

from coatsearch.analysis import stats as S
from coatsearch.papers import verdicts as V

POOLED = S.Noise(sd_diff=0.64, df=16, k=5)  # (a)'s pooled sd at the committed default, df (k − 1)(n − 1)


def _own_test(d: list[float]) -> tuple[tuple[float, float], float]:
    """The pair's own one-sample t interval (95%) and two-sided p, n − 1 df."""
    n, mean, sd = len(d), sum(d) / len(d), st.tstd(d)
    half = st.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return (mean - half, mean + half), float(2 * st.t.sf(abs(mean) / (sd / math.sqrt(n)), n - 1))


def test_a_pair_noisier_than_the_pool_gets_its_own_wider_interval():
    b = {s: 0.0 for s in range(5)}
    a = {0: 1.2, 1: 2.9, 2: 2.6, 3: 1.5, 4: 2.6}  # own paired sd 0.76 against the pooled 0.64
    res = S.paired(a, b, 1.0, POOLED, 0.05)
    ci, p = _own_test(list(a.values()))
    assert res.own_noise and res.df == 4 and res.ci == pytest.approx(ci) and res.p == pytest.approx(p)
    old_half = st.t.ppf(0.975, POOLED.df) * POOLED.sd_diff / math.sqrt(5)  # the pooled interval before the rule
    assert res.ci[1] - res.ci[0] > 2 * old_half


def test_a_pair_as_quiet_as_the_pool_keeps_the_pooled_noise_and_its_df():
    b = {s: 0.0 for s in range(5)}
    a = {0: 2.0, 1: 2.3, 2: 1.8, 3: 2.1, 4: 2.2}  # own sd 0.19: the pooled interval is the wider
    res = S.paired(a, b, 1.0, POOLED, 0.05)
    half = st.t.ppf(0.975, POOLED.df) * POOLED.sd_diff / math.sqrt(5)
    assert not res.own_noise and res.df == POOLED.df and res.ci == pytest.approx((2.08 - half, 2.08 + half))


@pytest.mark.parametrize("own_sd", [0.3, 0.5, 0.63, 0.65, 0.7, 1.0, 2.0])
def test_the_test_reads_the_larger_sd_with_its_own_df(own_sd):
    d = [1.0 + own_sd * z for z in (-1.2649, -0.6325, 0.0, 0.6325, 1.2649)]  # sd own_sd (to 4 digits)
    res = S.paired(dict(enumerate(d)), dict.fromkeys(range(5), 0.0), 1.0, POOLED, 0.05)
    sd = st.tstd(d)
    assert res.se * math.sqrt(5) == pytest.approx(max(sd, POOLED.sd_diff))
    assert (res.df, res.own_noise) == ((4, True) if sd > POOLED.sd_diff else (POOLED.df, False))
    if res.own_noise:  # on its own noise, the pair's own t interval exactly
        assert res.ci == pytest.approx(_own_test(d)[0])


def test_the_rule_is_stated_in_the_method_and_in_docs():
    assert S.PAIR_NOISE_RULE in V.METHOD
    from pathlib import Path

    docs = (Path(__file__).parents[2] / "docs" / "verdicts.md").read_text(encoding="utf-8")
    assert " ".join(S.PAIR_NOISE_RULE.split()) in " ".join(docs.split())
