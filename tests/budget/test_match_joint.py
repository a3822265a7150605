"""The joint budget: width and a second knob solved so MACs and params both land in their bands."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from coatsearch.budget.count import count
from coatsearch.budget.joint import shaped, solve
from coatsearch.budget.match import match
from coatsearch.cli import main
from coatsearch.vocab.specs import Budget, ModelSpec, StageSpec, StemSpec
from tests.support.matching import BLOCK, check_rounding, proxy
from tests.tiny import tiny_text

MACS = 30_000_000


def vit_rel(patch: int) -> ModelSpec:
    """A one-stage ViT_REL on 32x32 images: a patch stem, then one relative-attention stage."""
    stages = (StageSpec("T", 4, 64, 1),)
    return ModelSpec("ViT_REL", "coatnet", 32, 1, 10, StemSpec("patch", patch_size=patch), stages, BLOCK)


@pytest.mark.parametrize(("layout", "shift"), [("C-C-C-C", 0.8), ("C-C-T-T", 1.2), ("C-T-T-T", 1.25)])
def test_joint_lands_both_targets(layout, shift):
    spec = proxy(layout)
    macs_only = match(spec, Budget(macs=MACS, tolerance=0.05))
    target = int(macs_only.params * shift)  # a params target the MACs-only width solve misses by > 5%
    assert abs(macs_only.params - target) / target > 0.05
    r = solve(spec, Budget(macs=MACS, tolerance=0.05, params=target))
    assert r.ok, r.reason
    assert abs(r.error) <= 0.05 and abs(r.params_error) <= 0.05
    c = count(r.spec)
    assert (r.macs, r.params) == (c.macs, c.params)
    assert r.params_error == pytest.approx((c.params - target) / target)
    assert [s.kind for s in r.spec.stages] == layout.split("-")  # the layout and depths are kept
    assert [s.depth for s in r.spec.stages] == [s.depth for s in spec.stages]
    widths = [s.width for s in r.spec.stages]
    assert widths == sorted(widths)  # stages never get narrower, like the spec
    assert (r.knob > 1) == (shift > 1)  # more params at equal MACs: width moves to the late, low-resolution stages
    check_rounding(r.spec)


def test_one_stage_uses_depth_as_second_knob():
    spec = vit_rel(8)  # 4x4 tokens
    reach = [count(shaped(spec, m, k)) for k in (0.5, 1.0, 2.0) for m in (0.5, 1.0)]
    assert all(c.macs > 0 for c in reach)
    r = solve(spec, Budget(macs=MACS, tolerance=0.05, params=int(MACS / 16)))
    assert r.ok, r.reason
    assert r.spec.stages[0].depth != 4 or math.isclose(r.knob, 1.0, rel_tol=0.2)
    assert abs(r.error) <= 0.05 and abs(r.params_error) <= 0.05


def test_infeasible_pair_gives_the_reachable_range_and_the_field():
    spec = vit_rel(4)  # 8x8 tokens: params per MAC fixed near 1/64
    target = MACS // 16
    r = solve(spec, Budget(macs=MACS, tolerance=0.05, params=target))
    assert not r.ok and r.params_range is not None
    lo, hi = r.params_range
    assert lo <= r.params <= hi < target * 0.95  # the target lies above everything this layout reaches
    assert abs(r.error) <= 0.05  # the returned configuration meets the MACs band
    assert "unreachable" in r.reason and "stem.patch_size or strides" in r.reason
    assert f"{lo / 1e3:.3g}K" in r.reason and f"{hi / 1e3:.3g}K" in r.reason


def test_macs_only_budget_is_unchanged_by_the_joint_fields():
    spec = proxy("C-C-T-T")
    r = solve(spec, Budget(macs=MACS, tolerance=0.05))
    assert r == match(spec, Budget(macs=MACS, tolerance=0.05))
    assert r.params_error is None and r.knob is None and r.params_range is None and r.ok
    with pytest.raises(ValueError, match="budget.joint.solve"):
        match(spec, Budget(macs=MACS, params=100_000))


def test_params_target_needs_width_scaling():
    with pytest.raises(ValueError, match="scale: width"):
        Budget(macs=MACS, params=100_000, scale="depth")


def _joint_space(tmp_path, params: str) -> str:
    old = "budget: {macs: 0.4M, tolerance: 0.1, scale: width}"
    text = tiny_text((old, f"budget: {{macs: 0.4M, params: {params}, tolerance: 0.1}}"))
    path = tmp_path / "joint.yaml"
    path.write_text(text)
    return str(path)


def test_show_prints_both_errors(tmp_path, capsys):
    assert main(["show", _joint_space(tmp_path, "0.024M")]) == 0
    out = capsys.readouterr().out
    assert "MACs err" in out and "params err" in out and "0.024M params" in out
    rows = [line for line in out.splitlines() if line.startswith(("C-C ", "C-T "))]
    assert len(rows) == 2 and all("NOT MATCHED" not in line for line in rows)
    for line in rows:
        errs = [float(x.rstrip("%")) for x in line.split() if x.endswith("%")]
        assert len(errs) == 2 and all(abs(e) <= 10 for e in errs)


def test_unreachable_params_is_a_one_line_load_error(tmp_path, capsys):
    path = _joint_space(tmp_path, "5M")
    assert main(["show", path]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"{path}:" in err and "field 'budget.params'" in err and "reaches" in err and "strides" in err


def test_shaped_keeps_the_spec_at_unit_knobs():
    spec = proxy("C-C-T-T")
    assert shaped(spec, 1.0, 1.0) == spec
    assert shaped(replace(spec, stages=spec.stages[:1]), 1.0, 1.0).stages == spec.stages[:1]
