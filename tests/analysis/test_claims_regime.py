"""Regime and verdict defects on fabricated studies, judged from the records up (report.judging), and claim (f)."""

from __future__ import annotations

import pytest
from scipy import stats as st

from coatsearch.analysis.results import Pair
from coatsearch.analysis.stats import PairTest
from coatsearch.papers import categories as K
from coatsearch.papers import judging, stem
from coatsearch.papers import verdicts as V
from tests.report_records import AGREE, SPACE, edit_runs, layout_records, record, seeded, vit_records, with_derived

SPLITS = {"C-C-T-T": 0.841, "V2": 0.839, "V1": 0.801}


def stepped(values: dict, edit=None) -> list:
    """layout_records with step-level generalization curves (the report reads claim (a) off them), edited."""

    def step(r, m):
        if "curves.generalization" in m:
            m["curves.generalization"]["step"] = list(range(6))
            if edit:
                edit(r, m)

    return edit_runs(layout_records(values), step)


def _judge(values: dict, edit=None) -> dict[str, dict]:
    return {c.id: c for c in judging.judge_records(SPACE, stepped(values, edit)).claims}


def _gen(**accs: float) -> dict:
    """AGREE with these generalization eval accuracies (the curves read them at the matched level too)."""
    base = {**{n: v[1] for n, v in AGREE["generalization.eval_acc"].items()}, **accs}
    rest = {k: v for k, v in AGREE.items() if k != "generalization.matched_acc"}  # the report reads it off curves
    return {**rest, **seeded({"generalization.eval_acc": base})}


def test_violation_p_is_one_sided_beyond_the_margin():
    def pair(d: float = -3.0, paper: str = "≥", se: float | None = 1.0) -> Pair:
        return Pair("a", "b", paper, False, 1.0, PairTest(4, d, None, (), se, 8))

    assert V.violation_p(pair()) == pytest.approx(st.t.cdf(-2.0, 8))
    assert V.violation_p(pair(paper="≈")) == pytest.approx(2 * st.t.cdf(-2.0, 8))
    assert V.violation_p(pair(3.0, "≈")) == pytest.approx(2 * st.t.sf(2.0, 8))
    assert V.violation_p(pair(3.0)) > 0.99  # '≥' is only violated downwards
    assert V.violation_p(pair(se=None)) is None


def test_judging_returns_new_pairs_and_leaves_the_measured_ones_unjudged():
    measured = (Pair("a", "b", ">", True, 1.0, PairTest(3, 2.0, 0.5, (), 0.2, 8, (1.5, 2.5), (1.6, 2.4), 1e-5)),)
    (judged,) = V.judge(measured)
    assert judged.status == "holds" and judged.p_holm == pytest.approx(1e-5) and measured[0].status == ""
    assert list(judged.to_json())[-3:] == ["p_test", "p_holm", "status"] and "status" not in measured[0].to_json()


def test_v0_far_below_v2_refutes_claim_d():
    """b1c4749's rule: 'supported' (V2 > V1 holds; the ≥ relation was never tested)."""
    d = _judge(_gen(**{**SPLITS, "C-C-T-T": 0.78}))["d"]
    assert d.verdict == "not supported"
    assert "'≥' relation violated beyond its margin: V0 ≥ V2 (-5.93, margin 0.3)" in d.why  # 78.0 vs 83.9 ± jitter
    v0v2, v2v1 = d.evidence[0].pairs
    assert v0v2.status == "violated" and v0v2.p_holm < 0.04 and v2v1.status == "holds"


def test_c_c_c_t_far_above_c_c_c_c_refutes_claim_a():
    """b1c4749's rule: 'supported' (the ≈ relation only got an equivalence statement)."""
    claims = _judge(_gen(**{"C-C-C-C": 0.80, "C-C-C-T": 0.86}))
    a = claims["a"]
    assert a.evidence[0].key == "generalization.matched_acc"
    assert a.verdict == "not supported" and "C-C-C-C ≈ C-C-C-T (-6.02, margin 1)" in a.why
    assert [p.status for p in a.evidence[0].pairs] == ["violated", "non-inferior", "holds", "holds"]
    assert _judge(_gen())["a"].verdict == "supported"  # the same study with C-C-C-C ≈ C-C-C-T: supported


def _loss(candidate: str, losses: list[float]):
    def edit(r, m):
        if r.candidate == candidate or candidate == "*":
            m["curves.generalization"]["train_loss"] = losses

    return edit


