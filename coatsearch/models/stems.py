"""Stems: CoAtNet's S0 conv stem, the ViT patchify stem and ViT_C's convolutional stem."""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
from timm.layers import get_norm_act_layer
from torch import nn

from coatsearch.vocab import kinds

# A stem argument is a vocab.specs.StemSpec, typed Any as in vocab.kinds: this module does not import specs, so the
# registries under specs stay at the bottom of the import graph (benchmarks/import_graph.py's longest chain).
# BlockSpec norm names -> timm norm-act layer names for NCHW maps.
NORM_2D = {"batchnorm": "batchnorm2d", "layernorm": "layernorm2d"}


class ConvStem(nn.Module):
    """CoAtNet S0: `layers` 3x3 convs, the first strided, norm+act between them (not after the last).

    Like timm maxxvit `Stem`, with a configurable stride (1 allowed) and layer count. There is no norm
    after the last conv because every block that follows pre-normalizes its input.
    (B, in_chans, H, W) -> (B, width, ceil(H/stride), ceil(W/stride))
    """

    def __init__(self, in_chans: int, width: int, layers: int, stride: int, norm: str, act: str):
        super().__init__()
        norm_act = partial(get_norm_act_layer(NORM_2D[norm], act), eps=1e-5)
        mods: list[nn.Module] = []
        for i in range(layers):
            mods.append(nn.Conv2d(in_chans if i == 0 else width, width, 3, stride if i == 0 else 1, 1, bias=False))
            if i < layers - 1:
                mods.append(norm_act(width))
        self.body = nn.Sequential(*mods)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


class PatchStem(nn.Module):
    """ViT patchify as an NCHW stem: one conv, kernel = stride = p. (B, C, H, W) -> (B, D, H/p, W/p)."""

    def __init__(self, in_chans: int, width: int, patch_size: int):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, width, patch_size, patch_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


class VitcStem(nn.Module):
    """ViT_C stem (Xiao et al. 2021, section 3): 3x3 conv + BN + ReLU per entry, then a 1x1 conv with bias.

    The 3x3 convs have no bias (BN follows). The final 1x1 conv maps to the transformer width with no
    norm or activation, as in pycls `ViTStemConv`. (B, C, H, W) -> (B, width, H/prod(strides), ...)
    """

    def __init__(self, in_chans: int, channels: tuple[int, ...], strides: tuple[int, ...], width: int):
        super().__init__()
        mods: list[nn.Module] = []
        prev = in_chans
        for ch, s in zip(channels, strides, strict=True):
            mods += [nn.Conv2d(prev, ch, 3, s, 1, bias=False), nn.BatchNorm2d(ch), nn.ReLU(inplace=True)]
            prev = ch
        mods.append(nn.Conv2d(prev, width, 1, bias=True))
        self.body = nn.Sequential(*mods)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def conv_stem(stem: Any, in_chans: int, width: int, norm: str, act: str) -> nn.Module:
    """Registry builder for "conv": CoAtNet's S0."""
    return ConvStem(in_chans, stem.width, stem.layers, stem.stride, norm, act)


def patch_stem(stem: Any, in_chans: int, width: int, norm: str, act: str) -> nn.Module:
    """Registry builder for "patch": ViT patchify to the first stage's width."""
    return PatchStem(in_chans, width, stem.patch_size)


def vitc_stem(stem: Any, in_chans: int, width: int, norm: str, act: str) -> nn.Module:
    """Registry builder for "vitc": ViT_C's 3x3 conv stack to the first stage's width."""
    return VitcStem(in_chans, tuple(stem.channels), tuple(stem.strides), width)


def build_stem(stem: Any, in_chans: int, width: int, norm: str, act: str) -> nn.Module:
    """The stem module for `stem` (kinds.STEM_KINDS); `width` is the first stage's width (patch and vitc)."""
    return kinds.load(kinds.STEM_KINDS.entry(stem.kind).builder)(stem, in_chans, width, norm, act)
