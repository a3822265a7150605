"""Extending coatsearch from tests/ alone: a score, a stage kind and a figure, registered at run time and undone.

Nothing in coatsearch/ is edited: the registrations below are what docs/extending.md ("Extending coatsearch") says
a new score, stage type or figure is, and `show`, a tiny run and the report pick them up from the registries.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import coatsearch
from coatsearch import cli, scores
from coatsearch.budget.count import count
from coatsearch.report import plots
from coatsearch.scores.base import Context, Score, acc, loss
from coatsearch.space.load import SpaceError
from coatsearch.vocab import kinds
from coatsearch.vocab import specs as S

TINY = Path(__file__).resolve().parents[1] / "spaces" / "tiny.yaml"
EDITS = (
    ("  - {name: C-T}", "  - {name: C-D, layout: C-D}"),
    ("  transfer:\n    pretrain: {per_class: 10, epochs: 1, classes: [0, 1, 2, 3, 4]}\n"
     "    finetune: {per_class: 10, max_steps: 2, classes: [5, 6, 7, 8, 9]}\n", "  untrained: {per_class: 5}\n"),
)  # fmt: skip


class SeparableBlock(nn.Module):
    """D: depthwise 3x3 (strided) -> BatchNorm -> GELU -> pointwise 1x1, plus a 1x1 (strided) shortcut."""

    def __init__(self, dim: int, dim_out: int, stride: int):
        super().__init__()
        self.depthwise = nn.Conv2d(dim, dim, 3, stride, 1, groups=dim, bias=False)
        self.norm = nn.BatchNorm2d(dim)
        self.pointwise = nn.Conv2d(dim, dim_out, 1)
        self.shortcut = nn.Conv2d(dim, dim_out, 1, stride) if (stride, dim) != (1, dim_out) else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pointwise(nn.functional.gelu(self.norm(self.depthwise(x))))  # (B, dim_out, side, side)
        return self.shortcut(x) + y


def separable_block(dim: int, dim_out: int, stride: int, side: int, block: S.BlockSpec, dpr: float) -> nn.Module:
    """The stage kind D's builder, named "tests.scores.test_extension:separable_block" in its registry entry."""
    return SeparableBlock(dim, dim_out, stride)


SEPARABLE = kinds.StageKind(
    "depthwise-separable conv",
    "tests.scores.test_extension:separable_block",
    attends=False,
    macs_floor=lambda dim_out, side, block: side * side * dim_out,  # the pointwise conv has at least one input
)


@S.spec
class UntrainedSpec:
    """The untrained score's section: images per class of the eval subset it reads."""

    per_class: int = 5


def run_untrained(ctx: Context, spec: UntrainedSpec) -> dict:
    """Eval loss and accuracy of the freshly initialized model: the chance reference of this trial's seed."""
    from coatsearch.scores import training as T
    from coatsearch.training.fit import evaluate

    _, held, _ = T.splits(ctx, S.SubsetSpec(per_class=spec.per_class, epochs=1))  # (train, test, validation)
    model = T.model(ctx, ctx.inp.model.num_classes, no_drop=True).to(ctx.device)
    eval_loss, eval_acc = evaluate(model, held, ctx.device, 64)
    return {"untrained.eval_loss": eval_loss, "untrained.eval_acc": eval_acc}


UNTRAINED = Score(
    name="untrained",
    section=UntrainedSpec,
    run=run_untrained,
    metrics=(loss("untrained.eval_loss", "untrained eval loss"), acc("untrained.eval_acc", "untrained eval acc")),
    curves=lambda spec: (),
    epochs=lambda spec: (),
)


def draw_untrained(info: Any, path: Path) -> str | None:
    """Bars of the untrained eval accuracy per candidate, from the candidates section's Info (its rows)."""
    import matplotlib.pyplot as plt

    have = [r for r in info.rows if "untrained.eval_acc" in r.metrics]
    if not have:
        return None
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar([r.candidate for r in have], [r.metrics["untrained.eval_acc"].mean for r in have])
    ax.set_ylabel("untrained eval acc (%)")
    fig.savefig(path)
    plt.close(fig)
    return path.name


FIGURE = plots.FigureSpec("untrained", "candidates", draw_untrained, "Eval accuracy of each untrained model.")


