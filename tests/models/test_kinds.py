"""Stage/stem kind registries and stage kind M (MaxViT window + grid attention): errors, shapes, MACs, spaces."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from coatsearch.budget.count import count, measure
from coatsearch.budget.prepare import prepare_all, row
from coatsearch.models import build
from coatsearch.models.maxvit import MaxVitBlock
from coatsearch.space.load import SpaceError
from coatsearch.space.objects import load_space
from coatsearch.vocab import kinds
from coatsearch.vocab.specs import BlockSpec, ModelSpec, StageSpec, StemSpec

HERE = Path(__file__).parents[1]
TINY = (HERE / "spaces" / "tiny.yaml").read_text()
BLOCK = BlockSpec(head_size=8, window_size=4, grid_size=2)


def proxy(layout: str, strides: tuple[int, ...] = (1, 2, 2, 1), block: BlockSpec = BLOCK) -> ModelSpec:
    """32x32, stem stride 1: stage maps 32, 16, 8, 8 (windows of 4 and a grid of 2 divide every one)."""
    kinds_, widths = layout.split("-"), (16, 24, 32, 48)
    stages = tuple(StageSpec(k, 2, w, s) for k, w, s in zip(kinds_, widths, strides, strict=False))
    return ModelSpec(layout, "coatnet", 32, 1, 10, StemSpec("conv", width=16, stride=1), stages, block)


def test_unknown_kinds_name_the_known_ones() -> None:
    with pytest.raises(ValueError, match=rf"^unknown stage kind 'X'; allowed: {', '.join(kinds.STAGE_KINDS)}$"):
        kinds.STAGE_KINDS.entry("X")
    with pytest.raises(ValueError, match=rf"^unknown stem kind 'hex'; allowed: {', '.join(kinds.STEM_KINDS)}$"):
        kinds.STEM_KINDS.entry("hex")
    with pytest.raises(ValueError, match="unknown stage kind 'X'"):
        ModelSpec("x", "coatnet", 32, 1, 10, StemSpec(), (StageSpec("X", 1, 16),))


def test_layout_pattern_and_constraint_read_the_registry(tmp_path: Path) -> None:
    known = ", ".join(kinds.STAGE_KINDS)
    assert {"C", "T", "M"} <= set(kinds.STAGE_KINDS) and "X" not in kinds.STAGE_KINDS
    assert kinds.check_layout("C-C-T-M") == "C-C-T-M"
    assert kinds.check_layout("-".join(kinds.STAGE_KINDS)) == "-".join(kinds.STAGE_KINDS)
    for bad in ("C-X", "C--T", "C-T-", "", "CT", "c-t"):
        with pytest.raises(ValueError, match=f"stage types {known} joined by '-'"):
            kinds.check_layout(bad)
    assert kinds.conv_after_attention("C-M-C") == "'C-M-C' puts a C stage after a M stage"
    assert kinds.conv_after_attention("C-T-M") == ""
    path = tmp_path / "space.yaml"
    path.write_text(TINY.replace("- {name: C-T}", "- {name: C-X, layout: C-X}"))
    with pytest.raises(SpaceError, match=rf"space.yaml:16: field 'candidates\[1\].layout'.*{known}"):
        load_space(path)


@pytest.mark.parametrize("letter", list(kinds.STAGE_KINDS))
def test_every_stage_kind_has_a_positive_macs_floor_below_its_count(letter: str) -> None:
    spec = proxy(f"C-C-{letter}-{letter}")
    floors = [kinds.STAGE_KINDS.entry(p.kind).macs_floor(p.dim_out, p.out_side, spec.block) for p in spec.blocks()]
    assert all(f > 0 for f in floors)
    assert 0 < spec.macs_floor() <= count(spec).macs


@pytest.mark.parametrize("layout", ["C-C-M-M", "C-C-T-M", "C-M-M-M"])
def test_m_forward_shape_and_finite(layout: str) -> None:
    spec = proxy(layout)
    torch.manual_seed(0)
    model = build(spec).eval()
    with torch.no_grad():
        y = model(torch.randn(2, 1, 32, 32))
    assert y.shape == (2, 10) and torch.isfinite(y).all()
    assert any(isinstance(m, MaxVitBlock) for m in model.modules())


@pytest.mark.parametrize("layout,block", [("C-C-M-M", BLOCK), ("C-C-T-M", BlockSpec(head_size=8, rel_pos=False))])
def test_m_macs_by_parts_equal_the_whole_model(layout: str, block: BlockSpec) -> None:
    spec = proxy(layout, block=block)
    with torch.device("meta"):
        whole = measure(build(spec), 32, 1, "meta")
    assert count(spec) == whole


def _partition_attention_macs(n: int, c: int, part: int) -> int:
    """One pre-norm attention + FFN over n tokens of width c, attention inside groups of `part` tokens."""
    qkv, proj, mlp = n * c * 3 * c, n * c * c, 2 * n * c * 4 * c
    qk = av = n * part * c  # n / part groups, each part * part * c for QK^T and again for AV
    return qkv + qk + av + proj + mlp


def test_m_block_macs_by_hand() -> None:
    # strided and widening: 2x2 pool (0 MACs), 1x1 conv 16 -> 32 on 8x8, then window 4x4 and grid 2x2 attention.
    block = MaxVitBlock(16, 32, 2, 8, BLOCK, 0.0)
    n = 8 * 8
    want = n * 16 * 32 + _partition_attention_macs(n, 32, 4 * 4) + _partition_attention_macs(n, 32, 2 * 2)
    assert measure(block, 16, 16, "cpu").macs == want


def test_m_default_partitions_are_the_whole_map() -> None:
    block = MaxVitBlock(32, 32, 1, 8, BlockSpec(head_size=8), 0.0)
    assert block.window.partition_size == (8, 8) and block.grid.partition_size == (8, 8)
    want = 2 * _partition_attention_macs(64, 32, 64)
    assert measure(block, 8, 32, "cpu").macs == want


def test_m_shapes_that_cannot_window_are_spec_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="8x8 map does not divide into window_size 3"):
        proxy("C-C-M-M", block=BlockSpec(head_size=8, window_size=3))
    text = TINY.replace("block: {head_size: 16}", "block: {head_size: 16, window_size: 3}")
    path = tmp_path / "space.yaml"
    path.write_text(text.replace("- {name: C-T}", "- {name: C-M, layout: C-M}"))
    with pytest.raises(SpaceError) as info:
        load_space(path)
    assert str(info.value).startswith(f"{path}:16: field 'candidates[1]': an M stage's 4x4 map does not divide")


def test_maxvit_space_loads_and_matches() -> None:
    space = load_space(HERE.parent / "spaces" / "maxvit_layouts.yaml", "quick")
    rows = {r["name"]: r for r in map(row, prepare_all(space))}
    assert set(rows) == {"C-C-C-C", "C-C-T-T", "C-C-M-M", "baseline-linear", "baseline-cnn"}
    assert all(r["ok"] for r in rows.values()), rows
    assert rows["C-C-M-M"]["tokens"] == ["8x8 w4 g4", "8x8 w4 g4"]
    assert rows["C-C-T-T"]["tokens"] == ["8x8", "8x8"]
    m = next(p for p in prepare_all(space) if p.name == "C-C-M-M")
    assert all(s.width % m.model.block.head_size == 0 for s in m.model.stages[2:])


def test_m_train_step_backward() -> None:
    model = build(proxy("C-C-M-M", block=BlockSpec(head_size=8, window_size=4, grid_size=2, drop_path=0.1))).train()
    model(torch.randn(2, 1, 32, 32)).logsumexp(1).mean().backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)
