"""report.verdicts: relation symbols under the rule, rankings, Spearman, and each claim's verdict."""

from __future__ import annotations

import pandas as pd
import pytest

from coatsearch.report import info, optim
from coatsearch.report import measures as M
from coatsearch.report import verdicts as V
from coatsearch.report.info import METRICS, Stat
from tests.report_records import AGREE, SPACE, layout_records, noisy, record, reverse, vit_records, with_derived

ACC = METRICS["generalization.eval_acc"]
LOSS = METRICS["capacity.train_loss"]
SPLITS = {"generalization.eval_acc": {"C-C-T-T": [0.840, 0.842], "V2": [0.838, 0.840], "V1": [0.800, 0.802]}}


def _rows(values: dict) -> list[dict]:
    return info.candidate_rows(SPACE, layout_records(values))


def _claims(values: dict) -> dict[str, dict]:
    return {c["id"]: c for c in V.all_claims(_rows(values), [], [])}


@pytest.mark.parametrize(
    ("a", "b", "metric", "symbol"),
    [
        (Stat(85.0, 0.1, 2), Stat(84.95, 0.1, 2), ACC, "≈"),  # d = 0.05 < se = 0.1
        (Stat(85.0, 0.1, 2), Stat(84.85, 0.1, 2), ACC, "≥"),  # se ≤ d < 2·se
        (Stat(85.0, 0.1, 2), Stat(84.5, 0.1, 2), ACC, ">"),
        (Stat(84.5, 0.1, 2), Stat(85.0, 0.1, 2), ACC, "<"),
        (Stat(85.0, None, 1), Stat(84.6, 0.1, 2), ACC, "≈"),  # n = 1: floor 0.5 points
        (Stat(85.0, None, 1), Stat(84.2, None, 1), ACC, "≥"),
        (Stat(85.0, None, 1), Stat(83.9, None, 1), ACC, ">"),
        (Stat(0.10, 0.0, 2), Stat(0.30, 0.0, 2), LOSS, ">"),  # lower loss is better; zero spread
        (Stat(0.10, 0.0, 2), Stat(0.10, 0.0, 2), LOSS, "≈"),
    ],
)
def test_compare_symbols(a, b, metric, symbol):
    assert V.compare(a, b, metric)["symbol"] == symbol


def test_compare_reports_the_unit_used():
    rel = V.compare(Stat(85.0, 0.3, 2), Stat(84.0, 0.4, 2), ACC)
    assert rel["se"] == pytest.approx((0.3**2 / 2 + 0.4**2 / 2) ** 0.5) and not rel["floor"]
    assert V.compare(Stat(85.0, None, 1), Stat(84.0, 0.4, 2), ACC)["floor"]


def test_ranking_orders_best_first_with_symbols():
    rows = _rows(AGREE)
    gap = V.ranking(rows, "generalization.gap")
    assert [o["candidate"] for o in gap["order"]] == ["C-C-C-C", "C-C-C-T", "C-C-T-T", "C-T-T-T", "ViT_REL"]
    assert [r["symbol"] for r in gap["relations"]] == ["≈", ">", ">", ">"]
    assert gap["text"].startswith("C-C-C-C (5.1 ± 0.1) ≈ C-C-C-T (5.2 ± 0.1) >")
    loss = V.ranking(rows, "capacity.train_loss")
    assert loss["order"][0]["candidate"] == "C-C-T-T" and loss["order"][-1]["candidate"] == "C-C-C-C"
    assert [r["key"] for r in V.rankings(rows)] == [
        k
        for k in V.RANKED
        if k not in ("accuracy.eval_acc", "robustness.corrupt_acc", "generalization.matched_acc", "transfer.gain")
    ]


@pytest.mark.parametrize(
    ("x", "y"),
    [([1, 2, 3, 4], [10, 20, 30, 40]), ([1, 2, 3, 4], [4, 3, 2, 1]), ([1, 2, 2, 4, 3], [5, 3, 3, 1, 0])],
)
def test_spearman_matches_pandas(x, y):
    assert V.spearman(x, y) == pytest.approx(pd.Series(x).corr(pd.Series(y), method="spearman"))


def test_spearman_degenerate():
    assert V.spearman([1], [2]) is None and V.spearman([1, 1], [1, 2]) is None
    assert V.average_ranks([3.0, 1.0, 3.0]) == [2.5, 1.0, 2.5]


def test_parse_chain():
    assert V.parse_chain("A ≈ B ≥ C > D ≫ E") == (["A", "B", "C", "D", "E"], ["≈", "≥", ">", "≫"])