def test_censored_model_that_must_learn_puts_claim_a_out_of_regime_a_predicted_loser_does_not():
    """b1c4749's rule read every candidate at 0.316 nats (the slowest fitter's lowest) and judged (a) there."""
    stuck = [2.0, 1.0, 0.6, 0.4, 0.3, 0.3]
    j = judging.judge_records(SPACE, stepped(_gen(), _loss("C-C-C-C", stuck)))
    a = next(c for c in j.claims if c.id == "a")
    assert a.verdict == K.OUT_OF_REGIME and a.reason.startswith("C-C-C-C never fit below 0.316 nats")
    assert a.why == (
        "out of regime — C-C-C-C never fit below 0.316 nats; every run of a model that must learn must reach "
        "0.1 nats, where train accuracy exceeds eval accuracy"
    )
    assert j.gen.level == pytest.approx(0.1) and j.gen.key[:2] == ("ViT_REL", "C-C-C-C")
    # C-T-T-T, which the paper predicts to generalize worse, does not gate (a): it is named and left unread
    j = judging.judge_records(SPACE, stepped(_gen(), _loss("C-T-T-T", stuck)))
    a = next(c for c in j.claims if c.id == "a")
    assert "out of regime" not in a.why and j.gen.out_of_regime == ()
    assert any(n.startswith("C-T-T-T never fit below 0.316 nats: not read") for n in j.gen.censored)
    assert "C-T-T-T" not in [m.name for m in a.evidence[0].members]


def test_claim_a_never_vanishes_when_every_candidate_is_censored():
    """b1c4749's rule dropped (a) from the report: no candidate reached the ladder, so no verdict at all."""
    a = _judge(_gen(), _loss("*", [2.3, 2.2, 2.1, 2.0, 1.9, 1.8]))["a"]
    assert a.verdict == K.OUT_OF_REGIME and a.evidence == ()
    assert a.estimate is None and a.decide.startswith("a profile in regime")
    assert a.why.startswith("out of regime — C-C-C-C never reached the ladder; C-C-C-T never reached the ladder")


def test_a_claim_with_one_model_measured_is_not_tested_not_dropped():
    only = seeded({"generalization.eval_acc": {"C-C-C-C": 0.86}})
    rows = [r for r in judging.judge_records(SPACE, stepped(only)).rows if r.candidate == "C-C-C-C"]
    b = V.chain_claim(V.C.CHAIN_CLAIMS[1], rows)
    assert b.verdict == "not tested at this scale" and "measured models: C-C-C-C" in b.why
    assert V.chain_claim(V.C.CHAIN_CLAIMS[3], rows) is None  # none of V0/V1/V2: not this study's claim


def fixed_runs(p_sgd_drop: float, c_sgd_drop: float, seeds=(0, 1, 2), c_gain: float = 0.03) -> list[dict]:
    """ViT_P / ViT_C × AdamW / SGD at one fixed recipe per cell and seed, plus 3 sampled lr/wd runs per curve;
    ViT_C `c_gain` above ViT_P in both of its cells (the peak part)."""
    recs, jitter = [], (0.0, 0.004, -0.003, 0.002)
    for s in seeds:
        for i, (label, opt) in enumerate(stem.CELLS):
            drop = {("ViT_P", "sgd"): p_sgd_drop, ("ViT_C", "sgd"): c_sgd_drop}.get((label, opt), 0.0)
            acc = 0.85 - drop + 0.01 * s + jitter[(i + s) % 4] + (c_gain if label == "ViT_C" else 0.0)
            metrics = with_derived({"accuracy.eval_acc": acc})
            lr = 1e-3 if opt == "adamw" else 5e-2
            recs.append(record(len(recs), f"{label}-{opt}", s, metrics, label=label, optimizer=opt, lr=lr))
            sampled = with_derived({"accuracy.eval_acc": acc - 0.02 * (1 + s)})
            recs.append(record(len(recs), f"{label}-{opt}-search", s, sampled, label=label, optimizer=opt,
                               lr=lr * (2 + s), params={"train.lr": lr * (2 + s)}))  # fmt: skip
    return recs


def _stem(recs: list[dict]) -> dict | None:
    space = {"study": {"objective": "accuracy.eval_acc"}}
    return next((c for c in judging.judge_records(space, recs).claims if c.id == "f"), None)