@pytest.fixture
def extended(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The three registrations, undone at teardown so no other test sees them."""
    kinds.register_stage_kind("D", SEPARABLE)
    scores.register_score(UNTRAINED)
    monkeypatch.setitem(plots.FIGURES, FIGURE.name, FIGURE)
    try:
        yield
    finally:
        scores.unregister_score("untrained")
        kinds.unregister_stage_kind("D")


def variant(tmp_path: Path) -> Path:
    """tiny.yaml with a C-D candidate and the untrained score in place of transfer."""
    text = TINY.read_text()
    for old, new in EDITS:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "space.yaml"
    path.write_text(text)
    return path


def test_without_the_registrations_the_space_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpaceError, match=r"unknown key 'untrained'; allowed: generalization, .*speed$"):
        coatsearch.load_space(variant(tmp_path))
    with pytest.raises(ValueError, match=r"^a layout is stage types C, T, M joined by '-'"):
        kinds.check_layout("C-D")
    assert "D" not in kinds.STAGE_KINDS and "untrained" not in scores.SCORES


def test_registered_kind_and_score_are_checked_listed_and_undone(tmp_path: Path, extended: None) -> None:
    with pytest.raises(ValueError, match="already registered"):
        kinds.register_stage_kind("D", SEPARABLE)
    with pytest.raises(ValueError, match="already registered|new identifier"):
        scores.register_score(UNTRAINED)
    with pytest.raises(ValueError, match="stage types C, T, M, D joined by '-'"):
        kinds.check_layout("C-X")  # the message lists the kinds registered now
    bad = variant(tmp_path).read_text().replace("untrained: {per_class: 5}", "untrained: {per_class: 5, depth: 1}")
    (tmp_path / "bad.yaml").write_text(bad)
    with pytest.raises(SpaceError, match=r"bad.yaml:\d+: field 'scores.untrained.depth': unknown"):
        coatsearch.load_space(tmp_path / "bad.yaml")
    assert list(scores.SCORES)[-1] == "untrained" and scores.METRICS["untrained.eval_acc"].label == "untrained eval acc"
    space = coatsearch.load_space(variant(tmp_path))
    cand = space.candidate("C-D")
    assert [s.kind for s in cand.spec.stages] == ["C", "D"] and cand.scores.untrained == UntrainedSpec(5)
    assert 0 < cand.spec.macs_floor() <= count(cand.spec).macs == cand.macs  # the size guard holds for D
    assert abs(cand.macs - 400_000) <= 40_000  # matched to tiny.yaml's budget like any shipped kind


def test_a_new_kind_must_give_its_macs_floor() -> None:
    with pytest.raises(TypeError, match="macs_floor"):
        kinds.StageKind("no floor", "tests.scores.test_extension:separable_block", attends=False)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="one upper-case letter"):
        kinds.register_stage_kind("-", SEPARABLE)


def test_show_lists_the_new_kind(tmp_path: Path, extended: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["show", str(variant(tmp_path)), "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["C-D"]["layout"] == "C-D" and rows["C-D"]["stages"].split()[1].startswith("D1x")
    assert rows["C-D"]["ok"] and rows["C-D"]["tokens"] == []


@pytest.mark.slow
def test_a_tiny_run_and_the_report_use_all_three(tmp_path: Path, extended: None) -> None:
    space = coatsearch.load_space(variant(tmp_path), profile="quick")
    studies, reports = tmp_path / "studies", tmp_path / "reports"
    done = coatsearch.run(space, "ext", workers=1, device="cpu", studies_dir=studies, reports_dir=reports)
    assert (done.planned, done.complete) == (2, 2)
    table = coatsearch.results("ext", studies_dir=studies).set_index("candidate")
    assert 0.0 <= table.loc["C-D", "untrained.eval_acc"] <= 1.0 and table.loc["C-D", "untrained.eval_loss"] > 0
    assert table.loc["C-D", "macs"] == space.candidate("C-D").macs
    text = (reports / "ext" / "report.md").read_text()
    assert "untrained eval acc (%)" in text  # the candidate table's column, from the metric's declaration
    assert (reports / "ext" / "untrained.png").is_file() and FIGURE.caption in text


def test_registrations_do_not_leak() -> None:
    assert "D" not in kinds.STAGE_KINDS and "untrained" not in scores.SCORES and "untrained" not in plots.FIGURES
    assert "untrained" not in {f.name for f in fields(scores.ScoresSpec)}  # type: ignore[arg-type]
    assert "untrained.eval_acc" not in scores.METRICS and "untrained.eval_acc" not in scores.table_keys()
    assert coatsearch.load_space(TINY).candidate("C-T").scores.transfer is not None  # the shipped space
