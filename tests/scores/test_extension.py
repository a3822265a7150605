"""Extending coatsearch from tests/ alone: a score, a stage kind, a figure, a report section, a sampler, a dataset
and an architecture, registered at run time and undone.

Nothing in coatsearch/ is edited: the registrations below are what docs/extending.md ("Extending coatsearch") says
each extension is, and `show`, the space file, the sampling, data and model paths, a tiny run and the report pick
them up from the registries.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import coatsearch
from coatsearch import cli, report, scores
from coatsearch.analysis.replay import check_samplers
from coatsearch.budget.count import count
from coatsearch.errors import UserError
from coatsearch.models import build
from coatsearch.report import plots
from coatsearch.report.section import Section
from coatsearch.scores.base import Context, Measured, Score, acc, loss
from coatsearch.space.load import SpaceError
from coatsearch.storage import sampling
from coatsearch.storage import trials as P
from coatsearch.training import data
from coatsearch.vocab import datasets, kinds, samplers
from coatsearch.vocab import specs as S
from coatsearch.vocab.registry import Registry
from tests.report_records import SPACE as REPORT_SPACE
from tests.report_records import layout_records
from tests.support.registries import RegistryPatch
from tests.tiny import TINY, TINY_SEARCH, tiny_variant

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


def run_untrained(ctx: Context, spec: UntrainedSpec) -> Measured:
    """Eval loss and accuracy of the freshly initialized model: the chance reference of this trial's seed."""
    from coatsearch.scores import training as T
    from coatsearch.training.fit import evaluate

    _, held, _ = T.splits(ctx, S.SubsetSpec(per_class=spec.per_class, epochs=1))  # (train, test, validation)
    model = T.model(ctx, ctx.inp.model.num_classes, no_drop=True).to(ctx.device)
    eval_loss, eval_acc = evaluate(model, held, ctx.device, 64)
    return Measured({"untrained.eval_loss": eval_loss, "untrained.eval_acc": eval_acc})


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
    return tiny_variant(tmp_path, *EDITS)


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
    done = coatsearch.run(space, study="ext", workers=1, device="cpu", studies_dir=studies, reports_dir=reports)
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


# ---------------------------------------------------------------------------------------------- a report section


@dataclass(frozen=True)
class CountInfo:
    """The toy section's Info: how many trial records the report read."""

    records: int


def count_section(ctx: Any) -> CountInfo | None:
    """The toy section's compute: None (left out) without records."""
    n = len(ctx.frames.records)
    return CountInfo(n) if n else None


def test_a_registered_section_is_computed_and_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    section = Section("record_count", count_section, lambda info: f"## Records\n\n{info.records} trial records.\n")
    monkeypatch.setattr(report, "SECTIONS", (*report.SECTIONS, section))
    done = report.summarize("ext", REPORT_SPACE, layout_records())
    assert done.infos["record_count"] == CountInfo(len(layout_records()))
    assert f"## Records\n\n{len(layout_records())} trial records." in report.render(done, {})
    assert report.summarize("empty", {}, []).infos["record_count"] is None  # no data: left out


# ---------------------------------------------------------------------------------------------- a sampler

QMC = samplers.SamplerKind(
    "quasi-Monte Carlo (scrambled Sobol) over the ranges; choice lists drawn at random",
    "optuna.samplers:QMCSampler",
    {"scramble": True, "warn_independent_sampling": False},
)
SEARCH = TINY_SEARCH


def search_variant(tmp_path: Path, sampler: str) -> Path:
    text = SEARCH.read_text()
    assert "sampler: tpe" in text
    (tmp_path / "search.yaml").write_text(text.replace("sampler: tpe", f"sampler: {sampler}"))
    return tmp_path / "search.yaml"


