"""The verdict rule's calibration (report.calibration): simulated studies as records, judged by the report's path."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats as st

from coatsearch.report import calibration as K
from coatsearch.report import claims as C
from coatsearch.report import paper
from coatsearch.report import stats as S


@pytest.fixture(scope="module")
def table() -> dict:
    committed = K.table()
    assert committed is not None, f"calibration.json is stale: regenerate it for rule {K.RULE_VERSION}"
    return committed


def _summary(table: dict) -> str:
    return "; ".join(
        f"({k}) null {100 * v['null_firm']:.1f}% of {v['null_n']} (95% upper {100 * v['null_firm_upper95']:.1f}%), "
        f"power {100 * v['power']:.0f}% of {v['power_n']}"
        for k, v in sorted(table["per_claim"].items())
    )


def test_committed_table_regenerates_through_the_record_pipeline(table):
    """A stride of the committed replicates, rerun from their own seeds through report.judging, match exactly."""
    for case, key, stride in (("null", "null", 25), ("power", "alternative", 10)):
        codes = table[key]["codes"]
        for i in range(0, len(codes), stride):
            got = K.replicate(case, i, table["seed"])
            code = {"supported": "s", "not supported": "n", "inconclusive": "i", K.NOT_TESTED: "t"}
            assert "".join(code[got[c]] if c in got else "-" for c in K.CLAIMS) == codes[i], (case, i)


def test_rates_follow_from_the_replicates(table):
    rates = K.rates(table["null"], table["alternative"])
    assert rates == table["per_claim"]  # JSON keeps floats exactly
    for j, cid in enumerate(K.CLAIMS):
        firm = sum(code[j] in "sn" for code in table["null"]["codes"])
        assert firm / sum(code[j] != "-" for code in table["null"]["codes"]) == table["per_claim"][cid]["null_firm"]


def test_null_studies_give_firm_verdicts_in_at_most_5_percent_per_claim(table):
    print("\ncalibration per claim:", _summary(table))
    assert set(table["per_claim"]) == set("abcdef") and table["replicates"] == 1000
    for cid, v in table["per_claim"].items():
        assert v["null_firm"] <= 0.05 and v["null_firm_upper95"] <= 0.065, (cid, _summary(table))


def test_paper_order_is_supported_in_at_least_80_percent_per_claim(table):
    assert table["effect_sigma"] == K.EFFECT and table["stem_effect_sigma"] == K.STEM_EFFECT
    for cid, v in table["per_claim"].items():
        assert v["power"] >= 0.80, (cid, _summary(table))
        # rarely refuted when the paper is right: at (d)'s derived 0.3-point margin its '≥' test refutes 2% (4 of 200)
        assert v["alt_not_supported"] <= 0.025 * v["power_n"], cid


def test_every_refutation_path_fires():
    got = K.paths()
    for name, (_, _, cid, verdict, words) in K.PATHS.items():
        assert got[name]["claim"] == cid and got[name]["verdict"] == verdict and words in got[name]["why"], name


def test_the_rule_can_fail_calibration():
    """The bounds can fail: with one seed the rule is never firm; at 1σ the power bound fails."""
    one = [K.verdicts(K.study(np.random.default_rng(i), 6.0, n_seeds=1)) for i in range(3)]
    assert all(v in ("inconclusive", K.NOT_TESTED) for row in one for v in row.values())
    weak = [K.verdicts(K.study(np.random.default_rng(i), 1.0, stress=False, stem_effect=1.0)) for i in range(8)]
    assert sum(row["a"] == "supported" for row in weak) < 0.8 * len(weak)
    assert K.upper(3, 40) > 0.065 and K.upper(0, 1000) < 0.0031  # Clopper-Pearson, one-sided


def test_simulated_orders_follow_the_claims():
    where = K.places()
    assert where["generalization.matched_acc"] == {"C-C-C-C": 0, "C-C-C-T": 0, "C-C-T-T": 0, "C-T-T-T": 1,
                                                   "ViT_REL": 2}  # fmt: skip
    assert where["transfer.gain"] == {"C-C-T-T": 0, "C-T-T-T": 1}
    assert where["generalization.eval_acc"] == {"C-C-T-T": 0, "V2": 0, "V1": 1, "C-C-T-T-norel": 1}


def test_the_simulated_measures_are_the_claims_own():
    ms, by_id = K.measures(), K.claims()
    assert ms.matched == by_id["a"].measures[0] == paper.MATCHED_KEY and ms.curve == f"curves.{paper.GEN}"
    assert ms.recipe == K.SPACE["study"]["objective"] == K.OBJECTIVE and ms.recipe not in ms.recorded + ms.only
    assert set(ms.recorded) == {k for c in by_id.values() for k in c.measures} - {ms.recipe, ms.matched, *ms.only}
    assert ms.only == by_id[K.ONLY].measures and ms.only_by == ("C-C-T-T", "C-T-T-T")
    assert ms.runs("C-C-T-T") == (*ms.recorded, ms.matched, *ms.only) and ms.runs(C.BASELINES[0]) == ms.floor


def _reclaim(monkeypatch, cid: str, measures: tuple[str, ...]) -> None:
    claims = tuple(dataclasses.replace(c, measures=measures) if c.id == cid else c for c in C.CHAIN_CLAIMS)
    monkeypatch.setattr(C, "CHAIN_CLAIMS", claims)


def test_a_claim_whose_measure_changes_is_simulated_on_the_new_one(monkeypatch):
    """Claim (b) read on the generalization run's train loss: the layouts record it, in (b)'s order; not the old."""
    _reclaim(monkeypatch, "b", ("generalization.train_loss", "capacity.eval_acc"))
    assert K.places()["generalization.train_loss"] == {"C-C-T-T": 0, "C-T-T-T": 0, "ViT_REL": 1, "C-C-C-T": 2,
                                                       "C-C-C-C": 3}  # fmt: skip
    recs = K.study(np.random.default_rng(0), K.EFFECT, stress=False)

    def mean(cand: str, key: str) -> float | None:
        vals = [r.run.number(key) for r in recs if r.candidate == cand]
        return None if None in vals else sum(vals) / len(vals)

    assert mean("C-C-C-C", "capacity.train_loss") is None  # no claim reads it any more
    assert mean("C-C-C-C", "generalization.train_loss") > mean("C-C-T-T", "generalization.train_loss") + 0.2
    assert mean(C.BASELINES[0], "generalization.train_loss") is None  # the linear baseline records accuracies


def test_a_claim_measure_the_simulation_cannot_make_is_an_error(monkeypatch):
    _reclaim(monkeypatch, "b", ("capacity.flops_per_joule",))
    with pytest.raises(ValueError, match="capacity.flops_per_joule"):
        K.measures()


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
    assert res["n"] == 2 and res["d"] == pytest.approx(1.75) and res["sd"] == pytest.approx(math.sqrt(0.125))
    half = st.t.ppf(0.975, 8) / math.sqrt(2)
    assert res["ci"] == pytest.approx((1.75 - half, 1.75 + half))
    assert res["p"] == pytest.approx(2 * st.t.sf(1.75 * math.sqrt(2), 8))
    assert S.paired({0: 1.0}, {0: 0.0}, 1.0, noise, 0.05)["p"] is None  # one paired seed: no test


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
