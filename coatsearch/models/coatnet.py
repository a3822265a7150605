"""CoAtNet-style multi-stage networks (and ViT_REL) composed from timm blocks; the C and T block builders."""

from __future__ import annotations

from functools import partial

import torch
from timm.layers import RelPosBias
from timm.models.maxxvit import MaxxVitConvCfg, MaxxVitTransformerCfg, MbConvBlock, TransformerBlock2d
from torch import nn

from coatsearch.models.stems import NORM_2D, build_stem
from coatsearch.vocab import kinds
from coatsearch.vocab.specs import BlockSpec, ModelSpec

_STRIDE_MODE = {"eq5": "1x1", "dw": "dw"}  # paper Eq. 5 = strided 1x1 on the normalized input
_POOL = {"max": "max2", "avg": "avg2"}  # kernel = stride = 2 pooling on shortcuts / attention input


def conv_cfg(block: BlockSpec) -> MaxxVitConvCfg:
    """timm MBConv config for the BlockSpec (pre-norm, expand, depthwise 3x3, SE, project)."""
    if block.downsample not in _STRIDE_MODE or block.pool not in _POOL:
        raise ValueError(f"downsample {block.downsample!r} / pool {block.pool!r}: known {_STRIDE_MODE} / {_POOL}")
    return MaxxVitConvCfg(
        expand_ratio=block.expand_ratio,
        stride_mode=_STRIDE_MODE[block.downsample],
        pool_type=_POOL[block.pool],
        downsample_pool_type=_POOL[block.pool],
        attn_layer="se" if block.se_ratio > 0 else "",
        attn_ratio=block.se_ratio,
        act_layer=block.act,
        norm_layer=NORM_2D[block.conv_norm],
        norm_eps=1e-5,
    )


def transformer_cfg(block: BlockSpec) -> MaxxVitTransformerCfg:
    """timm TransformerBlock2d config for the BlockSpec (pre-norm attention + FFN, NCHW)."""
    # norm_layer_cl is only read by timm's channels-last blocks, which are not used here.
    return MaxxVitTransformerCfg(
        dim_head=block.head_size,
        expand_ratio=block.mlp_ratio,
        pool_type=_POOL[block.pool],
        act_layer=block.act,
        norm_layer=NORM_2D[block.attn_norm],
        norm_layer_cl="layernorm",
        norm_eps=1e-6 if block.attn_norm == "layernorm" else 1e-5,
    )


def _ceil_pools(module: nn.Module) -> None:
    """Make every 2x2 pool round up, so odd maps (7 -> 4) match the strided convs and ModelSpec.feature_sizes()."""
    for m in module.modules():
        if isinstance(m, (nn.MaxPool2d, nn.AvgPool2d)):
            m.ceil_mode = True


def mbconv_block(dim: int, dim_out: int, stride: int, side: int, block: BlockSpec, dpr: float) -> nn.Module:
    """C: timm MbConvBlock (B, dim, H, W) -> (B, dim_out, side, side).

    timm blocks only project the shortcut when strided. A stride-1 block that changes width gets a
    1x1 conv shortcut instead (Eq. 4/5 without the pooling): x <- Proj(x) + Module(Norm(x)).
    """
    cfg = conv_cfg(block)
    blk = MbConvBlock(dim, dim_out, stride=stride, cfg=cfg, drop_path=dpr)
    if stride == 1 and dim != dim_out:
        blk.shortcut = nn.Conv2d(dim, dim_out, 1, bias=cfg.output_bias)  # type: ignore[assignment]  # timm types it Downsample2d
    return blk


def transformer_block(dim: int, dim_out: int, stride: int, side: int, block: BlockSpec, dpr: float) -> nn.Module:
    """T: timm TransformerBlock2d with relative-position bias over the side x side output map."""
    cfg = transformer_cfg(block)
    rel = partial(RelPosBias, window_size=(side, side)) if block.rel_pos else None
    widen = stride == 1 and dim != dim_out
    blk = TransformerBlock2d(dim, dim_out, stride=2 if widen else stride, rel_pos_cls=rel, cfg=cfg, drop_path=dpr)
    if widen:  # timm asserts dim == dim_out at stride 1: build strided, then drop the pooling
        blk.shortcut = nn.Conv2d(dim, dim_out, 1, bias=cfg.shortcut_bias)  # type: ignore[assignment]  # as above
        blk.norm1 = blk.norm1.norm  # type: ignore[assignment]  # timm types norm1 as its Sequential wrapper
    return blk


def make_block(kind: str, dim: int, dim_out: int, stride: int, side: int, block: BlockSpec, dpr: float) -> nn.Module:
    """One block of stage kind `kind` (kinds.STAGE_KINDS) mapping (B, dim, H, W) -> (B, dim_out, side, side)."""
    blk = kinds.load(kinds.STAGE_KINDS.entry(kind).builder)(dim, dim_out, stride, side, block, dpr)
    _ceil_pools(blk)
    return blk


class CoAtNet(nn.Module):
    """stem -> stages of blocks (C: MBConv+SE, T: rel-attention, M: ...) -> avg pool -> LayerNorm -> linear.

    Per-stage strides are explicit (1 or 2), unlike timm's MaxxVit, so small-image proxies and ViT_REL
    (patch stem + one T stage) fit the same class. No class token: the head pools the last map (paper
    section 2.1). The LayerNorm on the pooled vector normalizes the last pre-norm block's output.
    """

    def __init__(self, spec: ModelSpec):
        super().__init__()
        b = spec.block
        self.stem = build_stem(spec.stem, spec.in_chans, spec.stages[0].width, b.conv_norm, b.act)
        blocks: list[list[nn.Module]] = [[] for _ in spec.stages]
        for p in spec.blocks():
            blocks[p.stage].append(make_block(p.kind, p.dim, p.dim_out, p.stride, p.out_side, b, p.dpr))
        dim = spec.stages[-1].width
        self.stages = nn.Sequential(*(nn.Sequential(*stage) for stage in blocks))
        self.norm = nn.LayerNorm(dim)
        self.head: nn.Module = nn.Linear(dim, spec.num_classes)
        self.num_features, self.num_classes = dim, spec.num_classes
        # timm's feature_info: the stem's map, then each stage's, with its width and total stride (features_only)
        reduction = [spec.stem.total_stride]
        for stage in spec.stages:
            reduction.append(reduction[-1] * stage.stride)
        widths = [kinds.STEM_KINDS.entry(spec.stem.kind).out_width(spec.stem, spec.stages[0].width)]
        widths += [s.width for s in spec.stages]
        modules = ["stem"] + [f"stages.{i}" for i in range(len(spec.stages))]
        self.feature_info = [
            dict(num_chs=c, reduction=r, module=m) for c, r, m in zip(widths, reduction, modules, strict=True)
        ]

    def get_classifier(self) -> nn.Module:
        """The classifier (timm convention), e.g. to re-initialize it for fine-tuning."""
        return self.head

    def reset_classifier(self, num_classes: int) -> None:
        """A new, untrained classifier for `num_classes` (timm convention; 0: no head, forward gives features)."""
        self.num_classes = num_classes
        self.head = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) -> last stage map (B, D, h, w)."""
        return self.stages(self.stem(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.forward_features(x).mean((2, 3))  # (B, D)
        return self.head(self.norm(x))  # (B, num_classes)


def build_coatnet(spec: ModelSpec) -> CoAtNet:
    """CoAtNet / ViT_REL model for `spec` (the spec has checked strides, head sizes and map shapes)."""
    return CoAtNet(spec)
