"""build(): forward shape and finiteness over small proxy specs of every layout and block option."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from timm.layers import RelPosBias
from timm.models.vision_transformer import VisionTransformer

from coatsearch.models import build
from coatsearch.models.coatnet import CoAtNet
from coatsearch.vocab.specs import BlockSpec, ModelSpec, StageSpec, StemSpec

BLOCK = BlockSpec(head_size=16)


def proxy(layout: str, size: int = 32, strides=(1, 2, 2, 1), stem_stride: int = 1, **kw) -> ModelSpec:
    """A tiny CoAtNet-style spec: 1-channel 32x32, stem stride 1, T stages see >= 8x8 tokens."""
    kinds, widths = layout.split("-"), (16, 32, 64, 128)
    stages = tuple(StageSpec(k, 1, w, s) for k, w, s in zip(kinds, widths, strides, strict=False))
    stem = StemSpec("conv", width=16, stride=stem_stride)
    base = dict(name=layout, arch="coatnet", image_size=size, in_chans=1, num_classes=10, stem=stem, block=BLOCK)
    return ModelSpec(**{**base, "stages": stages, **kw})


VIT_REL = ModelSpec(
    "ViT_REL", "coatnet", 32, 1, 10, StemSpec("patch", patch_size=4), (StageSpec("T", 2, 64, 1),), BLOCK
)
VIT_P = replace(VIT_REL, name="ViT_P", arch="vit")
VIT_C = replace(VIT_P, name="ViT_C", stem=StemSpec("vitc", channels=(24, 48), strides=(2, 2)))

SPECS = {
    **{lay: proxy(lay) for lay in ("C-C-C-C", "C-C-C-T", "C-C-T-T", "C-T-T-T")},
    "ViT_REL": VIT_REL,
    "ViT_P": VIT_P,
    "ViT_C": VIT_C,
    "dw": proxy("C-C-T-T", block=replace(BLOCK, downsample="dw")),
    "avgpool": proxy("C-C-T-T", block=replace(BLOCK, pool="avg")),
    "no-relpos": proxy("C-C-T-T", block=replace(BLOCK, rel_pos=False)),
    "ln-mbconv+bn-attn": proxy("C-C-T-T", block=replace(BLOCK, conv_norm="layernorm", attn_norm="batchnorm")),
    "relu+droppath": proxy("C-C-T-T", block=replace(BLOCK, act="relu", drop_path=0.1)),
    "rgb": proxy("C-C-T-T", in_chans=3),
    "28-all-stride2": proxy("C-C-T-T", size=28, strides=(2, 2, 2, 2), stem_stride=2),  # 14,7,4,2,1: odd maps
    "64-all-stride2": proxy("C-T-T-T", size=64, strides=(2, 2, 2, 2), stem_stride=2),
    "28-stride1": proxy("C-C-T-T", size=28),
    "3-stage": proxy("C-T-T", strides=(2, 2, 1)),
}


@pytest.mark.parametrize("name", list(SPECS))
def test_forward(name):
    spec = SPECS[name]
    torch.manual_seed(0)
    model = build(spec).eval()
    x = torch.randn(2, spec.in_chans, spec.image_size, spec.image_size)
    with torch.no_grad():
        y = model(x)
    assert y.shape == (2, spec.num_classes)
    assert torch.isfinite(y).all()


def test_train_step_backward():
    spec = SPECS["relu+droppath"]
    model = build(spec).train()
    loss = model(torch.randn(2, 1, 32, 32)).logsumexp(1).mean()
    loss.backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_feature_sizes_match_spec():
    for spec in (SPECS["28-all-stride2"], SPECS["C-T-T-T"]):
        model = build(spec).eval()
        x = model.stem(torch.zeros(1, spec.in_chans, spec.image_size, spec.image_size))
        for stage, side in zip(model.stages, spec.feature_sizes(), strict=True):
            x = stage(x)
            assert x.shape[-1] == x.shape[-2] == side


def test_relpos_window_is_stage_map():
    spec = SPECS["C-T-T-T"]
    rel = [m for m in build(spec).modules() if isinstance(m, RelPosBias)]
    assert [tuple(r.window_size) for r in rel] == [(16, 16), (8, 8), (8, 8)]
    assert not any(isinstance(m, RelPosBias) for m in build(SPECS["no-relpos"]).modules())


def test_drop_path_increases_linearly():
    model = build(SPECS["relu+droppath"])
    rates = [m.drop_prob for m in model.modules() if type(m).__name__ == "DropPath"]
    assert rates == sorted(rates) and rates[-1] == pytest.approx(0.1)


def test_vit_is_timm_vit():
    model = build(VIT_C)
    assert isinstance(model, VisionTransformer) and model.cls_token is not None
    assert model.patch_embed.num_patches == 64  # 32 / (2*2) = 8 -> 8x8 tokens
    assert model.blocks[0].attn.num_heads == 64 // 16
    assert isinstance(build(VIT_REL), CoAtNet)


def test_unknown_arch_names_known():
    with pytest.raises(ValueError, match="unknown arch .resnet.; allowed: coatnet, vit, linear, cnn"):
        build(replace(VIT_P, arch="resnet"))


def test_t_width_must_fit_heads():
    with pytest.raises(ValueError, match="head size"):
        build(proxy("C-C-T-T", block=replace(BLOCK, head_size=48)))
