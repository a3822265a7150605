"""A search study's report opens with the search's answer, on fabricated search studies (no training): its best
against the best named layout on fresh seeds, what that re-evaluation could resolve (and the fresh seeds a 1-point
difference would need, from its paired sd through stats.seeds_needed), the random baseline; the papers' claims after."""

from __future__ import annotations

import dataclasses
import statistics

import pytest

from coatsearch.analysis import search_stats as SS
from coatsearch.analysis import stats as S
from coatsearch.analysis.constants import VERDICT_ALPHA
from coatsearch.analysis.search_types import Random
from coatsearch.report import SECTIONS, render, section, summarize
from coatsearch.report import view_search as VS
from coatsearch.storage.trials import REEVAL
from tests.report_records import SPACE, record, with_derived

FOUND = "coatnet conv2x16/2 | C1x8/1 C1x16/2 C9x32/2 T1x80/1 | head_size=8"  # the one network the search finds
SEARCH_SEED = 0
JITTER = (0.0, 0.3, -0.2, 0.1, -0.3, 0.2, -0.1, 0.25, -0.15, 0.05)  # points, per seed: the pairs' own noise


def _searched(number: int, seed: int, acc: float, sample: int):
    """A trial of candidate `searched` that solved to FOUND (a re-evaluation: sample >= REEVAL)."""
    r = record(number, "searched", seed, with_derived({"generalization.eval_acc": acc}), label="C-C-C-T",
               layout="C-C-C-T", sample=sample, params={"model.layout.3": "T"})  # fmt: skip
    model = dataclasses.replace(r.run.model, structure=FOUND)
    return dataclasses.replace(r, run=dataclasses.replace(r.run, model=model))


def study(fresh: int, lead: float, noise: float, reevaluate: bool = True):
    """A search study: named C-C-C-C (86%) and C-C-C-T (85%) on the search's seed and on `fresh` fresh seeds, the
    search's network 2 trials on the search's seed and, re-evaluated, on the fresh seeds `lead` points above
    C-C-C-C with a per-seed spread of `noise` × JITTER (points)."""
    seeds = [SEARCH_SEED, *range(SEARCH_SEED + 1, SEARCH_SEED + 1 + fresh)]
    recs = []
    for i, seed in enumerate(seeds):
        for name, acc in (("C-C-C-C", 0.86), ("C-C-C-T", 0.85)):
            recs.append(record(len(recs), name, seed, with_derived({"generalization.eval_acc": acc + 0.0001 * i})))
    recs += [_searched(len(recs) + k, SEARCH_SEED, 0.855, k) for k in range(2)]
    if reevaluate:
        recs += [_searched(len(recs) + i, seed, 0.86 + 0.0001 * (i + 1) + (lead + noise * JITTER[i]) / 100, REEVAL)
                 for i, seed in enumerate(seeds[1:])]  # fmt: skip
    study = {**SPACE["study"], "seeds": [SEARCH_SEED], "samples": 2, "sampler": "tpe"}
    if reevaluate:
        study["reevaluate"] = {"top": 1, "seeds": fresh}
    space = {**SPACE, "study": study, "candidates": ["C-C-C-C", "C-C-C-T", "searched"]}
    report = summarize("fab", space, recs)
    return report, render(report, {})


def _diffs(fresh: int, lead: float, noise: float) -> list[float]:
    """The fabricated paired differences (points) of the search's network against C-C-C-C on the fresh seeds."""
    return [lead + noise * JITTER[i] for i in range(fresh)]


def test_a_reevaluation_that_can_detect_a_point_states_the_difference_it_found():
    report, text = study(fresh=8, lead=1.5, noise=0.5)
    [one] = report.infos["search_answer"].leads
    p = one.fresh.pair
    assert p.named == "C-C-C-C" and p.n == 8 and p.verdict == "better than" and p.p_holm < VERDICT_ALPHA
    assert p.d == pytest.approx(statistics.fmean(_diffs(8, 1.5, 0.5)), abs=1e-6)
    assert p.sd_diff == pytest.approx(statistics.stdev(_diffs(8, 1.5, 0.5)), abs=1e-6) and p.df == 7
    assert p.detectable == pytest.approx(S.detectable(p.sd_diff, 8, 7, VERDICT_ALPHA, 0.8))
    assert p.detectable < 1.0 and one.fresh.resolves and one.fresh.needed is None and not one.fresh.machinery
    opening = text[: text.index("## Verdicts")]
    assert opening.index("**The search's answer.**") < opening.index("**The papers' claims.**")
    assert "is **better than** the best named candidate `C-C-C-C`" in opening
    assert "it could detect a 1-point difference" in opening and "demonstrates the machinery" not in opening


def test_a_reevaluation_that_cannot_detect_a_point_says_so_and_the_seeds_it_would_need():
    report, text = study(fresh=2, lead=0.3, noise=2.0)
    [one] = report.infos["search_answer"].leads
    p, f = one.fresh.pair, one.fresh
    own = statistics.stdev(_diffs(2, 0.3, 2.0))
    assert p.verdict == "not shown to differ from" and p.sd_diff == pytest.approx(own, abs=1e-6) and p.df == 1
    assert p.detectable > 2.0 and f.resolves is False and f.machinery
    need = S.seeds_needed(own, 1.0, 2, VERDICT_ALPHA, 0.8)  # one architecture tested: Holm's first level is α
    assert f.needed == need and need > 2
    first = text[text.index("**The search's answer.**") : text.index("**The papers' claims.**")]
    assert f"The smallest difference it could detect at 80% power is {p.detectable:.2f} points" in first
    assert (f"this profile demonstrates the machinery; it cannot detect a 1-point difference; it would need {need} "
            "fresh seeds") in first  # fmt: skip


def test_a_search_without_reevaluation_says_so_and_gives_the_selection_biased_figure():
    report, text = study(fresh=0, lead=0.0, noise=0.0, reevaluate=False)
    [one] = report.infos["search_answer"].leads
    assert one.fresh is None and one.planned == 0 and one.best is not None and one.named.name == "C-C-C-C"
    assert one.selected == pytest.approx(one.best.mean - one.named.mean)
    first = text[text.index("**The search's answer.**") : text.index("**The papers' claims.**")]
    assert "No re-evaluation ran (`study.reevaluate` is not set)" in first and "selection-biased" in first
    assert "Random-search baseline: not computed" in first  # no table of the space measured whole


def test_the_answer_gives_the_random_baseline_and_the_searchs_regret():
    report, _ = study(fresh=2, lead=0.3, noise=2.0)
    found = report.summary.search
    assert found is not None
    nets = [SS.Network(n, 1, (m,)) for n, m in (("a", 84.0), ("b", 85.5), (found.searched[0].top[0].name, 86.0))]
    base = SS.random_baseline(nets, 2, True)
    searched = dataclasses.replace(found.searched[0], random=Random(base, nets[-1].name, 86.0, 0.0, "", (), "enum"))
    info = VS.answer_of(dataclasses.replace(found, searched=(searched,)), 2)
    text = section.render(tuple(s for s in SECTIONS if s.name == "search_answer"), {"search_answer": info})
    assert f"expects {base.mean:.2f}%, a regret of {base.regret:.2f} points against the best network's 86.00%" in text
    assert "measured whole by study `enum`" in text and "regret 0.00 points" in text


def test_a_study_that_searched_nothing_has_no_search_answer():
    from tests.report_records import layout_records

    report = summarize("fab", SPACE, layout_records())
    assert report.infos["search_answer"] is None and not report.infos["answer"].after_search
