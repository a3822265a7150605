"""Verdict categories (papers.categories): each is reachable from fabricated records, each verdict says why and
what would decide it, 'confirmatory' only where a firm verdict was possible, and report.md leads with the answer."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from coatsearch.analysis import tables
from coatsearch.analysis.results import Power
from coatsearch.papers import categories as K
from coatsearch.papers import judging
from coatsearch.papers import verdicts as V
from coatsearch.papers.claim_results import ClaimVerdict
from coatsearch.papers.standing import Standing
from coatsearch.planner import power as P
from coatsearch.planner import text as plan_text
from coatsearch.report import render, summarize
from coatsearch.report.markdown_answer import VERDICT_MARK
from lab import calibration
from tests.report_records import AGREE, SPACE, edit_runs, layout_records, noisy, reverse

ROOT = Path(__file__).resolve().parents[2]
CONFIRMED = "confirmatory: matches the registration (fingerprint abc…, 2026-01-01)"
STANDING = Standing("abc")  # a study that matches its registration: every claim confirmatory


def _claims(values: dict, edit=None) -> dict[str, dict]:
    recs = layout_records(values) if edit is None else edit_runs(layout_records(values), edit)
    return {c.id: c for c in V.all_claims(tables.candidate_rows(SPACE, recs), None)}


def _at_chance(r, m) -> None:  # C-C-C-C, a model claim (a) needs to learn, fails to train
    if r.candidate == "C-C-C-C":
        m["generalization.eval_acc"] = 0.105


ONE_SEED = {k: {n: v[:1] for n, v in per.items()} for k, per in AGREE.items()}
CASES = {  # category -> (values, edit, claim): a fabricated study that lands there
    K.SUPPORTED: (AGREE, None, "a"),
    K.NOT_SUPPORTED: (reverse(AGREE), None, "a"),
    K.OUT_OF_REGIME: (AGREE, _at_chance, "a"),
    K.UNDERPOWERED: (ONE_SEED, None, "a"),
    K.UNRESOLVED: (noisy(AGREE), None, "a"),
}


@pytest.mark.lab
def test_the_categories_are_one_literal_and_every_one_has_a_case():
    assert set(CASES) == set(K.CATEGORIES) and len(K.CATEGORIES) == 5
    assert set(K.FIRM) | set(K.NOT_FIRM) == set(K.CATEGORIES) and not set(K.FIRM) & set(K.NOT_FIRM)
    assert set(VERDICT_MARK) == {*K.CATEGORIES, K.NOT_TESTED}  # the report marks every category, and only those
    assert set(calibration.CODE) == {*K.CATEGORIES, K.NOT_TESTED}  # the calibration codes every one
    assert {calibration.CODE[c] for c in K.NOT_FIRM} == {"i"}  # it counts firm verdicts: the others are one code


@pytest.mark.parametrize("category", K.CATEGORIES)
def test_every_category_is_reachable_and_says_why(category):
    values, edit, cid = CASES[category]
    c = _claims(values, edit)[cid]
    assert c.verdict == category, (c.verdict, c.why)
    assert c.reason and "\n" not in c.reason and c.why  # one line, the longer why kept as detail
    assert c.decide and c.detectable is not None and c.detectable.unit
    if category == K.OUT_OF_REGIME:
        assert c.decide.startswith("a profile in regime") and c.why.startswith("out of regime — ")
    elif category == K.UNDERPOWERED:  # one seed: no test, no interval, no detectable difference
        assert c.detectable is not None and c.detectable.mdd is None and c.decide.startswith("at least 2 paired seeds")
    else:
        e = c.estimate
        assert e is not None and e.what == "C-C-T-T − C-T-T-T" and e.n == 3 and e.ci is not None
        assert e.ci[0] <= e.d <= e.ci[1]
        det = c.detectable
        assert det is not None and det.mdd is not None and det.mdd > 0 and det.unit == "points"
    if category in K.FIRM:
        assert c.decide == K.DECIDED
    if category == K.UNRESOLVED:  # it could have seen an effect of its size: seeds at the measured difference
        assert c.decide.startswith(("about", "more than", "a larger effect"))


def test_the_category_rule_orders_regime_first_then_firm_then_power():
    blind = Power(n=4, sd_diff=2.0, df=6, k=2, alpha=0.01, mdd=3.0, effect=0.6, seeds_needed=None)
    seeing = replace(blind, mdd=0.4)
    assert K.category(K.SUPPORTED, True, seeing) == K.OUT_OF_REGIME
    assert K.category(K.NOT_SUPPORTED, False, blind) == K.NOT_SUPPORTED  # firm even when underpowered
    assert K.category(None, False, blind) == K.UNDERPOWERED and "exceeds the paper's 0.6" in K.blind(blind)
    assert K.category(None, False, seeing) == K.UNRESOLVED and K.blind(seeing) == ""
    assert K.category(None, False, None) == K.UNDERPOWERED  # fewer than 2 paired seeds or no noise estimate
    assert K.category(None, False, replace(seeing, n=1)) == K.UNDERPOWERED
    assert K.category(None, False, replace(seeing, effect=None)) == K.UNRESOLVED  # no paper effect to size for
    assert K.decide(K.UNDERPOWERED, replace(blind, seeds_needed=91, k=5), None) == (
        "about 91 paired seeds (80% power at the paper's effect, 0.60)"
    )


def test_docs_state_the_category_rule_of_the_code():
    doc = " ".join((ROOT / "docs" / "verdicts.md").read_text(encoding="utf-8").split())
    assert " ".join(K.CATEGORY_RULE.split()) in doc
    assert K.CATEGORY_RULE in V.VERDICT_RULE  # the report's rule text carries it too
    assert "inconclusive" not in V.VERDICT_RULE


def _verdict(cat: str, images: str | None = "split") -> ClaimVerdict:
    """A judged claim of category `cat` under the image rule `images`."""
    return ClaimVerdict("a", "t", "A > B", "s", K.fields(cat, "why", None, None, "points"), images=images)


def test_confirmatory_only_where_a_firm_verdict_was_possible():
    for cat in K.CATEGORIES:
        got = judging.with_status(_verdict(cat), CONFIRMED)
        assert got.status == ("confirmatory" if cat in K.POSSIBLE else K.REGISTERED_ONLY), cat
        assert got.status_why == ("" if cat in K.POSSIBLE else cat)
    assert judging.with_status(_verdict(K.SUPPORTED, "exploratory"), CONFIRMED).status == "exploratory"
    assert judging.with_status(_verdict(K.SUPPORTED), None).status == "exploratory"
    weak = [_verdict(K.UNDERPOWERED), _verdict(K.OUT_OF_REGIME)]
    assert judging.registration_line(CONFIRMED, weak).startswith(K.REGISTERED_ONLY + ": matches the registration")
    assert judging.registration_line(CONFIRMED, [*weak, _verdict(K.UNRESOLVED)]) == CONFIRMED
    assert judging.registration_line("exploratory: x", weak) == "exploratory: x"


def test_a_one_seed_smoke_run_is_never_called_confirmatory():
    text = render(summarize("smoke", SPACE, layout_records(ONE_SEED), registered=STANDING), {})
    body = text[: text.index("## Appendix")]  # the appendix states the rule, which names the word
    assert "confirmatory" not in body and K.REGISTERED_ONLY in body and K.UNDERPOWERED in body


def test_report_leads_with_the_answer_then_the_verdict_and_regime_tables():
    values = {**AGREE, "generalization.matched_acc": {**AGREE["generalization.matched_acc"],
                                                      "baseline-linear": [0.70, 0.71, 0.705]}}  # fmt: skip
    report = summarize("fab", SPACE, layout_records(values), registered=STANDING)
    lines = render(report, {}).splitlines()
    head = "\n".join(lines[:25])
    assert lines[0] == "# coatsearch report: fab" and lines[2].startswith(
        "**Answer.** At this proxy scale (synthetic, "
    )
    assert "2,000 training images, 32x32x1, 3 seed(s))" in lines[2]
    assert "claim (a) Generalization is **supported**: C-C-T-T − C-T-T-T = +3.10 points [" in lines[2]
    assert "## Verdicts" in head and "| (a) Generalization" in head and "✅ supported" in head
    assert "detectable (80% power) vs paper's effect" in head and "what would decide it" in head
    assert "## Regime" in "\n".join(lines[:40])
    text = "\n".join(lines)
    assert text.index("## Regime") < text.index("## Setup") < text.index("## Claim details") < text.index(
        "## Appendix: method, rule and calibration")  # fmt: skip
    assert text.index("## Appendix") < text.index("Method: Differences are paired by seed")
    a = next(r for r in report.infos["regime"].rows if r.claim == "(a)")
    floor = V.floor_of("generalization.matched_acc", report.summary.candidates)
    assert a.images == (2000,) and a.epochs == (3.0,) and a.processed == (6000,) and a.in_regime
    assert a.best == "C-C-C-C" and a.best_value == pytest.approx(86.13, abs=0.01) and a.floor == pytest.approx(floor)
    assert "| (a)     | gen. eval acc at matched loss" in text and "| 70.5%" in text


def _claim_plan(sd: float, seeds: int) -> P.ClaimPlan:
    return P.ClaimPlan("d", "Depth", "accuracy.eval_acc", ("V2", "V1"), 1, seeds, sd, "prior", 0.03, None, 0.6,
                       None, None, None, ("in regime",), k=3, family=2)  # fmt: skip


@pytest.mark.parametrize(("seeds", "sd", "word"), [(1, 0.1, K.REGISTERED_ONLY), (5, 3.0, K.REGISTERED_ONLY),
                                                   (5, 0.1, "confirmatory")])  # fmt: skip
def test_the_plan_says_confirmatory_only_when_a_claim_could_be_firm(seeds, sd, word):
    line = "confirmatory: matches the registration (fingerprint abc…, t)"
    plan = SimpleNamespace(registration=("registered analysis:", line), seeds=seeds, claims=(_claim_plan(sd, seeds),))
    head, last = plan_text.registration_lines(plan)  # type: ignore[arg-type]  # the three fields it reads
    assert head == "registered analysis:" and last.startswith(f"{word}: matches the registration")
