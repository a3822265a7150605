"""MACs counting: hand-computed per-primitive values, paper model sizes, meta vs CPU agreement."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import pytest
import torch
from timm.layers import RelPosBias
from timm.models.maxxvit import MbConvBlock, TransformerBlock2d
from torch import nn

from coatsearch.budget.count import count, measure
from coatsearch.models import build
from coatsearch.models.coatnet import conv_cfg, transformer_cfg
from coatsearch.vocab.specs import BlockSpec, ModelSpec, StageSpec, StemSpec


def test_conv2d_macs():
    conv = nn.Conv2d(3, 16, 3, stride=2, padding=1)  # 32x32 -> 16x16; bias is not a multiply-add
    assert measure(conv, 32, 3, "cpu").macs == 16 * 16 * (16 * 3 * 3 * 3)


def _mbconv_macs(c_in: int, c_out: int, side_out: int, strided: bool) -> int:
    """timm MbConvBlock, eq5 stride mode: conv1_1x1 (strided), dw 3x3, SE on the pooled vector, conv3_1x1."""
    mid, rd, px = 4 * c_out, c_out // 4, side_out * side_out
    expand = px * c_in * mid  # 1x1 expand (stride 2 in Eq. 5 mode)
    dw = px * mid * 9  # depthwise 3x3
    se = mid * rd + rd * mid  # two 1x1 convs on the (1, mid, 1, 1) pooled vector
    project = px * mid * c_out  # 1x1 project
    shortcut = px * c_in * c_out if strided else 0  # 2x2 max pool (0 MACs) then 1x1 conv
    return expand + dw + se + project + shortcut


@pytest.mark.parametrize("c_in,c_out,side_in,stride", [(32, 64, 16, 2), (64, 64, 8, 1)])
def test_mbconv_block_macs(c_in, c_out, side_in, stride):
    block = MbConvBlock(c_in, c_out, stride=stride, cfg=conv_cfg(BlockSpec()))
    got = measure(block, side_in, c_in, "cpu").macs
    assert got == _mbconv_macs(c_in, c_out, side_in // stride, stride == 2)


def test_mbconv_dw_downsample_macs():
    # "dw" mode: the 1x1 expand runs at full resolution, the depthwise 3x3 is strided.
    block = MbConvBlock(32, 64, stride=2, cfg=conv_cfg(BlockSpec(downsample="dw")))
    mid, rd = 256, 16
    want = 16 * 16 * 32 * mid + 8 * 8 * mid * 9 + 2 * mid * rd + 8 * 8 * mid * 64 + 8 * 8 * 32 * 64
    assert measure(block, 16, 32, "cpu").macs == want


def _transformer_macs(c_in: int, c: int, n: int, mlp: float = 4.0) -> int:
    """One TransformerBlock2d on n tokens of width c (input width c_in; pooled first if strided)."""
    qkv = n * c_in * 3 * c  # 1x1 conv to q, k, v
    qk = n * n * c  # per head n*n*d, summed over c/d heads
    av = n * n * c
    proj = n * c * c
    mlp_macs = 2 * n * c * int(c * mlp)  # fc1 + fc2
    shortcut = n * c_in * c if c_in != c else 0  # pool, then 1x1 conv
    return qkv + qk + av + proj + mlp_macs + shortcut


def test_transformer_block_macs():
    rel = partial(RelPosBias, window_size=(8, 8))
    block = TransformerBlock2d(64, 64, 1, rel_pos_cls=rel, cfg=transformer_cfg(BlockSpec()))
    assert measure(block, 8, 64, "cpu").macs == _transformer_macs(64, 64, 64) == 3_670_016


def test_strided_transformer_block_macs():
    rel = partial(RelPosBias, window_size=(8, 8))
    block = TransformerBlock2d(32, 64, 2, rel_pos_cls=rel, cfg=transformer_cfg(BlockSpec()))
    assert measure(block, 16, 32, "cpu").macs == _transformer_macs(32, 64, 64)


def _small() -> ModelSpec:
    stages = (StageSpec("C", 1, 16, 1), StageSpec("C", 1, 32, 2), StageSpec("T", 2, 64, 2))
    return ModelSpec("small", "coatnet", 32, 1, 10, StemSpec("conv", width=16, stride=1), stages, BlockSpec(16))


def test_meta_equals_cpu():
    spec = _small()
    torch.manual_seed(0)
    on_cpu = measure(build(spec), spec.image_size, spec.in_chans, "cpu")
    assert count(spec) == on_cpu
    assert on_cpu.macs > 0


def test_whole_model_equals_hand_count():
    # ViT_REL proxy: 4x4 patchify to 8x8 tokens of width 64, two T blocks, pooled linear head.
    stage = (StageSpec("T", 2, 64, 1),)
    spec = ModelSpec("vit_rel", "coatnet", 32, 1, 10, StemSpec("patch", patch_size=4), stage, BlockSpec(16))
    patch = 8 * 8 * 64 * (1 * 4 * 4)
    assert count(spec).macs == patch + 2 * _transformer_macs(64, 64, 64) + 64 * 10


# --- Paper sizes (papers.md §1.3, §2.1, Table 9) ----------------------------------------------------


def _vit(d: int, heads: int, depth: int, stem: StemSpec) -> ModelSpec:
    stage = (StageSpec("T", depth, d, 1),)
    return ModelSpec("vit", "vit", 224, 3, 1000, stem, stage, BlockSpec(head_size=d // heads, mlp_ratio=3.0))


_PATCH = StemSpec("patch", patch_size=16)
_STRIDES = (2, 2, 2, 2)
VIT = {  # name: (spec, params M, GMACs measured with timm)
    "ViT_P-1GF": (_vit(192, 3, 12, _PATCH), 4.8, 1.08),
    "ViT_P-4GF": (_vit(384, 6, 12, _PATCH), 18.5, 3.90),
    "ViT_C-1GF": (
        _vit(192, 3, 11, StemSpec("vitc", channels=(24, 48, 96, 192), strides=_STRIDES)),
        4.6,
        1.08,
    ),
    "ViT_C-4GF": (
        _vit(384, 6, 11, StemSpec("vitc", channels=(48, 96, 192, 384), strides=_STRIDES)),
        17.8,
        3.96,
    ),
}


@pytest.mark.parametrize("name", list(VIT))
def test_vit_paper_sizes(name):
    spec, params_m, gmacs = VIT[name]
    c = count(spec)
    assert c.params / 1e6 == pytest.approx(params_m, rel=0.03)
    assert c.macs / 1e9 == pytest.approx(gmacs, rel=0.03)


def _coatnet(s0: int, widths: tuple[int, ...], depths: tuple[int, ...], downsample: str = "eq5") -> ModelSpec:
    stages = tuple(
        StageSpec("C" if i < 2 else "T", d, w, 2) for i, (w, d) in enumerate(zip(widths, depths, strict=True))
    )
    block = BlockSpec(head_size=32, downsample=downsample, pool="max")
    return ModelSpec("coatnet", "coatnet", 224, 3, 1000, StemSpec("conv", width=s0, stride=2), stages, block)


COATNET = {  # name: (spec, params M, GMACs), paper Table 3 / §1.3
    "CoAtNet-0": (_coatnet(64, (96, 192, 384, 768), (2, 3, 5, 2)), 25, 4.2),
    "CoAtNet-1": (_coatnet(64, (96, 192, 384, 768), (2, 6, 14, 2)), 42, 8.4),
    "CoAtNet-2": (_coatnet(128, (128, 256, 512, 1024), (2, 6, 14, 2)), 75, 15.7),
    "CoAtNet-3": (_coatnet(192, (192, 384, 768, 1536), (2, 6, 14, 2)), 168, 34.7),
}


@pytest.mark.parametrize("name", list(COATNET))
def test_coatnet_paper_sizes(name):
    spec, params_m, gmacs = COATNET[name]
    c = count(spec)
    assert c.params / 1e6 == pytest.approx(params_m, rel=0.05)
    assert c.macs / 1e9 == pytest.approx(gmacs, rel=0.10)


@pytest.mark.parametrize("name,gmacs", [("CoAtNet-0", 4.6), ("CoAtNet-1", 8.8), ("CoAtNet-2", 16.6)])
def test_coatnet_dw_downsample_sizes(name, gmacs):
    # Table 9: strided depthwise conv instead of Eq. 5 costs more (the 1x1 expand runs at full resolution).
    spec = COATNET[name][0]
    dw = count(replace(spec, block=replace(spec.block, downsample="dw")))
    assert dw.macs / 1e9 == pytest.approx(gmacs, rel=0.10)
    assert dw.macs > count(spec).macs


@pytest.mark.parametrize(
    "stem, layout, strides",
    [
        (StemSpec("conv", width=16, stride=2), "C-C-T-T", (1, 2, 2, 1)),
        (StemSpec("conv", width=8, stride=1, layers=3), "C-T-T-T", (2, 2, 2, 1)),
        (StemSpec("patch", patch_size=4), "T", (1,)),
    ],
)
def test_counting_by_parts_equals_the_whole_model(stem, layout, strides):
    kinds = layout.split("-")
    widths = (32, 48, 64, 96)[: len(kinds)]
    stages = tuple(StageSpec(k, 2, w, s) for k, w, s in zip(kinds, widths, strides, strict=True))
    spec = ModelSpec("x", "coatnet", 32, 1, 10, stem, stages, BlockSpec(head_size=16))
    with torch.device("meta"):
        whole = measure(build(spec), 32, 1, "meta")
    assert count(spec) == whole