def test_paper_like_study_supports_every_claim():
    claims = _claims({**AGREE, **SPLITS})
    assert {k: c["verdict"] for k, c in claims.items()} == dict.fromkeys("abcd", "supported")
    a = claims["a"]["evidence"][0]
    assert a["key"] == "generalization.gap" and a["rho"] > 0.9
    assert [p["key"] for p in a["pairs"]] == [False, False, True, True]  # ≈, ≥ are not key relations
    assert claims["d"]["notes"] == ["'C-C-T-T' stands in for V0 (no candidate named V0)"]


def test_reversed_study_supports_none():
    claims = _claims(reverse(AGREE))
    assert {k: c["verdict"] for k, c in claims.items()} == dict.fromkeys("abc", "not supported")
    assert claims["a"]["evidence"][0]["rho"] < 0


def test_noisy_study_is_inconclusive():
    claims = _claims(noisy(AGREE))
    assert {k: c["verdict"] for k, c in claims.items()} == dict.fromkeys("abc", "inconclusive")


def test_second_measure_contradicting_the_first_makes_it_inconclusive():
    values = {**AGREE, "generalization.eval_acc": reverse(AGREE)["generalization.eval_acc"]}
    a = _claims(values)["a"]
    assert a["verdict"] == "inconclusive" and "gen. eval acc says not supported" in a["why"]


def test_claim_needs_two_models_and_a_key_relation():
    only = {"generalization.gap": {"C-C-C-C": [0.05, 0.05], "C-C-C-T": [0.06, 0.06]}}
    rows = [r for r in _rows(only) if r["candidate"] in ("C-C-C-C", "C-C-C-T")]
    a = V.chain_claim(V.C.CHAIN_CLAIMS[0], rows)
    assert a["verdict"] == "inconclusive" and "no strict relation" in a["why"]
    assert V.chain_claim(V.C.CHAIN_CLAIMS[2], rows) is None  # no transfer scores, no C-T-T-T: not covered


def test_v_table_against_table7():
    table = V.v_table(_rows({**AGREE, **SPLITS}))
    assert [v["variant"] for v in table] == ["V0", "V1", "V2"]
    v0, v1 = table[0], table[1]
    assert v0["candidate"] == "C-C-T-T" and v0["note"] and v0["paper_top1"] == 84.1
    assert v1["depths"] == [1, 1, 9, 1] and v1["paper_blocks"] == [2, 2, 2, 18, 2]
    assert v1["generalization.eval_acc"].mean == pytest.approx(80.1)
    assert V.v_table(_rows(AGREE)) == []  # no V1/V2: no table


def _rel_rows(on: float, off: float) -> list[dict]:
    recs = [
        record(2 * i + s, name, s, with_derived({"generalization.eval_acc": acc + 0.002 * s}))
        for i, (name, acc) in enumerate((("C-C-T-T", on), ("C-C-T-T-norel", off)))
        for s in (0, 1)
    ]
    return info.candidate_rows({}, recs)


def test_relative_attention_pairs_and_verdicts():
    rows = _rel_rows(0.85, 0.80)
    assert [(a["candidate"], b["candidate"]) for a, b in V.rel_pairs(rows)] == [("C-C-T-T", "C-C-T-T-norel")]
    assert V.rel_claim(rows)["verdict"] == "supported"
    assert V.rel_claim(_rel_rows(0.80, 0.85))["verdict"] == "not supported"
    assert V.rel_claim(_rel_rows(0.85, 0.849))["verdict"] == "inconclusive"
    assert V.rel_claim(_rows(AGREE)) is None


def _stem(recs: list[dict]) -> dict | None:
    acc = "accuracy.eval_acc"
    return V.stem_claim(optim.optimizer_gap(recs, acc), M.edf(M.runs_frame(recs, acc)))


def test_conv_stem_claim():
    good = _stem(vit_records())
    assert good["verdict"] == "supported" and len(good["parts"]) == 3
    assert good["parts"][0]["d"] == pytest.approx(9.5)  # ViT_P gap 10 − ViT_C gap 0.5
    bad = vit_records(p_sgd_drop=0.0, c_sgd_drop=0.10)
    assert _stem(bad)["verdict"] == "not supported"  # ViT_C now loses 10 points with SGD
    same = _stem(vit_records(p_sgd_drop=0.005, c_sgd_drop=0.005, p_spread=0.01))
    assert same["verdict"] == "inconclusive" and {p["status"] for p in same["parts"]} == {"unresolved"}
    assert _stem(layout_records()) is None
