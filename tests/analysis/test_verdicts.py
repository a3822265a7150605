"""report.verdicts: paired relations in rankings, key relations under Holm, power, regime guards, claim verdicts."""

from __future__ import annotations

import dataclasses

import pytest

from coatsearch.analysis import tables
from coatsearch.analysis.table_rows import CandidateRow, GuardCounts
from coatsearch.papers import categories as K
from coatsearch.papers import verdicts as V
from coatsearch.papers.paper import NOT_TESTED
from coatsearch.scores import ranked
from coatsearch.training.point import Curve
from tests.report_records import (
    AGREE,
    SEEDS,
    SPACE,
    edit_runs,
    layout_records,
    noisy,
    record,
    reverse,
    seeded,
    with_derived,
)

SPLITS = seeded({"generalization.eval_acc": {"C-C-T-T": 0.841, "V2": 0.839, "V1": 0.801}})


def _rows(values: dict, space: dict = SPACE) -> tuple[CandidateRow, ...]:
    return tables.candidate_rows(space, layout_records(values))


def _claims(values: dict) -> dict[str, dict]:
    return {c.id: c for c in V.all_claims(_rows(values), None)}


def _row(name: str, **by_seed) -> CandidateRow:
    return CandidateRow(name, name, name, "", (), None, (), 0, {}, by_seed, {})


def test_compare_symbols_from_paired_differences():
    noise = V.S.Noise(sd_diff=0.2, df=10, k=6)
    a = _row("a", **{"generalization.eval_acc": {0: 85.0, 1: 86.0, 2: 84.0}})
    b = _row("b", **{"generalization.eval_acc": {0: 84.0, 1: 85.0, 2: 83.0, 9: 0.0}})  # seed 9 has no pair
    same = _row("c", **{"generalization.eval_acc": {0: 85.05, 1: 85.95, 2: 84.0}})
    rel = V.compare(a, b, "generalization.eval_acc", noise)
    assert rel.symbol == ">" and rel.test.n == 3 and rel.test.d == pytest.approx(1.0)
    assert V.compare(b, a, "generalization.eval_acc", noise).symbol == "<"
    assert V.compare(a, same, "generalization.eval_acc", noise).symbol == "≈"  # within ± 1 point
    wide = V.S.Noise(sd_diff=3.0, df=10, k=6)
    assert V.compare(a, b, "generalization.eval_acc", wide).symbol == "?"  # neither resolved nor equivalent
    assert V.compare(a, b, "generalization.eval_acc", None).symbol == "?"  # no noise estimate: no test
    loss_a = _row("a", **{"capacity.train_loss": {0: 0.1, 1: 0.2}})
    loss_b = _row("b", **{"capacity.train_loss": {0: 0.3, 1: 0.4}})
    assert V.compare(loss_a, loss_b, "capacity.train_loss", V.S.Noise(0.01, 5, 4)).symbol == ">"  # lower wins


def test_ranking_orders_best_first_with_paired_symbols():
    rows = _rows(AGREE)
    gap = V.ranking(rows, "generalization.gap", V.noises(rows).of("generalization.gap"))
    assert gap is not None and [c for c, _ in gap.order] == ["C-C-C-C", "C-C-C-T", "C-C-T-T", "C-T-T-T", "ViT_REL"]
    assert [r.symbol for r in gap.relations] == ["≈", ">", ">", ">"]
    assert gap.text.startswith("C-C-C-C (5.1 ± 0.2) ≈ C-C-C-T (5.2 ± 0.1) >")
    loss = V.ranking(rows, "capacity.train_loss", V.noises(rows).of("capacity.train_loss"))
    assert loss is not None and loss.order[0][0] == "C-C-T-T" and loss.order[-1][0] == "C-C-C-C"
    measured = {k for r in rows for k in r.metrics}  # every ranked measure the rows have, in registry order
    assert [r.key for r in V.rankings(rows)] == [k for k in ranked() if k in measured]
    # summary.json holds the ranking as it did when it was a dict: key order, order entries, relations
    data = gap.to_json()
    assert list(data) == ["key", "label", "unit", "better", "order", "relations", "text"]
    assert data["order"][0] == {"candidate": "C-C-C-C", "stat": gap.order[0][1]}
    assert list(data["relations"][0])[:3] == ["symbol", "n", "d"] and data["relations"][0]["symbol"] == "≈"