def test_claim_f_gap_contrast_is_paired_by_seed_at_fixed_recipes():
    recs = fixed_runs(0.10, 0.005)
    acc = {(r.run.label, r.run.optimizer_name, r.seed): 100 * r.run.value("accuracy.eval_acc")
           for r in recs if not r.params.get("train.lr")}  # fmt: skip
    want = [(acc["ViT_P", "adamw", s] - acc["ViT_P", "sgd", s]) - (acc["ViT_C", "adamw", s] - acc["ViT_C", "sgd", s])
            for s in (0, 1, 2)]  # fmt: skip
    good = _stem(recs)
    gap = good.parts[0]
    assert gap.n == 3 and gap.d == pytest.approx(sum(want) / 3) and gap.status == "holds"
    half = st.t.ppf(0.975, 2) * st.tstd(want) / 3**0.5
    assert gap.ci == pytest.approx((gap.d - half, gap.d + half)) and gap.ci[0] > 0
    assert good.verdict == "supported"
    edf, (length, peak) = good.parts[1:-2], good.parts[-2:]
    assert [p.short for p in edf] == ["EDF (adamw)", "EDF (sgd)"] and all(p.status == "not tested" for p in edf)
    # the family: gap, two EDF parts, peak (the length part did not run)
    assert edf[0].reason == f"cannot be resolved with 3 runs per curve; needs about {stem.runs_needed(4)}"
    assert "needs about" in good.why
    assert length.status == "not run" and peak.status == "holds" and peak.d == pytest.approx(3.0, abs=0.5)
    assert good.scope == (
        "gap contrast and peak parts only; training length not run; EDF (adamw) and EDF (sgd) not resolvable at "
        "these runs"
    )
    assert _stem(fixed_runs(0.0, 0.10)).verdict == "not supported"  # ViT_C loses 10 points with SGD
    same = _stem(fixed_runs(0.003, 0.005))  # no interaction, 3 seeds that could have seen the paper's 4.6 points
    det = same.detectable
    assert same.verdict == K.UNRESOLVED and det is not None and det.mdd is not None and det.mdd < det.effect == 4.6
    assert same.estimate.n == 3 and same.decide.startswith(("about", "more than", "a larger effect"))
    assert good.estimate.d == gap.d and good.decide == K.DECIDED


def test_claim_f_without_fixed_recipes_is_not_decided_by_best_runs():
    f = _stem(vit_records())  # one seed, 8 sampled lr/wd per cell: no fixed recipe on 2 seeds
    assert f.parts[0].status == "not tested" and "sampled lr/wd confound seed and recipe" in f.why
    assert f.verdict == K.UNDERPOWERED and f.decide.startswith("at least 2 paired seeds")
    assert all(p.status == "holds" for p in f.parts[1:-2])  # 8 vs 8 runs: Fisher can reach its Holm level
    length, peak = f.parts[-2:]  # one seed: a seed-paired part is never tested on it
    assert (length.status, length.n, peak.status, peak.n) == ("not tested", 1, "not tested", 1)
    assert length.what == "training-length Δerror ViT_P − ViT_C at 2 vs 8 epochs, points"


def test_claim_f_gates_each_stem_at_its_better_optimizer_never_the_predicted_loser():
    def linear(acc: float, seed: int, fair: float | None = None) -> dict:
        metrics = with_derived({"accuracy.eval_acc": acc, **({"accuracy.floor_acc": fair} if fair else {})})
        return record(900 + seed, "baseline-linear", seed, metrics, label="linear baseline", optimizer="adamw")

    assert _stem([*fixed_runs(0.10, 0.005), *(linear(0.70, s) for s in range(3))]).verdict == "supported"
    # ViT_P SGD runs 0.754, 0.757, 0.772 (mean 76.1%) sit below a 77% floor: the paper predicts that cell to be bad,
    # so it never gates; each stem at AdamW (85-87%) beats the floor by an interval
    low = _stem([*fixed_runs(0.10, 0.005), *(linear(0.77, s) for s in range(3))])
    assert low.verdict == "supported" and "out of regime" not in low.why
    # the fair floor (the best linear classifier chosen on validation images) replaces the recipe run's accuracy
    fair = _stem([*fixed_runs(0.10, 0.005), *(linear(0.70, s, fair=0.90) for s in range(3))])
    assert fair.verdict == K.OUT_OF_REGIME
    assert fair.why.startswith("out of regime — ViT_P at its better optimizer (AdamW) not shown above the fair "
                                  "linear floor: -4.")  # fmt: skip
    one = _stem([*fixed_runs(0.10, 0.005), linear(0.70, 0)])  # a baseline on seed 0 only: no interval
    assert one.why.startswith("out of regime — ViT_P at its better optimizer (AdamW) not shown above the fair "
                                 "linear floor: +15.0 points over 1 seed(s), no interval")  # fmt: skip


