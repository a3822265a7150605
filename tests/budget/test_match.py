"""match() and scale(): landing in the MACs band, rounding rules, and clear failures."""

from __future__ import annotations

from dataclasses import replace

import pytest

from coatsearch.budget.count import count
from coatsearch.budget.match import match, scale
from coatsearch.vocab.specs import Budget, ModelSpec, StageSpec, StemSpec
from tests.support.matching import BLOCK, check_rounding, proxy


@pytest.mark.parametrize("layout", ["C-C-C-C", "C-C-T-T", "C-T-T-T"])
def test_width_match_lands_in_band(layout):
    budget = Budget(macs=30_000_000, tolerance=0.05, scale="width")
    r = match(proxy(layout), budget)
    assert r.ok, r.reason
    assert r.reason == ""
    assert abs(r.error) <= 0.05
    assert r.macs == count(r.spec).macs
    assert r.error == pytest.approx((r.macs - budget.macs) / budget.macs)
    check_rounding(r.spec)


@pytest.mark.parametrize("layout", ["C-C-C-T", "C-C-T-T"])
def test_depth_match_lands_in_band(layout):
    spec = proxy(layout)
    budget = Budget(macs=int(count(spec).macs * 1.8), tolerance=0.05, scale="depth")
    r = match(spec, budget)
    assert r.ok, r.reason
    assert [s.depth for s in r.spec.stages][::3] == [1, 1]  # first and last stage untouched
    assert [s.width for s in r.spec.stages] == [s.width for s in spec.stages]


def test_depth_match_vit_scales_single_stage():
    spec = ModelSpec("vit", "vit", 32, 1, 10, StemSpec("patch", patch_size=4), (StageSpec("T", 4, 64, 1),), BLOCK)
    r = match(spec, Budget(macs=count(spec).macs * 2, scale="depth"))
    assert r.ok and r.spec.stages[0].depth == 8


def test_unmatchable_budgets_report_why():
    small = match(proxy("C-C-T-T"), Budget(macs=1000, scale="width"))
    assert not small.ok and small.reason.startswith("smallest width (m=0.05) gives")
    assert "> budget 1K ± 5%" in small.reason
    big = match(proxy("C-C-T-T"), Budget(macs=10**15, scale="width"))
    assert not big.ok and big.reason.startswith("largest width")
    deep = match(proxy("C-C-T-T"), Budget(macs=count(proxy("C-C-T-T")).macs // 10, scale="depth"))
    assert not deep.ok and "smallest depth" in deep.reason
    assert not match(proxy("C-C-T-T"), Budget(macs=0)).ok


def test_too_coarse_step_reports_why():
    spec = proxy("C-C-T-T", depths=(1, 1, 1, 1))
    one, two = count(spec).macs, count(scale(spec, 2.0, "depth")).macs  # middle stages 1 -> 2 blocks
    r = match(spec, Budget(macs=(one + two) // 2, tolerance=0.001, scale="depth"))
    assert not r.ok and "too coarse" in r.reason


def test_none_mode_checks_only():
    spec = proxy("C-C-T-T")
    macs = count(spec).macs
    assert match(spec, Budget(macs=macs, scale="none")).spec == spec
    r = match(spec, Budget(macs=macs * 2, scale="none"))
    assert not r.ok and "outside budget" in r.reason


def test_scale_rounds_and_is_pure():
    spec = proxy("C-C-T-T")
    s = scale(spec, 0.7, "width")
    assert [x.width for x in s.stages] == [
        24,
        48,
        96,
        176,
    ]  # 22.4->24 (8), 44.8->48, 89.6->96 (16), 179.2->176
    assert s.stem.width == 8 and spec.stages[0].width == 32  # 11.2 -> 8; the input is not modified
    assert scale(spec, 1.0, "width") == spec
    assert [x.width for x in scale(spec, 0.01, "width").stages] == [8, 8, 16, 16]  # at least one quantum
    assert [x.depth for x in scale(spec, 2.6, "depth").stages] == [1, 5, 5, 1]
    assert [x.depth for x in scale(spec, 0.1, "depth").stages] == [1, 1, 1, 1]
    vitc = replace(spec, stem=StemSpec("vitc", channels=(24, 48), strides=(2, 2)))
    assert scale(vitc, 0.5, "width").stem.channels == (16, 24)  # 12 -> 16 (halves round up), 24 -> 24
    with pytest.raises(ValueError, match="known: width, depth, none"):
        scale(spec, 1.0, "height")


class _Cand:
    """A candidate as budget.prepare reads one (its Resolvable protocol)."""

    def __init__(self, budget: Budget | None):
        self.name, self.dims, self.budget = "C-C-T-T", (), budget

    def resolve(self, params=None):
        from coatsearch.vocab.specs import OptimSpec

        return proxy("C-C-T-T"), OptimSpec(), self.budget


@pytest.mark.parametrize("budget", [None, Budget(macs=30_000_000, tolerance=0.05, scale="width")])
def test_a_prepared_candidate_is_its_match_and_reads_back_from_its_stored_record(budget):
    from coatsearch.budget import prepare as C

    p = C.prepare(_Cand(budget))
    assert p.model is p.match.spec and p.macs == count(p.model).macs and p.ok
    assert p.error is None if budget is None else abs(p.error) <= 0.05
    record = C.to_record(p)
    assert C.from_record(record) == p
    # a study stored before the match was its own field holds one flat record: it reads back the same
    match = dict(record.pop("match"))
    flat = {**record, "model": match.pop("spec"), **match, "error": p.error}
    assert C.from_record(flat) == p