def test_parse_chain():
    assert V.parse_chain("A ≈ B ≥ C > D ≫ E") == (["A", "B", "C", "D", "E"], ["≈", "≥", ">", "≫"])


def test_paper_like_study_supports_every_claim():
    claims = _claims({**AGREE, **SPLITS})
    assert {k: c.verdict for k, c in claims.items()} == dict.fromkeys("abcd", "supported")
    a = claims["a"].evidence[0]
    assert a.key == "generalization.matched_acc" and a.rho > 0.9 and a.rho_p < 0.05
    assert [p.key for p in a.pairs] == [False, False, True, True]  # ≈, ≥ are not key relations
    assert [p.status for p in a.pairs] == ["equivalent", "non-inferior", "holds", "holds"]
    assert all(p.p_holm < 0.05 and p.ci[0] > 0 for p in a.pairs[2:])
    assert claims["d"].notes == ("'C-C-T-T' stands in for V0 (no candidate named V0)",)


def test_reversed_study_supports_none():
    claims = _claims(reverse(AGREE))
    assert {k: c.verdict for k, c in claims.items()} == {**dict.fromkeys("abc", "not supported"), "d": NOT_TESTED}
    assert claims["d"].why.startswith("fewer than two of its models measured")  # V0's stand-in only: not dropped
    assert claims["a"].evidence[0].rho < 0
    assert "significantly reversed" in claims["c"].why


def test_noisy_study_is_not_firm_and_says_what_it_could_detect():
    claims = _claims(noisy(AGREE))
    assert {k: c.verdict for k, c in claims.items()} == {"a": K.UNRESOLVED, "b": K.UNRESOLVED,
                                                            "c": K.UNDERPOWERED, "d": NOT_TESTED}  # fmt: skip
    c = claims["c"]  # the study could not have seen the paper's 0.61 points: underpowered, with what would decide
    det = c.detectable
    assert det is not None and det.mdd is not None and det.mdd > 5 and det.effect == 0.61
    assert "exceeds the paper's" in c.reason
    assert c.decide.startswith("more than") or c.decide.startswith("about ")
    assert c.estimate.what == "C-C-T-T − C-T-T-T" and len(c.estimate.ci) == 2
    power = claims["c"].evidence[0].power
    assert power.n == 3 and power.effect == 0.61 and power.mdd > 5 and not power.resolvable
    assert "cannot resolve the paper's effect" in claims["c"].why


def test_one_seed_is_never_firm():
    one = {k: {n: v[:1] for n, v in per.items()} for k, per in reverse(AGREE).items()}
    claims = [c for c in V.all_claims(_rows(one), None) if c.id in "abc"]
    assert claims and {c.verdict for c in claims} == {K.UNDERPOWERED}
    assert all(c.decide.startswith("at least 2 paired seeds") for c in claims)
    assert all(p.test.p is None for c in claims for e in c.evidence for p in e.pairs)


def test_second_measure_contradicting_the_first_makes_it_unresolved():
    values = {**AGREE, "transfer.finetune_acc": reverse(AGREE)["transfer.finetune_acc"]}
    c = _claims(values)["c"]
    assert c.evidence[0].key == "transfer.gain"  # the gain decides; the fine-tune accuracy must not contradict
    assert c.verdict == K.UNRESOLVED and "finetune acc (B) says not supported" in c.why
    assert c.reason.startswith("its measures disagree")