def length_runs(p_loss: float, c_loss: float, seeds=(0, 1, 2, 3)) -> list[dict]:
    """ViT_P-length and ViT_C-length runs at 2, 4 and 8 epochs per seed: each loses `*_loss` at 2 epochs against 8."""
    recs, jitter = [], (0.0, 0.003, -0.004, 0.002)
    for s in seeds:
        for label, loss in (("ViT_P", p_loss), ("ViT_C", c_loss)):
            top = 0.85 + 0.01 * s
            metrics = with_derived({"accuracy.eval_acc": top})
            short = top - loss + jitter[(s + len(recs)) % 4]
            metrics.update({"length.epochs": [2, 4, 8], "length.eval_acc": [short, top - loss / 2, top],
                            "length.eval_acc_longest": top})  # fmt: skip
            recs.append(record(500 + len(recs), f"{label}-length", s, metrics, label=label, optimizer="adamw"))
    return recs


def test_claim_f_peak_part_decides_with_the_gap_and_names_the_part_that_did_not_hold():
    flat = _stem(fixed_runs(0.10, 0.005, c_gain=0.0))  # the gap holds, ViT_C no better at its best optimizer
    peak = flat.parts[-1]
    assert peak.short == "peak" and peak.status == "unresolved" and abs(peak.d) < 0.5
    assert flat.verdict == K.UNRESOLVED and flat.reason.startswith("1 of 2 deciding part(s) hold")
    det = flat.detectable  # the part that did not hold sizes the verdict
    assert det is not None and det.effect == stem.C.PEAK_EFFECT == 2.4
    # ... and is the deciding estimate, so "what would decide it" sizes that part at its own difference and noise
    assert flat.estimate.what.startswith("peak accuracy") and flat.estimate.d == pytest.approx(peak.d)
    assert flat.estimate.ci == pytest.approx(peak.ci) and f"{abs(peak.d):.2f})" in flat.decide
    held = _stem(fixed_runs(0.10, 0.005))  # every part holds: the gap stays the headline
    assert held.verdict == "supported" and held.estimate.what.startswith("gap contrast")
    worse = _stem(fixed_runs(0.10, 0.005, c_gain=-0.05))
    assert worse.parts[-1].status == "reversed" and worse.verdict == "not supported"
    # each seed's better optimizer is chosen on that seed's validation images (here the same readings as the test's)
    recs = fixed_runs(0.10, 0.005)
    acc = {(r.run.label, r.run.optimizer_name, r.seed): 100 * r.run.value("accuracy.eval_acc")
           for r in recs if not r.params.get("train.lr")}  # fmt: skip
    want = [max(acc["ViT_C", o, s] for o in ("adamw", "sgd")) - max(acc["ViT_P", o, s] for o in ("adamw", "sgd"))
            for s in (0, 1, 2)]  # fmt: skip
    assert _stem(recs).parts[-1].per_seed == pytest.approx({str(s): w for s, w in enumerate(want)})


def test_claim_f_length_part_is_paired_by_seed_at_the_shortest_against_the_longest_schedule():
    recs = [*fixed_runs(0.10, 0.005, seeds=(0, 1, 2, 3)), *length_runs(0.05, 0.01)]
    f = _stem(recs)
    length = f.parts[-2]
    acc = {(r.run.label, r.seed): r.run.value("length.eval_acc") for r in recs if r.candidate.endswith("-length")}
    want = [100 * ((acc["ViT_P", s][2] - acc["ViT_P", s][0]) - (acc["ViT_C", s][2] - acc["ViT_C", s][0]))
            for s in range(4)]  # fmt: skip
    assert length.short == "training length" and length.n == 4 and length.d == pytest.approx(sum(want) / 4)
    assert length.status == "holds" and f.verdict == "supported"
    assert f.scope.startswith("gap contrast, training length and peak parts only")
    same = _stem([*fixed_runs(0.10, 0.005, seeds=(0, 1, 2, 3)), *length_runs(0.03, 0.03)])
    assert same.parts[-2].status == "unresolved" and same.verdict in (K.UNRESOLVED, K.UNDERPOWERED)
    assert same.detectable is not None and same.detectable.effect == stem.C.LENGTH_EFFECT