def test_a_registered_sampler_is_checked_sampled_and_replayable(tmp_path: Path, registry_patch: RegistryPatch) -> None:
    with pytest.raises(SpaceError, match=r"search.yaml:\d+: field 'study.sampler': unknown sampler 'qmc'; allowed: "
                       r"random, tpe, gp, cmaes, nsga2, grid \(found 'qmc'\)$"):  # fmt: skip
        coatsearch.load_space(search_variant(tmp_path, "qmc"))
    with pytest.raises(ValueError, match="unknown sampler 'qmc'"):
        sampling.make_sampler("qmc", 0)  # no silent fallback to random
    registry_patch.setitem(samplers.SAMPLERS, "qmc", QMC)
    space = coatsearch.load_space(search_variant(tmp_path, "qmc"))
    import optuna

    study = optuna.create_study(direction="maximize", sampler=sampling.sampler(space))
    assert isinstance(study.sampler, optuna.samplers.QMCSampler)
    item = next(i for i in P.plan(space) if i.candidate == "searched")
    points = []
    for _ in range(3):  # the claim path's sampling: fixed candidate and seed, then the candidate's dimensions
        trial = study.ask()
        points.append(sampling.suggest(trial, space, item))
        study.tell(trial, 0.5)
    assert all(1e-3 <= p["train.lr"] <= 1e-2 and p["model.layout.0"] in ("C", "T") for p in points)
    assert len({p["train.lr"] for p in points}) == 3
    assert check_samplers(["qmc", "random"]) == ["qmc", "random"]  # one objective, choice lists: it replays
    registry_patch.setitem(samplers.SAMPLERS, "qmc", dataclasses.replace(QMC, choices=False))
    with pytest.raises(SpaceError, match="qmc samples int and float ranges only, and 'model.layout.0' is a choice"):
        coatsearch.load_space(search_variant(tmp_path, "qmc"))  # the compatibility rules read the entry


# ---------------------------------------------------------------------------------------------- a dataset


def load_stripes(name: str, root: str | None, size: int | None) -> tuple[torch.Tensor, ...]:
    """The stripes dataset's loader: 12x12 gray images, class c has a bright row at 2c (4 classes), 40/20 images."""

    def pool(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.arange(n) % 4
        x = torch.randint(0, 60, (n, 1, 12, 12), generator=torch.Generator().manual_seed(seed), dtype=torch.uint8)
        x[torch.arange(n), 0, 2 * y] = 255
        return x, y.to(torch.int64)

    return (*pool(40, 1), *pool(20, 2))


STRIPES = datasets.DatasetKind(
    "four classes of horizontal stripes, 12x12 gray", "tests.scores.test_extension:load_stripes", hflip=False
)


def test_a_registered_dataset_loads_through_the_data_path(tmp_path: Path, registry_patch: RegistryPatch) -> None:
    edits = (("data: {dataset: synthetic, eval_size: 100}", "data: {dataset: stripes, eval_size: 8}"),)
    with pytest.raises(SpaceError, match=r"field 'data.dataset': unknown dataset 'stripes'; allowed: fashion_mnist"):
        coatsearch.load_space(tiny_variant(tmp_path, *edits))
    with pytest.raises(UserError, match="unknown dataset 'stripes'; allowed: .*synthetic$"):
        data.load(S.DataSpec("stripes"), 16, 1)
    registry_patch.setitem(datasets.DATASETS, "stripes", STRIPES)
    space = coatsearch.load_space(tiny_variant(tmp_path, *edits))
    assert space.data.dataset == "stripes"
    train, test = data.load(space.data, 16, 3)  # tiny.yaml: 16x16 images
    assert tuple(train.x.shape) == (40, 3, 16, 16) and tuple(test.x.shape) == (20, 3, 16, 16)  # resized, 3 channels
    assert train.classes == (0, 1, 2, 3) and not train.hflip  # the entry's hflip: off
    data._shaped.cache_clear()  # the pools are cached per process by name: none is left for another test
    data._raw.cache_clear()


# ---------------------------------------------------------------------------------------------- an architecture


def build_plain(spec: S.ModelSpec) -> nn.Module:
    """The plain arch: per stage, `depth` 3x3 convs (the first strided) with ReLU; pool; linear head. No stem."""
    layers: list[nn.Module] = []
    dim = spec.in_chans
    for stage in spec.stages:
        for i in range(stage.depth):
            layers += [nn.Conv2d(dim, stage.width, 3, stage.stride if i == 0 else 1, 1), nn.ReLU()]
            dim = stage.width
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(dim, spec.num_classes))


PLAIN = kinds.ArchKind(
    "plain 3x3 conv stages, no stem",
    "tests.scores.test_extension:build_plain",
    layout=lambda layout: (
        "" if set(layout.split("-")) == {"C"} else f"arch 'plain' takes C stages only, not {layout!r}"
    ),
)