def test_claim_needs_two_models_and_a_key_relation():
    only = seeded({"generalization.matched_acc": {"C-C-C-C": 0.86, "C-C-C-T": 0.85}})
    rows = [r for r in _rows(only) if r.candidate in ("C-C-C-C", "C-C-C-T")]
    a = V.chain_claim(V.C.CHAIN_CLAIMS[0], rows)
    assert a.verdict == K.UNDERPOWERED and "no strict relation" in a.why and a.decide == K.NEEDS_RELATION
    assert V.chain_claim(V.C.CHAIN_CLAIMS[2], rows) is None  # no transfer scores, no C-T-T-T: not covered


def _records_with(edit) -> list:
    return edit_runs(layout_records(AGREE), edit)


def test_run_at_chance_is_left_out_and_all_at_chance_is_out_of_regime():
    def one_at_chance(r, m):  # C-T-T-T seed 0 ends at 11% on 10 classes (chance 10%)
        if r.candidate == "C-T-T-T" and r.seed == 0:
            m["generalization.eval_acc"] = 0.11

    rows = tables.candidate_rows(SPACE, _records_with(one_at_chance))
    cttt = next(r for r in rows if r.candidate == "C-T-T-T")
    assert cttt.guards["generalization"] == GuardCounts(runs=3, failed=1, not_converged=0, unchecked=0)
    assert cttt.metrics["generalization.gap"].n == 2 and set(cttt.by_seed["generalization.gap"]) == {1, 2}
    assert set(cttt.by_seed["generalization.matched_acc"]) == {1, 2}  # claim (a)'s measure: left out too
    assert cttt.metrics["capacity.eval_acc"].n == 3  # another run of the trial: kept

    def all_at_chance(name):
        def edit(r, m):
            if r.candidate == name:
                m["generalization.eval_acc"] = 0.105

        return edit

    a = V.all_claims(tables.candidate_rows(SPACE, _records_with(all_at_chance("C-C-C-C"))), None)[0]
    assert a.verdict == K.OUT_OF_REGIME and a.why.startswith("out of regime — C-C-C-C: every run failed")
    assert a.reason.startswith("C-C-C-C: every run failed") and a.decide.startswith("a profile in regime")
    # a model the paper predicts to generalize worse never gates the claim: its relations go untested instead
    a = V.all_claims(tables.candidate_rows(SPACE, _records_with(all_at_chance("C-T-T-T"))), None)[0]
    assert "out of regime" not in a.why and "C-T-T-T" not in [m.name for m in a.evidence[0].members]


def test_still_rising_run_is_not_converged_and_out_of_regime_where_needed():
    def rising(r, m):
        if r.candidate == "C-C-T-T":
            for score in ("generalization", "capacity"):
                m[f"curves.{score}"]["eval_acc"] = [0.3, 0.4, 0.5, 0.55, 0.62, 0.7]

    rows = tables.candidate_rows(SPACE, _records_with(rising))
    claims = {c.id: c for c in V.all_claims(rows, None)}
    assert claims["a"].verdict == "supported"  # a matched-loss reading does not need convergence
    assert claims["b"].verdict == "supported"  # capacity is judged after a fixed budget
    assert claims["c"].verdict == "supported"  # transfer needs converged transfer runs, not generalization ones
    assert tables.converged(Curve(eval_acc=(0.5, 0.6))) is None and tables.converged(Curve(eval_acc=(0.1, 0.5, 0.5)))


def test_linear_floor_guards_every_accuracy_measure_on_its_own_reading():
    accs = {**AGREE["generalization.eval_acc"], **SPLITS["generalization.eval_acc"], "baseline-linear": [0.82] * 3}
    claims = _claims({**AGREE, "generalization.eval_acc": accs})
    a = claims["a"]  # the baseline ran but has no matched-loss reading: the regime cannot be checked there
    assert a.verdict == K.OUT_OF_REGIME and "regime not checkable: no linear-baseline value" in a.why
    d = claims["d"]  # V1 (80.1%) is below the floor, but the paper predicts V1 to lose: only V0 must learn
    assert "floor" not in d.why and "V1" not in d.why.split("—")[0]
    high = {**accs, "baseline-linear": [0.845] * 3}  # now V0's stand-in C-C-T-T (84.1%) is below it too
    d = _claims({**AGREE, "generalization.eval_acc": high})["d"]
    assert d.verdict == K.OUT_OF_REGIME
    assert "V0 not shown above the fair linear floor on gen. eval acc (-0.4 points over 3 seed(s)" in d.why
    assert V.floor_of("capacity.train_loss", _rows(AGREE)) is None  # a loss: no floor
    low = {**AGREE["generalization.matched_acc"], "baseline-linear": [0.60] * 3}
    assert _claims({**AGREE, "generalization.matched_acc": low})["a"].verdict == "supported"


