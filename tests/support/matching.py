"""Small CoAtNet-style specs for the budget-matching tests, and the channel rounding every match must keep."""

from __future__ import annotations

from coatsearch.vocab.specs import BlockSpec, ModelSpec, StageSpec, StemSpec

BLOCK = BlockSpec(head_size=16)


def proxy(layout: str, depths: tuple[int, ...] = (1, 2, 2, 1)) -> ModelSpec:
    """A small 32x32 CoAtNet-style spec (strides 1,2,2,1 so T stages see 16x16 / 8x8)."""
    kinds, widths, strides = layout.split("-"), (32, 64, 128, 256), (1, 2, 2, 1)
    stages = tuple(StageSpec(*a) for a in zip(kinds, depths, widths, strides, strict=True))
    return ModelSpec(layout, "coatnet", 32, 1, 10, StemSpec("conv", width=16, stride=2), stages, BLOCK)


def check_rounding(spec: ModelSpec) -> None:
    """Assert every T stage's width is a multiple of the head size, every C stage's and the stem's of 8."""
    for s in spec.stages:
        q = spec.block.head_size if s.kind == "T" else 8
        assert s.width % q == 0 and s.width >= q
    assert spec.stem.width % 8 == 0