def test_a_registered_architecture_is_matched_and_built(tmp_path: Path, registry_patch: RegistryPatch) -> None:
    edits = (("  - {name: C-C, layout: C-C}", "  - {name: plain, arch: plain, layout: C-C}"),)
    with pytest.raises(SpaceError, match=r"field 'candidates\[0\].arch': unknown arch 'plain'; allowed: coatnet, vit"):
        coatsearch.load_space(tiny_variant(tmp_path, *edits))
    registry_patch.setitem(kinds.ARCHS, "plain", PLAIN)
    space = coatsearch.load_space(tiny_variant(tmp_path, *edits))
    cand = space.candidate("plain")
    assert cand.spec.arch == "plain" and abs(cand.macs - 400_000) <= 40_000  # matched to tiny.yaml's budget
    assert count(cand.spec).macs == cand.macs
    model = build(cand.spec)
    assert isinstance(model, nn.Sequential) and tuple(model(torch.zeros(2, 1, 16, 16)).shape) == (2, 10)
    bad = (("  - {name: C-C, layout: C-C}", "  - {name: plain, arch: plain, layout: C-T}"),)
    with pytest.raises(SpaceError, match="arch 'plain' takes C stages only, not 'C-T'"):
        coatsearch.load_space(tiny_variant(tmp_path, *bad))
    baseline = (("  - {name: C-C, layout: C-C}", "  - {name: plain, arch: linear, layout: C-C}"),)
    with pytest.raises(SpaceError, match=r"'linear' is a regime baseline's .*; allowed: coatnet, vit, plain"):
        coatsearch.load_space(tiny_variant(tmp_path, *baseline))


REGISTRIES = {
    "sampler": (samplers.SAMPLERS, "random, tpe, gp, cmaes, nsga2, grid"),
    "pruner": (samplers.PRUNERS, "none, median, hyperband"),
    "dataset": (datasets.DATASETS, "fashion_mnist, mnist, cifar10, cifar100, imagefolder, synthetic"),
    "arch": (kinds.ARCHS, "coatnet, vit, linear, cnn"),
    "stage kind": (kinds.STAGE_KINDS, "C, T, M"),
    "stem kind": (kinds.STEM_KINDS, "conv, patch, vitc"),
    "score": (scores.SCORES, "generalization, capacity, accuracy, transfer, length, robustness, speed"),
}


@pytest.mark.parametrize("what", REGISTRIES)
def test_an_unknown_name_is_one_line_naming_the_registered_ones(what: str) -> None:
    registry, known = REGISTRIES[what]
    assert isinstance(registry, Registry) and registry.what == what
    with pytest.raises(ValueError) as err:
        registry.entry("nope")
    assert str(err.value) == f"unknown {what} 'nope'; allowed: {known}"
    with pytest.raises(ValueError, match=f"^unknown {what} 'nope'; allowed: {known}$"):
        registry.unregister("nope")
    assert all(dataclasses.is_dataclass(e) and e.__dataclass_params__.frozen for e in registry.values())  # type: ignore[attr-defined]


def test_a_registry_registers_in_place_and_refuses_a_name_twice(registry_patch: RegistryPatch) -> None:
    registry_patch.setitem(samplers.PRUNERS, "early", samplers.PrunerKind("stop early", "optuna.pruners:NopPruner"))
    assert list(samplers.PRUNERS) == ["none", "median", "hyperband", "early"]
    with pytest.raises(
        ValueError, match="^pruner 'early' is already registered; known: none, median, hyperband, early$"
    ):
        samplers.PRUNERS.register("early", samplers.PRUNERS["none"])
    samplers.PRUNERS.register("first", samplers.PRUNERS["none"], before="none")
    assert list(samplers.PRUNERS)[:2] == ["first", "none"] and samplers.PRUNERS.unregister("first").prunes is False
    registry_patch.delitem(samplers.PRUNERS, "median")  # undone in its place
    assert list(samplers.PRUNERS) == ["none", "hyperband", "early"]


def test_the_registry_patch_put_every_entry_back_in_order() -> None:
    assert list(samplers.PRUNERS) == ["none", "median", "hyperband"]
