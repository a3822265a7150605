"""Regime baselines: the linear and small-CNN models, their place in the space and plan, a tiny study, the report."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import torch

import coatsearch
from coatsearch.budget.count import count
from coatsearch.budget.prepare import prepare
from coatsearch.models import build
from coatsearch.report import summarize
from coatsearch.report.markdown import candidates as candidates_md
from coatsearch.space.load import SpaceError
from coatsearch.space.objects import load_space
from coatsearch.storage.trials import plan
from coatsearch.vocab.specs import BASELINES, InputSpec, baseline_model
from tests.report_records import AGREE, SPACE, layout_records
from tests.tiny import TINY, tiny_variant


def _variant(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    return tiny_variant(tmp_path, ("baselines: false", "baselines: true"), *edits, name="tiny_baselines.yaml")


@pytest.mark.parametrize("name", list(BASELINES))
def test_baseline_models_run_and_are_counted(name):
    spec = baseline_model(name, InputSpec(image_size=16, channels=3, classes=7))
    model = build(spec).eval()
    assert model(torch.randn(2, 3, 16, 16)).shape == (2, 7)
    assert model.get_classifier().out_features == 7
    c = count(spec)
    assert c.params == sum(p.numel() for p in model.parameters())
    if name == "baseline-linear":
        assert c.macs == 3 * 16 * 16 * 7  # one multiply-add per pixel value and class
    else:
        assert 16 * 16 * 3 * 16 * 9 < c.macs < 1e6  # the first conv alone, and cheap


def test_the_space_adds_both_baselines_per_seed_never_matched(tmp_path):
    space = load_space(_variant(tmp_path, ("seeds: [0]", "seeds: [0, 1]")))
    assert [c.name for c in space.candidates] == ["C-C", "C-T", "baseline-linear", "baseline-cnn"]
    assert len(plan(space)) == 8  # 4 candidates × 2 seeds
    for name in BASELINES:
        prep = prepare(space.candidate(name))
        assert prep.ok and prep.budget is None and prep.error is None and prep.model.arch == BASELINES[name]
        assert space.candidate(name).scores == space.scores  # the same subsets as every candidate
    assert [c.name for c in load_space(TINY).candidates] == ["C-C", "C-T"]  # study.baselines: false


def test_a_candidate_may_not_take_a_baselines_name(tmp_path):
    path = _variant(tmp_path, ("- {name: C-T}", "- {name: baseline-cnn}"))
    with pytest.raises(SpaceError) as info:
        load_space(path)
    assert str(info.value) == (
        f"{path}:16: field 'candidates[1].name': 'baseline-cnn' is a regime baseline's name (study.baselines is on)"
    )


def test_the_report_marks_the_baselines():
    accs = {**AGREE["generalization.eval_acc"], "baseline-linear": [0.75] * 3, "baseline-cnn": [0.8] * 3}
    records = layout_records({**AGREE, "generalization.eval_acc": accs})
    s = summarize("fab", {**SPACE, "candidates": [*SPACE["candidates"], *BASELINES]}, records)
    names = [r.candidate for r in s.summary.candidates]
    assert names[-2:] == ["baseline-linear", "baseline-cnn"]
    text = candidates_md(s.infos["candidates"])
    assert "Regime baselines (same subsets and seeds, not budget-matched, never in a claim)" in text
    assert "**baseline-linear** is a linear classifier on the pixels" in text


@pytest.mark.slow
def test_a_tiny_study_records_and_reports_the_baselines(tmp_path):
    space = _variant(tmp_path, ("- {name: C-C, layout: C-C}\n", ""))  # one layout and the two baselines
    folders = {"studies_dir": tmp_path / "studies", "reports_dir": tmp_path / "reports"}
    res = coatsearch.run(space, profile="quick", progress=False, **folders)
    assert (res.planned, res.complete, res.failed) == (3, 3, 0)
    table = coatsearch.results(res.study, tmp_path / "studies").set_index("candidate")
    for name, arch in BASELINES.items():
        row = table.loc[name]
        assert row["state"] == "COMPLETE" and row["arch"] == arch and row["model_label"] == f"{arch} baseline"
        assert 0.0 <= row["generalization.eval_acc"] <= 1.0 and 0.0 <= row["transfer.finetune_acc"] <= 1.0
        assert row["macs"] > 0 and pd.isna(row["budget_error"]) and not pd.isna(table.loc["C-T", "budget_error"])
    # the linear baseline alone records its fair floor: the best linear classifier, chosen on validation images
    linear = table.loc["baseline-linear"]
    assert 0.0 <= linear["generalization.floor_acc"] <= 1.0 and linear["generalization.floor_choice"]
    assert linear["generalization.val_floor_acc"] >= linear["generalization.val_acc"]  # the recipe run competes
    assert pd.isna(table.loc["baseline-cnn"].get("generalization.floor_acc"))
    report = res.report.read_text(encoding="utf-8")
    assert "**baseline-linear** is a linear classifier" in report
    assert re.search(r"^\| baseline-cnn +\| \(cnn baseline\) +\|", report, flags=re.M)