def test_transfer_where_pretraining_helped_no_key_candidate_is_out_of_regime():
    assert _claims(AGREE)["c"].verdict == "supported"  # gains +3.1 and +1.1 points: in regime
    lost = seeded({"transfer.gain": {"C-C-T-T": -0.05, "C-T-T-T": -0.09}})
    c = _claims({**AGREE, **lost})["c"]
    assert c.verdict == K.OUT_OF_REGIME and "pretraining helped no key candidate" in c.why
    one = seeded({"transfer.gain": {"C-C-T-T": 0.02, "C-T-T-T": -0.09}})  # one gains: a real comparison
    assert "pretraining helped" not in _claims({**AGREE, **one})["c"].why


def test_v_table_against_table7():
    table = V.v_table(_rows({**AGREE, **SPLITS}))
    assert [v.variant for v in table] == ["V0", "V1", "V2"]
    v0, v1 = table[0], table[1]
    assert v0.candidate == "C-C-T-T" and v0.note and v0.paper_top1 == 84.1
    assert v1.depths == (1, 1, 9, 1) and v1.paper_blocks == [2, 2, 2, 18, 2]
    assert v1.score("generalization.eval_acc").mean == pytest.approx(80.1)  # V1's jitter averages to 0
    assert V.v_table(_rows(AGREE)) == ()  # no V1/V2: no table


def _rel_rows(on: float, off: float) -> tuple[CandidateRow, ...]:
    jitter = (0.0, 0.002, -0.001, 0.001)
    recs = [
        record(4 * i + s, name, s, with_derived({"generalization.eval_acc": acc + jitter[s] * (1 + i)}))
        for i, (name, acc) in enumerate((("C-C-T-T", on), ("C-C-T-T-norel", off)))
        for s in SEEDS
    ]
    return tables.candidate_rows({}, recs)


def test_relative_attention_pairs_and_verdicts():
    rows = _rel_rows(0.85, 0.80)
    assert [(p.on.candidate, p.off.candidate) for p in V.rel_pairs(rows)] == [("C-C-T-T", "C-C-T-T-norel")]
    assert V.rel_claim(rows).verdict == "supported"
    assert V.rel_claim(_rel_rows(0.80, 0.85)).verdict == "not supported"
    assert V.rel_claim(_rel_rows(0.85, 0.849)).verdict in K.NOT_FIRM
    assert V.rel_claim(_rows(AGREE)) is None


def test_a_claim_verdict_is_frozen_and_writes_the_summary_keys():
    claims = _claims(AGREE)
    a = claims["a"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.notes = ("edited",)  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.found.verdict = "not supported"  # type: ignore[misc]
    head = ["id", "title", "chain", "source"]
    assert list(a.to_json()) == [*head, "verdict", "why", "reason", "estimate", "detectable", "decide", "evidence",
                                 "notes"]  # fmt: skip
    assert a.to_json()["estimate"] == {"what": a.estimate.what, "d": a.estimate.d, "ci": list(a.estimate.ci),
                                       "n": a.estimate.n, "unit": "points"}  # fmt: skip
    tagged = dataclasses.replace(a, images="split", scale="at this proxy scale", status="confirmatory", status_why="")
    assert list(tagged.to_json())[-4:] == ["images", "scale", "status", "status_why"] and a.images is None
    unjudged = dataclasses.replace(a, why_first=False)  # an out-of-regime claim without evidence, claim (f)
    assert list(unjudged.to_json())[4:10] == ["verdict", "reason", "estimate", "detectable", "decide", "why"]
